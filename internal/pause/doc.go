// Package pause holds the one context-aware sleep of the module: retry and
// backoff loops, pollers and the sandboxes' sleeps all wait with it.
package pause
