package middleware

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/tool"
)

type toolRate struct {
	limit rate.Limit
	burst int
}

type rateLimitConfig struct {
	global  bool
	reject  bool
	perTool map[string]toolRate
	clock   Clock
}

// RateLimitOption configures RateLimit. WithClock is one too.
type RateLimitOption interface{ applyRateLimit(*rateLimitConfig) }

type rateLimitOption func(*rateLimitConfig)

func (o rateLimitOption) applyRateLimit(c *rateLimitConfig) { o(c) }

// WithGlobalLimit makes the limit one budget shared by the calls of all
// tools, instead of one budget per tool. Tools given a rate of their own
// (WithToolRate) keep it, outside the shared budget.
func WithGlobalLimit() RateLimitOption {
	return rateLimitOption(func(c *rateLimitConfig) { c.global = true })
}

// WithToolRate gives the named tool a limit and burst of its own.
func WithToolRate(name string, limit rate.Limit, burst int) RateLimitOption {
	return rateLimitOption(func(c *rateLimitConfig) {
		if c.perTool == nil {
			c.perTool = map[string]toolRate{}
		}
		c.perTool[name] = toolRate{limit: limit, burst: burst}
	})
}

// WithReject makes a call that would exceed the limit fail at once, with an
// error result (ErrorCode CodeRateLimited, a *RateLimitError in Err that
// says when to try again), instead of waiting for its turn.
func WithReject() RateLimitOption {
	return rateLimitOption(func(c *rateLimitConfig) { c.reject = true })
}

// RateLimit limits how often tools are called, with token buckets
// (golang.org/x/time/rate): limit calls per second on average, in bursts
// of up to burst calls. Each tool has a budget of its own unless
// WithGlobalLimit makes one budget for all; WithToolRate sets a tool's own.
//
// By default a call waits for its turn, as long as the caller's context
// allows: a call whose turn would come after the context's deadline fails
// at once with a rate-limited result, and a call whose context ends while
// it waits is answered as cancelled. With WithReject, a call that would
// have to wait fails at once. Refusals carry a *RateLimitError that says
// when to try again, except where no call will ever be allowed again (a
// limit of zero or less once its burst is spent, or a burst below one):
// those are refused at once, in either mode, with an error that matches
// ErrRateLimited and is not transient.
//
// Calls of unknown tools pass through unlimited. The returned Middleware
// holds the limiters: every chain built with it shares them, and they are
// safe for concurrent use.
func RateLimit(limit rate.Limit, burst int, opts ...RateLimitOption) executor.Middleware {
	c := rateLimitConfig{clock: SystemClock()}
	for _, o := range opts {
		if o != nil {
			o.applyRateLimit(&c)
		}
	}
	ls := &limiters{cfg: c, def: toolRate{limit: limit, burst: burst}, byTool: map[string]*rate.Limiter{}}
	if c.global {
		ls.shared = rate.NewLimiter(limit, burst)
	}
	return func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			if req.Tool == nil {
				return next.Handle(ctx, req)
			}
			if r, ok := ls.admit(ctx, req.Call.Name); !ok {
				return r
			}
			return next.Handle(ctx, req)
		})
	}
}

type limiters struct {
	cfg    rateLimitConfig
	def    toolRate
	shared *rate.Limiter

	mu     sync.Mutex
	byTool map[string]*rate.Limiter
}

func (ls *limiters) of(name string) *rate.Limiter {
	_, own := ls.cfg.perTool[name]
	if ls.shared != nil && !own {
		return ls.shared
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.byTool[name]
	if !ok {
		tr := ls.def
		if own {
			tr = ls.cfg.perTool[name]
		}
		l = rate.NewLimiter(tr.limit, tr.burst)
		ls.byTool[name] = l
	}
	return l
}

// admit takes a token for a call of name, waiting for it unless the limit
// rejects. When the call may not go on, it returns the result that answers
// it.
func (ls *limiters) admit(ctx context.Context, name string) (tool.Result, bool) {
	l := ls.of(name)
	clock := ls.cfg.clock
	now := clock.Now()
	if l.Limit() != rate.Inf && (l.Limit() <= 0 || l.Burst() < 1) {
		// No token will ever come that is not there now: take one if
		// there is one, and neither wait nor say when to try again.
		if l.AllowN(now, 1) {
			return tool.Result{}, true
		}
		return noMoreCalls(name), false
	}
	if ls.cfg.reject {
		if l.AllowN(now, 1) {
			return tool.Result{}, true
		}
		return limited(name, untilToken(l, now)), false
	}
	res := l.ReserveN(now, 1)
	if !res.OK() {
		return noMoreCalls(name), false
	}
	delay := res.DelayFrom(now)
	if delay <= 0 {
		return tool.Result{}, true
	}
	if delay == rate.InfDuration {
		res.CancelAt(now)
		return noMoreCalls(name), false
	}
	if dl, ok := ctx.Deadline(); ok && now.Add(delay).After(dl) {
		res.CancelAt(now)
		return limited(name, delay), false
	}
	if err := clock.Sleep(ctx, delay); err != nil {
		res.CancelAt(clock.Now())
		return callerGone(ctx, name), false
	}
	return tool.Result{}, true
}

// untilToken is how long until l has a token, from now.
func untilToken(l *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - l.TokensAt(now)
	if missing <= 0 || l.Limit() <= 0 || l.Limit() == rate.Inf {
		return 0
	}
	return time.Duration(missing / float64(l.Limit()) * float64(time.Second))
}

// noMoreCalls answers a call of a tool whose limit allows no more calls,
// ever: its rate is zero or less and its burst is spent, or its burst is
// less than one. The error is not transient.
func noMoreCalls(name string) tool.Result {
	return tool.ErrorResult(CodeRateLimited, fmt.Errorf("tool %q: %w: its limit allows no more calls", name, ErrRateLimited))
}

func limited(name string, after time.Duration) tool.Result {
	return tool.ErrorResult(CodeRateLimited, &RateLimitError{Tool: name, RetryAfter: after})
}
