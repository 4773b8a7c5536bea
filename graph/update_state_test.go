package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
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

// An update as one node of a superstep paused by another keeps what the
// superstep's finished nodes wrote, and runs their successors.
func TestUpdateStateKeepsTheFinishedNodesOfAPausedSuperstep(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("work", counted(&c, "work")).AddNode("ask", asking(&c, "ask")).
		AddNode("after-work", counted(&c, "after-work")).AddNode("after-ask", counted(&c, "after-ask")).
		AddEdge(graph.START, "work").AddEdge(graph.START, "ask").
		AddEdge("work", "after-work").AddEdge("ask", "after-ask"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	// A person answers in ask's place instead of resuming it.
	_, err = g.UpdateState(ctx, "t", "ask", func(s doc) doc {
		s.Log = append(s.Log, "answered by hand")
		return s
	})
	require.NoError(t, err)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"work", "answered by hand"}, snap.State.Log, "work's write is kept, in node order")
	assert.Equal(t, []string{"after-work", "after-ask"}, snap.Next)
	assert.Empty(t, snap.Interrupts)

	out, err := g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"work", "answered by hand", "after-work", "after-ask"}, out.Log)
	assert.Equal(t, map[string]int{"work": 1, "ask": 1, "after-work": 1, "after-ask": 1}, c.get(), "work did not run again")
}

// The finished nodes' writes and the update meet at the barrier like any
// superstep's writes: a field both change without a reducer is an error that
// names it, and nothing is written.
func TestUpdateStateRefusesAConflictWithAFinishedNode(t *testing.T) {
	type st struct {
		A string `json:"a"`
		B string `json:"b"`
	}
	saver := memory.New()
	g := mustCompile(t, graph.New[st]().
		AddNode("set", func(_ context.Context, s st) (st, error) { s.A = "from set"; return s, nil }).
		AddNode("ask", func(ctx context.Context, s st) (st, error) {
			v, err := graph.Interrupt[string](ctx, "b?")
			s.B = v
			return s, err
		}).
		AddEdge(graph.START, "set").AddEdge(graph.START, "ask"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, st{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	before, err := g.GetState(ctx, "t")
	require.NoError(t, err)

	_, err = g.UpdateState(ctx, "t", "ask", func(s st) st { s.A, s.B = "from ask", "by hand"; return s })
	var ce *state.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "A", ce.Field)
	assert.Equal(t, []string{"set", "ask"}, ce.Nodes)
	assert.Contains(t, err.Error(), `UpdateState as node "ask"`)
	after, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, before.CheckpointID, after.CheckpointID, "nothing was written")

	_, err = g.UpdateState(ctx, "t", "ask", func(s st) st { s.B = "by hand"; return s })
	require.NoError(t, err)
	out, err := g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, st{A: "from set", B: "by hand"}, out)
}

// The superstep's other paused nodes are due again: they run once more and
// ask again, and nothing they would have done is lost.
func TestUpdateStateLeavesTheOtherPausedNodesDue(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("x", asking(&c, "x")).AddNode("y", asking(&c, "y")).AddNode("z", counted(&c, "z")).
		AddEdge(graph.START, "x").AddEdge(graph.START, "y").AddEdge(graph.START, "z"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	_, err = g.UpdateState(ctx, "t", "x", func(s doc) doc { s.Log = append(s.Log, "x by hand"); return s })
	require.NoError(t, err)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"x by hand", "z"}, snap.State.Log)
	assert.Equal(t, []string{"y"}, snap.Next)

	_, err = g.Resume(ctx, "t")
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, "y", ie.Interrupts[0].Node)
	out, err := g.Resume(ctx, "t", graph.WithResumeValue("2"))
	require.NoError(t, err)
	assert.Equal(t, []string{"x by hand", "z", "y=2"}, out.Log)
	assert.Equal(t, map[string]int{"x": 1, "y": 3, "z": 1}, c.get())
}

// A fork from an earlier checkpoint starts from its state alone: what its
// superstep's tasks recorded then is history, not part of the update.
func TestUpdateStateFromAnEarlierCheckpointIgnoresItsRecordedWrites(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).AddNode("c", counted(&c, "c")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddEdge("b", "c"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	first := hist[len(hist)-1] // the input: a and b are due
	require.Equal(t, []string{"a", "b"}, first.Next)

	_, err = g.UpdateState(ctx, "t", "b", func(s doc) doc { s.Log = append(s.Log, "b by hand"); return s }, graph.FromCheckpoint(first.CheckpointID))
	require.NoError(t, err)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"b by hand"}, snap.State.Log)
	assert.Equal(t, []string{"c"}, snap.Next)
}

// With several tasks of the node (sent with their own inputs), the update
// answers for the one that paused, and the one that finished keeps its
// write.
func TestUpdateStateAnswersForThePausedTaskOfASentNode(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddCommandNode("fan", func(_ context.Context, s doc) (doc, graph.Command[doc], error) {
			return s, graph.Command[doc]{Send: []graph.Send[doc]{
				{Node: "item", State: doc{Log: []string{"plain"}}},
				{Node: "item", State: doc{Log: []string{"ask"}}},
			}}, nil
		}, []string{"item"}).
		AddNode("item", func(ctx context.Context, s doc) (doc, error) {
			c.inc("item")
			if s.Log[0] == "ask" {
				v, err := graph.Interrupt[string](ctx, "ok?")
				if err != nil {
					return s, err
				}
				s.Log = append(s.Log, v)
				return s, nil
			}
			s.Log = append(s.Log, "done")
			return s, nil
		}).
		AddEdge(graph.START, "fan"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	_, err = g.UpdateState(ctx, "t", "item", func(s doc) doc { s.Log = append(s.Log, "by hand"); return s })
	require.NoError(t, err)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"done", "by hand"}, snap.State.Log, "the finished task's write, then the update's")
	assert.Empty(t, snap.Next)
	assert.Equal(t, map[string]int{"item": 2}, c.get())
}

// asking is a node that asks name+"?" and logs name=answer.
func asking(c *counts, name string) graph.NodeFunc[doc] {
	return func(ctx context.Context, s doc) (doc, error) {
		c.inc(name)
		v, err := graph.Interrupt[string](ctx, name+"?")
		if err != nil {
			return s, err
		}
		s.Log = append(s.Log, name+"="+v)
		return s, nil
	}
}

// An update as END on a superstep paused by one node ends the thread with
// what the finished nodes wrote kept: the update sees it, and nothing is due.
func TestUpdateStateAsEndKeepsTheFinishedNodesOfAPausedSuperstep(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("work", counted(&c, "work")).AddNode("ask", asking(&c, "ask")).
		AddNode("after", counted(&c, "after")).
		AddEdge(graph.START, "work").AddEdge(graph.START, "ask").AddEdge("work", "after"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	var seen []string
	_, err = g.UpdateState(ctx, "t", graph.END, func(s doc) doc {
		seen = append([]string(nil), s.Log...)
		s.Log = append(s.Log, "closed by hand")
		return s
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"work"}, seen, "the update sees the finished node's write")
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"work", "closed by hand"}, snap.State.Log)
	assert.Empty(t, snap.Next)
	assert.Empty(t, snap.Interrupts)

	out, err := g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"work", "closed by hand"}, out.Log)
	assert.Equal(t, map[string]int{"work": 1, "ask": 1}, c.get(), "nothing ran after the update")
}

// An update as START on such a superstep is new input: the finished nodes'
// writes are kept, and the graph starts over from its entry nodes.
func TestUpdateStateAsStartKeepsTheFinishedNodesOfAPausedSuperstep(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("work", counted(&c, "work")).AddNode("ask", asking(&c, "ask")).
		AddEdge(graph.START, "work").AddEdge(graph.START, "ask"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	_, err = g.UpdateState(ctx, "t", graph.START, func(s doc) doc { s.Log = append(s.Log, "input"); return s })
	require.NoError(t, err)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"work", "input"}, snap.State.Log)
	assert.Equal(t, []string{"work", "ask"}, snap.Next)

	_, err = g.Resume(ctx, "t")
	require.ErrorIs(t, err, graph.ErrInterrupted, "ask asks again")
	out, err := g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"work", "input", "work", "ask=yes"}, out.Log)
}
