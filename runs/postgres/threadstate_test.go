package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/postgres"
	"github.com/trellis-go/trellis/runs/runstest"
)

func TestThreadState(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL (-short)")
	}
	runstest.ThreadState(t, func(t *testing.T) *runs.Manager {
		pool := pgtest.Pool(t, func(c *pgxpool.Config) { c.MaxConns = 16 })
		schema := pgtest.Schema(t, pool, "trellis_runs_state_")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, m.Close()) })
		return m
	})
}
