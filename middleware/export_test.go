package middleware

import "time"

// WithWaitHook returns a cache option that calls f each time a call starts
// waiting for an identical call already in flight, so that tests know the
// call has joined the flight.
func WithWaitHook(f func()) CacheOption {
	return cacheOption(func(c *cacheConfig) { c.onWait = f })
}

// SetDormantFor sets how long OpenTelemetry makes no spans once tracing
// showed it is not set up, and returns what restores it.
func SetDormantFor(d time.Duration) (restore func()) {
	prev := dormantFor
	dormantFor = d
	return func() { dormantFor = prev }
}
