package middleware

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/tool"
)

// The defaults of CircuitBreaker.
const (
	DefaultConsecutiveFailures = 5
	DefaultOpenTimeout         = 30 * time.Second
	DefaultCountWindow         = time.Minute
)

type breakerConfig struct {
	consecutive   uint32
	ratio         float64
	minCalls      uint32
	openTimeout   time.Duration
	halfOpenCalls uint32
	window        time.Duration
	failure       func(tool.Result) bool
	onChange      func(toolName string, from, to gobreaker.State)
}

// BreakerOption configures CircuitBreaker.
type BreakerOption interface{ applyBreaker(*breakerConfig) }

type breakerOption func(*breakerConfig)

func (o breakerOption) applyBreaker(c *breakerConfig) { o(c) }

// WithConsecutiveFailures trips a tool's breaker after n failures in a
// row (default DefaultConsecutiveFailures). n of zero turns this rule off,
// leaving WithFailureRatio.
func WithConsecutiveFailures(n uint32) BreakerOption {
	return breakerOption(func(c *breakerConfig) { c.consecutive = n })
}

// WithFailureRatio also trips a tool's breaker when, out of at least
// minCalls calls counted in the window (WithCountWindow), the share that
// failed reaches ratio (0 < ratio <= 1). It is off by default.
func WithFailureRatio(ratio float64, minCalls uint32) BreakerOption {
	return breakerOption(func(c *breakerConfig) { c.ratio, c.minCalls = ratio, max(minCalls, 1) })
}

// WithOpenTimeout sets how long a tripped breaker stays open, answering
// every call at once, before it lets trial calls through (default
// DefaultOpenTimeout).
func WithOpenTimeout(d time.Duration) BreakerOption {
	return breakerOption(func(c *breakerConfig) {
		if d > 0 {
			c.openTimeout = d
		}
	})
}

// WithHalfOpenCalls sets how many trial calls a half-open breaker lets
// through at once (default 1). As many must succeed in a row to close it;
// one failure opens it again.
func WithHalfOpenCalls(n uint32) BreakerOption {
	return breakerOption(func(c *breakerConfig) { c.halfOpenCalls = max(n, 1) })
}

// WithCountWindow sets the period after which a closed breaker forgets its
// counts (default DefaultCountWindow); zero or less means never.
func WithCountWindow(d time.Duration) BreakerOption {
	return breakerOption(func(c *breakerConfig) { c.window = max(d, 0) })
}

// WithFailureCheck sets what counts as a failure of the tool, instead of
// the default (BreakerFailure). Cancelled calls never count either way.
func WithFailureCheck(f func(tool.Result) bool) BreakerOption {
	return breakerOption(func(c *breakerConfig) {
		if f != nil {
			c.failure = f
		}
	})
}

// WithStateChange sets a function told whenever a tool's breaker changes
// state, for logs and metrics. It runs while the breaker is locked: it must
// be quick and must not call the tool.
func WithStateChange(f func(toolName string, from, to gobreaker.State)) BreakerOption {
	return breakerOption(func(c *breakerConfig) { c.onChange = f })
}

// BreakerFailure is the default failure check of CircuitBreaker: a result
// counts as a failure of the tool when the tool failed (an error, a panic,
// a timeout), not when the call was the caller's mistake (invalid
// arguments, an unknown tool), was refused (denied, rate limited), did not
// finish (cancelled, pending), or ended with a permanent error (IsPermanent:
// an answer that no retry can change, such as a run pausing to wait for a
// person, says nothing of the tool's health).
func BreakerFailure(r tool.Result) bool {
	switch r.Status {
	case tool.StatusTimeout:
		return true
	case tool.StatusFailed:
	default:
		return false
	}
	switch r.ErrorCode {
	case tool.CodeInvalidArguments, tool.CodeUnknownTool, tool.CodeDeclarationOnly,
		tool.CodePermissionDenied, tool.CodeApprovalRequired, CodeRateLimited, CodeCircuitOpen:
		return false
	}
	return !IsPermanent(r.Err)
}

// CircuitBreaker keeps one circuit breaker per tool
// (github.com/sony/gobreaker/v2). A closed breaker lets calls through and
// counts their outcomes; it trips open after WithConsecutiveFailures
// failures in a row, or when the failure ratio of WithFailureRatio is
// reached. An open breaker answers every call of its tool at once with an
// error result (ErrorCode CodeCircuitOpen, a *CircuitOpenError in Err) that
// says when the tool will be tried again; after WithOpenTimeout it turns
// half-open and lets up to WithHalfOpenCalls trial calls through, which
// close it if they all succeed and open it again if one fails.
//
// Calls of unknown tools pass through without a breaker. The returned
// Middleware holds the breakers: every chain built with it shares them,
// and they are safe for concurrent use.
func CircuitBreaker(opts ...BreakerOption) executor.Middleware {
	c := breakerConfig{
		consecutive: DefaultConsecutiveFailures, openTimeout: DefaultOpenTimeout,
		halfOpenCalls: 1, window: DefaultCountWindow, failure: BreakerFailure,
	}
	for _, o := range opts {
		if o != nil {
			o.applyBreaker(&c)
		}
	}
	set := &breakerSet{cfg: c}
	return func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			if req.Tool == nil {
				return next.Handle(ctx, req)
			}
			b := set.of(req.Call.Name)
			done, err := b.cb.Allow()
			if err != nil {
				return b.refused(err)
			}
			finished := false
			defer func() {
				if !finished { // a panic: the executor answers it, the breaker counts it
					done(errToolFailed)
				}
			}()
			r := next.Handle(ctx, req)
			finished = true
			done(set.outcome(ctx, r))
			return r
		})
	}
}

// Outcomes reported to a breaker.
var (
	errToolFailed = errors.New("tool failed")
	errNotCounted = errors.New("not counted")
)

// breakerSet holds the breakers of one CircuitBreaker middleware.
type breakerSet struct {
	cfg      breakerConfig
	breakers sync.Map // tool name -> *breaker
}

type breaker struct {
	name     string
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	timeout  time.Duration
	openedAt atomic.Int64 // unix nanoseconds of the last trip
}

func (s *breakerSet) of(name string) *breaker {
	if b, ok := s.breakers.Load(name); ok {
		return b.(*breaker)
	}
	b := &breaker{name: name, timeout: s.cfg.openTimeout}
	cfg := s.cfg
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: cfg.halfOpenCalls,
		Interval:    cfg.window,
		Timeout:     cfg.openTimeout,
		ReadyToTrip: func(n gobreaker.Counts) bool {
			if cfg.consecutive > 0 && n.ConsecutiveFailures >= cfg.consecutive {
				return true
			}
			counted := n.TotalSuccesses + n.TotalFailures
			return cfg.ratio > 0 && counted >= cfg.minCalls && float64(n.TotalFailures) >= cfg.ratio*float64(counted)
		},
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openedAt.Store(time.Now().UnixNano())
			}
			if cfg.onChange != nil {
				cfg.onChange(name, from, to)
			}
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return errors.Is(err, errNotCounted) },
	})
	actual, _ := s.breakers.LoadOrStore(name, b)
	return actual.(*breaker)
}

// outcome is what a result tells the breaker. A call that was cancelled,
// or whose caller cancelled it whatever answered it, says nothing of the
// tool.
func (s *breakerSet) outcome(ctx context.Context, r tool.Result) error {
	r = executor.Settle(r) // as the executor will read it
	switch {
	case r.Status == tool.StatusCancelled || errors.Is(ctx.Err(), context.Canceled):
		return errNotCounted
	case s.cfg.failure(r):
		return errToolFailed
	case r.IsError:
		return errNotCounted
	}
	return nil
}

// refused answers a call the breaker did not let through.
func (b *breaker) refused(err error) tool.Result {
	e := &CircuitOpenError{Tool: b.name, HalfOpen: errors.Is(err, gobreaker.ErrTooManyRequests)}
	if !e.HalfOpen {
		e.RetryAt = time.Unix(0, b.openedAt.Load()).Add(b.timeout)
	}
	return tool.ErrorResult(CodeCircuitOpen, e)
}
