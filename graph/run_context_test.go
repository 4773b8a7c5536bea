package graph_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// Path is nil outside a run and at the top level; inside subgraphs it is the
// chain of subgraph node names from the top-level graph, also for nodes
// that run concurrently with others.
func TestPath(t *testing.T) {
	assert.Nil(t, graph.Path(context.Background()))

	clone := func(ctx context.Context) []string { return slices.Clone(graph.Path(ctx)) }
	leaf := mustCompile(t, graph.New[sampleState](graph.WithName("leaf")).
		AddNode("leafnode", func(ctx context.Context, s sampleState) (sampleState, error) {
			s.Leaf = clone(ctx)
			return s, nil
		}).
		AddEdge(graph.START, "leafnode"))
	mid := mustCompile(t, graph.New[sampleState](graph.WithName("mid")).
		AddNode("midnode", func(ctx context.Context, s sampleState) (sampleState, error) {
			s.Mid = clone(ctx)
			return s, nil
		}).
		AddSubgraph("inner", leaf.AsSubgraph()).
		AddEdge(graph.START, "midnode").AddEdge(graph.START, "inner"))
	top := mustCompile(t, graph.New[sampleState](graph.WithName("top")).
		AddNode("plain", func(ctx context.Context, s sampleState) (sampleState, error) {
			s.Top = clone(ctx)
			if s.Top == nil {
				s.Top = []string{"<nil>"}
			}
			return s, nil
		}).
		AddSubgraph("outer", mid.AsSubgraph()).
		AddEdge(graph.START, "plain").AddEdge(graph.START, "outer"))

	out, err := top.Invoke(context.Background(), sampleState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"<nil>"}, out.Top, "Path is nil at the top level")
	assert.Equal(t, []string{"outer"}, out.Mid)
	assert.Equal(t, []string{"outer", "inner"}, out.Leaf)

	// Run on its own, the middle graph is the top level.
	out, err = mid.Invoke(context.Background(), sampleState{})
	require.NoError(t, err)
	assert.Nil(t, out.Mid)
	assert.Equal(t, []string{"inner"}, out.Leaf)
}

// ThreadID is the run's thread, inherited by subgraphs, whether or not the
// graph checkpoints; "" without a thread or outside a run.
func TestThreadID(t *testing.T) {
	assert.Equal(t, "", graph.ThreadID(context.Background()))
	record := func(ctx context.Context, s sampleState) (sampleState, error) {
		s.Thread = graph.ThreadID(ctx)
		return s, nil
	}
	build := func() *graph.Builder[sampleState] {
		child := mustCompile(t, graph.New[sampleState]().AddNode("rec", record).AddEdge(graph.START, "rec"))
		return graph.New[sampleState]().AddSubgraph("child", child.AsSubgraph()).AddEdge(graph.START, "child")
	}

	plain := mustCompile(t, build())
	out, err := plain.Invoke(context.Background(), sampleState{})
	require.NoError(t, err)
	assert.Equal(t, "", out.Thread)
	out, err = plain.Invoke(context.Background(), sampleState{}, graph.WithThread("named"))
	require.NoError(t, err)
	assert.Equal(t, "named", out.Thread)

	saved := mustCompile(t, build(), graph.WithCheckpointer(memory.New()))
	out, err = saved.Invoke(context.Background(), sampleState{}, graph.WithThread("t-42"))
	require.NoError(t, err)
	assert.Equal(t, "t-42", out.Thread)
}
