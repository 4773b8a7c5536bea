package middleware

// WithWaitHook returns a cache option that calls f each time a call starts
// waiting for an identical call already in flight, so that tests know the
// call has joined the flight.
func WithWaitHook(f func()) CacheOption {
	return cacheOption(func(c *cacheConfig) { c.onWait = f })
}
