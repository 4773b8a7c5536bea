package middleware

import (
	"context"
	"errors"
	"io"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Permanent marks err as not worth retrying: Retry never retries a result
// whose Err is, or wraps, a marked error, whatever its retry predicate
// says. A nil err stays nil.
//
// Errors of other packages can say the same without importing this one by
// implementing Permanent() bool; an error that interrupts a run to wait
// for a person is one.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent or has a Permanent() bool method that reports true.
func IsPermanent(err error) bool {
	return anyInChain(err, func(e error) bool {
		p, ok := e.(interface{ Permanent() bool })
		return ok && p.Permanent()
	})
}

// Transient marks err as worth retrying: DefaultRetryOn retries a result
// whose Err is, or wraps, a marked error. A nil err stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err: err}
}

type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() error   { return e.err }
func (e *transientError) Transient() bool { return true }

// IsTransient reports whether err is worth retrying: an error marked with
// Transient or with a Transient() bool or Temporary() bool method that
// reports true (a refused rate limit, say); an error the model package
// classifies as transient (a refused or reset connection, a network
// timeout, a provider's 429 or 5xx, a reply cut short); or io.EOF.
// Cancellation and the caller's expired deadline are never transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, io.EOF) || model.IsTransient(err) {
		return true
	}
	return anyInChain(err, func(e error) bool {
		switch m := e.(type) {
		case interface{ Transient() bool }:
			return m.Transient()
		case interface{ Temporary() bool }:
			return m.Temporary()
		}
		return false
	})
}

// anyInChain reports whether f holds for err or any error it wraps.
func anyInChain(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if anyInChain(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// neverRetried reports whether a result must not be retried whatever the
// predicate says: successes, pending calls, cancellation (of the call or of
// the caller), denials, invalid arguments and other mistakes of the caller,
// and permanent errors (interrupts among them).
func neverRetried(ctx context.Context, r tool.Result) bool {
	if ctx.Err() != nil {
		return true
	}
	r = executor.Settle(r) // as the executor will read it
	switch r.Status {
	case tool.StatusSuccess, tool.StatusPending, tool.StatusCancelled, tool.StatusDenied:
		return true
	}
	if !r.IsError {
		return true
	}
	switch r.ErrorCode {
	case tool.CodeInvalidArguments, tool.CodeUnknownTool, tool.CodeDeclarationOnly, tool.CodeInvalidSchema,
		tool.CodePermissionDenied, tool.CodeApprovalRequired, tool.CodeCancelled:
		return true
	}
	if r.Err == nil {
		return false
	}
	return errors.Is(r.Err, context.Canceled) ||
		errors.Is(r.Err, tool.ErrInvalidArguments) ||
		errors.Is(r.Err, tool.ErrPermission) ||
		errors.Is(r.Err, tool.ErrUnknownTool) ||
		errors.Is(r.Err, tool.ErrDeclarationOnly) ||
		IsPermanent(r.Err)
}
