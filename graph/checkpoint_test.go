package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

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

func (c *counts) get() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

func counted(c *counts, name string) graph.NodeFunc[doc] {
	return func(_ context.Context, s doc) (doc, error) {
		c.inc(name)
		s.Log = append(s.Log, name)
		return s, nil
	}
}

func TestCheckpointAfterEverySuperstep(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).AddNode("c", counted(&c, "c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c"),
		graph.WithCheckpointer(saver))

	_, err := g.Invoke(context.Background(), doc{})
	require.ErrorIs(t, err, graph.ErrNoThread)

	out, err := g.Invoke(context.Background(), doc{Log: []string{"in"}}, graph.WithThread("t1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "a", "b", "c"}, out.Log)

	hist, err := g.History(context.Background(), "t1", 0)
	require.NoError(t, err)
	require.Len(t, hist, 3)
	assert.Equal(t, []int{1, 0, -1}, []int{hist[0].Step, hist[1].Step, hist[2].Step})
	assert.Equal(t, []string{"loop", "loop", "input"}, []string{hist[0].Source, hist[1].Source, hist[2].Source})
	assert.Equal(t, []string{"a"}, hist[2].Next)
	assert.Equal(t, []string{"b", "c"}, hist[1].Next)
	assert.Empty(t, hist[0].Next)
	assert.Equal(t, []string{"in", "a"}, hist[1].State.Log)
	assert.Equal(t, hist[1].CheckpointID, hist[0].ParentID)
	assert.Equal(t, hist[2].CheckpointID, hist[1].ParentID)

	snap, err := g.GetState(context.Background(), "t1")
	require.NoError(t, err)
	assert.Equal(t, hist[0].CheckpointID, snap.CheckpointID)
	assert.Equal(t, out, snap.State)

	_, err = g.GetState(context.Background(), "missing")
	require.ErrorIs(t, err, state.ErrNotFound)
	assert.Contains(t, err.Error(), `"missing"`)
}

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

func TestDynamicInterruptAndResume(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("draft", counted(&c, "draft")).
		AddNode("approve", approval(&c)).
		AddNode("ship", counted(&c, "ship")).
		AddEdge(graph.START, "draft").AddEdge("draft", "approve").AddEdge("approve", "ship"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()

	out, err := g.Invoke(ctx, doc{Answer: "v1"}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, graph.ErrInterrupted)
	require.Len(t, ie.Interrupts, 1)
	in := ie.Interrupts[0]
	assert.Equal(t, graph.During, in.When)
	assert.Equal(t, "approve", in.Node)
	assert.Equal(t, map[string]string{"question": "ship v1?"}, in.Payload)
	assert.Equal(t, "t", ie.Thread)
	assert.Equal(t, []string{"draft"}, out.Log, "the state of the last completed superstep")

	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"approve"}, snap.Next)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, in.ID, snap.Interrupts[0].ID)
	assert.JSONEq(t, `{"question":"ship v1?"}`, string(snap.Interrupts[0].Payload.(json.RawMessage)))

	// Resuming without an answer asks again.
	_, err = g.Resume(ctx, "t")
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, in.ID, ie.Interrupts[0].ID, "the interrupt keeps its ID")

	out, err = g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"draft", "approved:yes", "ship"}, out.Log)
	assert.Equal(t, map[string]int{"draft": 1, "approve": 3, "ship": 1}, c.get())
}

func TestSeveralInterruptsResumedByIDInOneCall(t *testing.T) {
	saver := memory.New()
	var c counts
	ask := func(name string) graph.NodeFunc[doc] {
		return func(ctx context.Context, s doc) (doc, error) {
			c.inc(name)
			v, err := graph.Interrupt[int](ctx, name)
			if err != nil {
				return s, err
			}
			s.Log = append(s.Log, fmt.Sprintf("%s=%d", name, v))
			return s, nil
		}
	}
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("x", ask("x")).AddNode("y", ask("y")).AddNode("z", counted(&c, "z")).
		AddEdge(graph.START, "x").AddEdge(graph.START, "y").AddEdge(graph.START, "z"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()

	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 2)
	ids := map[string]string{}
	for _, in := range ie.Interrupts {
		ids[in.Node] = in.ID
	}
	assert.Contains(t, err.Error(), "during x")
	assert.Contains(t, err.Error(), "during y")

	_, err = g.Resume(ctx, "t", graph.WithResumeValue(1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithResumeValue needs exactly one pending interrupt, 2 are pending")

	out, err := g.Resume(ctx, "t", graph.WithResume(ids["x"], 10), graph.WithResume(ids["y"], 20))
	require.NoError(t, err)
	assert.Equal(t, []string{"x=10", "y=20", "z"}, out.Log)
	assert.Equal(t, map[string]int{"x": 2, "y": 2, "z": 1}, c.get(), "z finished before the pause and did not run again")
}

func TestAnsweringOneOfTwoInterruptsKeepsTheOtherPending(t *testing.T) {
	saver := memory.New()
	var c counts
	ask := func(name string) graph.NodeFunc[doc] {
		return func(ctx context.Context, s doc) (doc, error) {
			c.inc(name)
			v, err := graph.Interrupt[string](ctx, name)
			if err != nil {
				return s, err
			}
			s.Log = append(s.Log, name+"="+v)
			return s, nil
		}
	}
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("x", ask("x")).AddNode("y", ask("y")).
		AddEdge(graph.START, "x").AddEdge(graph.START, "y"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	xID := ie.Interrupts[0].ID

	_, err = g.Resume(ctx, "t", graph.WithResume(xID, "a"))
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, "y", ie.Interrupts[0].Node)

	out, err := g.Resume(ctx, "t", graph.WithResumeValue("b"))
	require.NoError(t, err)
	assert.Equal(t, []string{"x=a", "y=b"}, out.Log)
	assert.Equal(t, 2, c.get()["x"], "x's answered run was saved and not repeated")
}

func TestNodeWithTwoInterruptsGetsBothAnswers(t *testing.T) {
	saver := memory.New()
	g := mustCompile(t, graph.New[doc]().
		AddNode("form", func(ctx context.Context, s doc) (doc, error) {
			name, err := graph.Interrupt[string](ctx, "name?")
			if err != nil {
				return s, err
			}
			age, err := graph.Interrupt[int](ctx, "age?")
			if err != nil {
				return s, err
			}
			s.Answer = fmt.Sprintf("%s is %d", name, age)
			return s, nil
		}).AddEdge(graph.START, "form"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "name?", ie.Interrupts[0].Payload)

	_, err = g.Resume(ctx, "t", graph.WithResumeValue("Ada"))
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "age?", ie.Interrupts[0].Payload)

	out, err := g.Resume(ctx, "t", graph.WithResumeValue(36))
	require.NoError(t, err)
	assert.Equal(t, "Ada is 36", out.Answer)
}

// A resume value for a thread with nothing to answer — the answer was
// consumed already, or the run waits at a static interrupt — is refused
// with an error that matches ErrNothingPending and says what to do instead
// of answering by ID; nothing runs or is written.
func TestResumeValueWithNothingPendingIsRefused(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("approve", approval(&c)).AddEdge(graph.START, "approve"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{Answer: "it"}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	before, err := g.History(ctx, "t", 0)
	require.NoError(t, err)

	_, err = g.Resume(ctx, "t", graph.WithResumeValue("yes again"))
	require.ErrorIs(t, err, graph.ErrNothingPending)
	assert.Contains(t, err.Error(), `thread "t"`)
	assert.Contains(t, err.Error(), "answered already")
	assert.NotContains(t, err.Error(), "by ID")

	_, err = g.Resume(ctx, "t", graph.WithResume("some-id", "yes again"))
	require.ErrorIs(t, err, graph.ErrNothingPending)
	require.ErrorIs(t, err, graph.ErrUnknownInterrupt)

	after, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing was written")
	assert.Equal(t, 2, c.get()["approve"], "nothing ran")

	// Paused before a node: nothing takes a value; Resume continues.
	s := mustCompile(t, graph.New[doc]().AddNode("a", appendLog("a")).AddEdge(graph.START, "a"),
		graph.WithCheckpointer(memory.New()), graph.InterruptBefore("a"))
	_, err = s.Invoke(ctx, doc{}, graph.WithThread("s"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = s.Resume(ctx, "s", graph.WithResumeValue("x"))
	require.ErrorIs(t, err, graph.ErrNothingPending)
	assert.Contains(t, err.Error(), "static interrupt")
	out, err := s.Resume(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, out.Log)
}

func TestResumeBadInputIsRefusedAndChangesNothing(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("approve", approval(&c)).AddEdge(graph.START, "approve"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	before, err := g.History(ctx, "t", 0)
	require.NoError(t, err)

	_, err = g.Resume(ctx, "t", graph.WithResume("no-such-id", "x"))
	require.ErrorIs(t, err, graph.ErrUnknownInterrupt)
	assert.Contains(t, err.Error(), `"no-such-id"`)
	assert.Contains(t, err.Error(), `thread "t"`)

	_, err = g.Resume(ctx, "nobody")
	require.ErrorIs(t, err, state.ErrNotFound)
	assert.Contains(t, err.Error(), `"nobody"`)

	after, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing was written")
	assert.Equal(t, 1, c.get()["approve"], "nothing ran")
}

func TestCorruptCheckpointIsAClearError(t *testing.T) {
	saver := memory.New()
	g := mustCompile(t, graph.New[doc]().AddNode("a", appendLog("a")).AddEdge(graph.START, "a"), graph.WithCheckpointer(saver))
	ctx := context.Background()
	require.NoError(t, saver.Put(ctx, state.Checkpoint{ThreadID: "bad", ID: "cp1", Source: "loop", Payload: []byte("not a payload")}))

	_, err := g.Resume(ctx, "bad")
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
	assert.Contains(t, err.Error(), `thread "bad"`)
	assert.Contains(t, err.Error(), `checkpoint "cp1"`)
	_, err = g.GetState(ctx, "bad")
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)

	list, err := saver.List(ctx, "bad", "", state.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list, 1, "nothing was overwritten")

	// A checkpoint that names a node the graph lacks.
	other := mustCompile(t, graph.New[doc]().AddNode("zzz", appendLog("zzz")).AddNode("z2", appendLog("z2")).
		AddEdge(graph.START, "zzz").AddEdge("zzz", "z2"), graph.WithCheckpointer(saver), graph.InterruptBefore("z2"))
	_, err = other.Invoke(ctx, doc{}, graph.WithThread("foreign"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx, "foreign")
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
	assert.Contains(t, err.Error(), `node "z2" is not in graph`)
}

func TestStaticInterrupts(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).AddNode("c", counted(&c, "c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c"),
		graph.WithCheckpointer(saver), graph.InterruptBefore("b"), graph.InterruptAfter("b"))
	ctx := context.Background()

	out, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, graph.Before, ie.Interrupts[0].When)
	assert.Equal(t, "b", ie.Interrupts[0].Node)
	assert.Equal(t, []string{"a"}, out.Log)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, snap.Next)
	require.Len(t, snap.Interrupts, 1)

	out, err = g.Resume(ctx, "t")
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, graph.After, ie.Interrupts[0].When)
	assert.Equal(t, []string{"a", "b"}, out.Log)

	out, err = g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, out.Log)
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, c.get())
}

func TestReplayFromAnEarlierCheckpoint(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).AddNode("c", counted(&c, "c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	afterA := hist[2] // input, a, b, c → newest first: c, b, a, input
	require.Equal(t, []string{"b"}, afterA.Next)

	out, err := g.Resume(ctx, "t", graph.FromCheckpoint(afterA.CheckpointID))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, out.Log)
	assert.Equal(t, map[string]int{"a": 1, "b": 2, "c": 2}, c.get(), "a is not replayed; b and c are")

	latest, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	hist2, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	require.Len(t, hist2, 7, "c, b, the fork, then the original four")
	fork := hist2[2]
	assert.Equal(t, "fork", fork.Source)
	assert.Equal(t, afterA.CheckpointID, fork.ParentID, "the replay branches off the chosen checkpoint")
	assert.Equal(t, afterA.State, fork.State)
	assert.Equal(t, afterA.Next, fork.Next)
	assert.Equal(t, fork.CheckpointID, hist2[1].ParentID)
	assert.Equal(t, latest.CheckpointID, hist2[0].CheckpointID)

	_, err = g.Resume(ctx, "t", graph.FromCheckpoint("nope"))
	require.ErrorIs(t, err, state.ErrNotFound)
	assert.Contains(t, err.Error(), `checkpoint "nope"`)
}

func TestUpdateStateForksAndContinues(t *testing.T) {
	saver := memory.New()
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).AddNode("c", counted(&c, "c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c"),
		graph.WithCheckpointer(saver), graph.InterruptBefore("b"))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	// Pretend b ran and wrote something else: the run continues with c.
	id, err := g.UpdateState(ctx, "t", "b", func(s doc) doc {
		s.Log = append(s.Log, "edited by hand")
		return s
	})
	require.NoError(t, err)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, id, snap.CheckpointID)
	assert.Equal(t, "update", snap.Source)
	assert.Equal(t, []string{"c"}, snap.Next)

	out, err := g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "edited by hand", "c"}, out.Log)
	assert.Equal(t, map[string]int{"a": 1, "c": 1}, c.get())

	_, err = g.UpdateState(ctx, "t", "bogus", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `UpdateState as node "bogus": unknown node`)
}

func TestFinishedTasksAreNotRerunAfterAFailure(t *testing.T) {
	saver := memory.New()
	var c counts
	var fail atomic.Bool
	fail.Store(true)
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("ok", counted(&c, "ok")).
		AddNode("flaky", func(_ context.Context, s doc) (doc, error) {
			c.inc("flaky")
			if fail.Load() {
				return s, errors.New("down")
			}
			s.Log = append(s.Log, "flaky")
			return s, nil
		}).
		AddNode("after", counted(&c, "after")).
		AddEdge(graph.START, "ok").AddEdge(graph.START, "flaky").AddJoin([]string{"ok", "flaky"}, "after"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorContains(t, err, "down")

	fail.Store(false)
	out, err := g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"ok", "flaky", "after"}, out.Log)
	assert.Equal(t, map[string]int{"ok": 1, "flaky": 2, "after": 1}, c.get())
}

func TestInterruptInsideNestedSubgraphs(t *testing.T) {
	saver := memory.New()
	var c counts
	leaf := mustCompile(t, graph.New[doc](graph.WithName("leaf")).
		AddNode("prep", counted(&c, "leaf.prep")).
		AddNode("ask", func(ctx context.Context, s doc) (doc, error) {
			c.inc("leaf.ask")
			v, err := graph.Interrupt[string](ctx, "deep question")
			if err != nil {
				return s, err
			}
			s.Answer = v
			return s, nil
		}).AddEdge(graph.START, "prep").AddEdge("prep", "ask"))
	mid := mustCompile(t, graph.New[doc](graph.WithName("mid")).
		AddNode("before", counted(&c, "mid.before")).
		AddSubgraph("leaf", leaf.AsSubgraph()).
		AddEdge(graph.START, "before").AddEdge("before", "leaf"))
	top := mustCompile(t, graph.New[doc](graph.WithName("top"), logReducer()).
		AddNode("start", counted(&c, "top.start")).
		AddSubgraph("mid", mid.AsSubgraph()).
		AddNode("end", counted(&c, "top.end")).
		AddEdge(graph.START, "start").AddEdge("start", "mid").AddEdge("mid", "end"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()

	_, err := top.Invoke(ctx, doc{}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, []string{"mid", "leaf"}, ie.Interrupts[0].Path)
	assert.Equal(t, "ask", ie.Interrupts[0].Node)
	assert.Equal(t, "deep question", ie.Interrupts[0].Payload)

	snap, err := top.GetState(ctx, "t")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, ie.Interrupts[0].ID, snap.Interrupts[0].ID)

	out, err := top.Resume(ctx, "t", graph.WithResumeValue("forty-two"))
	require.NoError(t, err)
	assert.Equal(t, "forty-two", out.Answer)
	assert.Equal(t, []string{"top.start", "mid.before", "leaf.prep", "top.end"}, out.Log)
	assert.Equal(t, map[string]int{"top.start": 1, "mid.before": 1, "leaf.prep": 1, "leaf.ask": 2, "top.end": 1}, c.get(),
		"the subgraphs resume inside, without re-running their finished nodes")
}

func TestInterruptWithoutCheckpointer(t *testing.T) {
	var c counts
	g := mustCompile(t, graph.New[doc]().AddNode("approve", approval(&c)).AddEdge(graph.START, "approve"))
	_, err := g.Invoke(context.Background(), doc{})
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Empty(t, ie.Thread)
	_, err = g.Resume(context.Background(), "t")
	require.ErrorIs(t, err, graph.ErrNoCheckpointer)

	_, err = graph.Interrupt[string](context.Background(), "x")
	require.ErrorContains(t, err, "outside a node")
}

func TestDurabilityModes(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(d.String(), func(t *testing.T) {
			saver := memory.New()
			var c counts
			g := mustCompile(t, graph.New[doc](logReducer()).
				AddNode("a", counted(&c, "a")).AddNode("approve", approval(&c)).AddNode("b", counted(&c, "b")).
				AddEdge(graph.START, "a").AddEdge("a", "approve").AddEdge("approve", "b"),
				graph.WithCheckpointer(saver), graph.WithDefaultDurability(d))
			ctx := context.Background()
			_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
			require.ErrorIs(t, err, graph.ErrInterrupted)
			out, err := g.Resume(ctx, "t", graph.WithResumeValue("ok"))
			require.NoError(t, err)
			assert.Equal(t, []string{"a", "approved:ok", "b"}, out.Log)
			hist, err := g.History(ctx, "t", 0)
			require.NoError(t, err)
			switch d {
			case graph.DurabilityExit:
				assert.Len(t, hist, 2, "one checkpoint per run")
			default:
				assert.Len(t, hist, 4, "input, a, approve (after the resume), b")
			}
			assert.Equal(t, out, hist[0].State)
		})
	}
}

// With exit durability a run stores one checkpoint and keeps the others in
// memory only; the checkpoint it stores names as its parent the thread's
// stored latest, not one of those, so History reads as one chain across
// turns and resumes.
func TestExitDurabilityParentsAreStoredCheckpoints(t *testing.T) {
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("approve", approval(&c)).AddNode("b", counted(&c, "b")).
		AddEdge(graph.START, "a").AddEdge("a", "approve").AddEdge("approve", "b"),
		graph.WithCheckpointer(memory.New()), graph.WithDefaultDurability(graph.DurabilityExit))
	ctx := context.Background()
	for turn := range 2 {
		_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
		require.ErrorIs(t, err, graph.ErrInterrupted, "turn %d", turn)
		_, err = g.Resume(ctx, "t", graph.WithResumeValue("ok"))
		require.NoError(t, err, "turn %d", turn)
	}
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	require.Len(t, hist, 4, "one checkpoint per run")
	for i := 0; i+1 < len(hist); i++ {
		assert.Equal(t, hist[i+1].CheckpointID, hist[i].ParentID,
			"checkpoint %d (%s, step %d) names a parent that is not the stored checkpoint before it", i, hist[i].Source, hist[i].Step)
	}
	assert.Empty(t, hist[3].ParentID, "the thread's first checkpoint has no parent")
}

func TestEncryptedCheckpoints(t *testing.T) {
	saver := memory.New()
	key := []byte("0123456789abcdef0123456789abcdef")
	ser, err := state.Encrypted(key, state.JSON())
	require.NoError(t, err)
	g := mustCompile(t, graph.New[doc]().
		AddNode("a", func(_ context.Context, s doc) (doc, error) { s.Answer = "top secret"; return s, nil }).
		AddEdge(graph.START, "a"),
		graph.WithCheckpointer(saver), graph.WithSerializer(ser))
	ctx := context.Background()
	_, err = g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	tup, err := saver.Get(ctx, "t", "", "")
	require.NoError(t, err)
	assert.NotContains(t, string(tup.Checkpoint.Payload), "top secret")
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "top secret", snap.State.Answer)

	wrongKey, err := state.Encrypted([]byte("fedcba9876543210fedcba9876543210"), state.JSON())
	require.NoError(t, err)
	g2 := mustCompile(t, graph.New[doc]().AddNode("a", appendLog("a")).AddEdge(graph.START, "a"),
		graph.WithCheckpointer(saver), graph.WithSerializer(wrongKey))
	_, err = g2.GetState(ctx, "t")
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
	require.ErrorIs(t, err, state.ErrDecrypt)
}

// TestOneRunAtATimePerThread starts a run on a thread and, while it is in
// progress, another on the same thread: the second is refused and writes
// nothing, while runs on other threads go ahead.
func TestOneRunAtATimePerThread(t *testing.T) {
	saver := memory.New()
	entered, release := make(chan struct{}), make(chan struct{})
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("wait", func(_ context.Context, s doc) (doc, error) {
			if s.Log[0] == "first" {
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

	_, err := g.Invoke(ctx, doc{Log: []string{"second"}}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	assert.ErrorContains(t, err, `thread "t"`)
	_, err = g.Resume(ctx, "t")
	require.ErrorIs(t, err, graph.ErrThreadBusy, "a resume is a run too")

	other, err := g.Invoke(ctx, doc{Log: []string{"other"}}, graph.WithThread("u"))
	require.NoError(t, err, "another thread runs meanwhile")
	assert.Equal(t, []string{"other", "waited"}, other.Log)

	close(release)
	require.NoError(t, <-first)
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"first", "waited"}, snap.State.Log, "the refused run wrote nothing")

	again, err := g.Invoke(ctx, doc{Log: []string{"again"}}, graph.WithThread("t"))
	require.NoError(t, err, "the thread is free once its run ended")
	assert.Equal(t, []string{"again", "waited"}, again.Log)
}

// panickingSaver panics on every Put.
type panickingSaver struct{ state.Saver }

func (panickingSaver) Put(context.Context, state.Checkpoint) error { panic("disk on fire") }

// TestASaverThatPanicsFailsTheRun writes checkpoints to a saver that
// panics, in every durability mode: the run fails with an error that says
// so, and the process goes on (in async mode the writes run on a goroutine
// of their own).
func TestASaverThatPanicsFailsTheRun(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(d.String(), func(t *testing.T) {
			var c counts
			g := mustCompile(t, graph.New[doc](logReducer()).
				AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).
				AddEdge(graph.START, "a").AddEdge("a", "b"),
				graph.WithCheckpointer(panickingSaver{memory.New()}), graph.WithDefaultDurability(d))
			_, err := g.Invoke(context.Background(), doc{}, graph.WithThread("t"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "disk on fire")
		})
	}
}

// panicsOnPut panics on its nth Put and stores the others.
type panicsOnPut struct {
	state.Saver
	n, puts int
}

func (s *panicsOnPut) Put(ctx context.Context, cp state.Checkpoint) error {
	if s.puts++; s.puts == s.n {
		panic("disk on fire")
	}
	return s.Saver.Put(ctx, cp)
}

// TestAnEnginePanicReturnsTheLastSuperstepsState makes the engine panic
// while it checkpoints a's superstep: the run fails with the panic, and
// returns the state a left, as a failing superstep does, not the input.
func TestAnEnginePanicReturnsTheLastSuperstepsState(t *testing.T) {
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddNode("b", counted(&c, "b")).
		AddEdge(graph.START, "a").AddEdge("a", "b"),
		graph.WithCheckpointer(&panicsOnPut{Saver: memory.New(), n: 2}))
	out, err := g.Invoke(context.Background(), doc{Log: []string{"in"}}, graph.WithThread("t"))
	require.ErrorContains(t, err, "disk on fire")
	assert.Equal(t, []string{"in", "a"}, out.Log)
	assert.Equal(t, map[string]int{"a": 1}, c.get(), "b never ran")
}

// TestANewTurnFollowsTheThreadsLatestCheckpoint runs twice on one thread:
// the second run's input checkpoint names the first run's last as its
// parent, so History is one chain.
func TestANewTurnFollowsTheThreadsLatestCheckpoint(t *testing.T) {
	var c counts
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", counted(&c, "a")).AddEdge(graph.START, "a"),
		graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	_, err = g.Invoke(ctx, doc{Log: []string{"again"}}, graph.WithThread("t"))
	require.NoError(t, err)
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	require.Len(t, hist, 4)
	for i := 0; i+1 < len(hist); i++ {
		assert.Equal(t, hist[i+1].CheckpointID, hist[i].ParentID, "checkpoint %d follows %d", i, i+1)
	}
	assert.Empty(t, hist[3].ParentID, "the thread's first checkpoint has no parent")
	assert.Equal(t, "input", hist[1].Source)
}
