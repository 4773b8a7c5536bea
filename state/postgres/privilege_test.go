package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/postgres"
)

// testRole creates a role that may only read and write the tables of schema
// (no CREATE anywhere) and returns a pool whose connections act as it. It
// skips the test unless the server's user is a superuser, which may create
// roles and act as them.
func testRole(t *testing.T, admin *pgxpool.Pool, schema string) *pgxpool.Pool {
	t.Helper()
	ctx := t.Context()
	var super string
	require.NoError(t, admin.QueryRow(ctx, `SHOW is_superuser`).Scan(&super))
	if super != "on" {
		t.Skip("needs a superuser to create a role and act as it")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	role := pgx.Identifier{"trellis_test_role_" + hex.EncodeToString(b)}.Sanitize()
	quotedSchema := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range []string{
		`CREATE ROLE ` + role + ` NOLOGIN`,
		`GRANT USAGE ON SCHEMA ` + quotedSchema + ` TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + quotedSchema + ` TO ` + role,
	} {
		_, err := admin.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, stmt := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			_, err := admin.Exec(ctx, stmt)
			require.NoError(t, err, stmt)
		}
	})
	pool := testPool(t, func(c *pgxpool.Config) {
		c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, `SET ROLE `+role)
			return err
		}
	})
	var canCreate bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT has_schema_privilege($1, 'CREATE')`, schema).Scan(&canCreate))
	require.False(t, canCreate, "the role must not be able to create tables")
	return pool
}

// A service often runs as a role that may read and write the store's tables
// but not create anything, once the tables exist: opening the store must
// not need more than that.
func TestOpensCurrentTablesWithoutCreatePrivilege(t *testing.T) {
	admin := testPool(t)
	schema := testSchema(t, admin)
	ctx := t.Context()
	_, err := postgres.New(ctx, admin, postgres.WithSchema(schema))
	require.NoError(t, err, "creating the tables as the administrator")

	app := testRole(t, admin, schema)
	s, err := postgres.New(ctx, app, postgres.WithSchema(schema))
	require.NoError(t, err, "opening current tables must not create anything")

	require.NoError(t, s.Put(ctx, state.Checkpoint{ThreadID: "t", ID: "cp-1"}))
	require.NoError(t, s.Put(ctx, state.Checkpoint{ThreadID: "t", ID: "cp-2"}))
	require.NoError(t, s.PutWrites(ctx, "t", "", "cp-2", []state.PendingWrite{{TaskID: "task", Node: "n"}}))
	tup, err := s.Get(ctx, "t", "", "")
	require.NoError(t, err)
	assert.Equal(t, "cp-2", tup.Checkpoint.ID)
	assert.Len(t, tup.Writes, 1)
	require.NoError(t, s.Prune(ctx, "t", 1))
	require.NoError(t, s.DeleteThread(ctx, "t"))

	// Without the tables, the role cannot create them, and the error says so.
	_, err = postgres.New(ctx, app, postgres.WithSchema(schema), postgres.WithTablePrefix("other_"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "permission denied")
}
