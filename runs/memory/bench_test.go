package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/cputime"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/memory"
)

// BenchmarkStatelessRun starts a run of a three-node graph on a Manager
// that works its own runs, waits for its end and has its thread deleted
// (DeleteThreadSoon), as the server does for a stateless run, with no
// HTTP: the runs layer's cost per run. It reports cpu-ms/run, the CPU time
// (user and system) of the process until the Manager has closed (the last
// deletions done), which the load of a shared machine moves less than
// ns/op.
func BenchmarkStatelessRun(b *testing.B) {
	type S struct {
		N int `json:"n"`
	}
	ctx := context.Background()
	m, err := memory.Open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	inc := func(_ context.Context, s S) (S, error) { s.N++; return s, nil }
	g, err := graph.New[S](graph.WithName("chain3")).AddNode("a", inc).AddNode("b", inc).AddNode("c", inc).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").Compile(graph.WithCheckpointer(m.Saver()))
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Register(runs.Graph(g)); err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Work(wctx) }()
	start, measured := cputime.Self()
	for b.Loop() {
		r, err := m.Start(ctx, runs.Request{Graph: "chain3", Input: []byte(`{"n":0}`)})
		if err != nil {
			b.Fatal(err)
		}
		if end, err := m.Wait(ctx, r.ID); err != nil || end.Status != runs.StatusSuccess {
			b.Fatal(err, end.Error)
		}
		if err := m.DeleteThreadSoon(ctx, r.Thread); err != nil {
			b.Fatal(err)
		}
	}
	stop()
	<-done
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	if end, ok := cputime.Self(); ok && measured {
		b.ReportMetric(float64(end-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/run")
	}
}
