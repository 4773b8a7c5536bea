package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/postgres"
)

type guardKey struct{}

// A write guard that raises refuses the write in the same transaction:
// nothing is stored, and the error says so (state.ErrFenced). Writes it
// lets through, and writes without a guard statement, are stored as usual.
func TestWriteGuardRefusesWritesOfAFencedWriter(t *testing.T) {
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := t.Context()
	lease := pgx.Identifier{schema, "lease"}.Sanitize()
	fn := pgx.Identifier{schema, "check_lease"}.Sanitize()
	_, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE `+lease+` (holder INT, renewed INT); INSERT INTO `+lease+` VALUES (1, 0)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE FUNCTION `+fn+`(h INT) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
			UPDATE `+lease+` SET renewed = renewed + 1 WHERE holder = h;
			IF NOT FOUND THEN RAISE EXCEPTION 'not the holder'; END IF;
		END $$`)
	require.NoError(t, err)
	guard := func(ctx context.Context) (string, []any, bool) {
		v, ok := ctx.Value(guardKey{}).(int)
		if !ok {
			return "", nil, false
		}
		return `SELECT ` + fn + `($1)`, []any{v}, true
	}
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema), postgres.WithWriteGuard(guard))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	holder := context.WithValue(ctx, guardKey{}, 1)
	fenced := context.WithValue(ctx, guardKey{}, 2)
	cp := func(id string) state.Checkpoint {
		return state.Checkpoint{ThreadID: "t", ID: id, Source: "loop", Payload: []byte("{}")}
	}
	require.NoError(t, s.Put(holder, cp("a")))
	err = s.PutIfLatest(fenced, cp("b"), "a")
	require.ErrorIs(t, err, state.ErrFenced)
	assert.Contains(t, err.Error(), "not the holder")
	require.ErrorIs(t, s.Put(fenced, cp("b")), state.ErrFenced)
	require.ErrorIs(t, s.PutWrites(fenced, "t", "", "a", []state.PendingWrite{{TaskID: "x", Node: "n", Payload: []byte("1")}}), state.ErrFenced)
	require.NoError(t, s.PutIfLatest(holder, cp("c"), "a"))
	require.NoError(t, s.Put(ctx, cp("d")), "a write without a guard statement is not fenced")

	list, err := s.List(ctx, "t", "", state.ListOptions{})
	require.NoError(t, err)
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"d", "c", "a"}, ids)
	tup, err := s.Get(ctx, "t", "", "a")
	require.NoError(t, err)
	assert.Empty(t, tup.Writes, "the fenced pending write was not stored")
	var renewed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT renewed FROM `+lease).Scan(&renewed))
	assert.Equal(t, 2, renewed, "the guard ran in the two writes it let through")
}
