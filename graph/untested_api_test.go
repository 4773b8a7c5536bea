package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// uaState is the state of the graphs of this file. Each field is written by
// at most one task per superstep, so no reducer is needed.
type uaState struct {
	Count  int
	A, B   int
	Answer string
	Top    []string
	Mid    []string
	Leaf   []string
	Thread string
}

func uaNoop(_ context.Context, s uaState) (uaState, error) { return s, nil }

func uaIncr(_ context.Context, s uaState) (uaState, error) {
	s.Count++
	return s, nil
}

// WithLabel changes the text Mermaid shows for a node, escaped like any
// label, while the node keeps its name for its Mermaid ID, its edges and at
// run time.
func TestWithLabelShowsLabelInMermaid(t *testing.T) {
	child := mustCompile(t, graph.New[uaState](graph.WithName("review")).
		AddNode("check", uaNoop, graph.WithLabel("Check facts")).
		AddEdge(graph.START, "check"))
	var seen []string
	var mu sync.Mutex
	record := func(ctx context.Context, s uaState) (uaState, error) {
		mu.Lock()
		seen = append(seen, graph.NodeName(ctx))
		mu.Unlock()
		return s, nil
	}
	g := mustCompile(t, graph.New[uaState](graph.WithName("pipeline")).
		AddNode("fetch-data", record, graph.WithLabel(`Fetch "web" <page>`)).
		AddNode("parse", record).
		AddSubgraph("review", child.AsSubgraph(), graph.WithLabel("Human review")).
		AddEdge(graph.START, "fetch-data").
		AddEdge("fetch-data", "parse").
		AddEdge("parse", "review"))

	want := "---\n" +
		"title: pipeline\n" +
		"---\n" +
		"flowchart TD\n" +
		"\t__start__([start]):::first\n" +
		"\tfetch_data(\"Fetch #quot;web#quot; #lt;page#gt;\")\n" +
		"\tparse(\"parse\")\n" +
		"\tsubgraph review [\"Human review\"]\n" +
		"\t\treview___start__([start]):::first\n" +
		"\t\treview_check(\"Check facts\")\n" +
		"\t\treview___start__ --> review_check\n" +
		"\t\treview_check --> review___end__\n" +
		"\t\treview___end__([end]):::last\n" +
		"\tend\n" +
		"\t__start__ --> fetch_data\n" +
		"\tfetch_data --> parse\n" +
		"\tparse --> review\n" +
		"\treview --> __end__\n" +
		"\t__end__([end]):::last\n" +
		"\tclassDef first fill:#eee,stroke:#999\n" +
		"\tclassDef last fill:#bfb6fc,stroke:#777\n"
	assert.Equal(t, want, g.Mermaid())
	// The child draws its labelled node the same way on its own.
	assert.Contains(t, child.Mermaid(), "\tcheck(\"Check facts\")\n")
	assert.Contains(t, child.Mermaid(), "\t__start__ --> check\n")

	// A label is only for drawing: the node keeps its name.
	assert.Equal(t, []string{"fetch-data", "parse", "review"}, g.Nodes())
	_, err := g.Invoke(context.Background(), uaState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"fetch-data", "parse"}, seen)
}

// Name returns the name given with WithName, "" without one.
func TestGraphName(t *testing.T) {
	named := mustCompile(t, graph.New[uaState](graph.WithName("planner")).
		AddNode("a", uaNoop).AddEdge(graph.START, "a"))
	assert.Equal(t, "planner", named.Name())

	unnamed := mustCompile(t, graph.New[uaState]().
		AddNode("a", uaNoop).AddEdge(graph.START, "a"))
	assert.Equal(t, "", unnamed.Name())

	// The last WithName wins, like any option.
	renamed := mustCompile(t, graph.New[uaState](graph.WithName("first"), graph.WithName("second")).
		AddNode("a", uaNoop).AddEdge(graph.START, "a"))
	assert.Equal(t, "second", renamed.Name())

	// Events carry the same name.
	var last graph.Event
	for ev, err := range named.Stream(context.Background(), uaState{}) {
		require.NoError(t, err)
		last = ev
	}
	assert.Equal(t, graph.KindDone, last.Kind)
	assert.Equal(t, named.Name(), last.Graph)
}

// uaLoop is a graph whose node "tick" runs forever.
func uaLoop(t *testing.T, opts ...graph.CompileOption) *graph.Graph[uaState] {
	return mustCompile(t, graph.New[uaState]().
		AddNode("tick", uaIncr).
		AddEdge(graph.START, "tick").
		AddEdge("tick", "tick"), opts...)
}

// A run that still has work after its superstep limit fails with a
// *StepLimitError that names the limit and the last superstep's nodes, and
// returns the state after that superstep.
func TestStepLimitError(t *testing.T) {
	t.Run("graph default", func(t *testing.T) {
		g := uaLoop(t, graph.WithDefaultStepLimit(3))
		out, err := g.Invoke(context.Background(), uaState{})
		require.Error(t, err)
		assert.EqualError(t, err, `graph: superstep limit of 3 reached; last superstep ran "tick"`)
		assert.ErrorIs(t, err, graph.ErrStepLimit)
		assert.NotErrorIs(t, err, graph.ErrRoute)
		var sle *graph.StepLimitError
		require.ErrorAs(t, err, &sle)
		assert.Equal(t, 3, sle.Limit)
		assert.Equal(t, []string{"tick"}, sle.Nodes)
		assert.Equal(t, 3, out.Count)
	})
	t.Run("run override", func(t *testing.T) {
		g := uaLoop(t, graph.WithDefaultStepLimit(3))
		out, err := g.Invoke(context.Background(), uaState{}, graph.WithStepLimit(5))
		assert.EqualError(t, err, `graph: superstep limit of 5 reached; last superstep ran "tick"`)
		var sle *graph.StepLimitError
		require.ErrorAs(t, err, &sle)
		assert.Equal(t, 5, sle.Limit)
		assert.Equal(t, 5, out.Count)
	})
	t.Run("package default", func(t *testing.T) {
		out, err := uaLoop(t).Invoke(context.Background(), uaState{})
		assert.EqualError(t, err, fmt.Sprintf(`graph: superstep limit of %d reached; last superstep ran "tick"`, graph.DefaultMaxSteps))
		assert.Equal(t, graph.DefaultMaxSteps, out.Count)
	})
	t.Run("several nodes in the last superstep", func(t *testing.T) {
		g := mustCompile(t, graph.New[uaState]().
			AddNode("a", func(_ context.Context, s uaState) (uaState, error) { s.A++; return s, nil }).
			AddNode("b", func(_ context.Context, s uaState) (uaState, error) { s.B++; return s, nil }).
			AddEdge(graph.START, "a").AddEdge(graph.START, "b").
			AddEdge("a", "a").AddEdge("b", "b"),
			graph.WithDefaultStepLimit(2))
		out, err := g.Invoke(context.Background(), uaState{})
		assert.EqualError(t, err, `graph: superstep limit of 2 reached; last superstep ran "a", "b"`)
		var sle *graph.StepLimitError
		require.ErrorAs(t, err, &sle)
		assert.Equal(t, []string{"a", "b"}, sle.Nodes)
		assert.Equal(t, uaState{A: 2, B: 2}, out)
	})
	t.Run("names the superstep that ran, not the one due next", func(t *testing.T) {
		g := mustCompile(t, graph.New[uaState]().
			AddNode("ping", uaIncr).AddNode("pong", uaIncr).
			AddEdge(graph.START, "ping").AddEdge("ping", "pong").AddEdge("pong", "ping"),
			graph.WithDefaultStepLimit(3))
		out, err := g.Invoke(context.Background(), uaState{})
		assert.EqualError(t, err, `graph: superstep limit of 3 reached; last superstep ran "ping"`)
		assert.Equal(t, 3, out.Count)
	})
	t.Run("a run that ends at the limit succeeds", func(t *testing.T) {
		g := mustCompile(t, graph.New[uaState]().
			AddNode("a", uaIncr).AddNode("b", uaIncr).
			AddEdge(graph.START, "a").AddEdge("a", "b"),
			graph.WithDefaultStepLimit(2))
		out, err := g.Invoke(context.Background(), uaState{})
		require.NoError(t, err)
		assert.Equal(t, 2, out.Count)
	})
}

var errRouteBoom = errors.New("route exploded")

// A route that panics fails the run with a *RouteError whose Unwrap returns
// the error describing the panic; a route that picks an undeclared
// destination fails with one that wraps nothing.
func TestRouteErrorUnwrap(t *testing.T) {
	panicking := func(context.Context, uaState) []string { panic(errRouteBoom) }

	t.Run("route after a node panics", func(t *testing.T) {
		g := mustCompile(t, graph.New[uaState]().
			AddNode("a", uaNoop).AddNode("b", uaIncr).
			AddEdge(graph.START, "a").
			AddConditionalEdges("a", panicking, "b", graph.END))
		out, err := g.Invoke(context.Background(), uaState{})
		require.ErrorIs(t, err, graph.ErrRoute)
		var re *graph.RouteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "a", re.From)
		assert.Empty(t, re.Dest)
		assert.Equal(t, []string{"b", graph.END}, re.Declared)
		require.Error(t, re.Err)
		assert.Same(t, re.Err, errors.Unwrap(re))
		assert.Same(t, re.Err, re.Unwrap())
		assert.ErrorIs(t, err, re.Err)
		assert.ErrorIs(t, err, errRouteBoom, "the error the route panicked with is reachable")
		assert.Regexp(t, `^panic: route exploded\n`, re.Err.Error())
		assert.Regexp(t, `^graph: route after "a": panic: route exploded\n`, err.Error())
		assert.Equal(t, 0, out.Count, "b must not run")
	})
	t.Run("entry route panics", func(t *testing.T) {
		g := mustCompile(t, graph.New[uaState]().
			AddNode("b", uaIncr).
			AddConditionalEdges(graph.START, panicking, "b"))
		_, err := g.Invoke(context.Background(), uaState{})
		var re *graph.RouteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, graph.START, re.From)
		require.Error(t, errors.Unwrap(re))
		assert.Regexp(t, `^panic: route exploded\n`, errors.Unwrap(re).Error())
	})
	t.Run("undeclared destination wraps nothing", func(t *testing.T) {
		g := mustCompile(t, graph.New[uaState]().
			AddNode("a", uaNoop).AddNode("b", uaIncr).AddNode("c", uaIncr).
			AddEdge(graph.START, "a").AddEdge(graph.START, "c").
			AddConditionalEdges("a", func(context.Context, uaState) []string { return []string{"c"} }, "b", graph.END))
		_, err := g.Invoke(context.Background(), uaState{})
		assert.EqualError(t, err, `graph: route after "a" chose "c", which is not among its declared destinations ("b", "__end__")`)
		var re *graph.RouteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "c", re.Dest)
		assert.NoError(t, re.Unwrap())
		assert.NoError(t, errors.Unwrap(re))
		assert.ErrorIs(t, err, graph.ErrRoute)
	})
}

// An *InterruptError says it is permanent, so that retry and breaker
// middleware leave paused calls alone; node failures say nothing of the kind.
func TestInterruptErrorIsPermanent(t *testing.T) {
	type permanent interface{ Permanent() bool }

	assert.True(t, (&graph.InterruptError{}).Permanent())

	g := mustCompile(t, graph.New[uaState]().
		AddNode("ask", func(ctx context.Context, s uaState) (uaState, error) {
			v, err := graph.Interrupt[string](ctx, "ok?")
			if err != nil {
				return s, err
			}
			s.Answer = v
			return s, nil
		}).
		AddEdge(graph.START, "ask"))
	_, err := g.Invoke(context.Background(), uaState{})
	require.ErrorIs(t, err, graph.ErrInterrupted)
	wrapped := fmt.Errorf("tool call: %w", err)
	var p permanent
	require.ErrorAs(t, wrapped, &p)
	assert.True(t, p.Permanent())
	var ie *graph.InterruptError
	require.ErrorAs(t, wrapped, &ie)
	assert.True(t, ie.Permanent())

	failing := mustCompile(t, graph.New[uaState]().
		AddNode("fail", func(_ context.Context, s uaState) (uaState, error) { return s, errors.New("nope") }).
		AddEdge(graph.START, "fail"))
	_, err = failing.Invoke(context.Background(), uaState{})
	require.Error(t, err)
	assert.False(t, errors.As(err, &p), "a node failure is not permanent")
}

// Path is nil outside a run and at the top level; inside subgraphs it is the
// chain of subgraph node names from the top-level graph, also for nodes
// that run concurrently with others.
func TestPath(t *testing.T) {
	assert.Nil(t, graph.Path(context.Background()))

	clone := func(ctx context.Context) []string { return slices.Clone(graph.Path(ctx)) }
	leaf := mustCompile(t, graph.New[uaState](graph.WithName("leaf")).
		AddNode("leafnode", func(ctx context.Context, s uaState) (uaState, error) {
			s.Leaf = clone(ctx)
			return s, nil
		}).
		AddEdge(graph.START, "leafnode"))
	mid := mustCompile(t, graph.New[uaState](graph.WithName("mid")).
		AddNode("midnode", func(ctx context.Context, s uaState) (uaState, error) {
			s.Mid = clone(ctx)
			return s, nil
		}).
		AddSubgraph("inner", leaf.AsSubgraph()).
		AddEdge(graph.START, "midnode").AddEdge(graph.START, "inner"))
	top := mustCompile(t, graph.New[uaState](graph.WithName("top")).
		AddNode("plain", func(ctx context.Context, s uaState) (uaState, error) {
			s.Top = clone(ctx)
			if s.Top == nil {
				s.Top = []string{"<nil>"}
			}
			return s, nil
		}).
		AddSubgraph("outer", mid.AsSubgraph()).
		AddEdge(graph.START, "plain").AddEdge(graph.START, "outer"))

	out, err := top.Invoke(context.Background(), uaState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"<nil>"}, out.Top, "Path is nil at the top level")
	assert.Equal(t, []string{"outer"}, out.Mid)
	assert.Equal(t, []string{"outer", "inner"}, out.Leaf)

	// Run on its own, the middle graph is the top level.
	out, err = mid.Invoke(context.Background(), uaState{})
	require.NoError(t, err)
	assert.Nil(t, out.Mid)
	assert.Equal(t, []string{"inner"}, out.Leaf)
}

// ThreadID is the run's thread, inherited by subgraphs, whether or not the
// graph checkpoints; "" without a thread or outside a run.
func TestThreadID(t *testing.T) {
	assert.Equal(t, "", graph.ThreadID(context.Background()))
	record := func(ctx context.Context, s uaState) (uaState, error) {
		s.Thread = graph.ThreadID(ctx)
		return s, nil
	}
	build := func() *graph.Builder[uaState] {
		child := mustCompile(t, graph.New[uaState]().AddNode("rec", record).AddEdge(graph.START, "rec"))
		return graph.New[uaState]().AddSubgraph("child", child.AsSubgraph()).AddEdge(graph.START, "child")
	}

	plain := mustCompile(t, build())
	out, err := plain.Invoke(context.Background(), uaState{})
	require.NoError(t, err)
	assert.Equal(t, "", out.Thread)
	out, err = plain.Invoke(context.Background(), uaState{}, graph.WithThread("named"))
	require.NoError(t, err)
	assert.Equal(t, "named", out.Thread)

	saved := mustCompile(t, build(), graph.WithCheckpointer(memory.New()))
	out, err = saved.Invoke(context.Background(), uaState{}, graph.WithThread("t-42"))
	require.NoError(t, err)
	assert.Equal(t, "t-42", out.Thread)
}

// ResumeStream continues an interrupted thread and streams its events,
// ending with KindDone and the final state.
func TestResumeStream(t *testing.T) {
	var runs atomic.Int32
	g := mustCompile(t, graph.New[uaState](graph.WithName("ask")).
		AddNode("ask", func(ctx context.Context, s uaState) (uaState, error) {
			runs.Add(1)
			v, err := graph.Interrupt[string](ctx, "ok?")
			if err != nil {
				return s, err
			}
			s.Answer = v
			return s, nil
		}).
		AddNode("after", uaIncr).
		AddEdge(graph.START, "ask").AddEdge("ask", "after"),
		graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := g.Invoke(ctx, uaState{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	var updates []string
	var last graph.Event
	n := 0
	for ev, err := range g.ResumeStream(ctx, "t", graph.WithResumeValue("yes")) {
		require.NoError(t, err)
		n++
		if ev.Kind == graph.KindUpdate {
			updates = append(updates, ev.Node)
		}
		last = ev
	}
	assert.Greater(t, n, 1)
	assert.Equal(t, []string{"ask", "after"}, updates)
	require.Equal(t, graph.KindDone, last.Kind)
	assert.Equal(t, "ask", last.Graph)
	assert.Equal(t, uaState{Answer: "yes", Count: 1}, last.State)
	assert.Equal(t, int32(2), runs.Load())

	// An unknown thread ends the stream with an error.
	var errs []error
	for _, err := range g.ResumeStream(ctx, "nope") {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], state.ErrNotFound)
}

var errDiskFull = errors.New("disk full")

// uaFlakySaver is a memory saver whose Put fails for the checkpoints failPut
// selects and whose PutWrites fails when failWrites is set. It records the
// IDs of the checkpoints it failed on.
type uaFlakySaver struct {
	*memory.Saver
	failPut    func(state.Checkpoint) bool
	failWrites bool

	mu     sync.Mutex
	failed []string
}

func (s *uaFlakySaver) Put(ctx context.Context, cp state.Checkpoint) error {
	if s.failPut != nil && s.failPut(cp) {
		s.mu.Lock()
		s.failed = append(s.failed, cp.ID)
		s.mu.Unlock()
		return errDiskFull
	}
	return s.Saver.Put(ctx, cp)
}

// PutIfLatest fails as Put does: the embedded store's would bypass Put.
func (s *uaFlakySaver) PutIfLatest(ctx context.Context, cp state.Checkpoint, latest string) error {
	if s.failPut != nil && s.failPut(cp) {
		s.mu.Lock()
		s.failed = append(s.failed, cp.ID)
		s.mu.Unlock()
		return errDiskFull
	}
	return s.Saver.PutIfLatest(ctx, cp, latest)
}

func (s *uaFlakySaver) PutWrites(ctx context.Context, thread, ns, cpID string, writes []state.PendingWrite) error {
	if s.failWrites {
		s.mu.Lock()
		s.failed = append(s.failed, cpID)
		s.mu.Unlock()
		return errDiskFull
	}
	return s.Saver.PutWrites(ctx, thread, ns, cpID, writes)
}

func (s *uaFlakySaver) failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failed)
}

// A saver that fails makes the run fail with an error that names the thread,
// the checkpoint and what was being saved, and wraps the saver's error,
// whatever the durability mode.
func TestCheckpointSaverFailures(t *testing.T) {
	ctx := context.Background()
	chain := func(t *testing.T, saver state.Saver, ran *atomic.Int32, opts ...graph.CompileOption) *graph.Graph[uaState] {
		count := func(_ context.Context, s uaState) (uaState, error) {
			ran.Add(1)
			s.Count++
			return s, nil
		}
		return mustCompile(t, graph.New[uaState]().
			AddNode("a", count).AddNode("b", count).
			AddEdge(graph.START, "a").AddEdge("a", "b"),
			append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
	}
	atStep := func(step int) func(state.Checkpoint) bool {
		return func(cp state.Checkpoint) bool { return cp.Step == step }
	}

	t.Run("sync checkpoint", func(t *testing.T) {
		saver := &uaFlakySaver{Saver: memory.New(), failPut: atStep(0)}
		var ran atomic.Int32
		_, err := chain(t, saver, &ran).Invoke(ctx, uaState{}, graph.WithThread("t"))
		failed := saver.failures()
		require.Len(t, failed, 1)
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving checkpoint: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.Equal(t, int32(1), ran.Load(), "b must not run after its checkpoint failed")
	})
	t.Run("sync pending write", func(t *testing.T) {
		// Outputs are saved as pending writes in supersteps of several
		// tasks (a lone task's is held by the checkpoint that follows).
		saver := &uaFlakySaver{Saver: memory.New(), failWrites: true}
		var ran atomic.Int32
		count := func(_ context.Context, s uaState) (uaState, error) {
			ran.Add(1)
			return s, nil
		}
		g := mustCompile(t, graph.New[uaState]().
			AddNode("a", count).AddNode("b", count).AddNode("c", count).
			AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddEdge("a", "c").AddEdge("b", "c"),
			graph.WithCheckpointer(saver))
		_, err := g.Invoke(ctx, uaState{}, graph.WithThread("t"))
		failed := saver.failures()
		require.NotEmpty(t, failed)
		assert.Contains(t, err.Error(), fmt.Sprintf(`graph: thread "t": checkpoint %q: saving the output of node `, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.Equal(t, int32(2), ran.Load(), "c must not run after the outputs of its superstep failed to save")
	})
	t.Run("async checkpoint", func(t *testing.T) {
		saver := &uaFlakySaver{Saver: memory.New(), failPut: atStep(0)}
		var ran atomic.Int32
		g := chain(t, saver, &ran)
		_, err := g.Invoke(ctx, uaState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityAsync))
		failed := saver.failures()
		require.NotEmpty(t, failed)
		// The first failure is reported, whenever the run notices it.
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving checkpoint: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
	})
	t.Run("exit checkpoint", func(t *testing.T) {
		saver := &uaFlakySaver{Saver: memory.New(), failPut: func(state.Checkpoint) bool { return true }}
		var ran atomic.Int32
		// The graph writes synchronously; the run overrides that.
		g := chain(t, saver, &ran)
		out, err := g.Invoke(ctx, uaState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityExit))
		failed := saver.failures()
		require.Len(t, failed, 1, "exit mode writes once")
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving checkpoint: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.Equal(t, int32(2), ran.Load(), "exit mode writes after the run")
		assert.Equal(t, 2, out.Count)
	})
	t.Run("exit pending writes replace the interrupt", func(t *testing.T) {
		saver := &uaFlakySaver{Saver: memory.New(), failWrites: true}
		g := mustCompile(t, graph.New[uaState]().
			AddNode("ask", func(ctx context.Context, s uaState) (uaState, error) {
				_, err := graph.Interrupt[string](ctx, "ok?")
				return s, err
			}).
			AddEdge(graph.START, "ask"),
			graph.WithCheckpointer(saver), graph.WithDefaultDurability(graph.DurabilityExit))
		_, err := g.Invoke(ctx, uaState{}, graph.WithThread("t"))
		failed := saver.failures()
		require.Len(t, failed, 1)
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving pending writes: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.NotErrorIs(t, err, graph.ErrInterrupted, "an interrupt that was not saved cannot be resumed")
	})
}
