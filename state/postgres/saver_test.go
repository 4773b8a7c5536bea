package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/postgres"
	"github.com/trellis-go/trellis/state/savertest"
)

func TestConformance(t *testing.T) {
	pool := testPool(t)
	savertest.Run(t, func(t *testing.T) state.Saver {
		s, err := postgres.New(t.Context(), pool, postgres.WithSchema(testSchema(t, pool)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func TestConformanceWithTablePrefixInSearchPath(t *testing.T) {
	pool := testPool(t)
	// No schema option: the tables go to the search_path's schema, told
	// apart from other runs by the prefix alone.
	prefix := testSchema(t, pool) + "_"
	savertest.Run(t, func(t *testing.T) state.Saver {
		ctx := t.Context()
		s, err := postgres.New(ctx, pool, postgres.WithTablePrefix(prefix))
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, table := range []string{"checkpoint_writes", "checkpoints", "schema_migrations"} {
				_, err := pool.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{prefix + table}.Sanitize())
				require.NoError(t, err)
			}
		})
		return s
	})
}

func TestTableLayout(t *testing.T) {
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := t.Context()
	_, err := postgres.New(ctx, pool, postgres.WithSchema(schema), postgres.WithTablePrefix("app_"))
	require.NoError(t, err)

	rows, err := pool.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = $1 ORDER BY table_name, ordinal_position`, schema)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var table, column, typ string
		err := r.Scan(&table, &column, &typ)
		return table + "." + column + " " + typ, err
	})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"app_checkpoint_writes.seq bigint",
		"app_checkpoint_writes.checkpoint_seq bigint",
		"app_checkpoint_writes.task_id text",
		"app_checkpoint_writes.node text",
		"app_checkpoint_writes.payload bytea",
		"app_checkpoints.seq bigint",
		"app_checkpoints.thread_id text",
		"app_checkpoints.namespace text",
		"app_checkpoints.checkpoint_id text",
		"app_checkpoints.parent_id text",
		"app_checkpoints.step bigint",
		"app_checkpoints.source text",
		"app_checkpoints.created_at timestamp with time zone",
		"app_checkpoints.metadata jsonb",
		"app_checkpoints.payload bytea",
		"app_schema_migrations.version integer",
		"app_schema_migrations.applied_at timestamp with time zone",
	}, got)

	var version int
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(version) FROM `+pgx.Identifier{schema, "app_schema_migrations"}.Sanitize()).Scan(&version))
	assert.Equal(t, postgres.SchemaVersion, version)
}

func TestConcurrentFirstUse(t *testing.T) {
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := t.Context()

	const replicas = 8
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			_, errs[i] = postgres.New(ctx, pool, postgres.WithSchema(schema))
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "replica %d", i)
	}
	var applied int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "trellis_schema_migrations"}.Sanitize()).Scan(&applied))
	assert.Equal(t, postgres.SchemaVersion, applied, "each migration applied once")
}

func TestReplicasShareThreads(t *testing.T) {
	schema := testSchema(t, testPool(t))
	ctx := t.Context()
	a, err := postgres.Open(ctx, serverURL(), postgres.WithSchema(schema))
	require.NoError(t, err)
	defer a.Close()
	b, err := postgres.Open(ctx, serverURL(), postgres.WithSchema(schema))
	require.NoError(t, err)
	defer b.Close()

	require.NoError(t, a.Put(ctx, state.Checkpoint{ThreadID: "job-1", ID: "cp-1", Payload: []byte("from a")}))
	require.NoError(t, a.PutWrites(ctx, "job-1", "", "cp-1", []state.PendingWrite{{TaskID: "t", Node: "n"}}))
	tup, err := b.Get(ctx, "job-1", "", "")
	require.NoError(t, err)
	assert.Equal(t, "from a", string(tup.Checkpoint.Payload))
	assert.Len(t, tup.Writes, 1)

	require.NoError(t, b.Put(ctx, state.Checkpoint{ThreadID: "job-1", ID: "cp-2", ParentID: "cp-1"}))
	tup, err = a.Get(ctx, "job-1", "", "")
	require.NoError(t, err)
	assert.Equal(t, "cp-2", tup.Checkpoint.ID)
	assert.ErrorIs(t, b.Put(ctx, state.Checkpoint{ThreadID: "job-1", ID: "cp-1"}), state.ErrConflict)
}

func TestPrefixesIsolateStores(t *testing.T) {
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := t.Context()
	one, err := postgres.New(ctx, pool, postgres.WithSchema(schema), postgres.WithTablePrefix("one_"))
	require.NoError(t, err)
	two, err := postgres.New(ctx, pool, postgres.WithSchema(schema), postgres.WithTablePrefix("two_"))
	require.NoError(t, err)

	require.NoError(t, one.Put(ctx, state.Checkpoint{ThreadID: "t", ID: "cp"}))
	_, err = two.Get(ctx, "t", "", "")
	assert.ErrorIs(t, err, state.ErrNotFound)
	require.NoError(t, two.Put(ctx, state.Checkpoint{ThreadID: "t", ID: "cp"}), "same IDs in another prefix are no conflict")
}

func TestNewerSchemaIsRefused(t *testing.T) {
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := t.Context()
	_, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "trellis_schema_migrations"}.Sanitize()+` (version) VALUES ($1)`,
		postgres.SchemaVersion+1)
	require.NoError(t, err)

	_, err = postgres.New(ctx, pool, postgres.WithSchema(schema))
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("database schema version %d is newer than this store supports (%d)",
		postgres.SchemaVersion+1, postgres.SchemaVersion))
}

func TestOptionsAreValidated(t *testing.T) {
	pool := testPool(t)
	tests := []struct {
		name    string
		opt     postgres.Option
		message string
	}{
		{"schema with a quote", postgres.WithSchema(`x"; DROP TABLE y; --`), `schema "x\"; DROP TABLE y; --": character '"' at 1`},
		{"schema starting with a digit", postgres.WithSchema("1abc"), `schema "1abc": character '1' at 0`},
		{"schema too long", postgres.WithSchema(string(make([]byte, 64))), "longer than 63 bytes"},
		{"prefix with a dot", postgres.WithTablePrefix("a.b_"), `table prefix "a.b_": character '.' at 1`},
		{"prefix too long", postgres.WithTablePrefix("p123456789012345678901234567890123456789012345_"), "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := postgres.New(t.Context(), pool, tt.opt)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tt.message)
		})
	}

	_, err := postgres.New(t.Context(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil *pgxpool.Pool")
}

func TestOpenErrors(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://u@127.0.0.1:5432/db?sslmode=bogus")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "postgres: open")

	// Reachable server, missing database: the pool is closed again (goleak
	// checks) and the error says why.
	pool := testPool(t)
	cfg := pool.Config().ConnConfig.Copy()
	url := fmt.Sprintf("postgres://%s@%s:%d/trellis_no_such_database?sslmode=disable", cfg.User, cfg.Host, cfg.Port)
	_, err = postgres.Open(t.Context(), url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "trellis_no_such_database")
}

func TestCloseKeepsCallersPool(t *testing.T) {
	pool := testPool(t)
	s, err := postgres.New(t.Context(), pool, postgres.WithSchema(testSchema(t, pool)))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, pool.Ping(t.Context()), "Close must leave a caller's pool open")

	owned, err := postgres.Open(t.Context(), serverURL(), postgres.WithSchema(testSchema(t, pool)))
	require.NoError(t, err)
	require.NoError(t, owned.Close())
	_, err = owned.Get(t.Context(), "t", "", "")
	require.Error(t, err)
	assert.NotErrorIs(t, err, state.ErrNotFound)
	assert.Contains(t, err.Error(), "closed pool")
}

func TestTextThatPostgresCannotStore(t *testing.T) {
	pool := testPool(t)
	s, err := postgres.New(t.Context(), pool, postgres.WithSchema(testSchema(t, pool)))
	require.NoError(t, err)
	ctx := t.Context()

	err = s.Put(ctx, state.Checkpoint{ThreadID: "t", ID: "cp", Metadata: map[string]string{"bad\xff": "v"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "valid UTF-8")

	err = s.Put(ctx, state.Checkpoint{ThreadID: "t\x00nul", ID: "cp"})
	require.Error(t, err, "text columns cannot hold NUL")
	assert.Contains(t, err.Error(), `thread "t\x00nul"`)

	_, err = s.Get(ctx, "t", "", "")
	assert.ErrorIs(t, err, state.ErrNotFound, "nothing was stored")
}

// Two batches of writes to the same checkpoint that touch the same tasks in
// opposite orders make PostgreSQL abort one of them as a deadlock; the store
// runs the aborted statement again, so both batches land.
func TestPutWritesInOppositeOrdersBothLand(t *testing.T) {
	// The server waits deadlock_timeout (1 s by default) before it looks
	// for a deadlock; a superuser may shorten it for its own sessions.
	pool := testPool(t)
	var super string
	require.NoError(t, pool.QueryRow(t.Context(), `SHOW is_superuser`).Scan(&super))
	if super == "on" {
		pool = testPool(t, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["deadlock_timeout"] = "20ms" })
	}
	ctx := t.Context()
	s, err := postgres.New(ctx, pool, postgres.WithSchema(testSchema(t, pool)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	const tasks = 200
	forward := make([]state.PendingWrite, tasks)
	for i := range forward {
		forward[i] = state.PendingWrite{TaskID: fmt.Sprintf("task-%03d", i), Node: "a", Payload: []byte(`1`)}
	}
	backward := make([]state.PendingWrite, tasks)
	for i := range backward {
		backward[i] = state.PendingWrite{TaskID: fmt.Sprintf("task-%03d", tasks-1-i), Node: "b", Payload: []byte(`2`)}
	}
	for round := range 10 {
		cp := state.Checkpoint{ThreadID: "deadlock", ID: fmt.Sprintf("cp-%d", round), Step: round, CreatedAt: time.Now()}
		require.NoError(t, s.Put(ctx, cp))
		// The rows exist first, so both batches update them and lock them
		// in their own order.
		require.NoError(t, s.PutWrites(ctx, cp.ThreadID, "", cp.ID, forward))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, batch := range [][]state.PendingWrite{forward, backward} {
			wg.Go(func() { errs[i] = s.PutWrites(ctx, cp.ThreadID, "", cp.ID, batch) })
		}
		wg.Wait()
		require.NoError(t, errs[0], "round %d", round)
		require.NoError(t, errs[1], "round %d", round)

		tup, err := s.Get(ctx, cp.ThreadID, "", cp.ID)
		require.NoError(t, err)
		require.Len(t, tup.Writes, tasks, "every task is stored once")
		// Whichever batch committed last wrote every task.
		node := tup.Writes[0].Node
		for _, w := range tup.Writes {
			assert.Equal(t, node, w.Node, "round %d: one batch's writes, all or none", round)
		}
	}
}
