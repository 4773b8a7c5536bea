package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A session of the test holds a lock on one table of the schema and asks
// for another once the drop holds that one and waits: the server ends the
// drop as a deadlock's loser, and the cleanup must drop the schema all the
// same once the session is done.
func TestDropOfATestSchemaOutlastsADeadlock(t *testing.T) {
	pool := Pool(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	name := "trellis_pgtest_" + randomSuffix()
	schema := pgx.Identifier{name}.Sanitize()
	_, err := pool.Exec(ctx, `CREATE SCHEMA `+schema+`; CREATE TABLE `+schema+`.a (x int); CREATE TABLE `+schema+`.b (x int)`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) })

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE `+schema+`.b IN ACCESS SHARE MODE`)
	require.NoError(t, err)

	dropped := make(chan error, 1)
	go func() { dropped <- dropSchema(ctx, pool, name) }()
	// The drop holds a and waits for b.
	require.Eventually(t, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'b' AND NOT l.granted)`, name).Scan(&waiting)
		return err == nil && waiting
	}, 20*time.Second, 10*time.Millisecond, "the drop never waited for the session's lock")
	// Asking for a closes the cycle: the server ends one side of it.
	_, _ = tx.Exec(ctx, `SELECT * FROM `+schema+`.a`)
	_ = tx.Rollback(ctx)

	select {
	case err := <-dropped:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the drop did not end")
	}
	var left bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&left))
	assert.False(t, left, "the schema is still there")
}
