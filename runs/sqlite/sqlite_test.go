package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/runstest"
	"github.com/trellis-go/trellis/runs/sqlite"
)

func TestMain(m *testing.M) {
	runstest.WorkerMain(func(ctx context.Context, path string, opts ...runs.Option) (*runs.Manager, error) {
		return sqlite.Open(ctx, path, sqlite.WithRuns(opts...))
	})
	goleak.VerifyTestMain(m)
}

// Worker processes share one SQLite file: runs survive a SIGTERM, a
// SIGKILL and a frozen worker (see runstest.Processes).
func TestRunsOutliveWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and runs for tens of seconds (-short)")
	}
	path := filepath.Join(t.TempDir(), "runs.db")
	runstest.Processes(t, runstest.ProcessConfig{
		Addr: path,
		Dump: func(t *testing.T) {
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				return
			}
			defer db.Close()
			rows, err := db.Query(`SELECT r.run_id, r.status, r.epoch, r.lease_owner, r.lease_until, r.job_id, r.cancel, r.wrote, j.state, j.attempt, j.attempted_by, j.errors
				FROM trellis_runs r LEFT JOIN river_job j ON j.id = r.job_id WHERE r.status NOT IN ('success','interrupted')`)
			if err != nil {
				t.Logf("dump: %v", err)
				return
			}
			defer rows.Close()
			for rows.Next() {
				var a [12]any
				ptrs := make([]any, 12)
				for i := range a {
					ptrs[i] = &a[i]
				}
				_ = rows.Scan(ptrs...)
				t.Logf("dump: %v", a)
			}
		},
		Open: func(ctx context.Context, path string, opts ...runs.Option) (*runs.Manager, error) {
			return sqlite.Open(ctx, path, sqlite.WithRuns(opts...))
		},
		Runs: 200,
		// One file, one writer at a time, under -race on a busy machine:
		// a lease long enough that live workers keep theirs.
		Lease: 5 * time.Second,
	})
}

var dollar = regexp.MustCompile(`\$([0-9]+)`)

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the runs suite takes several seconds (-short)")
	}
	runstest.Run(t, func(t *testing.T) runstest.DB {
		path := filepath.Join(t.TempDir(), "runs.db")
		return runstest.DB{
			Open: func(opts ...runs.Option) *runs.Manager {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				m, err := sqlite.Open(ctx, path, sqlite.WithRuns(opts...))
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, m.Close()) })
				return m
			},
			Exec: func(query string, args ...any) error {
				db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
				if err != nil {
					return err
				}
				defer db.Close()
				_, err = db.Exec(dollar.ReplaceAllString(query, "?$1"), args...)
				return err
			},
		}
	})
}

func TestInMemoryDatabaseRunsInOneProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := sqlite.Open(ctx, ":memory:")
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	g, err := graph.New[struct {
		N int `json:"n"`
	}](graph.WithName("inc")).
		AddNode("inc", func(_ context.Context, s struct {
			N int `json:"n"`
		}) (struct {
			N int `json:"n"`
		}, error) {
			s.N++
			return s, nil
		}).AddEdge(graph.START, "inc").Compile(graph.WithCheckpointer(m.Saver()))
	require.NoError(t, err)
	require.NoError(t, m.Register(runs.Graph(g)))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Work(wctx) }()
	r, err := m.Start(ctx, runs.Request{Graph: "inc", Input: []byte(`{"n":41}`)})
	require.NoError(t, err)
	end, err := m.Wait(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, end.Status, end.Error)
	snap, err := g.GetState(ctx, r.Thread)
	require.NoError(t, err)
	require.Equal(t, 42, snap.State.N)
	stop()
	require.NoError(t, <-done)
}
