package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/internal/backoff"
	"github.com/trellis-go/trellis/internal/pause"
)

// ErrRetriesExhausted is wrapped by the error a Retry returns when every
// allowed attempt failed with a transient error.
var ErrRetriesExhausted = errors.New("model: retries exhausted")

// ProviderError is an error reported by a model provider's API. Providers
// return it, wrapped or not, so callers can inspect the HTTP status and the
// provider's own message with errors.As.
type ProviderError struct {
	// Provider names the provider, for example "openai".
	Provider string
	// StatusCode is the HTTP status of the failed call. For an error reported
	// inside an event stream it is the status the provider documents for
	// that error type.
	StatusCode int
	// Type is the provider's error type, for example "invalid_request_error".
	Type string
	// Code is the provider's error code, when it sends one.
	Code string
	// Message is the provider's own explanation.
	Message string
	// RetryAfter is how long the provider asked the caller to wait before
	// trying again; zero when it did not say.
	RetryAfter time.Duration
	// Err is the underlying error of the provider's client library.
	Err error
}

// Error returns "provider: status text: type: message".
func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.StatusCode != 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
		if text := http.StatusText(e.StatusCode); text != "" {
			b.WriteByte(' ')
			b.WriteString(text)
		}
	} else {
		b.WriteString("error")
	}
	if e.Type != "" {
		b.WriteString(": ")
		b.WriteString(e.Type)
	}
	if e.Code != "" && e.Code != e.Type {
		b.WriteString(" (")
		b.WriteString(e.Code)
		b.WriteByte(')')
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error { return e.Err }

// Transient reports whether the same request may succeed if sent again:
// request timeouts (408), conflicts (409), rate limits (429) and server
// errors (5xx, including 529 "overloaded"). A 429 that says the account's
// quota or credit is used up (code or type "insufficient_quota") is not:
// waiting does not refill it.
func (e *ProviderError) Transient() bool {
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" {
		return false
	}
	switch c := e.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusConflict, c == http.StatusTooManyRequests:
		return true
	case c >= 500:
		return true
	}
	return false
}

// IsTransient reports whether err is worth retrying: a ProviderError that is
// Transient, or a failure to reach the provider or read its reply (refused or
// reset connections, network timeouts including the HTTP client's own, a
// connection closed before the reply, a reply cut short). Cancellation and
// expired deadlines of the caller's context are never transient: a context
// error, bare or as the cause of a failed request, is not. A timeout cannot
// always be told from the caller's deadline, so callers check their context
// before they retry, as Retry.Do does.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if pe, ok := errors.AsType[*ProviderError](err); ok {
		return pe.Transient()
	}
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Err != context.DeadlineExceeded {
		// The request failed on its way, not because the caller gave up:
		// the HTTP client's own timeout, or a connection closed before
		// any reply.
		if ue.Timeout() || errors.Is(ue.Err, io.EOF) {
			return true
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return true
	}
	return false
}

// RetryAfter reads how long a provider asked the caller to wait from the
// response headers: "retry-after-ms" (milliseconds) is preferred, then
// "Retry-After" as seconds or as an HTTP date relative to now. It reports
// false when neither header holds a usable value.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) && !math.IsNaN(ms) {
			return durationOf(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			return 0, false
		}
		return durationOf(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func durationOf(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

// The defaults of a zero Retry.
const (
	DefaultMaxRetries = 2
	DefaultBaseDelay  = 500 * time.Millisecond
	DefaultMaxDelay   = 30 * time.Second
)

// Retry is the policy a provider follows when a call fails with a transient
// error (see IsTransient): it tries again after an exponential backoff with
// jitter, or after the wait the provider asked for when it sent Retry-After.
// An attempt that ran out of time while the caller's context is still live
// (the HTTP client's own timeout, which net/http sometimes reports as a bare
// context.DeadlineExceeded) counts as transient too. Other errors are
// returned at once.
//
// The zero value retries DefaultMaxRetries times starting at DefaultBaseDelay.
type Retry struct {
	// MaxRetries is the number of attempts after the first. Zero means
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// BaseDelay is the backoff before the first retry; it doubles with
	// every retry. Zero means DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps the backoff. When the provider asks for a longer wait
	// than MaxDelay, the error is returned instead of waiting. Zero means
	// DefaultMaxDelay.
	MaxDelay time.Duration
	// Sleep waits between attempts. Nil waits on a timer and stops early,
	// with the context's error, when ctx is done. Tests substitute a Sleep
	// that records the delays without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is called before each wait with the number of the
	// retry about to be made (1 for the first), the wait, and the error that
	// caused it. It is meant for logging and metrics.
	OnRetry func(retry int, wait time.Duration, err error)
}

// Do calls op until it succeeds, fails with an error that is not transient,
// or the retries run out. The error of the last attempt is returned; when
// retries ran out it also wraps ErrRetriesExhausted.
func (r Retry) Do(ctx context.Context, op func(ctx context.Context) error) error {
	maxRetries := r.MaxRetries
	if maxRetries == 0 {
		maxRetries = DefaultMaxRetries
	}
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !IsTransient(err) && !errors.Is(err, context.DeadlineExceeded) {
			return err // the caller gave up, or trying again cannot help
		}
		if attempt >= maxRetries {
			if attempt == 0 {
				return err
			}
			return fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, attempt+1, err)
		}
		wait, ok := r.delay(attempt, err)
		if !ok {
			return err
		}
		if r.OnRetry != nil {
			r.OnRetry(attempt+1, wait, err)
		}
		if werr := r.sleep(ctx, wait); werr != nil {
			return fmt.Errorf("%w while waiting to retry: %w", werr, err)
		}
	}
}

// delay returns the wait before retry number attempt+1, and false when the
// provider asked for a wait longer than MaxDelay.
func (r Retry) delay(attempt int, err error) (time.Duration, bool) {
	base, maxDelay := r.BaseDelay, r.MaxDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	var asked time.Duration
	if pe, ok := errors.AsType[*ProviderError](err); ok {
		asked = pe.RetryAfter
	}
	// Equal jitter: half fixed, half random, so concurrent callers spread out.
	return backoff.Policy{Initial: base, Factor: 2, Max: maxDelay, Jitter: 0.5}.Next(attempt, asked)
}

func (r Retry) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return pause.Sleep(ctx, d)
}
