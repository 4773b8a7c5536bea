package executor

import (
	"errors"
	"fmt"

	"github.com/trellis-go/trellis/model"
)

var (
	// ErrStopped is matched by every *StopError: the batch stopped the run.
	ErrStopped = errors.New("executor: batch stopped the run")
	// ErrFailFast is matched by the *StopError of a batch that stopped
	// because a call failed under WithFailFast.
	ErrFailFast = errors.New("executor: a call failed (fail fast)")
)

// StopError is the error Execute returns when a batch stops the run: a
// BeforeCall or AfterCall hook returned an error, or, under WithFailFast, a
// call failed. The results that come with it are complete: the calls that
// did not run are answered with cancelled results.
type StopError struct {
	// Index is the position of the call that stopped the batch.
	Index int
	// Call is that call.
	Call model.ToolCall
	// FailFast is true when the call failed under WithFailFast, false when
	// a hook stopped the batch.
	FailFast bool
	// Err is the error the hook returned, or the failed call's error.
	Err error
}

// Error returns the error's message.
func (e *StopError) Error() string {
	if e.FailFast {
		return fmt.Sprintf("executor: call %d (%s, tool %q) failed, batch stopped: %v", e.Index, e.Call.ID, e.Call.Name, e.Err)
	}
	return fmt.Sprintf("executor: stopped at call %d (%s, tool %q): %v", e.Index, e.Call.ID, e.Call.Name, e.Err)
}

// Is reports whether target is ErrStopped, or ErrFailFast for a fail-fast
// stop.
func (e *StopError) Is(target error) bool {
	return target == ErrStopped || (e.FailFast && target == ErrFailFast)
}

// Unwrap returns the hook's error or the failed call's error.
func (e *StopError) Unwrap() error { return e.Err }

// prefixed is an error with the executor's prefix in front of its message.
type prefixed struct {
	prefix string
	err    error
}

// Error returns the error's message.
func (e *prefixed) Error() string { return e.prefix + ": " + e.err.Error() }
func (e *prefixed) Unwrap() error { return e.err }

func withPrefix(prefix string, err error) error {
	if prefix == "" || err == nil {
		return err
	}
	return &prefixed{prefix: prefix, err: err}
}
