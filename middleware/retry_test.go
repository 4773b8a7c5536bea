package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestRetryCountsAndDelays(t *testing.T) {
	cases := []struct {
		name     string
		opts     []middleware.RetryOption
		failures int64
		runs     int64
		status   tool.Status
		sleeps   []time.Duration
	}{
		{
			name:     "succeeds on the third attempt",
			opts:     []middleware.RetryOption{middleware.WithMaxAttempts(3), middleware.WithInitialInterval(100 * time.Millisecond), middleware.WithJitter(0)},
			failures: 2, runs: 3, status: tool.StatusSuccess,
			sleeps: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond},
		},
		{
			name:     "gives up after the attempts",
			opts:     []middleware.RetryOption{middleware.WithMaxAttempts(4), middleware.WithInitialInterval(time.Second), middleware.WithBackoffFactor(3), middleware.WithJitter(0)},
			failures: 10, runs: 4, status: tool.StatusFailed,
			sleeps: []time.Duration{time.Second, 3 * time.Second, 9 * time.Second},
		},
		{
			name: "waits are capped",
			opts: []middleware.RetryOption{middleware.WithMaxAttempts(5), middleware.WithInitialInterval(time.Second),
				middleware.WithBackoffFactor(10), middleware.WithMaxInterval(3 * time.Second), middleware.WithJitter(0)},
			failures: 10, runs: 5, status: tool.StatusFailed,
			sleeps: []time.Duration{time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		},
		{
			name: "max elapsed time",
			opts: []middleware.RetryOption{middleware.WithMaxAttempts(10), middleware.WithInitialInterval(time.Second),
				middleware.WithMaxElapsedTime(2500 * time.Millisecond), middleware.WithJitter(0)},
			failures: 10, runs: 2, status: tool.StatusFailed,
			sleeps: []time.Duration{time.Second}, // the next wait (2s) would end after 3s > 2.5s
		},
		{
			name:     "one attempt",
			opts:     []middleware.RetryOption{middleware.WithMaxAttempts(1)},
			failures: 10, runs: 1, status: tool.StatusFailed,
		},
		{
			name:     "defaults",
			opts:     []middleware.RetryOption{middleware.WithJitter(0)},
			failures: 10, runs: middleware.DefaultMaxAttempts, status: tool.StatusFailed,
			sleeps: []time.Duration{middleware.DefaultInitialInterval, 2 * middleware.DefaultInitialInterval},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			c := newCounted(t, "api", readOnly, failTimes(tc.failures, errFlaky))
			h := handler(middleware.Retry(append(tc.opts, middleware.WithClock(clock))...))
			r := h.Handle(context.Background(), req(c, "1", ""))
			assert.Equal(t, tc.status, r.Status)
			assert.Equal(t, tc.runs, c.Runs())
			assert.Equal(t, tc.sleeps, clock.Sleeps())
		})
	}
}

// TestRetryWaitsAsLongAsTheFailureAsks: a provider's Retry-After and a
// rate limit's wait replace the backoff, and one longer than the maximum
// interval ends the retries.
func TestRetryWaitsAsLongAsTheFailureAsks(t *testing.T) {
	asked := &model.ProviderError{Provider: "p", StatusCode: 429, RetryAfter: 1500 * time.Millisecond}
	limited := &middleware.RateLimitError{Tool: "api", RetryAfter: 700 * time.Millisecond}
	for name, tc := range map[string]struct {
		err    error
		runs   int64
		sleeps []time.Duration
	}{
		"retry-after":         {asked, 3, []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}},
		"rate limit":          {limited, 3, []time.Duration{700 * time.Millisecond, 700 * time.Millisecond}},
		"longer than the cap": {&model.ProviderError{Provider: "p", StatusCode: 503, RetryAfter: time.Hour}, 1, nil},
		"asked for no wait":   {&model.ProviderError{Provider: "p", StatusCode: 503}, 3, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
	} {
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock()
			c := newCounted(t, "api", readOnly, failTimes(10, tc.err))
			h := handler(middleware.Retry(middleware.WithClock(clock), middleware.WithInitialInterval(100*time.Millisecond),
				middleware.WithMaxInterval(10*time.Second), middleware.WithJitter(0)))
			r := h.Handle(context.Background(), req(c, "1", ""))
			assert.Equal(t, tool.StatusFailed, r.Status)
			assert.Equal(t, tc.runs, c.Runs())
			assert.Equal(t, tc.sleeps, clock.Sleeps())
		})
	}
}

func TestRetryJitterBounds(t *testing.T) {
	clock := newFakeClock()
	c := newCounted(t, "api", readOnly, failTimes(100, errFlaky))
	h := handler(middleware.Retry(middleware.WithClock(clock), middleware.WithMaxAttempts(6),
		middleware.WithInitialInterval(time.Second), middleware.WithBackoffFactor(2), middleware.WithMaxInterval(time.Minute), middleware.WithJitter(0.5)))
	h.Handle(context.Background(), req(c, "1", ""))
	sleeps := clock.Sleeps()
	require.Len(t, sleeps, 5)
	distinct := map[time.Duration]bool{}
	for i, d := range sleeps {
		w := time.Second << i
		assert.GreaterOrEqual(t, d, w/2, "wait %d", i)
		assert.LessOrEqual(t, d, w, "wait %d", i)
		distinct[d] = true
	}
	assert.Greater(t, len(distinct), 1, "jitter varies the waits")
}

func TestRetryNeverRetries(t *testing.T) {
	always := middleware.WithRetryOn(func(context.Context, middleware.RetryInfo) bool { return true })
	denyAll := tool.PolicyFunc(func(context.Context, tool.PermissionRequest) (tool.Decision, error) {
		return tool.Deny("no"), nil
	})
	cases := []struct {
		name string
		fn   tool.CallFunc
		args string
		mws  []executor.Middleware
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"success", ok("fine"), "", nil, nil},
		{"invalid arguments", ok("x"), `[1]`, nil, nil},
		{"permanent error", failWith(middleware.Permanent(errFlaky)), "", nil, nil},
		{"error with a Permanent method", failWith(interruptErr{}), "", nil, nil},
		{"cancelled by the tool's context", failWith(fmt.Errorf("gave up: %w", context.Canceled)), "", nil, nil},
		{"denied", ok("x"), "", []executor.Middleware{middleware.Permission(denyAll)}, nil},
		{"pending", func(context.Context, string, json.RawMessage) (tool.Result, error) {
			return tool.PendingResult("later"), nil
		}, "", nil, nil},
		{"caller cancelled", blockUntilDone, "", nil, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		{"caller's deadline", blockUntilDone, "", nil, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 5*time.Millisecond)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			c := newCounted(t, "t", readOnly, tc.fn)
			mws := append([]executor.Middleware{middleware.Retry(always, middleware.WithClock(clock), middleware.WithMaxAttempts(5))}, tc.mws...)
			ctx := context.Background()
			if tc.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tc.ctx()
				defer cancel()
			}
			handler(mws...).Handle(ctx, req(c, "1", tc.args))
			assert.LessOrEqual(t, c.Runs(), int64(1))
			assert.Empty(t, clock.Sleeps(), "no retry")
		})
	}
}

// interruptErr stands for an error of another package that asks a run to
// wait for a person; it marks itself permanent.
type interruptErr struct{}

func (interruptErr) Error() string   { return "interrupted: waiting for approval" }
func (interruptErr) Permanent() bool { return true }

func TestDefaultRetryOn(t *testing.T) {
	cases := []struct {
		name  string
		res   tool.Result
		retry bool
	}{
		{"marked transient", tool.ErrorResult(tool.CodeToolError, fmt.Errorf("wrapped: %w", errFlaky)), true},
		{"io.EOF", tool.ErrorResult(tool.CodeToolError, io.EOF), true},
		{"unexpected EOF", tool.ErrorResult(tool.CodeToolError, io.ErrUnexpectedEOF), true},
		{"connection reset", tool.ErrorResult(tool.CodeToolError, &net.OpError{Op: "read", Err: syscall.ECONNRESET}), true},
		{"provider 503", tool.ErrorResult(tool.CodeToolError, &model.ProviderError{StatusCode: 503}), true},
		{"provider 400", tool.ErrorResult(tool.CodeToolError, &model.ProviderError{StatusCode: 400}), false},
		{"rate limited", tool.ErrorResult(middleware.CodeRateLimited, &middleware.RateLimitError{Tool: "t"}), true},
		{"timed out", tool.Result{IsError: true, Status: tool.StatusTimeout, ErrorCode: tool.CodeTimeout, Err: context.DeadlineExceeded}, true},
		{"plain error", tool.ErrorResult(tool.CodeToolError, errors.New("bad input")), false},
		{"no error", tool.Result{IsError: true, Status: tool.StatusFailed}, false},
		{"circuit open", tool.ErrorResult(middleware.CodeCircuitOpen, &middleware.CircuitOpenError{Tool: "t"}), false},
		{"panic", tool.ErrorResult(tool.CodePanic, &tool.PanicError{Tool: "t", Value: "x"}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.retry, middleware.DefaultRetryOn(context.Background(), middleware.RetryInfo{Attempt: 1, Result: tc.res}))
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, middleware.DefaultRetryOn(ctx, middleware.RetryInfo{Result: tool.ErrorResult(tool.CodeToolError, errFlaky)}), "not once the caller is gone")
}

func TestRetryPredicateSeesAttempts(t *testing.T) {
	clock := newFakeClock()
	var seen []int
	c := newCounted(t, "api", readOnly, failTimes(10, errors.New("custom")))
	h := handler(middleware.Retry(middleware.WithClock(clock), middleware.WithMaxAttempts(4), middleware.WithJitter(0),
		middleware.WithInitialInterval(time.Second),
		middleware.WithRetryOn(func(_ context.Context, info middleware.RetryInfo) bool {
			seen = append(seen, info.Attempt)
			assert.Equal(t, "api", info.Request.Call.Name)
			assert.Contains(t, info.Result.Text(), "custom")
			return info.Attempt < 3
		})))
	h.Handle(context.Background(), req(c, "1", ""))
	assert.Equal(t, []int{1, 2, 3}, seen)
	assert.EqualValues(t, 3, c.Runs())
}

func TestRetryCancelledWhileWaiting(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock.OnSleep(func(time.Duration) { cancel() })
	c := newCounted(t, "api", readOnly, failTimes(10, errFlaky))
	r := handler(middleware.Retry(middleware.WithClock(clock))).Handle(ctx, req(c, "1", ""))
	assert.Equal(t, tool.StatusCancelled, r.Status)
	assert.ErrorIs(t, r.Err, context.Canceled)
	assert.ErrorIs(t, r.Err, errFlaky, "the failure that led to the wait is kept")
	assert.EqualValues(t, 1, c.Runs())
}

func TestRetryAttemptTimeout(t *testing.T) {
	clock := newFakeClock()
	var n atomic.Int64
	hangsOnce := newCounted(t, "api", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		if n.Add(1) == 1 {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		}
		return tool.Text("second try"), nil
	})
	// The second attempt must start within the attempt timeout, which a
	// loaded machine can make take a while.
	h := handler(middleware.Retry(middleware.WithClock(clock), middleware.WithAttemptTimeout(250*time.Millisecond), middleware.WithJitter(0)))
	r := h.Handle(context.Background(), req(hangsOnce, "1", ""))
	assert.Equal(t, "second try", r.Text())
	assert.EqualValues(t, 2, hangsOnce.Runs())
	assert.Equal(t, []time.Duration{middleware.DefaultInitialInterval}, clock.Sleeps())
}

func TestPermanentAndTransientMarkers(t *testing.T) {
	assert.NoError(t, middleware.Permanent(nil))
	assert.NoError(t, middleware.Transient(nil))
	base := errors.New("base")
	p := middleware.Permanent(base)
	assert.ErrorIs(t, p, base)
	assert.Equal(t, "base", p.Error())
	assert.True(t, middleware.IsPermanent(fmt.Errorf("x: %w", p)))
	assert.True(t, middleware.IsPermanent(errors.Join(errors.New("a"), interruptErr{})))
	assert.False(t, middleware.IsPermanent(base))
	assert.False(t, middleware.IsPermanent(nil))
	tr := middleware.Transient(base)
	assert.ErrorIs(t, tr, base)
	assert.True(t, middleware.IsTransient(fmt.Errorf("x: %w", tr)))
	assert.False(t, middleware.IsTransient(base))
	assert.False(t, middleware.IsTransient(fmt.Errorf("%w: %w", tr, context.Canceled)), "cancellation wins")
}

// TestRetryDoesNotWaitPastTheCallersDeadline checks that Retry does not
// start a wait that would end after the caller's deadline: the last
// attempt's failure answers the call at once, instead of a timeout that
// hides it once the deadline has passed.
func TestRetryDoesNotWaitPastTheCallersDeadline(t *testing.T) {
	clock := newFakeClock()
	c := newCounted(t, "api", readOnly, failTimes(10, errFlaky))
	h := handler(middleware.Retry(middleware.WithClock(clock), middleware.WithMaxAttempts(5),
		middleware.WithInitialInterval(100*time.Millisecond), middleware.WithJitter(0)))
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(250*time.Millisecond))
	defer cancel()
	r := h.Handle(ctx, req(c, "1", ""))
	assert.Equal(t, tool.StatusFailed, r.Status)
	assert.ErrorIs(t, r.Err, errFlaky)
	assert.Contains(t, r.Text(), "connection dropped")
	assert.EqualValues(t, 2, c.Runs(), "the second wait (200ms) would end after the deadline")
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, clock.Sleeps())
}

// TestRetryCancelledWhileWaitingNamesTheFailure checks that a call whose
// caller gives up while Retry waits says, in what the model reads too, why
// it was being retried.
func TestRetryCancelledWhileWaitingNamesTheFailure(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock.OnSleep(func(time.Duration) { cancel() })
	c := newCounted(t, "api", readOnly, failTimes(10, errFlaky))
	r := handler(middleware.Retry(middleware.WithClock(clock))).Handle(ctx, req(c, "1", ""))
	assert.Equal(t, tool.StatusCancelled, r.Status)
	assert.Equal(t, tool.CodeCancelled, r.ErrorCode)
	assert.ErrorIs(t, r.Err, context.Canceled)
	assert.ErrorIs(t, r.Err, errFlaky)
	assert.Contains(t, r.Text(), "was cancelled")
	assert.Contains(t, r.Text(), "connection dropped")
}

func TestRetryCancelledWhileWaitingKeepsWhatTheAttemptReported(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock.OnSleep(func(time.Duration) { cancel() })
	c := newCounted(t, "api", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{Details: "attempt log", Metadata: map[string]string{"region": "eu"}}, errFlaky
	})
	r := handler(middleware.Retry(middleware.WithClock(clock))).Handle(ctx, req(c, "1", ""))
	assert.Equal(t, tool.StatusCancelled, r.Status)
	assert.Equal(t, "attempt log", r.Details)
	assert.Equal(t, map[string]string{"region": "eu"}, r.Metadata)
}

// A result made inside the chain may come without IsError set to match
// its status; Retry reads it as the executor settles it.
func TestRetryReadsResultsAsTheExecutorDoes(t *testing.T) {
	var runs int
	inner := executor.HandlerFunc(func(_ context.Context, r *executor.Request) tool.Result {
		runs++
		if runs == 1 {
			return tool.Result{Status: tool.StatusTimeout, ErrorCode: tool.CodeTimeout, Content: tool.Text("slow").Content}
		}
		return tool.Text("ok")
	})
	clock := newFakeClock()
	h := executor.Chain(inner, middleware.Retry(middleware.WithClock(clock), middleware.WithJitter(0)))
	c := newCounted(t, "api", readOnly, failTimes(0, nil))
	r := h.Handle(context.Background(), req(c, "1", ""))
	assert.Equal(t, 2, runs, "the timeout was retried")
	assert.Equal(t, "ok", r.Text())
}

// askingErr is a tool's error that asks for a wait (RetryDelayer) and is
// transient, as an HTTP service's 429 with Retry-After is.
type askingErr struct{ wait time.Duration }

func (e askingErr) Error() string             { return "busy, retry after " + e.wait.String() }
func (e askingErr) Transient() bool           { return true }
func (e askingErr) RetryDelay() time.Duration { return e.wait }

// TestRetryHonoursTheWaitAToolErrorAsks: a tool's error with a RetryDelay
// method, wrapped or not, replaces the backoff with its wait, and one
// longer than the maximum interval ends the retries.
func TestRetryHonoursTheWaitAToolErrorAsks(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		runs   int64
		sleeps []time.Duration
	}{
		"asked":               {askingErr{900 * time.Millisecond}, 3, []time.Duration{900 * time.Millisecond, 900 * time.Millisecond}},
		"asked, wrapped":      {fmt.Errorf("search: %w", askingErr{2 * time.Second}), 3, []time.Duration{2 * time.Second, 2 * time.Second}},
		"longer than the cap": {askingErr{time.Minute}, 1, nil},
		"asked for no wait":   {askingErr{0}, 3, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
	} {
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock()
			c := newCounted(t, "search", readOnly, failTimes(10, tc.err))
			h := handler(middleware.Retry(middleware.WithClock(clock), middleware.WithInitialInterval(100*time.Millisecond),
				middleware.WithMaxInterval(10*time.Second), middleware.WithJitter(0)))
			r := h.Handle(context.Background(), req(c, "1", ""))
			assert.Equal(t, tool.StatusFailed, r.Status)
			assert.Equal(t, tc.runs, c.Runs())
			assert.Equal(t, tc.sleeps, clock.Sleeps())
		})
	}
}
