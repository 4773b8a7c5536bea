package runs

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
	statememory "github.com/trellis-go/trellis/state/memory"
)

// A run that ends while a Start queues another run behind it on the same
// thread must hand the thread to that run. On PostgreSQL the Start holds
// the thread's row lock while it stores the pending run; the end's update
// of the thread waits for it, and must then see the run the Start stored
// rather than decide from what it read before it waited.
func TestAnEndingRunHandsItsThreadToARunQueuedMeanwhileOnPostgres(t *testing.T) {
	pgtest.SkipShort(t)
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "runs_advance")
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	ctx := t.Context()
	m, err := New(ctx, Backend{Dialect: DialectPostgres, DB: db, Local: NewLocalQueue(), Schema: schema, Saver: statememory.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })

	th, err := m.CreateThread(ctx, "", nil)
	require.NoError(t, err)
	insertRun := func(ex interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}, id, status string) {
		t.Helper()
		_, err := ex.ExecContext(ctx, m.sql(`INSERT INTO {runs}
			(run_id, thread_id, owner, graph, status, strategy, request, metadata, created_at, start_at, updated_at)
			VALUES ($1, $2, '', 'g', $3, 'enqueue', '{}', '{}', {now}, {now}, {now})`), id, th.ID, status)
		require.NoError(t, err)
	}
	insertRun(db, "ending", "running")
	_, err = db.ExecContext(ctx, m.sql(`UPDATE {threads} SET active_run = 'ending', status = 'busy' WHERE thread_id = $1`), th.ID)
	require.NoError(t, err)

	// The Start: it locks the thread, finds it busy, stores its run as
	// pending, and has not committed yet.
	start, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = start.Rollback() }()
	var active string
	require.NoError(t, start.QueryRowContext(ctx, m.sql(`SELECT active_run FROM {threads} WHERE thread_id = $1{lock}`), th.ID).Scan(&active))
	require.Equal(t, "ending", active)
	insertRun(start, "queued", "pending")

	// The end of the running run, which waits for the Start's lock.
	ended := make(chan error, 1)
	go func() {
		ended <- m.tx(ctx, func(tx *sql.Tx) error {
			if err := m.lockThread(ctx, tx, th.ID); err != nil {
				return err
			}
			return m.advance(ctx, tx, th.ID, StatusSuccess)
		})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database() AND position($1 in query) > 0`, schema).Scan(&waiting))
		if waiting > 0 {
			break
		}
		select {
		case err := <-ended:
			t.Fatalf("the end did not wait for the Start's lock of the thread (err %v)", err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "the end never waited for the thread's lock")
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, start.Commit())
	select {
	case err := <-ended:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the end did not finish after the Start committed")
	}

	var status string
	require.NoError(t, db.QueryRowContext(ctx, m.sql(`SELECT active_run, status FROM {threads} WHERE thread_id = $1`), th.ID).Scan(&active, &status))
	require.Equal(t, "queued", active, "the thread went %s with a run waiting", status)
	require.Equal(t, string(ThreadBusy), status)
}
