// Package backoff computes the waits between retries, once for the module:
// the executor's Retry middleware, the model package's retry policy (which
// the providers and modelmw.Retry follow), the graph's node retries and
// the Postgres saver's conflict retries draw their waits here.
//
// A wait grows exponentially from an initial one by a factor, up to a cap,
// and jitter draws it uniformly from [w·(1−j), w]: never above the cap,
// which a documented maximum promises. When the other side asked for a
// wait (an HTTP Retry-After), Next returns that wait instead, or reports
// that it is longer than the cap so the caller gives up rather than hold
// on.
//
// Written here rather than taken from a library: the module's retry loops
// retry results as well as errors, count time on a clock tests replace,
// and record each retry on a span, so only the wait's formula is shared,
// and it is a few lines. A library such as cenkalti/backoff would bring
// its own loop and a different jitter (w·(1±r), which passes the cap) for
// no gain.
package backoff
