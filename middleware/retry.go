package middleware

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/internal/backoff"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// The defaults of Retry.
const (
	DefaultMaxAttempts     = 3
	DefaultInitialInterval = 200 * time.Millisecond
	DefaultBackoffFactor   = 2.0
	DefaultMaxInterval     = 10 * time.Second
	DefaultJitter          = 0.2
)

// RetryInfo is what a retry predicate sees of a failed attempt.
type RetryInfo struct {
	// Request is the call.
	Request *executor.Request
	// Attempt is the number of the attempt that failed, from 1.
	Attempt int
	// Result is that attempt's result.
	Result tool.Result
	// Elapsed is the time since the first attempt started.
	Elapsed time.Duration
}

type retryConfig struct {
	attempts       int
	initial        time.Duration
	factor         float64
	maxInterval    time.Duration
	jitter         float64
	maxElapsed     time.Duration
	attemptTimeout time.Duration
	retryOn        func(context.Context, RetryInfo) bool
	clock          Clock
}

// RetryOption configures Retry. WithClock is one too.
type RetryOption interface{ applyRetry(*retryConfig) }

type retryOption func(*retryConfig)

func (o retryOption) applyRetry(c *retryConfig) { o(c) }

// WithMaxAttempts sets how many attempts a call gets in all, the first
// included (default DefaultMaxAttempts). n < 1 is read as 1: no retries.
func WithMaxAttempts(n int) RetryOption {
	return retryOption(func(c *retryConfig) { c.attempts = max(n, 1) })
}

// WithInitialInterval sets the wait before the second attempt (default
// DefaultInitialInterval).
func WithInitialInterval(d time.Duration) RetryOption {
	return retryOption(func(c *retryConfig) { c.initial = max(d, 0) })
}

// WithBackoffFactor sets what each wait is multiplied by for the next one
// (default DefaultBackoffFactor). Factors below 1 are read as 1.
func WithBackoffFactor(f float64) RetryOption {
	return retryOption(func(c *retryConfig) {
		if math.IsNaN(f) || f < 1 {
			f = 1
		}
		c.factor = f
	})
}

// WithMaxInterval caps each wait (default DefaultMaxInterval).
func WithMaxInterval(d time.Duration) RetryOption {
	return retryOption(func(c *retryConfig) { c.maxInterval = max(d, 0) })
}

// WithJitter sets how much of each wait is random (default DefaultJitter):
// a wait w becomes a duration drawn uniformly from [w·(1−j), w], which
// spreads out the retries of calls that failed together. j is clamped to
// [0, 1]; 0 makes waits exact.
func WithJitter(j float64) RetryOption {
	return retryOption(func(c *retryConfig) {
		if math.IsNaN(j) {
			j = 0
		}
		c.jitter = min(max(j, 0), 1)
	})
}

// WithMaxElapsedTime stops retrying once the next attempt would start more
// than d after the first one did (default: no limit but the attempts).
func WithMaxElapsedTime(d time.Duration) RetryOption {
	return retryOption(func(c *retryConfig) { c.maxElapsed = max(d, 0) })
}

// WithAttemptTimeout bounds each attempt as Timeout bounds a call: an
// attempt that runs out of time is answered as timed out, and may be
// retried, while the caller's context is still live.
func WithAttemptTimeout(d time.Duration) RetryOption {
	return retryOption(func(c *retryConfig) { c.attemptTimeout = max(d, 0) })
}

// WithRetryOn sets the predicate that decides whether a failed attempt is
// retried, instead of DefaultRetryOn. Whatever it says, Retry never
// retries a result that did not fail, a cancelled call or one whose
// caller's context ended, a denied call, invalid arguments, an unknown
// tool, or a permanent error (Permanent, IsPermanent).
func WithRetryOn(f func(ctx context.Context, info RetryInfo) bool) RetryOption {
	return retryOption(func(c *retryConfig) {
		if f != nil {
			c.retryOn = f
		}
	})
}

// DefaultRetryOn retries only transient failures: an attempt that timed
// out while the caller's context was still live, and a failure whose error
// IsTransient (network errors, a provider's 429 or 5xx, a refused rate
// limit, errors marked with Transient). It does not retry tool errors in
// general, panics, results that report failure without an error, or an
// open circuit breaker.
func DefaultRetryOn(ctx context.Context, info RetryInfo) bool {
	if ctx.Err() != nil {
		return false
	}
	if info.Result.Status == tool.StatusTimeout {
		return true
	}
	return IsTransient(info.Result.Err)
}

// Retry runs a call again when an attempt fails with an error worth
// retrying (see WithRetryOn and DefaultRetryOn), waiting between attempts
// with exponential backoff: the first wait is the initial interval, each
// next one is multiplied by the backoff factor and capped at the maximum
// interval, with jitter. A failure that asks for a wait (a provider's
// Retry-After, in a *model.ProviderError, a RateLimitError's RetryAfter, or
// a tool's error that is a RetryDelayer) gets that wait instead, and is not
// retried when it asks for longer than the maximum interval. It gives up after the maximum attempts, when the
// next attempt would start after the maximum elapsed time or after the
// deadline of the caller's context, and the result of the last attempt
// answers the call. When the caller's context ends while Retry waits, the
// call is answered as cancelled (or as timed out, if its deadline passed),
// with the last attempt's failure in Err and in the text.
//
// Retry never retries cancellation, denials, validation errors, unknown
// tools or permanent errors (interrupts among them), whatever the
// predicate says. Each retry is recorded as a "retry" event on the span in
// ctx, if there is one (see OpenTelemetry).
func Retry(opts ...RetryOption) executor.Middleware {
	c := retryConfig{
		attempts: DefaultMaxAttempts, initial: DefaultInitialInterval, factor: DefaultBackoffFactor,
		maxInterval: DefaultMaxInterval, jitter: DefaultJitter, retryOn: DefaultRetryOn, clock: SystemClock(),
	}
	for _, o := range opts {
		if o != nil {
			o.applyRetry(&c)
		}
	}
	return func(next executor.Handler) executor.Handler {
		attempt := next
		if c.attemptTimeout > 0 {
			safe := executor.Recover(next)
			attempt = executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
				return runWithTimeout(ctx, safe, req, c.attemptTimeout)
			})
		}
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			return c.run(ctx, attempt, req)
		})
	}
}

func (c *retryConfig) run(ctx context.Context, next executor.Handler, req *executor.Request) tool.Result {
	start := c.clock.Now()
	policy := backoff.Policy{Initial: c.initial, Factor: c.factor, Max: c.maxInterval, Jitter: c.jitter}
	for n := 1; ; n++ {
		r := next.Handle(ctx, req)
		if n >= c.attempts || neverRetried(ctx, r) {
			return r
		}
		elapsed := c.clock.Now().Sub(start)
		if !c.retryOn(ctx, RetryInfo{Request: req, Attempt: n, Result: r, Elapsed: elapsed}) {
			return r
		}
		d, ok := policy.Next(n-1, askedWait(r.Err))
		if !ok {
			return r // asked to wait longer than the maximum interval
		}
		if c.maxElapsed > 0 && elapsed+d > c.maxElapsed {
			return r
		}
		if dl, ok := ctx.Deadline(); ok && c.clock.Now().Add(d).After(dl) {
			return r // the caller would be gone before the next attempt
		}
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("retry", trace.WithAttributes(
				attribute.Int("retry.attempt", n+1),
				attribute.String("retry.delay", d.String()),
				attribute.String("error.type", errorType(r)),
			))
		}
		if err := c.clock.Sleep(ctx, d); err != nil {
			return goneWhileWaiting(ctx, req.Call.Name, n, r)
		}
	}
}

// goneWhileWaiting answers a call whose caller's context ended while Retry
// waited to retry it after attempt n failed with r: as cancelled (or timed
// out), with r's failure in Err and in the text the model reads.
func goneWhileWaiting(ctx context.Context, name string, n int, r tool.Result) tool.Result {
	gone := callerGone(ctx, name)
	why := r.Err
	if why == nil {
		if t := r.Text(); t != "" {
			why = errors.New(t)
		}
	}
	out := gone
	if why != nil {
		out = tool.ErrorResult(gone.ErrorCode, fmt.Errorf("%w (while waiting to retry after attempt %d failed: %w)", gone.Err, n, why))
		out.Status = gone.Status
	}
	out.Details, out.Metadata = r.Details, r.Metadata // what the failed attempt reported
	return out
}

// RetryDelayer is an error that says how long to wait before trying
// again, such as the Retry-After of an HTTP service a tool called
// (websearch.StatusError is one). Retry waits that long before the next
// attempt instead of its backoff, and stops retrying when it is longer
// than the maximum interval. A tool's error need not import this package
// to be one: the method is enough.
type RetryDelayer interface {
	// RetryDelay is the wait asked for; 0 or less asks for none.
	RetryDelay() time.Duration
}

// askedWait returns the wait a failure asked for before another attempt:
// a provider's Retry-After (model.ProviderError), the time until a rate
// limit allows the call (RateLimitError), or the wait an error in err's
// chain gives (RetryDelayer); 0 when it asked for none.
func askedWait(err error) time.Duration {
	if pe, ok := errors.AsType[*model.ProviderError](err); ok {
		return pe.RetryAfter
	}
	if rl, ok := errors.AsType[*RateLimitError](err); ok {
		return rl.RetryAfter
	}
	var rd RetryDelayer
	if errors.As(err, &rd) {
		return max(rd.RetryDelay(), 0)
	}
	return 0
}
