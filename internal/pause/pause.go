package pause

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done, whichever comes first, and returns
// nil after the full wait or ctx's error. A d of zero or less returns at
// once with ctx's error, so that a loop over a done context stops.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
