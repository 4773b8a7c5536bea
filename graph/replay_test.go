package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// Replaying from an earlier checkpoint runs the tasks after it again. A
// subgraph task is no exception: its child graph runs again rather than
// hand back the final state the original run left in its namespace.
func TestReplayRunsASubgraphTaskAgain(t *testing.T) {
	saver := memory.New()
	var c counts
	child := mustCompile(t, graph.New[doc](graph.WithName("child")).
		AddNode("inner", counted(&c, "inner")).AddEdge(graph.START, "inner"))
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("pre", counted(&c, "pre")).
		AddSubgraph("sub", child.AsSubgraph()).
		AddEdge(graph.START, "pre").AddEdge("pre", "sub"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	require.Len(t, hist, 3)
	afterPre := hist[1]
	require.Equal(t, []string{"sub"}, afterPre.Next)

	out, err := g.Resume(ctx, "t", graph.FromCheckpoint(afterPre.CheckpointID))
	require.NoError(t, err)
	assert.Equal(t, []string{"pre", "inner"}, out.Log)
	assert.Equal(t, map[string]int{"pre": 1, "inner": 2}, c.get(), "the replayed subgraph task runs its child again")
}

// A replay that pauses in its first superstep leaves the thread waiting for
// that interrupt, and resuming the thread answers it.
func TestReplayThatPausesCanBeResumed(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("draft", counted(&c, "draft")).
		AddNode("approve", approval(&c)).
		AddNode("ship", counted(&c, "ship")).
		AddEdge(graph.START, "draft").AddEdge("draft", "approve").AddEdge("approve", "ship"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{Answer: "v1"}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)

	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	var afterDraft string
	for _, h := range hist {
		if len(h.Next) == 1 && h.Next[0] == "approve" {
			afterDraft = h.CheckpointID
		}
	}
	require.NotEmpty(t, afterDraft)

	_, err = g.Resume(ctx, "t", graph.FromCheckpoint(afterDraft))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie, "the replayed approve asks again")
	require.Equal(t, "t", ie.Thread)

	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Len(t, snap.Interrupts, 1, "the thread waits for the replay's interrupt")

	out, err := g.Resume(ctx, "t", graph.WithResumeValue("no"))
	require.NoError(t, err)
	assert.Equal(t, []string{"draft", "approved:no", "ship"}, out.Log)
}

// Naming the thread's latest checkpoint resumes: the tasks of the paused
// superstep that finished are not run again.
func TestFromTheLatestCheckpointResumes(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("draft", counted(&c, "draft")).
		AddNode("approve", approval(&c)).
		AddEdge(graph.START, "draft").AddEdge(graph.START, "approve"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{Answer: "v1"}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)

	out, err := g.Resume(ctx, "t", graph.FromCheckpoint(snap.CheckpointID), graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"draft", "approved:yes"}, out.Log)
	assert.Equal(t, map[string]int{"draft": 1, "approve": 2}, c.get(), "draft finished before the pause and is not run again")
}

func TestHistoryShowsWhatTheThreadWaitsFor(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("draft", counted(&c, "draft")).
		AddNode("approve", approval(&c)).
		AddEdge(graph.START, "draft").AddEdge("draft", "approve"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{Answer: "v1"}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	require.NotEmpty(t, hist)
	assert.Equal(t, snap.CheckpointID, hist[0].CheckpointID)
	assert.Equal(t, snap.Interrupts, hist[0].Interrupts, "the newest entry shows the pending interrupt")
}
