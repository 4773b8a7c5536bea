package graph_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// panickySerializer is the JSON serializer, except that it panics on values
// whose encoding holds "boom".
type panickySerializer struct{ state.JSONSerializer }

func (s panickySerializer) Marshal(v any) ([]byte, error) {
	b, err := s.JSONSerializer.Marshal(v)
	if bytes.Contains(b, []byte("boom")) {
		panic("serializer exploded")
	}
	return b, err
}

// A panic in what the engine does for a task besides running its node (here,
// recording its output) fails the run, even when the task runs on a helper
// goroutine, where it would otherwise end the process.
func TestPanicOutsideANodeInAParallelTaskFailsTheRun(t *testing.T) {
	secondRan := make(chan struct{})
	g := mustCompile(t, graph.New[doc]().
		AddNode("first", func(_ context.Context, s doc) (doc, error) {
			<-secondRan // so that second runs on another goroutine
			s.Count = 1
			return s, nil
		}).
		AddNode("second", func(_ context.Context, s doc) (doc, error) {
			defer close(secondRan)
			s.Answer = "boom"
			return s, nil
		}).
		AddEdge(graph.START, "first").AddEdge(graph.START, "second"),
		graph.WithCheckpointer(memory.New()), graph.WithSerializer(panickySerializer{}))
	out, err := g.Invoke(context.Background(), doc{}, graph.WithThread("t"))
	require.ErrorContains(t, err, "serializer exploded")
	require.ErrorContains(t, err, `node "second"`)
	require.Equal(t, doc{}, out, "the failed superstep's writes are discarded")
}

// listState has a slice field without a reducer.
type listState struct {
	Items []string
	Note  string
}

// Two nodes run in one superstep on a state whose slice has spare
// capacity: one appends to the slice, the other leaves it alone (the engine
// clips the slices of tasks that run together, so the one it gets back has
// less capacity). Only the first writes the field.
func TestParallelTaskReturningItsClippedSliceDoesNotWriteIt(t *testing.T) {
	g, err := graph.New[listState]().
		AddNode("add", func(_ context.Context, s listState) (listState, error) {
			s.Items = append(s.Items, "added")
			return s, nil
		}).
		AddNode("note", func(_ context.Context, s listState) (listState, error) {
			s.Note = "noted"
			return s, nil
		}).
		AddEdge(graph.START, "add").
		AddEdge(graph.START, "note").
		Compile()
	require.NoError(t, err)
	items := make([]string, 1, 8)
	items[0] = "first"
	out, err := g.Invoke(context.Background(), listState{Items: items})
	require.NoError(t, err)
	require.Equal(t, []string{"first", "added"}, out.Items)
	require.Equal(t, "noted", out.Note)
}
