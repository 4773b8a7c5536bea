package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/postgres"
)

// A checkpoint deleted while writes against it wait for the deleting
// transaction is an unknown checkpoint by the time they would land: the
// writes fail with state.ErrNotFound, as against any unknown checkpoint.
func TestPutWritesAgainstACheckpointDeletedMeanwhileIsNotFound(t *testing.T) {
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := t.Context()
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	require.NoError(t, err)

	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("task already written %v", existing), func(t *testing.T) {
			thread := fmt.Sprintf("doomed-%v", existing)
			require.NoError(t, s.Put(ctx, state.Checkpoint{ThreadID: thread, ID: "cp"}))
			if existing {
				require.NoError(t, s.PutWrites(ctx, thread, "", "cp", []state.PendingWrite{{TaskID: "task", Node: "n"}}))
			}

			// Delete the checkpoint in a transaction left open, so the
			// writes below find it and then wait for its row.
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, "trellis_checkpoints"}.Sanitize()+` WHERE thread_id = $1`, thread)
			require.NoError(t, err)

			done := make(chan error, 1)
			go func() {
				done <- s.PutWrites(ctx, thread, "", "cp", []state.PendingWrite{{TaskID: "task", Node: "n", Payload: []byte("x")}})
			}()
			// Wait until the writes are blocked on the deleting transaction.
			for {
				var waiting int
				require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%checkpoint_writes%'`,
					schema).Scan(&waiting))
				if waiting > 0 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("PutWrites returned before the delete committed: %v", err)
				case <-time.After(5 * time.Millisecond):
				}
			}
			require.NoError(t, tx.Commit(ctx))

			err = <-done
			require.Error(t, err)
			assert.ErrorIs(t, err, state.ErrNotFound)
			assert.Contains(t, err.Error(), thread)
			_, err = s.Get(ctx, thread, "", "cp")
			assert.ErrorIs(t, err, state.ErrNotFound)
		})
	}
}
