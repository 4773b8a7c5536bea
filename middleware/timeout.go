package middleware

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/tool"
)

type timeoutConfig struct {
	perTool map[string]time.Duration
}

// TimeoutOption configures Timeout.
type TimeoutOption interface{ applyTimeout(*timeoutConfig) }

type timeoutOption func(*timeoutConfig)

func (o timeoutOption) applyTimeout(c *timeoutConfig) { o(c) }

// WithToolTimeout sets the timeout of the named tool's calls, instead of
// the default. Zero or less means no timeout for that tool.
func WithToolTimeout(name string, d time.Duration) TimeoutOption {
	return timeoutOption(func(c *timeoutConfig) {
		if c.perTool == nil {
			c.perTool = map[string]time.Duration{}
		}
		c.perTool[name] = d
	})
}

// Timeout bounds each call: after d (or the tool's own timeout, see
// WithToolTimeout) the call's context is cancelled and the call is answered
// at once with a result whose Status is timeout (ErrorCode
// tool.CodeTimeout, an Err that matches context.DeadlineExceeded). A d of
// zero or less means no timeout for tools without one of their own.
//
// The rest of the chain runs on a goroutine of its own, so that a tool that
// ignores its context cannot hold the call: when the time is up, Timeout
// answers and leaves that goroutine behind, with its context cancelled.
// A tool that honours its context returns at once and the goroutine ends;
// one that does not keeps its goroutine until it returns, and whatever it
// returns is dropped, as are progress updates it reports after the call
// was answered. A panic on that goroutine becomes an error result.
//
// When the caller's context ends first, the call is answered as cancelled
// (or as timed out, if the caller's deadline passed) in the same way.
func Timeout(d time.Duration, opts ...TimeoutOption) executor.Middleware {
	var c timeoutConfig
	for _, o := range opts {
		if o != nil {
			o.applyTimeout(&c)
		}
	}
	perTool := maps.Clone(c.perTool)
	return func(next executor.Handler) executor.Handler {
		safe := executor.Recover(next)
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			limit := d
			if t, ok := perTool[req.Call.Name]; ok {
				limit = t
			}
			if limit <= 0 {
				return next.Handle(ctx, req)
			}
			return runWithTimeout(ctx, safe, req, limit)
		})
	}
}

// runWithTimeout runs h on a goroutine of its own and answers when it
// returns or when d has passed, whichever comes first. h must not panic
// (wrap it in executor.Recover).
func runWithTimeout(ctx context.Context, h executor.Handler, req *executor.Request, d time.Duration) tool.Result {
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan tool.Result, 1)
	go func() {
		growStack(0)
		done <- h.Handle(tctx, req)
	}()
	select {
	case r := <-done:
		if r.Status == tool.StatusTimeout && ctx.Err() == nil && tctx.Err() != nil {
			return timeoutResult(req.Call.Name, d) // the tool saw this deadline
		}
		return r
	case <-tctx.Done():
		select {
		case r := <-done: // it finished just in time
			if !r.IsError {
				return r
			}
		default:
		}
		if err := ctx.Err(); err != nil {
			return callerGone(ctx, req.Call.Name)
		}
		return timeoutResult(req.Call.Name, d)
	}
}

// growStack makes the stack of the goroutine that runs a call as large as a
// call usually needs, at once and while the stack is shallow: a call grows
// a new goroutine's stack twice, and each growth copies every frame on it,
// which cost more than the rest of the middleware.
//
//go:noinline
func growStack(i int) byte {
	var pad [5 << 10]byte
	pad[i] = 1
	return pad[(i*7)%len(pad)]
}

// timeoutResult answers a call that ran out of time.
func timeoutResult(name string, d time.Duration) tool.Result {
	r := tool.ErrorResult(tool.CodeTimeout, fmt.Errorf("tool %q timed out after %s: %w", name, d, context.DeadlineExceeded))
	r.Status = tool.StatusTimeout
	return r
}

// callerGone answers a call whose caller's context ended.
func callerGone(ctx context.Context, name string) tool.Result {
	cause := context.Cause(ctx)
	if errors.Is(cause, context.DeadlineExceeded) {
		r := tool.ErrorResult(tool.CodeTimeout, fmt.Errorf("tool %q timed out: %w", name, cause))
		r.Status = tool.StatusTimeout
		return r
	}
	err := fmt.Errorf("tool %q was cancelled: %w", name, cause)
	if !errors.Is(cause, context.Canceled) {
		err = fmt.Errorf("tool %q was cancelled: %w: %w", name, context.Canceled, cause)
	}
	r := tool.ErrorResult(tool.CodeCancelled, err)
	r.Status = tool.StatusCancelled
	return r
}
