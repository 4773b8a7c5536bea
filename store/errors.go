package store

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotFound is returned when no live item is at a namespace and key.
	ErrNotFound = errors.New("store: item not found")
	// ErrConflict is matched by a *ConflictError: a conditional write
	// found another version than the one it expected.
	ErrConflict = errors.New("store: version conflict")
	// ErrInvalid is matched by the errors of malformed arguments: an empty
	// namespace label or key, a value that is not a JSON object, a bad
	// filter or query.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrNoEmbedder is returned by a search by meaning on a store that has
	// no Embedder.
	ErrNoEmbedder = errors.New("store: search by meaning needs an embedder")
	// ErrClosed is returned by the methods of a closed store.
	ErrClosed = errors.New("store: closed")
)

// ConflictError reports a conditional write whose expected version was not
// the item's. It matches ErrConflict.
type ConflictError struct {
	Namespace []string
	Key       string
	// Want is the version the write expected (0: no item), Have the one
	// found (0: no item).
	Want, Have int64
}

// Error says where the conflict was and which versions met.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: version conflict at %s/%s: want version %d, have %d",
		strings.Join(e.Namespace, "/"), e.Key, e.Want, e.Have)
}

// Is matches ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// invalid returns an error matching ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
