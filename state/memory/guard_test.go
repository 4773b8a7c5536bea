package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/state/savertest"
)

func TestGuardedStoreThatAdmitsEverythingConforms(t *testing.T) {
	savertest.Run(t, func(t *testing.T) state.Saver {
		return memory.New(memory.WithWriteGuard(func(context.Context) error { return nil }))
	})
}

var errNotYours = errors.New("not yours")

// refuseKey marks the context of a write the test's guard refuses.
type refuseKey struct{}

func TestGuardRefusalStoresNothingAndWrapsErrFenced(t *testing.T) {
	calls := 0
	s := memory.New(memory.WithWriteGuard(func(ctx context.Context) error {
		calls++
		if ctx.Value(refuseKey{}) != nil {
			return errNotYours
		}
		return nil
	}))
	ctx := context.Background()
	refused := context.WithValue(ctx, refuseKey{}, true)

	cp := state.Checkpoint{ThreadID: "t", ID: "c1", Payload: []byte(`{}`)}
	err := s.Put(refused, cp)
	require.ErrorIs(t, err, state.ErrFenced)
	require.ErrorIs(t, err, errNotYours)
	_, err = s.Get(ctx, "t", "", "")
	require.ErrorIs(t, err, state.ErrNotFound, "a refused put stores nothing")

	require.ErrorIs(t, s.PutIfLatest(refused, cp, ""), state.ErrFenced)
	require.NoError(t, s.PutIfLatest(ctx, cp, ""))

	w := []state.PendingWrite{{TaskID: "task", Node: "a", Payload: []byte(`1`)}}
	require.ErrorIs(t, s.PutWrites(refused, "t", "", "c1", w), state.ErrFenced)
	tup, err := s.Get(ctx, "t", "", "c1")
	require.NoError(t, err)
	require.Empty(t, tup.Writes, "refused writes are not stored")
	require.NoError(t, s.PutWrites(ctx, "t", "", "c1", w))
	require.Equal(t, 5, calls)
}

func TestGuardIsNotCalledForAWriteThatFailsItsChecks(t *testing.T) {
	calls := 0
	s := memory.New(memory.WithWriteGuard(func(context.Context) error { calls++; return nil }))
	ctx := context.Background()
	cp := state.Checkpoint{ThreadID: "t", ID: "c1"}
	require.NoError(t, s.Put(ctx, cp))
	require.Equal(t, 1, calls)

	require.ErrorIs(t, s.Put(ctx, cp), state.ErrConflict)
	require.ErrorIs(t, s.PutIfLatest(ctx, state.Checkpoint{ThreadID: "t", ID: "c2"}, "other"), state.ErrNotLatest)
	require.ErrorIs(t, s.PutWrites(ctx, "t", "", "missing", []state.PendingWrite{{TaskID: "x"}}), state.ErrNotFound)
	require.Equal(t, 1, calls, "the guard is asked only for writes that would be stored")
}
