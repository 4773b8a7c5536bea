package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Checkpoint is a snapshot of a run taken at a superstep boundary.
//
// Stores treat Payload as opaque bytes: the engine decides what it holds (the
// state, the nodes due next, pending interrupts) and how it is encoded.
type Checkpoint struct {
	// ThreadID names the conversation or job the checkpoint belongs to.
	ThreadID string `json:"thread_id"`
	// Namespace separates the checkpoints of nested graphs that share a
	// thread. It is empty for a top-level graph.
	Namespace string `json:"namespace,omitempty"`
	// ID identifies the checkpoint within its thread and namespace.
	ID string `json:"id"`
	// ParentID is the ID of the checkpoint this one follows, empty for the first.
	ParentID string `json:"parent_id,omitempty"`
	// Step is the superstep after which the checkpoint was taken (-1 for
	// the checkpoint that records a run's input).
	Step int `json:"step"`
	// Source says what produced the checkpoint: "input", "loop", "update" or "fork".
	Source string `json:"source"`
	// CreatedAt is when the checkpoint was written.
	CreatedAt time.Time `json:"created_at"`
	// Metadata is free-form, searchable metadata. Its keys and values must be
	// valid UTF-8: the stores of this module refuse others (and the
	// PostgreSQL store refuses NUL characters too).
	Metadata map[string]string `json:"metadata,omitempty"`
	// Payload is the engine's serialized snapshot.
	Payload []byte `json:"payload"`
}

// PendingWrite is the saved output of one task of the superstep that follows
// a checkpoint. Saving writes as tasks finish lets a resumed run skip the
// tasks that had already finished when the run stopped.
type PendingWrite struct {
	// TaskID identifies the task within its superstep.
	TaskID string `json:"task_id"`
	// Node is the name of the node the task ran.
	Node string `json:"node"`
	// Payload is the engine's serialized task output.
	Payload []byte `json:"payload"`
}

// Tuple is a checkpoint together with the pending writes saved against it.
type Tuple struct {
	Checkpoint Checkpoint     `json:"checkpoint"`
	Writes     []PendingWrite `json:"writes,omitempty"`
}

// ListOptions narrows a history listing.
type ListOptions struct {
	// Limit caps the number of checkpoints returned; zero means no cap.
	Limit int
	// Before, when not empty, lists only checkpoints older than the one with this ID.
	Before string
}

// Saver stores checkpoints. Implementations must be safe for concurrent use.
//
// Within one thread and namespace, checkpoints are ordered by the order in
// which they were put; "latest" means the one put last.
type Saver interface {
	// Put stores a checkpoint. Putting a checkpoint whose ID already exists in
	// its thread and namespace is an error wrapping ErrConflict; nothing is
	// overwritten.
	Put(ctx context.Context, cp Checkpoint) error
	// PutWrites stores pending writes against an existing checkpoint. A write
	// whose TaskID is already stored for that checkpoint replaces the stored one.
	// Writing against an unknown checkpoint is an error wrapping ErrNotFound.
	PutWrites(ctx context.Context, threadID, namespace, checkpointID string, writes []PendingWrite) error
	// Get returns a checkpoint with its pending writes. An empty checkpointID
	// asks for the latest checkpoint of the thread and namespace. A missing
	// thread or checkpoint is an error wrapping ErrNotFound that names it.
	Get(ctx context.Context, threadID, namespace, checkpointID string) (Tuple, error)
	// List returns a thread's checkpoints in a namespace, newest first,
	// without their pending writes. An unknown thread yields an empty list.
	List(ctx context.Context, threadID, namespace string, opts ListOptions) ([]Checkpoint, error)
	// DeleteThread removes every checkpoint and write of a thread, in all
	// namespaces. Deleting an unknown thread is not an error.
	DeleteThread(ctx context.Context, threadID string) error
	// Prune keeps only the newest keep checkpoints of each namespace of a thread
	// (and their writes), removing the rest. keep must be at least 1.
	Prune(ctx context.Context, threadID string, keep int) error
}

// ConditionalSaver is a Saver that can store a checkpoint on the condition
// that its thread's latest checkpoint (in its namespace) is a given one,
// checked and stored atomically. The graph engine uses it when a saver has
// it: each checkpoint a run writes names the one the run last saw as the
// thread's latest, so that two runs of one thread in different processes
// (which a process's own guard, graph.ErrThreadBusy, cannot see) do not
// both continue from the same checkpoint. The later of the two fails
// instead of silently forking the thread. All the stores of this module
// implement it.
//
// A saver that wraps a store by embedding it and overrides Put must
// override PutIfLatest as well (or not embed it): the engine calls
// PutIfLatest instead of Put when the saver has it, so an override of Put
// alone would be bypassed.
type ConditionalSaver interface {
	Saver
	// PutIfLatest stores cp as Put does, provided that the latest
	// checkpoint of cp's thread and namespace is the one with ID latest
	// or, with latest empty, that the thread has no checkpoint in that
	// namespace. Otherwise it stores nothing and returns an error wrapping
	// ErrNotLatest that names the latest checkpoint it found.
	PutIfLatest(ctx context.Context, cp Checkpoint, latest string) error
}

// Errors reported by savers. Stores wrap them with the names of what was
// missing or conflicting, so errors.Is works and the message says which.
var (
	// ErrNotFound reports a thread or checkpoint that does not exist.
	ErrNotFound = errors.New("checkpoint not found")
	// ErrConflict reports an attempt to overwrite an existing checkpoint.
	ErrConflict = errors.New("checkpoint already exists")
	// ErrNotLatest reports a conditional put (ConditionalSaver) refused
	// because the thread's latest checkpoint is not the expected one:
	// another writer stored a checkpoint since the caller read the thread.
	ErrNotLatest = errors.New("the thread's latest checkpoint is not the expected one")
	// ErrFenced reports a write that a store's write guard refused: the
	// writer no longer has the right to write (the runs layer's worker that
	// lost a run's lease, say). Nothing was stored.
	ErrFenced = errors.New("the write was refused by the store's write guard")
)

// WriteGuard gives the statement a store runs first in the transaction of
// each write made with ctx (Put, PutIfLatest, PutWrites), and its
// arguments, or ok false when the write needs none. The stores of this
// module take one as an option; what makes the statement refuse a write
// depends on the database (see each store's option).
type WriteGuard func(ctx context.Context) (query string, args []any, ok bool)

// NotLatest returns the error a ConditionalSaver gives when it finds the
// checkpoint found (none, when empty) where the caller expected the one
// with ID expected (none, when empty). It wraps ErrNotLatest.
func NotLatest(found, expected string) error {
	return fmt.Errorf("%w: the latest is %s, not %s", ErrNotLatest, idOrNone(found), idOrNone(expected))
}

func idOrNone(id string) string {
	if id == "" {
		return "none"
	}
	return strconv.Quote(id)
}
