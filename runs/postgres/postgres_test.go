package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/postgres"
	"github.com/trellis-go/trellis/runs/runstest"
)

func TestMain(m *testing.M) {
	runstest.WorkerMain(openAddr)
	goleak.VerifyTestMain(m)
}

// openAddr opens a Manager on "<schema>@<url>".
func openAddr(ctx context.Context, addr string, opts ...runs.Option) (*runs.Manager, error) {
	schema, url, _ := strings.Cut(addr, "@")
	return postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithRuns(opts...))
}

// Worker processes share one database: runs survive a SIGTERM, a SIGKILL
// and a worker frozen past its leases (see runstest.Processes).
func TestRunsOutliveWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and needs PostgreSQL (-short)")
	}
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "trellis_runs_procs_")
	runstest.Processes(t, runstest.ProcessConfig{
		Addr:   schema + "@" + withParam(pgtest.URL(), "pool_max_conns=8"),
		Open:   openAddr,
		Runs:   500,
		Freeze: true,
	})
}

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the runs suite needs PostgreSQL (-short)")
	}
	runstest.Run(t, func(t *testing.T) runstest.DB {
		pool := pgtest.Pool(t, func(c *pgxpool.Config) { c.MaxConns = 16 })
		schema := pgtest.Schema(t, pool, "trellis_runs_test_")
		return runstest.DB{
			Open: func(opts ...runs.Option) *runs.Manager {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				m, err := postgres.New(ctx, pool, postgres.WithSchema(schema), postgres.WithRuns(opts...))
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, m.Close()) })
				return m
			},
			Exec: func(query string, args ...any) error {
				query = strings.ReplaceAll(query, "trellis_", pgx.Identifier{schema}.Sanitize()+".trellis_")
				_, err := pool.Exec(context.Background(), query, args...)
				return err
			},
		}
	})
}

// withParam adds a parameter to a connection URL.
func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}
