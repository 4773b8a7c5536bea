package model

import (
	"errors"
	"net/http"
	"strings"
)

// The classes of provider errors. A *ProviderError matches the sentinel of
// its class with errors.Is, so callers test for a class without reading
// status codes:
//
//	if errors.Is(err, model.ErrOverloaded) { ... }
//
// Classify names the class of any error.
var (
	// ErrRateLimited: the provider refused the call because of the
	// caller's rate of requests or tokens (429, apart from a used-up
	// quota). Waiting helps.
	ErrRateLimited = errors.New("model: rate limited")
	// ErrOverloaded: the provider is overloaded or unavailable (529,
	// Anthropic's "overloaded_error", 503). Waiting or another model helps.
	ErrOverloaded = errors.New("model: provider overloaded")
	// ErrContextTooLong: the request holds more tokens than the model's
	// context window (OpenAI's "context_length_exceeded", Anthropic's
	// "prompt is too long", a 413). Sending it again cannot help; a shorter
	// conversation or a model with a larger window can.
	ErrContextTooLong = errors.New("model: context too long")
	// ErrBadRequest: the provider refused the request as malformed or
	// unsupported (400, 404, 422 and other 4xx not classed otherwise).
	// Sending it again cannot help.
	ErrBadRequest = errors.New("model: bad request")
	// ErrAuth: the credentials were refused or lack a permission (401,
	// 403).
	ErrAuth = errors.New("model: authentication refused")
	// ErrQuotaExhausted: the account's quota or credit is used up
	// ("insufficient_quota"). Waiting does not refill it.
	ErrQuotaExhausted = errors.New("model: quota exhausted")
	// ErrServer: the provider failed (5xx other than overload), or the
	// connection to it did (see IsTransient). Sending the request again
	// may succeed.
	ErrServer = errors.New("model: provider or network failure")
)

// Classify returns the sentinel of err's class (ErrRateLimited,
// ErrOverloaded, ErrContextTooLong, ErrBadRequest, ErrAuth,
// ErrQuotaExhausted, ErrServer), or nil when err is nil or not a
// provider's error nor a transient failure to reach one (a cancelled
// context, a mistake of the caller's code).
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if pe, ok := errors.AsType[*ProviderError](err); ok {
		if c := pe.class(); c != nil {
			return c
		}
	}
	if IsTransient(err) {
		return ErrServer
	}
	return nil
}

// Is reports whether target is the sentinel of e's class (see Classify).
func (e *ProviderError) Is(target error) bool {
	c := e.class()
	return c != nil && c == target
}

// class returns the sentinel of e's class, or nil when it has none.
func (e *ProviderError) class() error {
	code, typ := strings.ToLower(e.Code), strings.ToLower(e.Type)
	if code == "insufficient_quota" || typ == "insufficient_quota" {
		return ErrQuotaExhausted
	}
	if code == "context_length_exceeded" || typ == "request_too_large" ||
		e.StatusCode == http.StatusRequestEntityTooLarge || contextTooLongMessage(e.Message) {
		return ErrContextTooLong
	}
	switch c := e.StatusCode; {
	case typ == "overloaded_error" || c == 529 || c == http.StatusServiceUnavailable:
		return ErrOverloaded
	case c == http.StatusTooManyRequests || typ == "rate_limit_error":
		return ErrRateLimited
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		return ErrAuth
	case c == http.StatusRequestTimeout || c == http.StatusConflict || c >= 500:
		return ErrServer
	case c >= 400:
		return ErrBadRequest
	}
	return nil
}

// contextTooLongMessage reports whether a provider's message says the
// prompt does not fit the model's window, for providers that send no code
// for it (Anthropic: "prompt is too long: 210000 tokens > 200000 maximum";
// compatible servers: "maximum context length").
func contextTooLongMessage(msg string) bool {
	if msg == "" {
		return false
	}
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "prompt is too long") ||
		strings.Contains(msg, "maximum context length") ||
		strings.Contains(msg, "context window") && strings.Contains(msg, "exceed")
}
