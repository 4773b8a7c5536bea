package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// Fork puts a thread back at an earlier checkpoint without running
// anything; the next turn continues from there, and the checkpoints in
// between stay in the history.
func TestForkPutsTheThreadBackAtAnEarlierCheckpoint(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddEdge(graph.START, "a"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{Log: []string{"first"}}, graph.WithThread("t"))
	require.NoError(t, err)
	before, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	_, err = g.Invoke(ctx, doc{Log: append(before.State.Log, "second")}, graph.WithThread("t"))
	require.NoError(t, err)

	id, err := g.Fork(ctx, "t", before.CheckpointID)
	require.NoError(t, err)
	now, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, id, now.CheckpointID)
	assert.Equal(t, "fork", now.Source)
	assert.Equal(t, before.State.Log, now.State.Log)
	assert.Equal(t, map[string]int{"a": 2}, c.get(), "a fork runs nothing")

	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	assert.Len(t, hist, 5, "two turns of two checkpoints each, and the fork")
}

// A fork of a checkpoint that waited for an answer runs the paused node
// again when the thread resumes, which asks again; the answer then resumes
// it.
func TestForkOfAnInterruptedCheckpointWaitsAgain(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("approve", approval(&c)).AddEdge(graph.START, "approve"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{Answer: "v1"}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	paused, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	require.Len(t, paused.Interrupts, 1)
	_, err = g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)

	_, err = g.Fork(ctx, "t", paused.CheckpointID)
	require.NoError(t, err)
	again, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"approve"}, again.Next)
	assert.Empty(t, again.Interrupts, "what the paused task saved is not copied")
	_, err = g.Resume(ctx, "t")
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie, "the node asks again")
	require.Len(t, ie.Interrupts, 1)
	out, err := g.Resume(ctx, "t", graph.WithResumeValue("no"))
	require.NoError(t, err)
	assert.Equal(t, []string{"approved:no"}, out.Log)
	assert.Equal(t, map[string]int{"approve": 4}, c.get())
}

func TestForkRefusesAMissingCheckpoint(t *testing.T) {
	g := mustCompile(t, graph.New[doc]().AddNode("a", appendLog("a")).AddEdge(graph.START, "a"),
		graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	_, err = g.Fork(ctx, "t", "nope")
	require.Error(t, err)
	_, err = g.Fork(ctx, "t", "")
	require.Error(t, err)
}
