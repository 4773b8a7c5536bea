package postgres

import (
	"context"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
)

// wantDefaultMaxConns is the pool size Open chooses: DefaultMaxConns, or
// pgx's own default (the number of CPUs) when larger.
func wantDefaultMaxConns() int32 {
	return int32(max(DefaultMaxConns, runtime.NumCPU()))
}

// The pool Open makes serves concurrent runs: it holds DefaultMaxConns
// connections rather than pgx's default of 4 on a small machine, unless
// the connection string says otherwise.
func TestOpenSizesItsPoolForConcurrentRuns(t *testing.T) {
	tests := []struct {
		name, conn string
		want       int32
	}{
		{"URL", "postgres://app@db:5432/app?sslmode=disable", wantDefaultMaxConns()},
		{"DSN", "host=db user=app dbname=app", wantDefaultMaxConns()},
		{"URL with pool_max_conns", "postgres://app@db:5432/app?sslmode=disable&pool_max_conns=3", 3},
		{"DSN with pool_max_conns", "host=db user=app pool_max_conns=40", 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := poolConfig(tt.conn)
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.MaxConns)
		})
	}
	_, err := poolConfig("postgres://app:secret@db:notaport/app")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret")
}

// The same, through a store Open makes on the test server; a pool the
// caller gives New keeps its size.
func TestOpenOnServerUsesTheDefaultPoolSize(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a PostgreSQL server; skipped in -short")
	}
	ctx := context.Background()
	small := pgtest.Pool(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
	schema := pgtest.Schema(t, small, "trellis_pool_")

	s, err := Open(ctx, pgtest.URL(), WithSchema(schema))
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, wantDefaultMaxConns(), s.pool.Config().MaxConns)

	mine, err := New(ctx, small, WithSchema(schema))
	require.NoError(t, err)
	assert.EqualValues(t, 2, mine.pool.Config().MaxConns, "a caller's pool is used as it is")
}
