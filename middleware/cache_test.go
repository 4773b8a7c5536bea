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
	var arrived atomic.Int64
	arrive := executor.Intercept(func(ctx context.Context, r *executor.Request, next executor.Handler) tool.Result {
		arrived.Add(1)
		return next.Handle(ctx, r)
	})
	h := handler(arrive, middleware.Cache())
	results := make([]tool.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = h.Handle(context.Background(), req(slow, fmt.Sprint(i), `{"q":"same"}`)) })
	}
	require.Eventually(t, func() bool { return arrived.Load() == n && slow.Runs() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // let the last arrivals join the flight
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
	var arrived atomic.Int64
	arrive := executor.Intercept(func(ctx context.Context, r *executor.Request, next executor.Handler) tool.Result {
		arrived.Add(1)
		return next.Handle(ctx, r)
	})
	h := handler(arrive, middleware.Cache())
	lctx, cancelLeader := context.WithCancel(context.Background())
	leader := make(chan tool.Result)
	go func() { leader <- h.Handle(lctx, req(slow, "1", "")) }()
	<-started
	waiter := make(chan tool.Result)
	go func() { waiter <- h.Handle(context.Background(), req(slow, "2", "")) }()
	require.Eventually(t, func() bool { return arrived.Load() == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // let the waiter join the flight
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
