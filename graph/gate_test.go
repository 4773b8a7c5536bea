package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// A run stopped by its step gate has checkpointed its last superstep, and
// resuming the thread runs only what was left: no superstep runs twice.
func TestStepGateStopsAtABoundaryAndResumeRunsNothingTwice(t *testing.T) {
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).AddNode("c", counted(&c, "c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c"),
		graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	stop := errors.New("hand it over")
	asked := 0
	gate := func(context.Context) error {
		asked++
		if asked == 2 { // before the second superstep
			return stop
		}
		return nil
	}
	out, err := g.Invoke(ctx, doc{}, graph.WithThread("t"), graph.WithStepGate(gate))
	require.ErrorIs(t, err, stop)
	assert.Equal(t, []string{"a"}, out.Log, "the state of the last superstep comes back")
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, snap.Next)

	out, err = g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, out.Log)
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, c.get())
}

func TestStepGateIsAskedBeforeEverySuperstep(t *testing.T) {
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", appendLog("a")).AddNode("b", appendLog("b")).
		AddEdge(graph.START, "a").AddEdge("a", "b"))
	asked := 0
	_, err := g.Invoke(context.Background(), doc{}, graph.WithStepGate(func(context.Context) error { asked++; return nil }))
	require.NoError(t, err)
	assert.Equal(t, 2, asked)
}
