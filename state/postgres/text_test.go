package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/postgres"
)

// PostgreSQL text and jsonb hold neither NUL characters nor invalid UTF-8.
// A write carrying them is refused with an error that names the field;
// a read or delete naming them finds nothing, as for any unknown name.
func TestTextThatPostgresCannotStoreIsNamed(t *testing.T) {
	pool := testPool(t)
	s, err := postgres.New(t.Context(), pool, postgres.WithSchema(testSchema(t, pool)))
	require.NoError(t, err)
	ctx := t.Context()

	puts := []struct {
		name string
		cp   state.Checkpoint
		want []string
	}{
		{"NUL in a metadata value", state.Checkpoint{ThreadID: "t", ID: "cp", Metadata: map[string]string{"k": "a\x00b"}},
			[]string{`metadata "k"`, "NUL"}},
		{"NUL in a metadata key", state.Checkpoint{ThreadID: "t", ID: "cp", Metadata: map[string]string{"k\x00": "v"}},
			[]string{`metadata "k\x00"`, "NUL"}},
		{"NUL in the parent ID", state.Checkpoint{ThreadID: "t", ID: "cp", ParentID: "p\x00"},
			[]string{`parent ID "p\x00"`, "NUL"}},
		{"invalid UTF-8 in the source", state.Checkpoint{ThreadID: "t", ID: "cp", Source: "loop\xff"},
			[]string{`source "loop\xff"`, "UTF-8"}},
		{"NUL in the namespace", state.Checkpoint{ThreadID: "t", Namespace: "ns\x00", ID: "cp"},
			[]string{`namespace "ns\x00"`, "NUL"}},
		{"NUL in the checkpoint ID", state.Checkpoint{ThreadID: "t", ID: "cp\x00"},
			[]string{`checkpoint ID "cp\x00"`, "NUL"}},
	}
	for _, tt := range puts {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Put(ctx, tt.cp)
			require.Error(t, err)
			assert.NotErrorIs(t, err, state.ErrConflict)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	require.NoError(t, s.Put(ctx, state.Checkpoint{ThreadID: "t", ID: "cp"}))
	err = s.PutWrites(ctx, "t", "", "cp", []state.PendingWrite{{TaskID: "ok", Node: "n"}, {TaskID: "task\x00", Node: "n"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `write 1 (node "n"): task ID "task\x00"`)
	err = s.PutWrites(ctx, "t", "", "cp", []state.PendingWrite{{TaskID: "task", Node: "node\xff"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `write 0 (node "node\xff"): node "node\xff"`)
	tup, err := s.Get(ctx, "t", "", "cp")
	require.NoError(t, err)
	assert.Empty(t, tup.Writes, "a refused batch stores nothing")

	// Names that cannot be stored name nothing that exists.
	_, err = s.Get(ctx, "t\x00", "", "")
	assert.ErrorIs(t, err, state.ErrNotFound)
	_, err = s.Get(ctx, "t", "\xff", "")
	assert.ErrorIs(t, err, state.ErrNotFound)
	_, err = s.Get(ctx, "t", "", "cp\x00")
	assert.ErrorIs(t, err, state.ErrNotFound)
	assert.Contains(t, err.Error(), `"cp\x00"`)
	err = s.PutWrites(ctx, "t", "", "cp\x00", []state.PendingWrite{{TaskID: "task", Node: "n"}})
	assert.ErrorIs(t, err, state.ErrNotFound)
	cps, err := s.List(ctx, "t\x00", "", state.ListOptions{})
	require.NoError(t, err, "an unknown thread yields an empty list")
	assert.Empty(t, cps)
	_, err = s.List(ctx, "t", "", state.ListOptions{Before: "cp\x00"})
	assert.ErrorIs(t, err, state.ErrNotFound)
	_, err = s.List(ctx, "t\x00", "", state.ListOptions{Before: "cp"})
	assert.ErrorIs(t, err, state.ErrNotFound)
	require.NoError(t, s.DeleteThread(ctx, "t\x00"), "deleting an unknown thread is not an error")
	require.NoError(t, s.Prune(ctx, "t\xff", 1))

	tup, err = s.Get(ctx, "t", "", "")
	require.NoError(t, err)
	assert.Equal(t, "cp", tup.Checkpoint.ID)
}
