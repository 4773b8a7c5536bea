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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestCacheKeyIgnoresCallIDAndFormatting(t *testing.T) {
	var n atomic.Int64
	lookup := newCounted(t, "lookup", readOnly, func(_ context.Context, id string, _ json.RawMessage) (tool.Result, error) {
		return tool.Text(fmt.Sprintf("answer #%d", n.Add(1))), nil
	})
	var ends []executor.Event
	ex := executor.Sequential(
		executor.WithMiddleware(middleware.Cache()),
		executor.WithObserver(func(_ context.Context, ev executor.Event) {
			if ev.Kind == executor.ToolEnd {
				ends = append(ends, ev)
			}
		}),
	)
	res, err := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{
			{ID: "first", Name: "lookup", Arguments: json.RawMessage(`{"a":1,"b":[true,null]}`)},
			{ID: "second", Name: "lookup", Arguments: json.RawMessage(` { "b" : [ true , null ], "a" : 1 } `)},
			{ID: "third", Name: "lookup", Arguments: json.RawMessage(`{"a":2}`)},
		},
		Tools: executor.Tools(lookup),
	})
	require.NoError(t, err)
	assert.Equal(t, "answer #1", res[0].Text())
	assert.Equal(t, "answer #1", res[1].Text(), "same arguments in another form: served from the cache")
	assert.Equal(t, "answer #2", res[2].Text(), "other arguments: another entry")
	assert.EqualValues(t, 2, lookup.Runs())
	require.Len(t, ends, 3)
	assert.Equal(t, "second", ends[1].Call.ID, "the cached result answers the current call")
	assert.Equal(t, "answer #1", ends[1].Result.Text())
}

func TestCacheTTL(t *testing.T) {
	clock := newFakeClock()
	lookup := newCounted(t, "lookup", readOnly, ok("fresh"))
	h := handler(middleware.Cache(middleware.WithTTL(time.Minute), middleware.WithClock(clock)))
	ctx := context.Background()
	h.Handle(ctx, req(lookup, "1", ""))
	clock.Advance(59 * time.Second)
	h.Handle(ctx, req(lookup, "2", ""))
	assert.EqualValues(t, 1, lookup.Runs(), "within the TTL")
	clock.Advance(time.Second)
	h.Handle(ctx, req(lookup, "3", ""))
	assert.EqualValues(t, 2, lookup.Runs(), "expired at the TTL")
}

func TestCacheNoTTL(t *testing.T) {
	clock := newFakeClock()
	lookup := newCounted(t, "lookup", readOnly, ok("x"))
	h := handler(middleware.Cache(middleware.WithTTL(0), middleware.WithClock(clock)))
	h.Handle(context.Background(), req(lookup, "1", ""))
	clock.Advance(1000 * time.Hour)
	h.Handle(context.Background(), req(lookup, "2", ""))
	assert.EqualValues(t, 1, lookup.Runs())
}

func TestCacheLRU(t *testing.T) {
	lookup := newCounted(t, "lookup", readOnly, func(_ context.Context, _ string, args json.RawMessage) (tool.Result, error) {
		return tool.Text(string(args)), nil
	})
	h := handler(middleware.Cache(middleware.WithMaxEntries(2)))
	ctx := context.Background()
	get := func(key string) { h.Handle(ctx, req(lookup, "id", `{"k":"`+key+`"}`)) }
	get("a")
	get("b")
	get("a") // a is now the most recently used
	get("c") // evicts b
	require.EqualValues(t, 3, lookup.Runs())
	get("a")
	assert.EqualValues(t, 3, lookup.Runs(), "a stayed")
	get("b")
	assert.EqualValues(t, 4, lookup.Runs(), "b was evicted")
}

func TestCacheOnlySuccesses(t *testing.T) {
	failing := newCounted(t, "flaky", readOnly, failWith(errors.New("down")))
	pending := newCounted(t, "job", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.PendingResult("started"), nil
	})
	h := handler(middleware.Cache())
	for range 3 {
		h.Handle(context.Background(), req(failing, "x", ""))
		h.Handle(context.Background(), req(pending, "y", ""))
	}
	assert.EqualValues(t, 3, failing.Runs(), "errors are not cached")
	assert.EqualValues(t, 3, pending.Runs(), "pending results are not cached")
}

func TestCacheEligibility(t *testing.T) {
	cases := []struct {
		name string
		meta tool.Metadata
		opts []middleware.CacheOption
		args string
		runs int64
	}{
		{"read-only", readOnly, nil, `{}`, 1},
		{"not read-only", tool.Metadata{}, nil, `{}`, 3},
		{"opted in", tool.Metadata{}, []middleware.CacheOption{middleware.WithCacheable(func(*executor.Request) bool { return true })}, `{}`, 1},
		{"opted out", readOnly, []middleware.CacheOption{middleware.WithCacheable(func(*executor.Request) bool { return false })}, `{}`, 3},
		{"invalid JSON, repaired", readOnly, nil, `{"a":1,`, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCounted(t, "t", tc.meta, ok("v"))
			h := executor.Chain(executor.Terminal(tool.NewInvoker(tool.WithJSONRepair(true))), middleware.Cache(tc.opts...))
			for range 3 {
				h.Handle(context.Background(), req(c, "id", tc.args))
			}
			assert.Equal(t, tc.runs, c.Runs())
		})
	}
	t.Run("unknown tool", func(t *testing.T) {
		h := handler(middleware.Cache(middleware.WithCacheable(func(*executor.Request) bool { return true })))
		r := h.Handle(context.Background(), req(nil, "id", ""))
		assert.Equal(t, tool.CodeUnknownTool, r.ErrorCode)
	})
}

func TestCacheResultsAreCopies(t *testing.T) {
	lookup := newCounted(t, "lookup", readOnly, ok("original"))
	h := handler(middleware.Cache())
	r := h.Handle(context.Background(), req(lookup, "1", ""))
	r.Content[0].Text = "tampered"
	r2 := h.Handle(context.Background(), req(lookup, "2", ""))
	r2.Content[0].Text = "tampered again"
	assert.Equal(t, "original", h.Handle(context.Background(), req(lookup, "3", "")).Text())
}

func TestCacheResultsHaveMetadataOfTheirOwn(t *testing.T) {
	lookup := newCounted(t, "lookup", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		r := tool.Text("v")
		r.Metadata = map[string]string{"source": "origin"}
		return r, nil
	})
	h := handler(middleware.Cache())
	first := h.Handle(context.Background(), req(lookup, "1", ""))
	first.Metadata["source"] = "tampered"
	second := h.Handle(context.Background(), req(lookup, "2", ""))
	assert.Equal(t, "origin", second.Metadata["source"], "the cached result")
	second.Metadata["call"] = "2"
	assert.Equal(t, map[string]string{"source": "origin"}, h.Handle(context.Background(), req(lookup, "3", "")).Metadata)
	assert.EqualValues(t, 1, lookup.Runs())
}

// TestCacheSharesInFlight checks that identical calls in flight share one
// execution. The tool fails, and failures are never cached: only the shared
// execution can explain a single run.
func TestCacheSharesInFlight(t *testing.T) {
	const n = 20
	release := make(chan struct{})
	slow := newCounted(t, "slow", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return tool.Result{}, errors.New("shared failure")
	})
	var joined atomic.Int64
	h := handler(middleware.Cache(middleware.WithWaitHook(func() { joined.Add(1) })))
	results := make([]tool.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = h.Handle(context.Background(), req(slow, fmt.Sprint(i), `{"q":"same"}`)) })
	}
	require.Eventually(t, func() bool { return joined.Load() == n-1 && slow.Runs() == 1 }, 10*time.Second, time.Millisecond,
		"every call but the one that runs the tool joins the flight")
	close(release)
	wg.Wait()
	assert.EqualValues(t, 1, slow.Runs())
	for _, r := range results {
		assert.Contains(t, r.Text(), "shared failure")
	}
}

func TestCacheWaiterStopsWaitingWhenItsContextEnds(t *testing.T) {
	release := make(chan struct{})
	slow := newCounted(t, "slow", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		<-release
		return tool.Text("done"), nil
	})
	h := handler(middleware.Cache())
	leader := make(chan tool.Result)
	go func() { leader <- h.Handle(context.Background(), req(slow, "1", "")) }()
	require.Eventually(t, func() bool { return slow.Runs() == 1 }, 5*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := h.Handle(ctx, req(slow, "2", ""))
	assert.Equal(t, tool.StatusCancelled, r.Status)
	close(release)
	assert.Equal(t, "done", (<-leader).Text())
	assert.EqualValues(t, 1, slow.Runs())
}

func TestCacheWaiterRunsItselfWhenTheLeaderIsCancelled(t *testing.T) {
	started := make(chan struct{}, 4)
	var first atomic.Bool
	slow := newCounted(t, "slow", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		started <- struct{}{}
		if first.CompareAndSwap(false, true) {
			<-ctx.Done() // the first run is the leader's: it is cancelled
			return tool.Result{}, ctx.Err()
		}
		return tool.Text("fresh run"), nil
	})
	var joined atomic.Int64
	h := handler(middleware.Cache(middleware.WithWaitHook(func() { joined.Add(1) })))
	lctx, cancelLeader := context.WithCancel(context.Background())
	leader := make(chan tool.Result)
	go func() { leader <- h.Handle(lctx, req(slow, "1", "")) }()
	<-started
	waiter := make(chan tool.Result)
	go func() { waiter <- h.Handle(context.Background(), req(slow, "2", "")) }()
	require.Eventually(t, func() bool { return joined.Load() == 1 }, 10*time.Second, time.Millisecond, "the waiter joins the flight")
	cancelLeader()
	assert.Equal(t, tool.StatusCancelled, (<-leader).Status)
	assert.Equal(t, "fresh run", (<-waiter).Text())
}

func TestCacheConcurrentMixedKeys(t *testing.T) {
	lookup := newCounted(t, "lookup", readOnly, func(_ context.Context, _ string, args json.RawMessage) (tool.Result, error) {
		return tool.Text(string(args)), nil
	})
	h := handler(middleware.Cache(middleware.WithMaxEntries(8)))
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			args := fmt.Sprintf(`{"k":%d}`, i%16)
			r := h.Handle(context.Background(), req(lookup, fmt.Sprint(i), args))
			assert.Equal(t, args, r.Text())
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, lookup.Runs(), int64(200))
	assert.GreaterOrEqual(t, lookup.Runs(), int64(16))
}

// runLeaderAndFollower runs two identical calls of c through h: the first
// starts the execution, the second joins it while it runs (joined tells
// when), and release lets the tool finish.
func runLeaderAndFollower(t *testing.T, h executor.Handler, c *counted, joined <-chan struct{}, release chan<- struct{}) (leader, follower tool.Result) {
	t.Helper()
	lch, fch := make(chan tool.Result), make(chan tool.Result)
	go func() { lch <- h.Handle(context.Background(), req(c, "leader", `{"q":1}`)) }()
	require.Eventually(t, func() bool { return c.Runs() == 1 }, 5*time.Second, time.Millisecond)
	go func() { fch <- h.Handle(context.Background(), req(c, "follower", `{"q":1}`)) }()
	<-joined
	close(release)
	return <-lch, <-fch
}

// waitSignal returns a wait hook that signals on the returned channel.
func waitSignal() (func(), <-chan struct{}) {
	ch := make(chan struct{}, 16)
	return func() { ch <- struct{}{} }, ch
}

// TestCacheSharesATimeoutOfALiveLeader checks that a shared execution that
// timed out on its own (an inner Timeout, say), while the call that started
// it was still live, answers every waiting call: it is not run again.
func TestCacheSharesATimeoutOfALiveLeader(t *testing.T) {
	release := make(chan struct{})
	var first atomic.Bool
	slow := newCounted(t, "slow", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		if first.CompareAndSwap(false, true) {
			<-release
			r := tool.ErrorResult(tool.CodeTimeout, fmt.Errorf("upstream: %w", context.DeadlineExceeded))
			r.Status = tool.StatusTimeout
			return r, nil
		}
		return tool.Text("a later run"), nil
	})
	hook, joined := waitSignal()
	h := handler(middleware.Cache(middleware.WithWaitHook(hook)))
	leader, follower := runLeaderAndFollower(t, h, slow, joined, release)
	assert.Equal(t, tool.StatusTimeout, leader.Status)
	assert.Equal(t, tool.StatusTimeout, follower.Status)
	assert.EqualValues(t, 1, slow.Runs(), "a timeout of a live leader is shared, not run again")
}

// TestCacheDoesNotSharePendingResults checks that a call waiting for an
// identical call whose tool answers pending runs the tool itself: a pending
// result is completed later under the ID of the call that got it, so
// handing it to another call would leave that call unanswered.
func TestCacheDoesNotSharePendingResults(t *testing.T) {
	release := make(chan struct{})
	job := newCounted(t, "job", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		<-release
		return tool.PendingResult("started"), nil
	})
	hook, joined := waitSignal()
	h := handler(middleware.Cache(middleware.WithWaitHook(hook)))
	leader, follower := runLeaderAndFollower(t, h, job, joined, release)
	assert.Equal(t, tool.StatusPending, leader.Status)
	assert.Equal(t, tool.StatusPending, follower.Status)
	assert.EqualValues(t, 2, job.Runs(), "each call starts its own long-running work")
}

// TestCacheSharesASuccessInFlight checks the ordinary case with the wait
// hook: the waiting call gets the result of the one execution.
func TestCacheSharesASuccessInFlight(t *testing.T) {
	release := make(chan struct{})
	slow := newCounted(t, "slow", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		<-release
		return tool.Text("done"), nil
	})
	hook, joined := waitSignal()
	h := handler(middleware.Cache(middleware.WithWaitHook(hook)))
	leader, follower := runLeaderAndFollower(t, h, slow, joined, release)
	assert.Equal(t, "done", leader.Text())
	assert.Equal(t, "done", follower.Text())
	assert.EqualValues(t, 1, slow.Runs())
}

// TestCacheResultsShareNoBytes checks that the bytes of JSON and image
// parts are copied too: changing them in one result changes neither the
// cache nor another caller's result.
func TestCacheResultsShareNoBytes(t *testing.T) {
	lookup := newCounted(t, "lookup", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Parts(model.JSONPart(json.RawMessage(`{"v":1}`)), model.ImagePart("image/png", []byte{1, 2, 3})), nil
	})
	h := handler(middleware.Cache())
	first := h.Handle(context.Background(), req(lookup, "1", ""))
	second := h.Handle(context.Background(), req(lookup, "2", ""))
	first.Content[0].JSON[5] = '9'
	first.Content[1].Data[0] = 9
	assert.JSONEq(t, `{"v":1}`, string(second.Content[0].JSON), "another caller's result")
	assert.Equal(t, []byte{1, 2, 3}, second.Content[1].Data)
	third := h.Handle(context.Background(), req(lookup, "3", ""))
	assert.JSONEq(t, `{"v":1}`, string(third.Content[0].JSON), "the cached result")
	assert.Equal(t, []byte{1, 2, 3}, third.Content[1].Data)
	assert.EqualValues(t, 1, lookup.Runs())
}

// TestCacheWaiterRunsItselfWhenTheLeaderGaveUp checks that a failure of the
// shared execution is not handed to a live waiting call when the call that
// started it had been cancelled, even if the tool reported its cancellation
// as a plain error.
func TestCacheWaiterRunsItselfWhenTheLeaderGaveUp(t *testing.T) {
	var first atomic.Bool
	leaderRunning := make(chan struct{})
	api := newCounted(t, "api", readOnly, ok("fresh run"))
	// A client that reports a cancelled request as a plain failure.
	client := executor.Intercept(func(ctx context.Context, r *executor.Request, next executor.Handler) tool.Result {
		if first.CompareAndSwap(false, true) {
			close(leaderRunning)
			<-ctx.Done()
			return tool.ErrorResult(tool.CodeToolError, errors.New("connection closed"))
		}
		return next.Handle(ctx, r)
	})
	hook, joined := waitSignal()
	h := handler(middleware.Cache(middleware.WithWaitHook(hook)), client)
	lctx, cancelLeader := context.WithCancel(context.Background())
	leader := make(chan tool.Result)
	go func() { leader <- h.Handle(lctx, req(api, "1", "")) }()
	<-leaderRunning
	waiter := make(chan tool.Result)
	go func() { waiter <- h.Handle(context.Background(), req(api, "2", "")) }()
	<-joined
	cancelLeader()
	assert.Equal(t, tool.StatusCancelled, (<-leader).Status)
	assert.Equal(t, "fresh run", (<-waiter).Text())
	assert.EqualValues(t, 1, api.Runs(), "the waiting call ran the tool itself")
}
