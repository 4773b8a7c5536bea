package memory_test

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/memory"
)

// A Manager in memory: start a run, wait for it, read its output.
func ExampleOpen() {
	type counter struct {
		N int `json:"n"`
	}
	ctx := context.Background()
	m, err := memory.Open(ctx)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	g, err := graph.New[counter](graph.WithName("inc")).
		AddNode("inc", func(_ context.Context, s counter) (counter, error) { s.N++; return s, nil }).
		AddEdge(graph.START, "inc").
		Compile(graph.WithCheckpointer(m.Saver()))
	if err != nil {
		panic(err)
	}
	if err := m.Register(runs.Graph(g)); err != nil {
		panic(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Work(wctx) }()
	defer func() { stop(); <-done }()

	r, err := m.Start(ctx, runs.Request{Graph: "inc", Input: []byte(`{"n":41}`)})
	if err != nil {
		panic(err)
	}
	if _, err := m.Wait(ctx, r.ID); err != nil {
		panic(err)
	}
	out, err := m.Output(ctx, r.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output: {"n":42}
}
