// Package middleware holds the standard per-call middleware of the tool
// executors (package executor): each is an executor.Middleware, a
// func(executor.Handler) executor.Handler, applied with
// executor.WithMiddleware or executor.Chain.
//
//   - Cache serves repeated calls of read-only tools from memory, keyed by
//     tool name and canonical arguments, with a TTL, a size bound with LRU
//     eviction, and one shared execution for identical calls in flight.
//   - Timeout bounds each call, with per-tool overrides.
//   - CircuitBreaker keeps one breaker per tool (github.com/sony/gobreaker/v2)
//     that trips on consecutive failures or a failure ratio.
//   - Retry retries transient failures with exponential backoff and jitter;
//     it never retries cancellation, denials, validation errors or
//     permanent errors (Permanent).
//   - RateLimit limits calls per tool or globally
//     (golang.org/x/time/rate), waiting or rejecting.
//   - Permission checks the tool's own rule and a run-level tool.Policy.
//   - Logging writes a structured record per call with log/slog.
//   - OpenTelemetry makes a span per call ("execute_tool {tool name}",
//     GenAI semantic conventions) and records durations and counts.
//
// Middleware that keeps state (Cache, CircuitBreaker, RateLimit) creates it
// when it is made, so every chain built from one value shares it; the state
// is keyed by tool name, never by call ID, and is safe for concurrent use.
// Middleware that waits or measures time takes a Clock (WithClock), so that
// tests run without sleeping.
//
// The first middleware listed in a chain is the outermost. The order
// matters; the recommended one, outermost first, is
//
//	OpenTelemetry, Logging, Permission, Cache, Retry, CircuitBreaker, RateLimit, Timeout
//
// docs/middleware.md explains why, pair by pair, and how to write your own.
package middleware
