package state

import (
	"context"
	"errors"
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

// Errors reported by savers. Stores wrap them with the names of what was
// missing or conflicting, so errors.Is works and the message says which.
var (
	// ErrNotFound reports a thread or checkpoint that does not exist.
	ErrNotFound = errors.New("checkpoint not found")
	// ErrConflict reports an attempt to overwrite an existing checkpoint.
	ErrConflict = errors.New("checkpoint already exists")
)
