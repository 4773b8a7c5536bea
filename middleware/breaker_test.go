package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/tool"
)

var errDown = errors.New("backend down")

func TestBreakerTripsOnConsecutiveFailures(t *testing.T) {
	failing := newCounted(t, "api", readOnly, failWith(errDown))
	h := handler(middleware.CircuitBreaker(middleware.WithConsecutiveFailures(3), middleware.WithOpenTimeout(time.Hour)))
	ctx := context.Background()
	for i := range 3 {
		r := h.Handle(ctx, req(failing, fmt.Sprint(i), ""))
		assert.Equal(t, tool.CodeToolError, r.ErrorCode)
	}
	before := time.Now()
	r := h.Handle(ctx, req(failing, "4", ""))
	assert.EqualValues(t, 3, failing.Runs(), "an open breaker does not run the tool")
	assert.Equal(t, middleware.CodeCircuitOpen, r.ErrorCode)
	assert.Equal(t, tool.StatusFailed, r.Status)
	assert.ErrorIs(t, r.Err, middleware.ErrCircuitOpen)
	var oe *middleware.CircuitOpenError
	require.ErrorAs(t, r.Err, &oe)
	assert.False(t, oe.HalfOpen)
	assert.Equal(t, "api", oe.Tool)
	assert.WithinDuration(t, before.Add(time.Hour), oe.RetryAt, time.Minute, "says when it will retry")
	assert.Contains(t, r.Text(), "will be tried again at")
}

func TestBreakerSuccessResetsTheStreak(t *testing.T) {
	var fail atomic.Bool
	flaky := newCounted(t, "api", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		if fail.Load() {
			return tool.Result{}, errDown
		}
		return tool.Text("ok"), nil
	})
	h := handler(middleware.CircuitBreaker(middleware.WithConsecutiveFailures(2)))
	for range 5 { // fail, succeed, fail, succeed, ...: never two in a row
		fail.Store(true)
		h.Handle(context.Background(), req(flaky, "f", ""))
		fail.Store(false)
		assert.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(flaky, "s", "")).Status)
	}
}

func TestBreakerTripsOnFailureRatio(t *testing.T) {
	var n atomic.Int64
	flaky := newCounted(t, "api", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		if n.Add(1)%2 == 0 { // every other call fails: never two in a row
			return tool.Result{}, errDown
		}
		return tool.Text("ok"), nil
	})
	h := handler(middleware.CircuitBreaker(middleware.WithConsecutiveFailures(0), middleware.WithFailureRatio(0.5, 10)))
	for i := range 10 {
		r := h.Handle(context.Background(), req(flaky, fmt.Sprint(i), ""))
		assert.NotEqual(t, middleware.CodeCircuitOpen, r.ErrorCode, "call %d: too few calls to judge", i)
	}
	r := h.Handle(context.Background(), req(flaky, "11", ""))
	assert.Equal(t, middleware.CodeCircuitOpen, r.ErrorCode, "5 failures out of 10 reach the ratio")
}

func TestBreakerHalfOpenTrialsAndRecovery(t *testing.T) {
	retryWhileTooSlow(t, 20*time.Millisecond, halfOpenTrialsAndRecovery)
}

// retryWhileTooSlow runs scenario with a breaker open timeout of d and, as
// long as it reports that its calls took longer than that (on a loaded
// machine), again with twice the timeout, until a bound.
func retryWhileTooSlow(t *testing.T, d time.Duration, scenario func(t *testing.T, openTimeout time.Duration) (inTime bool)) {
	t.Helper()
	for ; !scenario(t, d); d *= 2 {
		if d >= 10*time.Second {
			t.Fatalf("the calls took longer than the open timeout, %s, every time", d)
		}
		t.Logf("the calls took longer than the open timeout, %s: trying again with %s", d, 2*d)
	}
}

// halfOpenTrialsAndRecovery checks the breaker's states through a failed
// trial and a successful one. It reports false, having checked nothing
// more, if calls that must find the breaker open came after openTimeout.
func halfOpenTrialsAndRecovery(t *testing.T, openTimeout time.Duration) bool {
	var fail atomic.Bool
	fail.Store(true)
	api := newCounted(t, "api", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		if fail.Load() {
			return tool.Result{}, errDown
		}
		return tool.Text("ok"), nil
	})
	var changes []string
	var mu sync.Mutex
	h := handler(middleware.CircuitBreaker(
		middleware.WithConsecutiveFailures(1),
		middleware.WithOpenTimeout(openTimeout),
		middleware.WithHalfOpenCalls(2),
		middleware.WithStateChange(func(name string, from, to gobreaker.State) {
			mu.Lock()
			changes = append(changes, fmt.Sprintf("%s:%s->%s", name, from, to))
			mu.Unlock()
		}),
	))
	ctx := context.Background()
	start := time.Now()
	h.Handle(ctx, req(api, "1", ""))
	r := h.Handle(ctx, req(api, "2", ""))
	if time.Since(start) >= openTimeout {
		return false
	}
	assert.Equal(t, middleware.CodeCircuitOpen, r.ErrorCode)
	time.Sleep(openTimeout + openTimeout/2) // the breaker turns half-open
	start = time.Now()
	h.Handle(ctx, req(api, "3", "")) // a failed trial opens it again
	r = h.Handle(ctx, req(api, "4", ""))
	if time.Since(start) >= openTimeout {
		return false
	}
	assert.Equal(t, middleware.CodeCircuitOpen, r.ErrorCode)
	time.Sleep(openTimeout + openTimeout/2)
	fail.Store(false)
	assert.Equal(t, tool.StatusSuccess, h.Handle(ctx, req(api, "5", "")).Status)
	assert.Equal(t, tool.StatusSuccess, h.Handle(ctx, req(api, "6", "")).Status) // two successes close it
	assert.Equal(t, tool.StatusSuccess, h.Handle(ctx, req(api, "7", "")).Status)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"api:closed->open", "api:open->half-open", "api:half-open->open",
		"api:open->half-open", "api:half-open->closed",
	}, changes)
	return true
}

// TestBreakerUnder100ConcurrentCalls checks that a half-open breaker lets
// exactly its trial calls through when 100 calls arrive at once, and that
// the storm that trips it leaves it open.
func TestBreakerUnder100ConcurrentCalls(t *testing.T) {
	retryWhileTooSlow(t, 300*time.Millisecond, breakerUnder100ConcurrentCalls)
}

// breakerUnder100ConcurrentCalls is TestBreakerUnder100ConcurrentCalls
// with the open timeout given. It reports false, having checked nothing
// more, if the storm that trips the breaker outlasted openTimeout.
func breakerUnder100ConcurrentCalls(t *testing.T, openTimeout time.Duration) bool {
	const n = 100
	var fail atomic.Bool
	fail.Store(true)
	release := make(chan struct{})
	api := newCounted(t, "api", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		if fail.Load() {
			return tool.Result{}, errDown
		}
		select {
		case <-release:
			return tool.Text("ok"), nil
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	})
	h := handler(middleware.CircuitBreaker(
		middleware.WithConsecutiveFailures(5),
		middleware.WithOpenTimeout(openTimeout),
		middleware.WithHalfOpenCalls(3),
	))
	var answered atomic.Int64 // calls of the storm answered so far
	storm := func() []tool.Result {
		out := make([]tool.Result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				out[i] = h.Handle(context.Background(), req(api, fmt.Sprint(i), ""))
				answered.Add(1)
			})
		}
		wg.Wait()
		return out
	}
	count := func(rs []tool.Result, code string) int {
		k := 0
		for _, r := range rs {
			if r.ErrorCode == code {
				k++
			}
		}
		return k
	}

	// A storm of failures: every call is answered, each either by the tool
	// or by the breaker, and the breaker ends up open.
	start := time.Now()
	rs := storm()
	assert.Equal(t, int64(n), failing(rs)+int64(count(rs, middleware.CodeCircuitOpen)))
	assert.EqualValues(t, failing(rs), api.Runs())
	assert.GreaterOrEqual(t, api.Runs(), int64(5))
	r := h.Handle(context.Background(), req(api, "x", ""))
	if time.Since(start) >= openTimeout {
		return false
	}
	assert.Equal(t, middleware.CodeCircuitOpen, r.ErrorCode)

	// Half-open: of 100 concurrent calls, exactly 3 trial calls run.
	time.Sleep(openTimeout + 10*time.Millisecond)
	fail.Store(false)
	runsBefore := api.Runs()
	answered.Store(0)
	go func() {
		// The calls that run are released once every call of the storm is
		// running or was turned away: released earlier, the trial calls
		// would close the breaker for calls still on their way to it.
		for answered.Load()+api.Runs()-runsBefore < n {
			time.Sleep(time.Millisecond)
		}
		close(release)
	}()
	rs = storm()
	assert.EqualValues(t, 3, api.Runs()-runsBefore)
	assert.Equal(t, 3, count(rs, ""), "three trial calls succeeded")
	assert.Equal(t, n-3, count(rs, middleware.CodeCircuitOpen))
	var oe *middleware.CircuitOpenError
	for _, r := range rs {
		if errors.As(r.Err, &oe) {
			assert.True(t, oe.HalfOpen)
			break
		}
	}
	// Three successes closed it.
	assert.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(api, "y", "")).Status)
	return true
}

func failing(rs []tool.Result) int64 {
	var k int64
	for _, r := range rs {
		if r.ErrorCode == tool.CodeToolError {
			k++
		}
	}
	return k
}

func TestBreakerIsPerTool(t *testing.T) {
	bad := newCounted(t, "bad", readOnly, failWith(errDown))
	good := newCounted(t, "good", readOnly, ok("fine"))
	h := handler(middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour)))
	h.Handle(context.Background(), req(bad, "1", ""))
	assert.Equal(t, middleware.CodeCircuitOpen, h.Handle(context.Background(), req(bad, "2", "")).ErrorCode)
	assert.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(good, "3", "")).Status)
}

func TestBreakerCountsOnlyFailuresOfTheTool(t *testing.T) {
	cases := []struct {
		name  string
		fn    tool.CallFunc
		args  string
		ctx   func() context.Context
		trips bool
	}{
		{"tool error", failWith(errDown), "", context.Background, true},
		{"panic", func(context.Context, string, json.RawMessage) (tool.Result, error) { panic("x") }, "", context.Background, true},
		{"invalid arguments", ok("x"), `[1]`, context.Background, false},
		{"cancelled", blockUntilDone, "", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, false},
		{"permanent error (a pause, say)", failWith(interruptErr{}), "", context.Background, false},
		{"marked permanent", failWith(middleware.Permanent(errDown)), "", context.Background, false},
		{"error result without error", func(context.Context, string, json.RawMessage) (tool.Result, error) {
			return tool.Result{IsError: true, ErrorCode: "quota"}, nil
		}, "", context.Background, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCounted(t, "t", readOnly, tc.fn)
			h := handler(middleware.CircuitBreaker(middleware.WithConsecutiveFailures(2), middleware.WithOpenTimeout(time.Hour)))
			for i := range 2 {
				h.Handle(tc.ctx(), req(c, fmt.Sprint(i), tc.args))
			}
			r := h.Handle(tc.ctx(), req(c, "probe", tc.args))
			assert.Equal(t, tc.trips, r.ErrorCode == middleware.CodeCircuitOpen, r.Text())
		})
	}
}

func TestBreakerCustomFailureCheck(t *testing.T) {
	quota := newCounted(t, "q", readOnly, ok("over quota"))
	h := handler(middleware.CircuitBreaker(
		middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour),
		middleware.WithFailureCheck(func(r tool.Result) bool { return r.Text() == "over quota" }),
	))
	h.Handle(context.Background(), req(quota, "1", ""))
	assert.Equal(t, middleware.CodeCircuitOpen, h.Handle(context.Background(), req(quota, "2", "")).ErrorCode)
}

func TestBreakerUnknownToolPassesThrough(t *testing.T) {
	h := handler(middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1)))
	for range 3 {
		assert.Equal(t, tool.CodeUnknownTool, h.Handle(context.Background(), req(nil, "1", "")).ErrorCode)
	}
}

func TestBreakerSharedAcrossChains(t *testing.T) {
	bad := newCounted(t, "bad", readOnly, failWith(errDown))
	mw := middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour))
	a, b := handler(mw), handler(mw)
	a.Handle(context.Background(), req(bad, "1", ""))
	assert.Equal(t, middleware.CodeCircuitOpen, b.Handle(context.Background(), req(bad, "2", "")).ErrorCode)
	_ = executor.Chain // chains built from one value share the breakers
}

func TestBreakerCountWindowForgetsOldFailures(t *testing.T) {
	const window = 20 * time.Millisecond
	for _, c := range []struct {
		name     string
		opts     []middleware.BreakerOption
		wantOpen bool
	}{
		{"counts forgotten after the window", []middleware.BreakerOption{middleware.WithCountWindow(window)}, false},
		{"counts kept without a window", []middleware.BreakerOption{middleware.WithCountWindow(0)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			failing := newCounted(t, "api", readOnly, failWith(errDown))
			opts := append([]middleware.BreakerOption{middleware.WithConsecutiveFailures(2), middleware.WithOpenTimeout(time.Hour)}, c.opts...)
			h := handler(middleware.CircuitBreaker(opts...))
			ctx := context.Background()
			h.Handle(ctx, req(failing, "1", ""))
			time.Sleep(3 * window) // the first failure falls out of the window
			h.Handle(ctx, req(failing, "2", ""))
			r := h.Handle(ctx, req(failing, "3", ""))
			assert.Equal(t, c.wantOpen, r.ErrorCode == middleware.CodeCircuitOpen, "result: %s", r.Text())
		})
	}
}

// TestBreakerDoesNotCountCallsTheCallerCancelled checks that a call whose
// caller cancelled it is not counted against the tool, even when what
// answered it (a client inside the breaker, say) reported a plain failure
// rather than a cancellation.
func TestBreakerDoesNotCountCallsTheCallerCancelled(t *testing.T) {
	api := newCounted(t, "api", readOnly, ok("fine"))
	running := make(chan struct{}, 1)
	client := executor.Intercept(func(ctx context.Context, r *executor.Request, next executor.Handler) tool.Result {
		if r.Call.ID == "cancelled" {
			running <- struct{}{}
			<-ctx.Done()
			return tool.ErrorResult(tool.CodeToolError, errors.New("connection closed"))
		}
		return next.Handle(ctx, r)
	})
	h := handler(middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour)), client)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Result)
	go func() { done <- h.Handle(ctx, req(api, "cancelled", "")) }()
	<-running
	cancel()
	assert.Equal(t, tool.CodeToolError, (<-done).ErrorCode)
	r := h.Handle(context.Background(), req(api, "next", ""))
	assert.Equal(t, tool.StatusSuccess, r.Status, "the breaker stayed closed: %s", r.Text())
}
