package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
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

// The tests in this file pin down what the order of two middlewares means,
// for every pair whose order changes the outcome (docs/middleware.md lists
// them). Each runs the pair both ways.

func TestOrderPermissionAndCache(t *testing.T) {
	// The policy denies guests; the cache key leaves out the call ID, so a
	// guest's call looks like the admin's.
	policy := tool.PolicyFunc(func(_ context.Context, r tool.PermissionRequest) (tool.Decision, error) {
		if strings.HasPrefix(r.Call.ID, "guest") {
			return tool.Deny("guests may not read salaries"), nil
		}
		return tool.Allow(), nil
	})
	for _, tc := range []struct {
		name  string
		order []executor.Middleware
		guest tool.Status
	}{
		{"permission outside cache", []executor.Middleware{middleware.Permission(policy), middleware.Cache()}, tool.StatusDenied},
		{"cache outside permission (leaks)", []executor.Middleware{middleware.Cache(), middleware.Permission(policy)}, tool.StatusSuccess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			salaries := newCounted(t, "salaries", readOnly, ok("secret"))
			h := handler(tc.order...)
			require.Equal(t, "secret", h.Handle(context.Background(), req(salaries, "admin-1", "")).Text())
			assert.Equal(t, tc.guest, h.Handle(context.Background(), req(salaries, "guest-1", "")).Status)
		})
	}
}

func TestOrderRetryAndTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		order  func() []executor.Middleware
		status tool.Status
		runs   int64
	}{
		{"retry outside timeout: a timeout per attempt", func() []executor.Middleware {
			return []executor.Middleware{middleware.Retry(middleware.WithClock(newFakeClock())), middleware.Timeout(20 * time.Millisecond)}
		}, tool.StatusSuccess, 2},
		{"timeout outside retry: one budget for all attempts", func() []executor.Middleware {
			return []executor.Middleware{middleware.Timeout(20 * time.Millisecond), middleware.Retry(middleware.WithClock(newFakeClock()))}
		}, tool.StatusTimeout, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var later atomic.Bool
			hangsOnce := newCounted(t, "api", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
				if !later.Swap(true) {
					<-ctx.Done()
					return tool.Result{}, ctx.Err()
				}
				return tool.Text("ok"), nil
			})
			r := handler(tc.order()...).Handle(context.Background(), req(hangsOnce, "1", ""))
			assert.Equal(t, tc.status, r.Status)
			assert.Equal(t, tc.runs, hangsOnce.Runs())
		})
	}
}

func TestOrderRetryAndCircuitBreaker(t *testing.T) {
	breaker := func() executor.Middleware {
		return middleware.CircuitBreaker(middleware.WithConsecutiveFailures(3), middleware.WithOpenTimeout(time.Hour))
	}
	retry := func() executor.Middleware {
		return middleware.Retry(middleware.WithClock(newFakeClock()), middleware.WithMaxAttempts(3))
	}
	for _, tc := range []struct {
		name   string
		order  []executor.Middleware
		second string // error code of the second call
		runs   int64
	}{
		{"retry outside breaker: every attempt counts", []executor.Middleware{retry(), breaker()}, middleware.CodeCircuitOpen, 3},
		{"breaker outside retry: a call counts once", []executor.Middleware{breaker(), retry()}, tool.CodeToolError, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := newCounted(t, "api", readOnly, failWith(errFlaky))
			h := handler(tc.order...)
			h.Handle(context.Background(), req(down, "1", ""))
			assert.Equal(t, tc.second, h.Handle(context.Background(), req(down, "2", "")).ErrorCode)
			assert.Equal(t, tc.runs, down.Runs())
		})
	}
}

func TestOrderRetryStopsAtAnOpenBreaker(t *testing.T) {
	clock := newFakeClock()
	down := newCounted(t, "api", readOnly, failWith(errFlaky))
	h := handler(middleware.Retry(middleware.WithClock(clock), middleware.WithMaxAttempts(10)),
		middleware.CircuitBreaker(middleware.WithConsecutiveFailures(2), middleware.WithOpenTimeout(time.Hour)))
	r := h.Handle(context.Background(), req(down, "1", ""))
	assert.Equal(t, middleware.CodeCircuitOpen, r.ErrorCode)
	assert.EqualValues(t, 2, down.Runs())
	assert.Len(t, clock.Sleeps(), 2, "two retries, the second refused by the breaker, and no more")
}

func TestOrderRetryAndRateLimit(t *testing.T) {
	limit := func(clock middleware.Clock) executor.Middleware {
		return middleware.RateLimit(1, 2, middleware.WithReject(), middleware.WithClock(clock))
	}
	for _, tc := range []struct {
		name  string
		order func(c middleware.Clock) []executor.Middleware
		runs  int64
		code  string
	}{
		{"retry outside rate limit: every attempt takes a token", func(c middleware.Clock) []executor.Middleware {
			return []executor.Middleware{middleware.Retry(middleware.WithClock(c), middleware.WithInitialInterval(time.Millisecond)), limit(c)}
		}, 2, middleware.CodeRateLimited},
		{"rate limit outside retry: a call takes one token", func(c middleware.Clock) []executor.Middleware {
			return []executor.Middleware{limit(c), middleware.Retry(middleware.WithClock(c), middleware.WithInitialInterval(time.Millisecond))}
		}, 3, tool.CodeToolError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := newCounted(t, "api", readOnly, failWith(errFlaky))
			r := handler(tc.order(newFakeClock())...).Handle(context.Background(), req(down, "1", ""))
			assert.Equal(t, tc.runs, down.Runs())
			assert.Equal(t, tc.code, r.ErrorCode)
		})
	}
}

func TestOrderRateLimitAndTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		order  func() []executor.Middleware
		second tool.Status
	}{
		{"rate limit outside timeout: waiting for a turn is not timed", func() []executor.Middleware {
			return []executor.Middleware{middleware.RateLimit(20, 1), middleware.Timeout(20 * time.Millisecond)}
		}, tool.StatusSuccess},
		{"timeout outside rate limit: the wait counts against the timeout", func() []executor.Middleware {
			return []executor.Middleware{middleware.Timeout(20 * time.Millisecond), middleware.RateLimit(20, 1)}
		}, tool.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast := newCounted(t, "api", readOnly, ok("ok"))
			h := handler(tc.order()...)
			require.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(fast, "1", "")).Status)
			r := h.Handle(context.Background(), req(fast, "2", "")) // must wait 50ms for a token
			assert.Equal(t, tc.second, r.Status, r.Text())
		})
	}
}

func TestOrderCircuitBreakerAndCache(t *testing.T) {
	for _, tc := range []struct {
		name   string
		order  func() []executor.Middleware
		cached tool.Status
	}{
		{"cache outside breaker: cached answers survive an open breaker", func() []executor.Middleware {
			return []executor.Middleware{middleware.Cache(), middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour))}
		}, tool.StatusSuccess},
		{"breaker outside cache: an open breaker refuses everything", func() []executor.Middleware {
			return []executor.Middleware{middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour)), middleware.Cache()}
		}, tool.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newCounted(t, "api", readOnly, func(_ context.Context, _ string, args json.RawMessage) (tool.Result, error) {
				if strings.Contains(string(args), "bad") {
					return tool.Result{}, errDown
				}
				return tool.Text("good"), nil
			})
			h := handler(tc.order()...)
			require.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(api, "1", `{"q":"good"}`)).Status)
			h.Handle(context.Background(), req(api, "2", `{"q":"bad"}`)) // trips the breaker
			assert.Equal(t, tc.cached, h.Handle(context.Background(), req(api, "3", `{"q":"good"}`)).Status)
		})
	}
}

func TestOrderPermissionAndRateLimit(t *testing.T) {
	policy := tool.PolicyFunc(func(_ context.Context, r tool.PermissionRequest) (tool.Decision, error) {
		if r.Call.ID == "denied" {
			return tool.Deny("no"), nil
		}
		return tool.Allow(), nil
	})
	limit := func() executor.Middleware {
		return middleware.RateLimit(1, 1, middleware.WithReject(), middleware.WithClock(newFakeClock()))
	}
	for _, tc := range []struct {
		name   string
		order  []executor.Middleware
		second tool.Status
	}{
		{"permission outside rate limit: denied calls take no token", []executor.Middleware{middleware.Permission(policy), limit()}, tool.StatusSuccess},
		{"rate limit outside permission: denied calls use up tokens", []executor.Middleware{limit(), middleware.Permission(policy)}, tool.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newCounted(t, "api", readOnly, ok("ok"))
			h := handler(tc.order...)
			require.Equal(t, tool.StatusDenied, h.Handle(context.Background(), req(api, "denied", "")).Status)
			assert.Equal(t, tc.second, h.Handle(context.Background(), req(api, "allowed", "")).Status)
		})
	}
}

func TestOrderTimeoutAndCircuitBreaker(t *testing.T) {
	// Both ways, a timed-out call counts as a failure of the tool.
	for _, tc := range []struct {
		name  string
		order func() []executor.Middleware
	}{
		{"breaker outside timeout", func() []executor.Middleware {
			return []executor.Middleware{middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour)), middleware.Timeout(5 * time.Millisecond)}
		}},
		{"timeout outside breaker", func() []executor.Middleware {
			return []executor.Middleware{middleware.Timeout(5 * time.Millisecond), middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour))}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := newCounted(t, "slow", readOnly, blockUntilDone)
			h := handler(tc.order()...)
			assert.Equal(t, tool.StatusTimeout, h.Handle(context.Background(), req(slow, "1", "")).Status)
			assert.Eventually(t, func() bool {
				return h.Handle(context.Background(), req(slow, "2", "")).ErrorCode == middleware.CodeCircuitOpen
			}, 5*time.Second, 5*time.Millisecond)
		})
	}
}

// TestEveryOrderAnswersEveryCall runs a batch through the eight middlewares
// in many orders (the recommended one, its reverse and a fixed random
// sample of the others): whatever the order, every call is answered, with
// the outcome that does not depend on the order.
func TestEveryOrderAnswersEveryCall(t *testing.T) {
	policy := tool.PolicyFunc(func(_ context.Context, r tool.PermissionRequest) (tool.Decision, error) {
		if r.Call.Name == "wipe" {
			return tool.Deny("no"), nil
		}
		return tool.Allow(), nil
	})
	read := newCounted(t, "read", readOnly, ok("data"))
	wipe := newCounted(t, "wipe", tool.Metadata{Destructive: true, ConcurrencySafe: true}, ok("wiped"))
	makeAll := func() []executor.Middleware {
		return []executor.Middleware{
			middleware.OpenTelemetry(),
			middleware.Logging(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))),
			middleware.Permission(policy),
			middleware.Cache(),
			middleware.Retry(middleware.WithClock(newFakeClock())),
			middleware.CircuitBreaker(),
			middleware.RateLimit(1000, 100),
			middleware.Timeout(time.Minute),
		}
	}
	orders := [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 60 {
		orders = append(orders, rng.Perm(8))
	}
	batch := executor.Batch{
		Calls: []model.ToolCall{{ID: "1", Name: "read"}, {ID: "2", Name: "wipe"}, {ID: "3", Name: "raed"}, {ID: "4", Name: "read"}},
		Tools: executor.Tools(read, wipe),
	}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			all := makeAll()
			mws := make([]executor.Middleware, len(order))
			for i, k := range order {
				mws[i] = all[k]
			}
			res, err := executor.Parallel(executor.WithMiddleware(mws...)).Execute(context.Background(), batch)
			require.NoError(t, err)
			require.Len(t, res, 4)
			assert.Equal(t, "data", res[0].Text())
			assert.Equal(t, tool.StatusDenied, res[1].Status)
			assert.Equal(t, tool.CodeUnknownTool, res[2].ErrorCode)
			assert.Equal(t, "data", res[3].Text())
		})
	}
	assert.Zero(t, wipe.Runs(), "no order lets a denied call run")
}

func TestOrderCacheAndRateLimit(t *testing.T) {
	limit := func() executor.Middleware {
		return middleware.RateLimit(1, 1, middleware.WithReject(), middleware.WithClock(newFakeClock()))
	}
	for _, tc := range []struct {
		name  string
		order func() []executor.Middleware
		hit   tool.Status
	}{
		{"cache outside rate limit: hits take no token", func() []executor.Middleware {
			return []executor.Middleware{middleware.Cache(), limit()}
		}, tool.StatusSuccess},
		{"rate limit outside cache: hits take tokens too", func() []executor.Middleware {
			return []executor.Middleware{limit(), middleware.Cache()}
		}, tool.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := newCounted(t, "lookup", readOnly, ok("v"))
			h := handler(tc.order()...)
			require.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(lookup, "1", "")).Status)
			assert.Equal(t, tc.hit, h.Handle(context.Background(), req(lookup, "2", "")).Status)
			assert.EqualValues(t, 1, lookup.Runs())
		})
	}
}

func TestOrderCircuitBreakerAndRateLimit(t *testing.T) {
	limit := func() executor.Middleware {
		return middleware.RateLimit(1, 2, middleware.WithReject(), middleware.WithClock(newFakeClock()))
	}
	breaker := func() executor.Middleware {
		return middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1), middleware.WithOpenTimeout(time.Hour))
	}
	for _, tc := range []struct {
		name   string
		order  func() []executor.Middleware
		tokens bool // whether the refused call used a token
	}{
		{"breaker outside rate limit: refused calls take no token", func() []executor.Middleware {
			return []executor.Middleware{breaker(), limit()}
		}, false},
		{"rate limit outside breaker: refused calls use up tokens", func() []executor.Middleware {
			return []executor.Middleware{limit(), breaker()}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := newCounted(t, "down", readOnly, failWith(errDown))
			up := newCounted(t, "up", readOnly, ok("fine"))
			h := handler(tc.order()...)
			h.Handle(context.Background(), req(down, "1", "")) // a token; trips the breaker
			require.Equal(t, middleware.CodeCircuitOpen, h.Handle(context.Background(), req(down, "2", "")).ErrorCode)
			// "down" had two tokens: the refused call used the second or not.
			r := h.Handle(context.Background(), req(down, "3", ""))
			if tc.tokens {
				assert.Equal(t, middleware.CodeRateLimited, r.ErrorCode)
			} else {
				assert.Equal(t, middleware.CodeCircuitOpen, r.ErrorCode)
			}
			assert.Equal(t, tool.StatusSuccess, h.Handle(context.Background(), req(up, "4", "")).Status, "other tools keep their budget")
		})
	}
}

func TestOrderLoggingAndRefusals(t *testing.T) {
	denyAll := tool.PolicyFunc(func(context.Context, tool.PermissionRequest) (tool.Decision, error) { return tool.Deny("no"), nil })
	for _, tc := range []struct {
		name   string
		outer  bool
		logged bool
	}{
		{"logging outside permission: denials are logged", true, true},
		{"permission outside logging: denials leave no record", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logging := middleware.Logging(slog.New(slog.NewJSONHandler(&buf, nil)))
			order := []executor.Middleware{middleware.Permission(denyAll), logging}
			if tc.outer {
				order = []executor.Middleware{logging, middleware.Permission(denyAll)}
			}
			r := handler(order...).Handle(context.Background(), req(newCounted(t, "t", readOnly, ok("x")), "1", ""))
			require.Equal(t, tool.StatusDenied, r.Status)
			assert.Equal(t, tc.logged, strings.Contains(buf.String(), `"status":"denied"`))
		})
	}
}
