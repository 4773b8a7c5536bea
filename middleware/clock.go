package middleware

import (
	"context"
	"time"

	"github.com/trellis-go/trellis/internal/pause"
)

// Clock is the time source of the middleware that wait or measure time
// (Retry, RateLimit, Cache). Tests give them a fake clock (WithClock) so
// that delays are checked without sleeping.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d, or until ctx ends, whichever comes first; it
	// returns ctx's error in the latter case.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock returns the Clock of the system: time.Now and a timer.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := pause.Sleep(ctx, d); err != nil {
		return context.Cause(ctx)
	}
	return nil
}

// ClockOption sets the Clock of Retry, RateLimit or Cache; it is an option
// of each of them.
type ClockOption struct{ clock Clock }

// WithClock sets the clock a middleware reads and sleeps with (default
// SystemClock). A nil clock keeps the default.
func WithClock(c Clock) ClockOption { return ClockOption{clock: c} }

func (o ClockOption) applyCache(c *cacheConfig) {
	if o.clock != nil {
		c.clock = o.clock
	}
}

func (o ClockOption) applyRetry(c *retryConfig) {
	if o.clock != nil {
		c.clock = o.clock
	}
}

func (o ClockOption) applyRateLimit(c *rateLimitConfig) {
	if o.clock != nil {
		c.clock = o.clock
	}
}
