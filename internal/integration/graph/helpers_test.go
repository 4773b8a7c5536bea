package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
)

// doc is the state of the graphs these tests run: a log of the nodes that
// ran, appended to by every node.
type doc struct {
	Log    []string
	Answer string
}

func logReducer() graph.Option {
	return graph.WithReducer(func(s *doc) *[]string { return &s.Log }, state.Append[string]())
}

// counts records how many times each node ran.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) inc(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

// counted is a node that counts its runs and logs its name.
func counted(c *counts, name string) graph.NodeFunc[doc] {
	return func(_ context.Context, s doc) (doc, error) {
		c.inc(name)
		s.Log = append(s.Log, name)
		return s, nil
	}
}

// approval is a node that interrupts for an answer and logs it.
func approval(c *counts) graph.NodeFunc[doc] {
	return func(ctx context.Context, s doc) (doc, error) {
		c.inc("approve")
		answer, err := graph.Interrupt[string](ctx, map[string]string{"question": "ship " + s.Answer + "?"})
		if err != nil {
			return s, err
		}
		s.Log = append(s.Log, "approved:"+answer)
		return s, nil
	}
}

func mustCompile[S any](t testing.TB, b *graph.Builder[S], opts ...graph.CompileOption) *graph.Graph[S] {
	t.Helper()
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

// appendLog is a node that logs its name.
func appendLog(name string) graph.NodeFunc[doc] {
	return func(_ context.Context, s doc) (doc, error) {
		s.Log = append(s.Log, name)
		return s, nil
	}
}
