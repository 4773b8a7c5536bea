package middleware

import (
	"errors"
	"fmt"
	"time"
)

// Error codes of the results the middleware answer calls with, in
// tool.Result.ErrorCode. Timeouts use tool.CodeTimeout and refused
// permissions tool.CodePermissionDenied or tool.CodeApprovalRequired.
const (
	// CodeCircuitOpen: the tool's circuit breaker refused the call.
	CodeCircuitOpen = "circuit_open"
	// CodeRateLimited: the call would exceed the tool's rate limit.
	CodeRateLimited = "rate_limited"
)

var (
	// ErrCircuitOpen is matched by *CircuitOpenError.
	ErrCircuitOpen = errors.New("middleware: circuit breaker open")
	// ErrRateLimited is matched by *RateLimitError.
	ErrRateLimited = errors.New("middleware: rate limited")
)

// CircuitOpenError is behind the result of a call a circuit breaker
// refused: the breaker is open, or half-open with all its trial calls under
// way.
type CircuitOpenError struct {
	// Tool is the tool's name.
	Tool string
	// HalfOpen is true when the breaker is half-open and busy with its
	// trial calls, false when it is open.
	HalfOpen bool
	// RetryAt is when an open breaker lets trial calls through again; zero
	// for a half-open breaker.
	RetryAt time.Time
}

// Error returns the error's message.
func (e *CircuitOpenError) Error() string {
	if e.HalfOpen {
		return fmt.Sprintf("tool %q is recovering from repeated failures and is already being tried; call it again shortly", e.Tool)
	}
	return fmt.Sprintf("tool %q is unavailable after repeated failures; it will be tried again at %s", e.Tool, e.RetryAt.UTC().Format(time.RFC3339))
}

// Is reports whether target is ErrCircuitOpen.
func (e *CircuitOpenError) Is(target error) bool { return target == ErrCircuitOpen }

// RateLimitError is behind the result of a call a rate limit refused.
type RateLimitError struct {
	// Tool is the tool's name.
	Tool string
	// RetryAfter is how long until the limit allows the call, as far as is
	// known when it was refused.
	RetryAfter time.Duration
}

// Error returns the error's message.
func (e *RateLimitError) Error() string {
	return fmt.Sprintf("tool %q is rate limited; try again in %s", e.Tool, e.RetryAfter.Round(time.Millisecond))
}

// Is reports whether target is ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Transient reports true: a call refused by a rate limit may succeed
// later, so the default retry predicate retries it.
func (e *RateLimitError) Transient() bool { return true }
