package middleware_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/tool"
)

func TestRateLimitReject(t *testing.T) {
	clock := newFakeClock()
	c := newCounted(t, "api", readOnly, ok("x"))
	h := handler(middleware.RateLimit(1, 2, middleware.WithReject(), middleware.WithClock(clock)))
	ctx := context.Background()
	assert.Equal(t, tool.StatusSuccess, h.Handle(ctx, req(c, "1", "")).Status)
	assert.Equal(t, tool.StatusSuccess, h.Handle(ctx, req(c, "2", "")).Status)
	r := h.Handle(ctx, req(c, "3", ""))
	assert.Equal(t, middleware.CodeRateLimited, r.ErrorCode)
	assert.ErrorIs(t, r.Err, middleware.ErrRateLimited)
	var rl *middleware.RateLimitError
	require.ErrorAs(t, r.Err, &rl)
	assert.Equal(t, time.Second, rl.RetryAfter)
	assert.Contains(t, r.Text(), "try again in 1s")
	assert.EqualValues(t, 2, c.Runs())
	clock.Advance(time.Second)
	assert.Equal(t, tool.StatusSuccess, h.Handle(ctx, req(c, "4", "")).Status)
	assert.Empty(t, clock.Sleeps(), "rejecting never waits")
}

func TestRateLimitWait(t *testing.T) {
	clock := newFakeClock()
	c := newCounted(t, "api", readOnly, ok("x"))
	h := handler(middleware.RateLimit(10, 1, middleware.WithClock(clock)))
	for i := range 3 {
		assert.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(c, fmt.Sprint(i), "")).Status)
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, clock.Sleeps())
	assert.EqualValues(t, 3, c.Runs())
}

func TestRateLimitWaitBeyondDeadlineFailsAtOnce(t *testing.T) {
	clock := newFakeClock()
	c := newCounted(t, "api", readOnly, ok("x"))
	h := handler(middleware.RateLimit(1, 1, middleware.WithClock(clock)))
	h.Handle(context.Background(), req(c, "1", ""))
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(500*time.Millisecond))
	defer cancel()
	r := h.Handle(ctx, req(c, "2", ""))
	assert.Equal(t, middleware.CodeRateLimited, r.ErrorCode)
	assert.Empty(t, clock.Sleeps())
	// The refused call gave its reservation back: the next call waits only
	// for the token the first call used.
	h.Handle(context.Background(), req(c, "3", ""))
	assert.Equal(t, []time.Duration{time.Second}, clock.Sleeps())
}

func TestRateLimitCancelledWhileWaiting(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock.OnSleep(func(time.Duration) { cancel() })
	c := newCounted(t, "api", readOnly, ok("x"))
	h := handler(middleware.RateLimit(1, 1, middleware.WithClock(clock)))
	h.Handle(context.Background(), req(c, "1", ""))
	r := h.Handle(ctx, req(c, "2", ""))
	assert.Equal(t, tool.StatusCancelled, r.Status)
	assert.EqualValues(t, 1, c.Runs())
}

func TestRateLimitScopes(t *testing.T) {
	cases := []struct {
		name    string
		opts    []middleware.RateLimitOption
		bPasses bool
		cPasses bool
	}{
		{"per tool", nil, true, true},
		{"global", []middleware.RateLimitOption{middleware.WithGlobalLimit()}, false, false},
		{"global with a tool of its own", []middleware.RateLimitOption{middleware.WithGlobalLimit(), middleware.WithToolRate("c", 1, 1)}, false, true},
		{"per tool with an override", []middleware.RateLimitOption{middleware.WithToolRate("c", 1, 0)}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			a := newCounted(t, "a", readOnly, ok("a"))
			b := newCounted(t, "b", readOnly, ok("b"))
			c := newCounted(t, "c", readOnly, ok("c"))
			h := handler(middleware.RateLimit(1, 1, append(tc.opts, middleware.WithReject(), middleware.WithClock(clock))...))
			require.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(a, "1", "")).Status)
			assert.Equal(t, tc.bPasses, h.Handle(context.Background(), req(b, "2", "")).Status == tool.StatusSuccess)
			assert.Equal(t, tc.cPasses, h.Handle(context.Background(), req(c, "3", "")).Status == tool.StatusSuccess)
		})
	}
}

func TestRateLimitUnder100ConcurrentCalls(t *testing.T) {
	clock := newFakeClock()
	c := newCounted(t, "api", readOnly, ok("x"))
	h := handler(middleware.RateLimit(rate.Every(time.Hour), 10, middleware.WithReject(), middleware.WithClock(clock)))
	var wg sync.WaitGroup
	var mu sync.Mutex
	limited := 0
	for i := range 100 {
		wg.Go(func() {
			r := h.Handle(context.Background(), req(c, fmt.Sprint(i), ""))
			if r.ErrorCode == middleware.CodeRateLimited {
				mu.Lock()
				limited++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 10, c.Runs(), "exactly the burst went through")
	assert.Equal(t, 90, limited)
}

func TestRateLimitUnknownToolPassesThrough(t *testing.T) {
	h := handler(middleware.RateLimit(0, 0, middleware.WithReject()))
	assert.Equal(t, tool.CodeUnknownTool, h.Handle(context.Background(), req(nil, "1", "")).ErrorCode)
}

func TestRateLimitZeroBurstWaitingRefuses(t *testing.T) {
	c := newCounted(t, "api", readOnly, ok("x"))
	r := handler(middleware.RateLimit(1, 0)).Handle(context.Background(), req(c, "1", ""))
	assert.Equal(t, middleware.CodeRateLimited, r.ErrorCode)
	assert.ErrorIs(t, r.Err, middleware.ErrRateLimited)
	assert.Zero(t, c.Runs())
}

// TestRateLimitThatAllowsNoMoreCallsRefusesAtOnce checks limits that never
// give another token (a rate of zero or less once the burst is spent, or a
// burst below one): a call is refused at once, in either mode, with an
// error that is not transient (waiting would not help), never made to wait
// forever or told to try again soon.
func TestRateLimitThatAllowsNoMoreCallsRefusesAtOnce(t *testing.T) {
	cases := []struct {
		name   string
		limit  rate.Limit
		burst  int
		allows int64 // calls that pass before the refusals
	}{
		{"zero rate", 0, 1, 1},
		{"negative rate", -1, 2, 2},
		{"zero burst", 5, 0, 0},
		{"negative burst", 5, -1, 0},
	}
	for _, tc := range cases {
		for _, reject := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reject=%v", tc.name, reject), func(t *testing.T) {
				clock := newFakeClock()
				opts := []middleware.RateLimitOption{middleware.WithClock(clock)}
				if reject {
					opts = append(opts, middleware.WithReject())
				}
				c := newCounted(t, "api", readOnly, ok("x"))
				h := handler(middleware.RateLimit(tc.limit, tc.burst, opts...))
				for i := range tc.allows {
					require.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(c, fmt.Sprint(i), "")).Status)
				}
				for range 2 {
					r := h.Handle(context.Background(), req(c, "late", ""))
					assert.Equal(t, middleware.CodeRateLimited, r.ErrorCode)
					assert.ErrorIs(t, r.Err, middleware.ErrRateLimited)
					assert.False(t, middleware.IsTransient(r.Err), "a refusal that waiting cannot change: %v", r.Err)
					assert.Contains(t, r.Text(), `tool "api"`)
				}
				assert.Equal(t, tc.allows, c.Runs())
				assert.Empty(t, clock.Sleeps(), "nothing to wait for")
			})
		}
	}
}
