package memory

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/runstest"
)

var dollar = regexp.MustCompile(`\$([0-9]+)`)

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the runs suite takes several seconds (-short)")
	}
	n := 0
	runstest.Run(t, func(t *testing.T) runstest.DB {
		n++
		name := fmt.Sprintf("%s-%d", t.Name(), n)
		return runstest.DB{
			Open: func(opts ...runs.Option) *runs.Manager {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				m, err := Open(ctx, WithName(name), WithRuns(opts...))
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, m.Close()) })
				return m
			},
			Exec: func(query string, args ...any) error {
				named.Lock()
				d := named.dbs[name]
				named.Unlock()
				if d == nil {
					return fmt.Errorf("no Manager has database %q open", name)
				}
				_, err := d.db.Exec(dollar.ReplaceAllString(query, "?$1"), args...)
				return err
			},
		}
	})
}

func TestThreadState(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on a worker take seconds (-short)")
	}
	runstest.ThreadState(t, func(t *testing.T) *runs.Manager {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := Open(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, m.Close()) })
		return m
	})
}

type counter struct {
	N int `json:"n"`
}

// chain3 registers a graph of three nodes in a row, each adding one to n,
// on m.
func chain3(t testing.TB, m *runs.Manager) *graph.Graph[counter] {
	inc := func(_ context.Context, s counter) (counter, error) { s.N++; return s, nil }
	g, err := graph.New[counter](graph.WithName("chain3")).AddNode("a", inc).AddNode("b", inc).AddNode("c", inc).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").Compile(graph.WithCheckpointer(m.Saver()))
	require.NoError(t, err)
	require.NoError(t, m.Register(runs.Graph(g)))
	return g
}

// work works m until the test ends.
func work(t testing.TB, m *runs.Manager) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Work(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
}

func TestEachManagerHasItsOwnDatabaseWithoutAName(t *testing.T) {
	ctx := t.Context()
	a, err := Open(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	b, err := Open(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	_, err = a.CreateThread(ctx, "t1", nil)
	require.NoError(t, err)
	_, err = b.Thread(ctx, "t1")
	require.ErrorIs(t, err, runs.ErrNotFound)
	_, err = a.Thread(ctx, "t1")
	require.NoError(t, err)
}

func TestManagersWithOneNameShareRunsUntilTheLastCloses(t *testing.T) {
	ctx := t.Context()
	worker, err := Open(ctx, WithName(t.Name()))
	require.NoError(t, err)
	chain3(t, worker)
	work(t, worker)
	t.Cleanup(func() { require.NoError(t, worker.Close()) })

	producer, err := Open(ctx, WithName(t.Name()))
	require.NoError(t, err)
	chain3(t, producer)
	r, err := producer.Start(ctx, runs.Request{Graph: "chain3", Thread: "t1", Input: []byte(`{"n":1}`)})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	end, err := producer.Wait(wctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, end.Status, end.Error)
	out, err := worker.Output(ctx, r.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":4}`, string(out))
	require.NoError(t, producer.Close())

	// The worker still has the database.
	_, err = worker.Thread(ctx, "t1")
	require.NoError(t, err)
}

func TestDelayedRunStartsWhenDue(t *testing.T) {
	ctx := t.Context()
	m, err := Open(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	chain3(t, m)
	work(t, m)
	start := time.Now()
	r, err := m.Start(ctx, runs.Request{Graph: "chain3", Input: []byte(`{"n":0}`), After: 200 * time.Millisecond})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	end, err := m.Wait(wctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, end.Status, end.Error)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
}

// BenchmarkRun starts a run of a three-node graph worked by the same
// Manager and waits for its end: the runs layer's own cost per run in
// memory.
func BenchmarkRun(b *testing.B) {
	ctx := context.Background()
	m, err := Open(ctx)
	require.NoError(b, err)
	defer m.Close()
	chain3(b, m)
	work(b, m)
	for b.Loop() {
		r, err := m.Start(ctx, runs.Request{Graph: "chain3", Input: []byte(`{"n":0}`)})
		if err != nil {
			b.Fatal(err)
		}
		if end, err := m.Wait(ctx, r.ID); err != nil || end.Status != runs.StatusSuccess {
			b.Fatal(err, end.Error)
		}
	}
}

func TestRunsStartAndStreamWithoutPolling(t *testing.T) {
	ctx := t.Context()
	// A poll interval no test waits out: the run must be taken, streamed
	// and seen ended through the process's own signals.
	m, err := Open(ctx, WithRuns(runs.WithFetch(0, time.Hour)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	chain3(t, m)
	work(t, m)
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for range 3 {
		r, err := m.Start(sctx, runs.Request{Graph: "chain3", Input: []byte(`{"n":0}`)})
		require.NoError(t, err)
		var last runs.Event
		n := 0
		for ev, err := range m.Stream(sctx, r.ID, 0) {
			require.NoError(t, err)
			require.Equal(t, int64(n+1), ev.Seq, "events come in order, none missing")
			last = ev
			n++
		}
		require.Equal(t, runs.KindRunEnd, last.Kind)
		require.Equal(t, runs.StatusSuccess, last.Status, last.Error)
		end, err := m.Wait(sctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, runs.StatusSuccess, end.Status)
	}
}
