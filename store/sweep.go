package store

import (
	"context"
	"time"
)

// SweepEvery calls s.Sweep every interval until ctx is done, and returns
// ctx's error then. Errors of single sweeps go to onError when it is not
// nil; the next sweep comes all the same. Run it on a goroutine of its own.
func SweepEvery(ctx context.Context, s Store, interval time.Duration, onError func(error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if _, err := s.Sweep(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}
