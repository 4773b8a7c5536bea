package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
)

// Name returns the name given with WithName, "" without one.
func TestGraphName(t *testing.T) {
	named := mustCompile(t, graph.New[sampleState](graph.WithName("planner")).
		AddNode("a", sampleNoop).AddEdge(graph.START, "a"))
	assert.Equal(t, "planner", named.Name())

	unnamed := mustCompile(t, graph.New[sampleState]().
		AddNode("a", sampleNoop).AddEdge(graph.START, "a"))
	assert.Equal(t, "", unnamed.Name())

	// The last WithName wins, like any option.
	renamed := mustCompile(t, graph.New[sampleState](graph.WithName("first"), graph.WithName("second")).
		AddNode("a", sampleNoop).AddEdge(graph.START, "a"))
	assert.Equal(t, "second", renamed.Name())

	// Events carry the same name.
	var last graph.Event
	for ev, err := range named.Stream(context.Background(), sampleState{}) {
		require.NoError(t, err)
		last = ev
	}
	assert.Equal(t, graph.KindDone, last.Kind)
	assert.Equal(t, named.Name(), last.Graph)
}
