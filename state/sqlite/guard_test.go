package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/sqlite"
)

type guardKey struct{}

// guardOn fences writes made with a context carrying an allowed flag: its
// statement changes the lease row only while the flag matches it.
func guardOn(ctx context.Context) (string, []any, bool) {
	v, ok := ctx.Value(guardKey{}).(int)
	if !ok {
		return "", nil, false
	}
	return `UPDATE lease SET renewed = renewed + 1 WHERE holder = ?`, []any{v}, true
}

// A write guard that changes no row refuses the write: nothing is stored,
// and the error says so (state.ErrFenced). Writes it lets through, and
// writes without a guard statement, are stored as usual.
func TestWriteGuardRefusesWritesOfAFencedWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "guarded.db")
	s, err := sqlite.Open(path, sqlite.WithWriteGuard(guardOn))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = db.Exec(`CREATE TABLE lease (holder INTEGER, renewed INTEGER); INSERT INTO lease VALUES (1, 0)`)
	require.NoError(t, err)

	holder := context.WithValue(t.Context(), guardKey{}, 1)
	fenced := context.WithValue(t.Context(), guardKey{}, 2)
	cp := func(id string) state.Checkpoint {
		return state.Checkpoint{ThreadID: "t", ID: id, Source: "loop", Payload: []byte("{}")}
	}
	require.NoError(t, s.Put(holder, cp("a")))
	require.ErrorIs(t, s.PutIfLatest(fenced, cp("b"), "a"), state.ErrFenced)
	require.ErrorIs(t, s.Put(fenced, cp("b")), state.ErrFenced)
	require.ErrorIs(t, s.PutWrites(fenced, "t", "", "a", []state.PendingWrite{{TaskID: "x", Node: "n", Payload: []byte("1")}}), state.ErrFenced)
	require.NoError(t, s.PutIfLatest(holder, cp("c"), "a"))
	require.NoError(t, s.Put(t.Context(), cp("d")), "a write without a guard statement is not fenced")

	list, err := s.List(t.Context(), "t", "", state.ListOptions{})
	require.NoError(t, err)
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"d", "c", "a"}, ids)
	tup, err := s.Get(t.Context(), "t", "", "a")
	require.NoError(t, err)
	assert.Empty(t, tup.Writes, "the fenced pending write was not stored")
	var renewed int
	require.NoError(t, db.QueryRow(`SELECT renewed FROM lease`).Scan(&renewed))
	assert.Equal(t, 2, renewed, "the guard ran in the two writes it let through")
}
