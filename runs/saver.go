package runs

import (
	"context"
	"errors"

	"github.com/trellis-go/trellis/state"
)

// observedSaver is the checkpointer a Manager gives its graphs: the
// backend's, with its failures noted on the attempt that met them. A run
// that fails because its store failed (a lost connection, a full pool) is
// tried again rather than recorded as failed: the graph did nothing wrong.
type observedSaver struct {
	state.ConditionalSaver
}

// note records err on the attempt behind ctx when it is the store's own
// failure rather than an answer about the data.
func note(ctx context.Context, err error) {
	if err == nil || errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrConflict) ||
		errors.Is(err, state.ErrNotLatest) || errors.Is(err, state.ErrFenced) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if f, ok := ctx.Value(fenceKey{}).(*fence); ok && f.attempt != nil {
		f.attempt.storeFailed.Store(true)
	}
}

// Put stores cp, noting a failure of the store.
func (s *observedSaver) Put(ctx context.Context, cp state.Checkpoint) error {
	err := s.ConditionalSaver.Put(ctx, cp)
	note(ctx, err)
	return err
}

// PutIfLatest stores cp if latest is the thread's latest, noting a
// failure of the store.
func (s *observedSaver) PutIfLatest(ctx context.Context, cp state.Checkpoint, latest string) error {
	err := s.ConditionalSaver.PutIfLatest(ctx, cp, latest)
	note(ctx, err)
	return err
}

// PutWrites stores pending writes, noting a failure of the store.
func (s *observedSaver) PutWrites(ctx context.Context, threadID, namespace, checkpointID string, writes []state.PendingWrite) error {
	err := s.ConditionalSaver.PutWrites(ctx, threadID, namespace, checkpointID, writes)
	note(ctx, err)
	return err
}

// Get reads a checkpoint, noting a failure of the store.
func (s *observedSaver) Get(ctx context.Context, threadID, namespace, checkpointID string) (state.Tuple, error) {
	t, err := s.ConditionalSaver.Get(ctx, threadID, namespace, checkpointID)
	note(ctx, err)
	return t, err
}

// List lists checkpoints, noting a failure of the store.
func (s *observedSaver) List(ctx context.Context, threadID, namespace string, opts state.ListOptions) ([]state.Checkpoint, error) {
	l, err := s.ConditionalSaver.List(ctx, threadID, namespace, opts)
	note(ctx, err)
	return l, err
}
