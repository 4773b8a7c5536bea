package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/memory"
	"github.com/trellis-go/trellis/server"
)

// A server with no database: runs/memory keeps the runs, threads and
// checkpoints in the process, the default for development.
func ExampleNew_inMemory() {
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
	srv, err := server.New(m)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	web := httptest.NewServer(srv)
	defer web.Close()

	resp, err := http.Post(web.URL+"/runs/wait", "application/json", strings.NewReader(`{"assistant_id":"inc","input":{"n":41}}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(strings.TrimSpace(string(body)))
	// Output: {"n":42}
}
