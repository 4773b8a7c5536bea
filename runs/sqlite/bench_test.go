package sqlite_test

import (
	"context"
	"testing"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/sqlite"
)

// BenchmarkRunInMemory starts a run of a three-node graph on an in-memory
// database worked by the same Manager, and waits for its end: the runs
// layer's own cost per run, with no disk and no other process.
func BenchmarkRunInMemory(b *testing.B) {
	type S struct {
		N int `json:"n"`
	}
	ctx := context.Background()
	m, err := sqlite.Open(ctx, ":memory:")
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
	defer func() { stop(); <-done }()
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
