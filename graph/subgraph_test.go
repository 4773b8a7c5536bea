package graph_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

type inner struct {
	Text  string
	Steps []string
}

func innerGraph(t *testing.T, name string) *graph.Graph[inner] {
	return mustCompile(t, graph.New[inner](graph.WithName(name)).
		AddNode("upper", func(ctx context.Context, s inner) (inner, error) {
			graph.EmitCustom(ctx, "inner", s.Text)
			s.Text = strings.ToUpper(s.Text)
			s.Steps = append(s.Steps, name+".upper")
			return s, nil
		}).
		AddEdge(graph.START, "upper"))
}

func TestSubgraphWithSameStateType(t *testing.T) {
	child := mustCompile(t, graph.New[doc](graph.WithName("child")).
		AddNode("c1", appendLog("c1")).AddNode("c2", appendLog("c2")).
		AddEdge(graph.START, "c1").AddEdge("c1", "c2"))
	g := mustCompile(t, graph.New[doc]().
		AddNode("before", appendLog("before")).
		AddSubgraph("child", child.AsSubgraph()).
		AddNode("after", appendLog("after")).
		AddEdge(graph.START, "before").AddEdge("before", "child").AddEdge("child", "after"))
	out, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Equal(t, []string{"before", "c1", "c2", "after"}, out.Log)
}

func TestSubgraphInsideSubgraphWithMappedStates(t *testing.T) {
	// Level 2 works on inner; level 1 wraps it over inner too; the top level
	// maps its own doc state to inner and back.
	leaf := innerGraph(t, "leaf")
	mid := mustCompile(t, graph.New[inner](graph.WithName("mid")).
		AddNode("prep", func(_ context.Context, s inner) (inner, error) {
			s.Text += "!"
			s.Steps = append(s.Steps, "mid.prep")
			return s, nil
		}).
		AddSubgraph("leaf", leaf.AsSubgraph()).
		AddEdge(graph.START, "prep").AddEdge("prep", "leaf"))
	top := mustCompile(t, graph.New[doc](graph.WithName("top")).
		AddSubgraph("mid", graph.Subgraph(mid,
			graph.MapInput(func(p doc) inner { return inner{Text: p.Answer} }),
			graph.MapOutput(func(p doc, c inner) doc {
				p.Answer = c.Text
				p.Log = append(p.Log, c.Steps...)
				return p
			}))).
		AddEdge(graph.START, "mid"))

	out, err := top.Invoke(context.Background(), doc{Answer: "hi"})
	require.NoError(t, err)
	assert.Equal(t, "HI!", out.Answer)
	assert.Equal(t, []string{"mid.prep", "leaf.upper"}, out.Log)

	var custom []graph.Event
	var starts []string
	for ev, err := range top.Stream(context.Background(), doc{Answer: "hi"}, graph.WithModes(graph.ModeCustom|graph.ModeEvents)) {
		require.NoError(t, err)
		switch ev.Kind {
		case graph.KindCustom:
			custom = append(custom, ev)
		case graph.KindNodeStart:
			starts = append(starts, strings.Join(append(append([]string{}, ev.Path...), ev.Node), "/"))
		}
	}
	require.Len(t, custom, 1)
	assert.Equal(t, []string{"mid", "leaf"}, custom[0].Path)
	assert.Equal(t, "upper", custom[0].Node)
	assert.Equal(t, "leaf", custom[0].Graph)
	assert.Equal(t, "hi!", custom[0].Payload)
	assert.Equal(t, []string{"mid", "mid/prep", "mid/leaf", "mid/leaf/upper"}, starts)
}

func TestSubgraphErrorsCarryTheirPath(t *testing.T) {
	failing := mustCompile(t, graph.New[doc](graph.WithName("failing")).
		AddNode("bad", func(_ context.Context, s doc) (doc, error) { return s, errors.New("inner failure") }).
		AddEdge(graph.START, "bad"))
	mid := mustCompile(t, graph.New[doc]().AddSubgraph("deep", failing.AsSubgraph()).AddEdge(graph.START, "deep"))
	top := mustCompile(t, graph.New[doc]().AddSubgraph("outer", mid.AsSubgraph()).AddEdge(graph.START, "outer"))
	_, err := top.Invoke(context.Background(), doc{})
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "bad", ne.Node)
	assert.Equal(t, []string{"outer", "deep"}, ne.Path)
	assert.Equal(t, `graph: node "outer"/"deep"/"bad": inner failure`, err.Error())
}

func TestSubgraphTypeMismatchFailsCompile(t *testing.T) {
	leaf := innerGraph(t, "leaf")
	_, err := graph.New[doc]().
		AddSubgraph("leaf", graph.Subgraph[doc](leaf)).
		AddEdge(graph.START, "leaf").Compile()
	require.ErrorIs(t, err, graph.ErrInvalidGraph)
	assert.Contains(t, err.Error(), `subgraph node "leaf"`)
	assert.Contains(t, err.Error(), "MapInput is required")

	_, err = graph.New[doc]().
		AddSubgraph("leaf", graph.Subgraph(leaf, graph.MapInput(func(p doc) inner { return inner{} }))).
		AddEdge(graph.START, "leaf").Compile()
	require.ErrorIs(t, err, graph.ErrInvalidGraph)
	assert.Contains(t, err.Error(), "MapOutput is required")
	assert.NotContains(t, err.Error(), "MapInput is required")
}

func TestSubgraphsRunInParallelBranches(t *testing.T) {
	child := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("x", appendLog("x")).AddNode("y", appendLog("y")).
		AddEdge(graph.START, "x").AddEdge(graph.START, "y"))
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddSubgraph("s1", child.AsSubgraph()).AddSubgraph("s2", child.AsSubgraph()).
		AddEdge(graph.START, "s1").AddEdge(graph.START, "s2"))
	out, err := g.Invoke(context.Background(), doc{Log: []string{"in"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "x", "y", "x", "y"}, out.Log)
	_ = state.Append[string]
}

func TestNestedRunsInsideANode(t *testing.T) {
	saver := memory.New()
	var asks atomic.Int32
	child := mustCompile(t, graph.New[doc](graph.WithName("helper")).
		AddNode("work", func(ctx context.Context, s doc) (doc, error) {
			graph.EmitCustom(ctx, "working", s.Answer)
			s.Log = append(s.Log, "helper:"+s.Answer)
			return s, nil
		}).
		AddNode("ask", func(ctx context.Context, s doc) (doc, error) {
			asks.Add(1)
			v, err := graph.Interrupt[string](ctx, "ok for "+s.Answer+"?")
			if err != nil {
				return s, err
			}
			s.Log = append(s.Log, "confirmed:"+v)
			return s, nil
		}).
		AddEdge(graph.START, "work").AddEdge("work", "ask"))
	// The parent's node runs the child twice, under two keys.
	parent := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("delegate", func(ctx context.Context, s doc) (doc, error) {
			for _, task := range []string{"a", "b"} {
				out, err := child.Nested(ctx, doc{Answer: task}, "helper", task)
				if err != nil {
					return s, err
				}
				s.Log = append(s.Log, out.Log...)
			}
			return s, nil
		}).
		AddEdge(graph.START, "delegate"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()

	var custom []graph.Event
	var interrupted *graph.InterruptError
	for ev, err := range parent.Stream(ctx, doc{}, graph.WithThread("t"), graph.WithModes(graph.ModeCustom)) {
		if err != nil {
			require.ErrorAs(t, err, &interrupted)
			break
		}
		if ev.Kind == graph.KindCustom {
			custom = append(custom, ev)
		}
	}
	require.NotNil(t, interrupted)
	require.Len(t, custom, 1)
	assert.Equal(t, []string{"helper"}, custom[0].Path)
	assert.Equal(t, "a", custom[0].Payload)
	in := interrupted.Interrupts[0]
	assert.Equal(t, []string{"helper"}, in.Path)
	assert.Equal(t, "ok for a?", in.Payload)

	_, err := parent.Resume(ctx, "t", graph.WithResumeValue("yes-a"))
	require.ErrorAs(t, err, &interrupted)
	assert.Equal(t, "ok for b?", interrupted.Interrupts[0].Payload, "the first nested run finished; the second asks")

	out, err := parent.Resume(ctx, "t", graph.WithResumeValue("yes-b"))
	require.NoError(t, err)
	assert.Equal(t, []string{"helper:a", "confirmed:yes-a", "helper:b", "confirmed:yes-b"}, out.Log)
	// a asked twice (first run, resume), b twice: the finished nested run for
	// a was not run again when b was answered.
	assert.Equal(t, int32(4), asks.Load())

	// Outside a run, Nested is Invoke.
	_, err = child.Nested(ctx, doc{Answer: "x"}, "helper", "")
	require.ErrorIs(t, err, graph.ErrInterrupted)
}

// A SubgraphNode that was not made with Subgraph or AsSubgraph has nothing
// to run: Compile says so instead of the run failing with an empty reason.
func TestSubgraphNodeNotMadeWithSubgraphFailsCompile(t *testing.T) {
	_, err := graph.New[doc]().
		AddSubgraph("sub", &graph.SubgraphNode[doc]{}).
		AddEdge(graph.START, "sub").Compile()
	require.ErrorIs(t, err, graph.ErrInvalidGraph)
	assert.ErrorContains(t, err, `subgraph node "sub": it was not made with graph.Subgraph or Graph.AsSubgraph`)
}

// TestAReplayRunsKeyedNestedRunsAgain replays a thread from before a node
// that runs a nested graph under a key: the fork runs the nested graph
// again, while resuming the fork after its interrupt does not.
func TestAReplayRunsKeyedNestedRunsAgain(t *testing.T) {
	saver := memory.New()
	var works atomic.Int32
	child := mustCompile(t, graph.New[doc](graph.WithName("helper")).
		AddNode("work", func(_ context.Context, s doc) (doc, error) {
			works.Add(1)
			s.Log = append(s.Log, "worked")
			return s, nil
		}).
		AddNode("ask", func(ctx context.Context, s doc) (doc, error) {
			v, err := graph.Interrupt[string](ctx, "ok?")
			if err != nil {
				return s, err
			}
			s.Log = append(s.Log, "confirmed:"+v)
			return s, nil
		}).
		AddEdge(graph.START, "work").AddEdge("work", "ask"))
	parent := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("start", appendLog("start")).
		AddNode("delegate", func(ctx context.Context, s doc) (doc, error) {
			out, err := child.Nested(ctx, doc{}, "helper", "call_1")
			if err != nil {
				return s, err
			}
			s.Log = append(s.Log, out.Log...)
			return s, nil
		}).
		AddEdge(graph.START, "start").AddEdge("start", "delegate"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()

	_, err := parent.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	out, err := parent.Resume(ctx, "t", graph.WithResumeValue("first"))
	require.NoError(t, err)
	assert.Equal(t, []string{"start", "worked", "confirmed:first"}, out.Log)
	require.Equal(t, int32(1), works.Load())

	hist, err := parent.History(ctx, "t", 0)
	require.NoError(t, err)
	var afterStart string
	for _, h := range hist {
		if slices.Equal(h.Next, []string{"delegate"}) {
			afterStart = h.CheckpointID
		}
	}
	require.NotEmpty(t, afterStart)
	_, err = parent.Resume(ctx, "t", graph.FromCheckpoint(afterStart))
	require.ErrorIs(t, err, graph.ErrInterrupted, "the fork runs the nested graph again, up to its question")
	assert.Equal(t, int32(2), works.Load())
	out, err = parent.Resume(ctx, "t", graph.WithResumeValue("second"))
	require.NoError(t, err)
	assert.Equal(t, []string{"start", "worked", "confirmed:second"}, out.Log)
	assert.Equal(t, int32(2), works.Load(), "resuming the fork finds the fork's nested run")
}

// TestANewTurnAfterAReplayStaysOnItsBranch forks a thread, then starts a
// new turn on it: the turn's checkpoints belong to the fork's branch, so
// its keyed nested runs are the branch's own.
func TestANewTurnAfterAReplayStaysOnItsBranch(t *testing.T) {
	saver := memory.New()
	var works atomic.Int32
	child := mustCompile(t, graph.New[doc](graph.WithName("helper")).
		AddNode("work", func(_ context.Context, s doc) (doc, error) {
			works.Add(1)
			return s, nil
		}).
		AddEdge(graph.START, "work"))
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("start", appendLog("start")).
		AddNode("delegate", func(ctx context.Context, s doc) (doc, error) {
			_, err := child.Nested(ctx, doc{}, "helper", "call_1") // the same key on every turn
			return s, err
		}).
		AddEdge(graph.START, "start").AddEdge("start", "delegate"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	first := hist[len(hist)-1].CheckpointID // the input
	_, err = g.Resume(ctx, "t", graph.FromCheckpoint(first))
	require.NoError(t, err)
	require.Equal(t, int32(2), works.Load(), "the replay ran the nested graph again")
	fork, err := g.GetState(ctx, "t")
	require.NoError(t, err)

	_, err = g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.NoError(t, err)
	latest, err := saver.Get(ctx, "t", "", "")
	require.NoError(t, err)
	assert.NotEmpty(t, latest.Checkpoint.Metadata["trellis.branch"], "the new turn is on the fork's branch")
	assert.NotEqual(t, fork.CheckpointID, latest.Checkpoint.ID)
	assert.Equal(t, int32(2), works.Load(), "on the branch, the key's finished run is found, as on the thread's first branch")
}

// askingNode interrupts with its name as the payload and logs the answer.
func askingNode(name string) graph.NodeFunc[doc] {
	return func(ctx context.Context, s doc) (doc, error) {
		v, err := graph.Interrupt[string](ctx, name)
		if err != nil {
			return s, err
		}
		s.Log = append(s.Log, name+":"+v)
		return s, nil
	}
}

// Without a checkpointer a subgraph's interrupts still carry the place of
// the subgraph's task in their ID: two runs of one child in parallel tasks,
// and the parent's own node in the same superstep, each get an ID of their
// own, whether or not the run is named by a thread.
func TestInterruptsOfParallelSubgraphsWithoutACheckpointerHaveTheirOwnIDs(t *testing.T) {
	child := mustCompile(t, graph.New[doc](graph.WithName("child")).
		AddNode("ask", askingNode("child")).
		AddEdge(graph.START, "ask"))
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("ask", askingNode("parent")).
		AddSubgraph("s1", child.AsSubgraph()).AddSubgraph("s2", child.AsSubgraph()).
		AddEdge(graph.START, "ask").AddEdge(graph.START, "s1").AddEdge(graph.START, "s2"))
	for name, opts := range map[string][]graph.RunOption{"unnamed": nil, "thread": {graph.WithThread("t")}} {
		t.Run(name, func(t *testing.T) {
			_, err := g.Invoke(context.Background(), doc{}, opts...)
			var ie *graph.InterruptError
			require.ErrorAs(t, err, &ie)
			require.Len(t, ie.Interrupts, 3)
			ids := map[string][]string{}
			for _, in := range ie.Interrupts {
				ids[in.ID] = append(ids[in.ID], strings.Join(append(slices.Clone(in.Path), in.Node), "/"))
			}
			assert.Len(t, ids, 3, "interrupts sharing an ID: %v", ids)
		})
	}
}

// RunTask answers a subgraph task's interrupt only with the value given for
// that task: the same child run as another task of the superstep has
// interrupts of other IDs.
func TestRunTaskAnswersASubgraphTaskOnlyWithItsOwnValue(t *testing.T) {
	ctx := context.Background()
	child := mustCompile(t, graph.New[doc](graph.WithName("child")).
		AddNode("ask", askingNode("child")).
		AddEdge(graph.START, "ask"))
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddSubgraph("s1", child.AsSubgraph()).AddSubgraph("s2", child.AsSubgraph()).
		AddEdge(graph.START, "s1").AddEdge(graph.START, "s2"))

	idOf := func(node string, idx int) string {
		t.Helper()
		_, err := g.RunTask(ctx, graph.StepTask[doc]{Node: node}, doc{}, graph.TaskScope{Step: 0, Index: idx})
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 1)
		assert.Equal(t, []string{node}, ie.Interrupts[0].Path)
		return ie.Interrupts[0].ID
	}
	id1, id2 := idOf("s1", 0), idOf("s2", 1)
	require.NotEqual(t, id1, id2)

	// The value for s1's interrupt leaves s2 waiting.
	_, err := g.RunTask(ctx, graph.StepTask[doc]{Node: "s2"}, doc{}, graph.TaskScope{Step: 0, Index: 1, Resume: map[string]any{id1: "one"}})
	require.ErrorIs(t, err, graph.ErrInterrupted)
	out, err := g.RunTask(ctx, graph.StepTask[doc]{Node: "s2"}, doc{}, graph.TaskScope{Step: 0, Index: 1, Resume: map[string]any{id2: "two"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"child:two"}, out.State.Log)
}
