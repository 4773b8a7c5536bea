package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// An update written while a run goes on would fork the thread from under the
// run: UpdateState waits its turn like a run, and writes nothing.
func TestUpdateStateRefusesAThreadWithARunInProgress(t *testing.T) {
	saver := memory.New()
	entered, release := make(chan struct{}), make(chan struct{})
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("wait", func(_ context.Context, s doc) (doc, error) {
			if len(s.Log) > 0 && s.Log[0] == "first" {
				close(entered)
				<-release
			}
			s.Log = append(s.Log, "waited")
			return s, nil
		}).
		AddEdge(graph.START, "wait"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()

	first := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, doc{Log: []string{"first"}}, graph.WithThread("t"))
		first <- err
	}()
	<-entered
	before, err := g.GetState(ctx, "t")
	require.NoError(t, err)

	_, err = g.UpdateState(ctx, "t", graph.START, func(s doc) doc { s.Answer = "edited"; return s })
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	after, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, before.CheckpointID, after.CheckpointID, "the refused update wrote nothing")

	close(release)
	require.NoError(t, <-first)
	_, err = g.UpdateState(ctx, "t", graph.END, func(s doc) doc { s.Answer = "edited"; return s })
	require.NoError(t, err, "the thread is free once its run ended")
	_, err = g.Invoke(ctx, doc{Log: []string{"again"}}, graph.WithThread("t"))
	require.NoError(t, err, "and free again once the update is written")
}

// A checkpoint whose join progress does not fit the graph (written by
// another version of it) is refused as corrupt by UpdateState, as by Resume,
// instead of making it panic.
func TestUpdateStateRefusesJoinsThatDoNotFitTheGraph(t *testing.T) {
	saver := memory.New()
	v1 := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", appendLog("a")).AddNode("b", appendLog("b")).AddNode("c", appendLog("c")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddJoin([]string{"a", "b"}, "c"),
		graph.WithCheckpointer(saver), graph.InterruptBefore("c"))
	ctx := context.Background()
	_, err := v1.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	// One more join, and a join with one more source.
	v2 := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", appendLog("a")).AddNode("b", appendLog("b")).AddNode("c", appendLog("c")).AddNode("d", appendLog("d")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").
		AddJoin([]string{"a", "b"}, "c").AddJoin([]string{"c", "b"}, "d"),
		graph.WithCheckpointer(saver))
	v3 := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", appendLog("a")).AddNode("b", appendLog("b")).AddNode("c", appendLog("c")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddJoin([]string{"a", "b", "c"}, "c"),
		graph.WithCheckpointer(saver))
	for name, g := range map[string]*graph.Graph[doc]{"v2": v2, "v3": v3} {
		require.NotPanics(t, func() {
			_, err = g.UpdateState(ctx, "t", "c", nil)
		}, name)
		require.ErrorIs(t, err, graph.ErrCorruptCheckpoint, name)
		_, err = g.Resume(ctx, "t")
		require.ErrorIs(t, err, graph.ErrCorruptCheckpoint, name)
	}
}
