package graph_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
)

type doc struct {
	Log    []string
	Count  int
	Answer string
	Tags   map[string]int
	Items  []int
	Sum    int
}

func logReducer() graph.Option {
	return graph.WithReducer(func(s *doc) *[]string { return &s.Log }, state.Append[string]())
}

func appendLog(name string) graph.NodeFunc[doc] {
	return func(_ context.Context, s doc) (doc, error) {
		s.Log = append(s.Log, name)
		return s, nil
	}
}

func sleepy(name string, maxDelay time.Duration) graph.NodeFunc[doc] {
	return func(ctx context.Context, s doc) (doc, error) {
		time.Sleep(time.Duration(rand.Int64N(int64(maxDelay))))
		s.Log = append(s.Log, name)
		return s, nil
	}
}

func mustCompile[S any](t testing.TB, b *graph.Builder[S], opts ...graph.CompileOption) *graph.Graph[S] {
	t.Helper()
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

func TestChainRunsNodesInOrder(t *testing.T) {
	g := mustCompile(t, graph.New[doc]().
		AddNode("a", appendLog("a")).
		AddNode("b", appendLog("b")).
		AddNode("c", appendLog("c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END))
	out, err := g.Invoke(context.Background(), doc{Log: []string{"input"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"input", "a", "b", "c"}, out.Log)
}

func TestParallelAppendsMergeInNodeOrder(t *testing.T) {
	// Three branches finish in random order; the merged log follows the
	// order the nodes were added, every time.
	b := graph.New[doc](logReducer()).
		AddNode("first", sleepy("first", 3*time.Millisecond)).
		AddNode("second", sleepy("second", 3*time.Millisecond)).
		AddNode("third", sleepy("third", 3*time.Millisecond)).
		AddNode("join", appendLog("join"))
	for _, n := range []string{"first", "second", "third"} {
		b.AddEdge(graph.START, n).AddEdge(n, "join")
	}
	g := mustCompile(t, b)
	for range 30 {
		out, err := g.Invoke(context.Background(), doc{Log: []string{"in"}})
		require.NoError(t, err)
		require.Equal(t, []string{"in", "first", "second", "third", "join"}, out.Log)
	}
}

func TestParallelWritesToReplaceFieldConflict(t *testing.T) {
	set := func(v string) graph.NodeFunc[doc] {
		return func(_ context.Context, s doc) (doc, error) { s.Answer = v; return s, nil }
	}
	g := mustCompile(t, graph.New[doc]().
		AddNode("left", set("l")).AddNode("right", set("r")).AddNode("quiet", appendLog("q")).
		AddEdge(graph.START, "left").AddEdge(graph.START, "right").AddEdge(graph.START, "quiet"))
	out, err := g.Invoke(context.Background(), doc{Answer: "original"})
	var ce *state.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Answer", ce.Field)
	assert.Equal(t, []string{"left", "right"}, ce.Nodes)
	assert.Contains(t, err.Error(), `"left"`)
	assert.Contains(t, err.Error(), `"right"`)
	assert.Contains(t, err.Error(), "Answer")
	assert.Equal(t, "original", out.Answer, "no partial state is committed")
	assert.Empty(t, out.Log)
}

func TestOneParallelWriterNeedsNoReducer(t *testing.T) {
	set := func(_ context.Context, s doc) (doc, error) { s.Answer = "set"; return s, nil }
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("a", set).AddNode("b", appendLog("b")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b"))
	out, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Equal(t, "set", out.Answer)
	assert.Equal(t, []string{"b"}, out.Log)
}

func TestBuiltInReducersMergeParallelWrites(t *testing.T) {
	b := graph.New[doc](
		logReducer(),
		graph.WithReducer(func(s *doc) *int { return &s.Count }, state.Sum[int]()),
		graph.WithReducer(func(s *doc) *map[string]int { return &s.Tags }, state.MergeMap[string, int]()),
		graph.WithReducer(func(s *doc) *int { return &s.Sum }, state.Fold(func(a, b int) int { return max(a, b) })),
	)
	b.AddNode("x", func(_ context.Context, s doc) (doc, error) {
		s.Count += 2
		s.Tags["x"] = 1
		s.Tags["shared"] = 10
		delete(s.Tags, "gone")
		s.Sum = 7
		s.Log = append(s.Log, "x1", "x2")
		return s, nil
	})
	b.AddNode("y", func(_ context.Context, s doc) (doc, error) {
		s.Count += 3
		s.Tags["y"] = 2
		s.Sum = 5
		s.Log = append(s.Log, "y")
		return s, nil
	})
	b.AddEdge(graph.START, "x").AddEdge(graph.START, "y")
	g := mustCompile(t, b)
	in := doc{Count: 1, Tags: map[string]int{"shared": 1, "gone": 1, "kept": 3}, Log: []string{"in"}}
	out, err := g.Invoke(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, 6, out.Count)
	assert.Equal(t, map[string]int{"shared": 10, "kept": 3, "x": 1, "y": 2}, out.Tags)
	assert.Equal(t, 7, out.Sum)
	assert.Equal(t, []string{"in", "x1", "x2", "y"}, out.Log)
	assert.Equal(t, map[string]int{"shared": 1, "gone": 1, "kept": 3}, in.Tags, "the caller's map is never written")
}

type msg struct {
	ID   string
	Text string
}

func (m msg) Key() string { return m.ID }

type chat struct{ Messages []msg }

func TestKeyedReducerUpsertsAndRemoves(t *testing.T) {
	b := graph.New[chat](graph.WithReducer(func(s *chat) *[]msg { return &s.Messages }, state.Keyed[msg]()))
	b.AddNode("edit", func(_ context.Context, s chat) (chat, error) {
		out := slices.Clone(s.Messages)
		out[0].Text = "edited"                                                // upsert of 1
		out = slices.DeleteFunc(out, func(m msg) bool { return m.ID == "2" }) // removal of 2
		s.Messages = append(out, msg{ID: "4", Text: "from edit"})
		return s, nil
	})
	b.AddNode("add", func(_ context.Context, s chat) (chat, error) {
		s.Messages = append(s.Messages, msg{ID: "5", Text: "from add"}, msg{Text: "no id"})
		return s, nil
	})
	b.AddEdge(graph.START, "edit").AddEdge(graph.START, "add")
	g := mustCompile(t, b)
	out, err := g.Invoke(context.Background(), chat{Messages: []msg{{"1", "one"}, {"2", "two"}, {"3", "three"}}})
	require.NoError(t, err)
	assert.Equal(t, []msg{{"1", "edited"}, {"3", "three"}, {"4", "from edit"}, {"5", "from add"}, {"", "no id"}}, out.Messages)
}

type mapState struct {
	Item    int
	Results []int
}

func TestSendFansOutOverAThousandItems(t *testing.T) {
	const n = 1000
	b := graph.New[mapState](graph.WithReducer(func(s *mapState) *[]int { return &s.Results }, state.Append[int]()))
	b.AddNode("plan", func(_ context.Context, s mapState) (mapState, error) { return s, nil })
	b.AddNode("square", func(_ context.Context, s mapState) (mapState, error) {
		s.Results = append(s.Results, s.Item*s.Item)
		return s, nil
	})
	b.AddNode("done", func(_ context.Context, s mapState) (mapState, error) { s.Item = -1; return s, nil })
	b.AddEdge(graph.START, "plan")
	b.AddFanOut("plan", func(_ context.Context, s mapState) []graph.Send[mapState] {
		sends := make([]graph.Send[mapState], n)
		for i := range sends {
			sends[i] = graph.Send[mapState]{Node: "square", State: mapState{Item: i}}
		}
		return sends
	}, "square")
	b.AddEdge("square", "done")
	g := mustCompile(t, b)
	var calls atomic.Int32
	ctx := context.Background()
	for ev, err := range g.Stream(ctx, mapState{}, graph.WithModes(graph.ModeEvents)) {
		require.NoError(t, err)
		if ev.Kind == graph.KindNodeEnd && ev.Node == "done" {
			calls.Add(1)
		}
		if ev.Kind == graph.KindDone {
			out := ev.State.(mapState)
			require.Len(t, out.Results, n)
			for i, r := range out.Results {
				require.Equal(t, i*i, r, "results keep the order of the sends")
			}
			assert.Equal(t, -1, out.Item, "the join ran on the merged state")
		}
	}
	assert.Equal(t, int32(1), calls.Load(), "the node after the fan-out runs once")
}

func TestConditionalEdges(t *testing.T) {
	b := graph.New[doc](logReducer()).
		AddNode("classify", appendLog("classify")).
		AddNode("small", appendLog("small")).
		AddNode("large", appendLog("large")).
		AddNode("both1", appendLog("both1")).
		AddNode("both2", appendLog("both2")).
		AddEdge(graph.START, "classify").
		AddConditionalEdges("classify", func(_ context.Context, s doc) []string {
			switch {
			case s.Count < 0:
				return []string{graph.END}
			case s.Count < 10:
				return []string{"small"}
			case s.Count < 100:
				return []string{"large"}
			case s.Count < 1000:
				return []string{"both1", "both2"}
			}
			return []string{"nowhere"}
		}, "small", "large", "both1", "both2", graph.END)
	g := mustCompile(t, b)
	cases := []struct {
		count   int
		want    []string
		wantErr string
	}{
		{-1, []string{"classify"}, ""},
		{1, []string{"classify", "small"}, ""},
		{50, []string{"classify", "large"}, ""},
		{500, []string{"classify", "both1", "both2"}, ""},
		{5000, nil, `route after "classify" chose "nowhere"`},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.count), func(t *testing.T) {
			out, err := g.Invoke(context.Background(), doc{Count: c.count})
			if c.wantErr != "" {
				require.ErrorIs(t, err, graph.ErrRoute)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, out.Log)
		})
	}
}

func TestCommandNodeUpdatesAndChoosesNext(t *testing.T) {
	b := graph.New[doc](logReducer())
	b.AddCommandNode("decide", func(_ context.Context, s doc) (doc, graph.Command[doc], error) {
		s.Log = append(s.Log, "decide")
		s.Count++
		if s.Count > 2 {
			return s, graph.Command[doc]{Goto: []string{"finish"}}, nil
		}
		if s.Answer == "bad" {
			return s, graph.Command[doc]{Goto: []string{"undeclared"}}, nil
		}
		return s, graph.Command[doc]{Goto: []string{"decide"}, Send: []graph.Send[doc]{{Node: "side", State: doc{}}}}, nil
	}, []string{"decide", "finish", "side"})
	b.AddNode("finish", appendLog("finish"))
	b.AddNode("side", appendLog("side"))
	b.AddEdge(graph.START, "decide")
	g := mustCompile(t, b)

	out, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Equal(t, 3, out.Count)
	assert.Equal(t, []string{"decide", "decide", "side", "decide", "side", "finish"}, out.Log)

	_, err = g.Invoke(context.Background(), doc{Answer: "bad"})
	var re *graph.RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "decide", re.From)
	assert.Equal(t, "undeclared", re.Dest)
}

func TestJoinWaitsForAllSources(t *testing.T) {
	// a -> b -> j and c -> j: with plain edges j would run twice; a join
	// runs it once, after both b and c.
	b := graph.New[doc](logReducer()).
		AddNode("a", appendLog("a")).AddNode("b", appendLog("b")).
		AddNode("c", appendLog("c")).AddNode("j", appendLog("j")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "c").AddEdge("a", "b").
		AddJoin([]string{"b", "c"}, "j")
	g := mustCompile(t, b)
	out, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c", "b", "j"}, out.Log)
}

func TestStepLimit(t *testing.T) {
	b := graph.New[doc]().
		AddNode("ping", func(_ context.Context, s doc) (doc, error) { s.Count++; return s, nil }).
		AddNode("pong", func(_ context.Context, s doc) (doc, error) { s.Count++; return s, nil }).
		AddEdge(graph.START, "ping").AddEdge("ping", "pong").AddEdge("pong", "ping")
	g := mustCompile(t, b, graph.WithDefaultStepLimit(5))
	out, err := g.Invoke(context.Background(), doc{})
	var sl *graph.StepLimitError
	require.ErrorAs(t, err, &sl)
	require.ErrorIs(t, err, graph.ErrStepLimit)
	assert.Equal(t, 5, sl.Limit)
	assert.Equal(t, []string{"ping"}, sl.Nodes, "the last superstep ran ping")
	assert.Equal(t, 5, out.Count, "the state of the last completed superstep is returned")

	_, err = g.Invoke(context.Background(), doc{}, graph.WithStepLimit(8))
	require.ErrorAs(t, err, &sl)
	assert.Equal(t, 8, sl.Limit)
	assert.Equal(t, []string{"pong"}, sl.Nodes)
}

func TestCancellationStopsWithinTheSuperstep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var after atomic.Bool
	started := make(chan struct{})
	b := graph.New[doc]().
		AddNode("block", func(ctx context.Context, s doc) (doc, error) {
			close(started)
			<-ctx.Done()
			return s, ctx.Err()
		}).
		AddNode("fast", func(_ context.Context, s doc) (doc, error) { return s, nil }).
		AddNode("after", func(_ context.Context, s doc) (doc, error) { after.Store(true); return s, nil }).
		AddEdge(graph.START, "block").AddEdge(graph.START, "fast").AddEdge("block", "after")
	g := mustCompile(t, b)
	go func() {
		<-started
		cancel()
	}()
	_, err := g.Invoke(ctx, doc{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled))
	assert.False(t, after.Load(), "no superstep starts after cancellation")

	// A node that ignores cancellation still ends the run at the barrier.
	ctx2, cancel2 := context.WithCancel(context.Background())
	g2 := mustCompile(t, graph.New[doc]().
		AddNode("stubborn", func(_ context.Context, s doc) (doc, error) { cancel2(); return s, nil }).
		AddNode("after", func(_ context.Context, s doc) (doc, error) { after.Store(true); return s, nil }).
		AddEdge(graph.START, "stubborn").AddEdge("stubborn", "after"))
	_, err = g2.Invoke(ctx2, doc{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, after.Load())
}

func TestPanicBecomesNodeError(t *testing.T) {
	boom := func(_ context.Context, s doc) (doc, error) {
		var m map[string]int
		m["x"] = 1 // panics
		return s, nil
	}
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprint("parallel=", parallel), func(t *testing.T) {
			b := graph.New[doc]().AddNode("boom", boom).AddEdge(graph.START, "boom")
			if parallel {
				b.AddNode("other", appendLog("other")).AddEdge(graph.START, "other")
			}
			g := mustCompile(t, b)
			_, err := g.Invoke(context.Background(), doc{})
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			require.ErrorIs(t, err, graph.ErrNodePanic)
			assert.Equal(t, "boom", ne.Node)
			assert.NotNil(t, ne.Panic)
			assert.Contains(t, string(ne.Stack), "graph_test.TestPanicBecomesNodeError")
			assert.Contains(t, err.Error(), `node "boom"`)
			assert.Contains(t, err.Error(), "assignment to entry in nil map")
			var rte runtime.Error
			assert.ErrorAs(t, err, &rte, "a panic with an error keeps it reachable")
		})
	}
}

func TestNodeErrorsNameTheNode(t *testing.T) {
	sentinel := errors.New("disk full")
	g := mustCompile(t, graph.New[doc]().
		AddNode("save", func(_ context.Context, s doc) (doc, error) { s.Answer = "partial"; return s, sentinel }).
		AddEdge(graph.START, "save"))
	out, err := g.Invoke(context.Background(), doc{Answer: "before"})
	require.ErrorIs(t, err, sentinel)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "save", ne.Node)
	assert.Equal(t, 0, ne.Step)
	assert.Equal(t, `graph: node "save": disk full`, err.Error())
	assert.Equal(t, "before", out.Answer, "a failed node's writes are not committed")
}

func TestFailedNodeLeavesMapsUntouched(t *testing.T) {
	g := mustCompile(t, graph.New[doc]().
		AddNode("mutate", func(_ context.Context, s doc) (doc, error) {
			s.Tags["written"] = 1
			return s, errors.New("late failure")
		}).AddEdge(graph.START, "mutate"))
	in := doc{Tags: map[string]int{"a": 1}}
	out, err := g.Invoke(context.Background(), in)
	require.Error(t, err)
	assert.Equal(t, map[string]int{"a": 1}, out.Tags)
	assert.Equal(t, map[string]int{"a": 1}, in.Tags)
}

func TestRetryPolicy(t *testing.T) {
	transient := errors.New("transient")
	permanent := errors.New("permanent")
	cases := []struct {
		name      string
		failures  int
		err       error
		policy    graph.RetryPolicy
		wantCalls int32
		wantErr   error
	}{
		{"succeeds on third try", 2, transient, graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}, 3, nil},
		{"gives up after max attempts", 5, transient, graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}, 3, transient},
		{"retry-on predicate refuses", 5, permanent, graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond,
			RetryOn: func(err error) bool { return !errors.Is(err, permanent) }}, 1, permanent},
		{"jitter and backoff still retry", 1, transient, graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond, BackoffFactor: 3, MaxInterval: 2 * time.Millisecond, Jitter: true}, 2, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			g := mustCompile(t, graph.New[doc]().
				AddNode("flaky", func(_ context.Context, s doc) (doc, error) {
					if int(calls.Add(1)) <= c.failures {
						return s, c.err
					}
					s.Answer = "ok"
					return s, nil
				}, graph.WithRetry(c.policy)).
				AddEdge(graph.START, "flaky"))
			out, err := g.Invoke(context.Background(), doc{})
			assert.Equal(t, c.wantCalls, calls.Load())
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				assert.Equal(t, int(c.wantCalls), ne.Attempts)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "ok", out.Answer)
		})
	}
}

func TestPanicsAreNotRetried(t *testing.T) {
	var calls atomic.Int32
	g := mustCompile(t, graph.New[doc]().
		AddNode("p", func(_ context.Context, s doc) (doc, error) { calls.Add(1); panic("bug") },
			graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond})).
		AddEdge(graph.START, "p"))
	_, err := g.Invoke(context.Background(), doc{})
	require.ErrorIs(t, err, graph.ErrNodePanic)
	assert.Equal(t, int32(1), calls.Load())
}

func TestNodeTimeout(t *testing.T) {
	var calls atomic.Int32
	g := mustCompile(t, graph.New[doc]().
		AddNode("slow", func(ctx context.Context, s doc) (doc, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done()
				return s, ctx.Err()
			}
			s.Answer = "second try"
			return s, nil
		}, graph.WithTimeout(5*time.Millisecond), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond})).
		AddEdge(graph.START, "slow"))
	out, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Equal(t, "second try", out.Answer)

	g2 := mustCompile(t, graph.New[doc]().
		AddNode("slow", func(ctx context.Context, s doc) (doc, error) { <-ctx.Done(); return s, ctx.Err() }, graph.WithTimeout(2*time.Millisecond)).
		AddEdge(graph.START, "slow"))
	_, err = g2.Invoke(context.Background(), doc{})
	require.ErrorIs(t, err, graph.ErrNodeTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), `node "slow"`)
}

func TestCompiledGraphServesConcurrentRuns(t *testing.T) {
	b := graph.New[doc](logReducer(), graph.WithReducer(func(s *doc) *int { return &s.Count }, state.Sum[int]()))
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, func(_ context.Context, s doc) (doc, error) {
			s.Count += 1
			s.Log = append(s.Log, n)
			return s, nil
		}).AddEdge(graph.START, n)
	}
	g := mustCompile(t, b)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := g.Invoke(context.Background(), doc{Count: i, Log: make([]string, 0, 10)})
			assert.NoError(t, err)
			assert.Equal(t, i+3, out.Count)
			assert.Equal(t, []string{"a", "b", "c"}, out.Log)
		}()
	}
	wg.Wait()
}

func TestCompileFindsEveryProblem(t *testing.T) {
	noop := func(_ context.Context, s doc) (doc, error) { return s, nil }
	cases := []struct {
		name  string
		build func() *graph.Builder[doc]
		want  []string
	}{
		{"missing entry", func() *graph.Builder[doc] { return graph.New[doc]().AddNode("a", noop) },
			[]string{"no entry", `node "a" is unreachable`}},
		{"unknown node in edge", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("alpha", noop).AddEdge(graph.START, "alpha").AddEdge("alpha", "alpah")
		}, []string{`unknown node "alpah" (did you mean "alpha"?)`}},
		{"unreachable", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("a", noop).AddNode("island", noop).AddEdge(graph.START, "a")
		}, []string{`node "island" is unreachable from START`}},
		{"undeclared route target", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("a", noop).AddEdge(graph.START, "a").
				AddConditionalEdges("a", func(context.Context, doc) []string { return nil }, "ghost")
		}, []string{`conditional edges after a: unknown node "ghost"`}},
		{"route without destinations", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("a", noop).AddEdge(graph.START, "a").
				AddConditionalEdges("a", func(context.Context, doc) []string { return nil })
		}, []string{`conditional edges after "a" declare no destinations`}},
		{"duplicate and reserved names", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("a", noop).AddNode("a", noop).AddNode(graph.END, noop).AddNode("", noop).AddEdge(graph.START, "a")
		}, []string{`node "a" is added twice`, `node name "__end__" is reserved`, "empty name"}},
		{"nil function", func() *graph.Builder[doc] { return graph.New[doc]().AddNode("a", nil).AddEdge(graph.START, "a") },
			[]string{`node "a" has a nil function`}},
		{"edge from END", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("a", noop).AddEdge(graph.START, "a").AddEdge(graph.END, "a")
		}, []string{"END has no outgoing edges"}},
		{"reducer of another state type", func() *graph.Builder[doc] {
			return graph.New[doc](graph.WithReducer(func(s *chat) *[]msg { return &s.Messages }, state.Keyed[msg]())).AddNode("a", noop).AddEdge(graph.START, "a")
		}, []string{"a reducer was given for a state of another type"}},
		{"reducer on a nested field", func() *graph.Builder[doc] {
			type inner struct{ X int }
			type outer struct {
				A  int
				In inner
			}
			_ = outer{}
			return graph.New[doc](graph.WithReducer(func(s *doc) *int { return &s.Count }, state.Sum[int]()),
				graph.WithReducer(func(s *doc) *int { return &s.Count }, state.Sum[int]())).AddNode("a", noop).AddEdge(graph.START, "a")
		}, []string{"field Count has two reducers"}},
		{"negative retry", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("a", noop, graph.WithRetry(graph.RetryPolicy{MaxAttempts: -1})).AddEdge(graph.START, "a")
		}, []string{"negative MaxAttempts"}},
		{"fan-out to END", func() *graph.Builder[doc] {
			return graph.New[doc]().AddNode("a", noop).AddEdge(graph.START, "a").
				AddFanOut("a", func(context.Context, doc) []graph.Send[doc] { return nil }, graph.END)
		}, []string{"END cannot be used here"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.build().Compile()
			require.ErrorIs(t, err, graph.ErrInvalidGraph)
			var ce *graph.CompileError
			require.ErrorAs(t, err, &ce)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

type nested struct {
	Depth int
	Trail []string
}

func TestUnreachableNestedReducerField(t *testing.T) {
	type inner struct{ X int }
	type outer struct {
		A  int
		In inner
	}
	_, err := graph.New[outer](graph.WithReducer(func(s *outer) *int { return &s.In.X }, state.Sum[int]())).
		AddNode("a", func(_ context.Context, s outer) (outer, error) { return s, nil }).AddEdge(graph.START, "a").Compile()
	require.ErrorIs(t, err, graph.ErrInvalidGraph)
	assert.Contains(t, err.Error(), "does not point at a top-level or promoted field")
}

func TestStreamModes(t *testing.T) {
	b := graph.New[doc](logReducer()).
		AddNode("a", func(ctx context.Context, s doc) (doc, error) {
			graph.EmitCustom(ctx, "progress", 50)
			s.Log = append(s.Log, "a")
			s.Count = 1
			return s, nil
		}).
		AddNode("b", appendLog("b")).AddNode("c", appendLog("c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c")
	g := mustCompile(t, b, graph.WithDefaultStepLimit(10))

	collect := func(m graph.Mode) []graph.Event {
		var evs []graph.Event
		for ev, err := range g.Stream(context.Background(), doc{}, graph.WithModes(m)) {
			require.NoError(t, err)
			evs = append(evs, ev)
		}
		require.NotEmpty(t, evs)
		require.Equal(t, graph.KindDone, evs[len(evs)-1].Kind)
		assert.Equal(t, []string{"a", "b", "c"}, evs[len(evs)-1].State.(doc).Log)
		return evs[:len(evs)-1]
	}
	kinds := func(evs []graph.Event) []string {
		var ks []string
		for _, e := range evs {
			ks = append(ks, string(e.Kind)+":"+e.Node)
		}
		return ks
	}

	values := collect(graph.ModeValues)
	require.Len(t, values, 2)
	assert.Equal(t, []string{"a"}, values[0].State.(doc).Log)
	assert.Equal(t, []string{"a", "b", "c"}, values[1].State.(doc).Log)
	assert.Equal(t, 1, values[1].Step)

	updates := collect(graph.ModeUpdates)
	require.Len(t, updates, 3)
	assert.Equal(t, "a", updates[0].Node)
	assert.Equal(t, []string{"Log", "Count"}, updates[0].Fields)
	assert.Equal(t, []string{"Log"}, updates[1].Fields)

	events := collect(graph.ModeEvents)
	assert.Equal(t, "node_start:a", kinds(events)[0])
	assert.Equal(t, "node_end:a", kinds(events)[1])
	assert.ElementsMatch(t, []string{"node_start:b", "node_end:b", "node_start:c", "node_end:c"}, kinds(events)[2:])
	for _, e := range events {
		if e.Kind == graph.KindNodeEnd {
			assert.Greater(t, e.Duration, time.Duration(0))
		}
	}

	custom := collect(graph.ModeCustom)
	require.Len(t, custom, 1)
	assert.Equal(t, graph.Event{Kind: graph.KindCustom, Node: "a", Step: 0, Name: "progress", Payload: 50, Time: custom[0].Time}, custom[0])

	debug := collect(graph.ModeDebug)
	assert.Equal(t, []string{"step_start:", "step_end:", "step_start:", "step_end:"}, kinds(debug))
	assert.Equal(t, []string{"b", "c"}, debug[2].Nodes)
}

func TestStreamReportsErrorsLast(t *testing.T) {
	g := mustCompile(t, graph.New[doc]().
		AddNode("fail", func(_ context.Context, s doc) (doc, error) { return s, errors.New("nope") }).
		AddEdge(graph.START, "fail"))
	var last error
	n := 0
	for _, err := range g.Stream(context.Background(), doc{}) {
		n++
		last = err
	}
	require.Error(t, last)
	assert.Contains(t, last.Error(), "nope")
}

func TestBreakingOutOfStreamCancelsTheRun(t *testing.T) {
	var ran atomic.Int32
	b := graph.New[doc]().
		AddNode("loop", func(ctx context.Context, s doc) (doc, error) {
			ran.Add(1)
			graph.EmitCustom(ctx, "tick", s.Count)
			s.Count++
			return s, nil
		}).
		AddEdge(graph.START, "loop").AddEdge("loop", "loop")
	g := mustCompile(t, b, graph.WithDefaultStepLimit(1_000_000))
	seen := 0
	for ev, err := range g.Stream(context.Background(), doc{}, graph.WithModes(graph.ModeCustom)) {
		require.NoError(t, err)
		require.Equal(t, graph.KindCustom, ev.Kind)
		seen++
		if seen == 3 {
			break
		}
	}
	// goleak in TestMain checks that the run's goroutine ended.
	assert.Less(t, ran.Load(), int32(1000))
}

func TestEmitOutsideARunIsANoOp(t *testing.T) {
	assert.NotPanics(t, func() { graph.EmitCustom(context.Background(), "x", 1) })
	assert.False(t, graph.Emitting(context.Background(), graph.ModeCustom))
	assert.Equal(t, "", graph.NodeName(context.Background()))
	assert.Equal(t, -1, graph.Step(context.Background()))
}

func TestNodeContextKnowsWhereItRuns(t *testing.T) {
	var got []string
	var mu sync.Mutex
	record := func(ctx context.Context, s doc) (doc, error) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s@%d", graph.NodeName(ctx), graph.Step(ctx)))
		mu.Unlock()
		return s, nil
	}
	g := mustCompile(t, graph.New[doc]().AddNode("x", record).AddNode("y", record).AddNode("z", record).
		AddEdge(graph.START, "x").AddEdge("x", "y").AddEdge("x", "z"))
	_, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	slices.Sort(got)
	assert.Equal(t, []string{"x@0", "y@1", "z@1"}, got)
}

func TestParallelSlicesDoNotAlias(t *testing.T) {
	// The input slice has spare capacity: without isolation both branches
	// would append into the same backing array.
	in := make([]string, 1, 16)
	in[0] = "in"
	b := graph.New[doc](logReducer())
	for _, n := range []string{"a", "b", "c", "d"} {
		b.AddNode(n, appendLog(n)).AddEdge(graph.START, n)
	}
	g := mustCompile(t, b)
	out, err := g.Invoke(context.Background(), doc{Log: in})
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "a", "b", "c", "d"}, out.Log)
	assert.Equal(t, []string{"in"}, in[:1])
	assert.Empty(t, strings.Join(in[1:2], ""), "the caller's spare capacity is untouched")
}

type embedded struct {
	Left  []string
	Right []string
}

type withEmbedded struct {
	embedded
	Total int
}

func TestFieldsOfEmbeddedStructsAreFieldsOfTheState(t *testing.T) {
	// Two parallel nodes write two different promoted fields: no conflict.
	// A reducer can name a promoted field.
	b := graph.New[withEmbedded](graph.WithReducer(func(s *withEmbedded) *[]string { return &s.Left }, state.Append[string]())).
		AddNode("l1", func(_ context.Context, s withEmbedded) (withEmbedded, error) {
			s.Left = append(s.Left, "l1")
			return s, nil
		}).
		AddNode("l2", func(_ context.Context, s withEmbedded) (withEmbedded, error) {
			s.Left = append(s.Left, "l2")
			return s, nil
		}).
		AddNode("r", func(_ context.Context, s withEmbedded) (withEmbedded, error) {
			s.Right = append(s.Right, "r")
			return s, nil
		}).
		AddEdge(graph.START, "l1").AddEdge(graph.START, "l2").AddEdge(graph.START, "r")
	g := mustCompile(t, b)
	out, err := g.Invoke(context.Background(), withEmbedded{})
	require.NoError(t, err)
	assert.Equal(t, []string{"l1", "l2"}, out.Left)
	assert.Equal(t, []string{"r"}, out.Right)

	var fields []string
	for ev, err := range g.Stream(context.Background(), withEmbedded{}, graph.WithModes(graph.ModeUpdates)) {
		require.NoError(t, err)
		if ev.Kind == graph.KindUpdate && ev.Node == "r" {
			fields = ev.Fields
		}
	}
	assert.Equal(t, []string{"embedded.Right"}, fields)
}

func TestParallelTasksRunConcurrently(t *testing.T) {
	// Each node waits until all five have started: the superstep completes
	// only if the five run at the same time.
	const n = 5
	var started atomic.Int32
	all := make(chan struct{})
	b := graph.New[doc](logReducer())
	for i := range n {
		name := fmt.Sprint("n", i)
		b.AddNode(name, func(ctx context.Context, s doc) (doc, error) {
			if started.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
			case <-time.After(5 * time.Second):
				return s, errors.New("the other tasks never started")
			}
			s.Log = append(s.Log, name)
			return s, nil
		}).AddEdge(graph.START, name)
	}
	out, err := mustCompile(t, b).Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Equal(t, []string{"n0", "n1", "n2", "n3", "n4"}, out.Log)
}

func TestDetachKeepsTheNodeForWorkThatOutlivesIt(t *testing.T) {
	release, seen := make(chan struct{}), make(chan string, 1)
	g := mustCompile(t, graph.New[doc]().
		AddNode("a", func(ctx context.Context, s doc) (doc, error) {
			d := graph.Detach(ctx)
			go func() {
				<-release
				seen <- fmt.Sprintf("%s@%d", graph.NodeName(d), graph.Step(d))
			}()
			return s, nil
		}).
		AddNode("b", func(ctx context.Context, s doc) (doc, error) {
			close(release) // the work reads its context while b runs
			return s, nil
		}).
		AddEdge(graph.START, "a").AddEdge("a", "b"))
	_, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Equal(t, "a@0", <-seen, "the work started by a still belongs to a while b runs")
	assert.Equal(t, context.Background(), graph.Detach(context.Background()), "outside a node, Detach returns its context")
}

// TestEmitAfterTheRunEndedIsDropped emits from a goroutine a node left
// running, after the stream has ended: the event is dropped, and nothing
// panics.
func TestEmitAfterTheRunEndedIsDropped(t *testing.T) {
	release, done := make(chan struct{}), make(chan struct{})
	g := mustCompile(t, graph.New[doc]().
		AddNode("a", func(ctx context.Context, s doc) (doc, error) {
			go func() {
				defer close(done)
				<-release
				graph.EmitCustom(ctx, "late", 1)
			}()
			return s, nil
		}).
		AddEdge(graph.START, "a"))
	var kinds []graph.EventKind
	for ev, err := range g.Stream(context.Background(), doc{}) {
		require.NoError(t, err)
		kinds = append(kinds, ev.Kind)
	}
	require.Equal(t, graph.KindDone, kinds[len(kinds)-1])
	close(release)
	<-done
}

// A reducer is the application's code: one that panics fails the run with
// an error naming the field, and the panic does not escape.
func TestAPanickingReducerFailsTheRun(t *testing.T) {
	boom := state.Reducer[[]string](func(base []string, changes []state.Change[[]string]) ([]string, error) {
		panic("reducer bug")
	})
	g := mustCompile(t, graph.New[doc](graph.WithReducer(func(s *doc) *[]string { return &s.Log }, boom)).
		AddNode("a", appendLog("a")).AddNode("b", appendLog("b")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b"))
	var out doc
	var err error
	require.NotPanics(t, func() { out, err = g.Invoke(context.Background(), doc{}) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reducer bug")
	assert.Contains(t, err.Error(), "merging field Log: reducer panic: reducer bug")
	assert.NotContains(t, err.Error(), "internal panic")
	assert.Empty(t, out.Log)
}

// TestEmitFromANodesGoroutineAfterItReturnedIsSafe emits from a goroutine
// a node left running while the run goes on through later nodes on the
// same context: under -race, nothing races with the run's bookkeeping; the
// events arrive until the run ends, each naming a node of the graph or none
// (the goroutine did not Detach, see Emit).
func TestEmitFromANodesGoroutineAfterItReturnedIsSafe(t *testing.T) {
	stop, done := make(chan struct{}), make(chan struct{})
	emitted := make(chan struct{}, 1)
	b := graph.New[doc]().
		AddNode("a", func(ctx context.Context, s doc) (doc, error) {
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					graph.EmitCustom(ctx, "late", graph.NodeName(ctx))
					select {
					case emitted <- struct{}{}:
					default:
					}
				}
			}()
			return s, nil
		}).
		AddEdge(graph.START, "a")
	prev, nodes := "a", []string{"a", ""}
	for i := range 20 {
		name := fmt.Sprint("n", i)
		nodes = append(nodes, name)
		b.AddNode(name, func(ctx context.Context, s doc) (doc, error) {
			if i == 0 {
				// The goroutine emits while later nodes run.
				select {
				case <-emitted:
				case <-time.After(10 * time.Second):
					return s, errors.New("the goroutine never emitted")
				}
			}
			s.Log = append(s.Log, name)
			return s, nil
		}).AddEdge(prev, name)
		prev = name
	}
	g := mustCompile(t, b)
	for ev, err := range g.Stream(context.Background(), doc{}, graph.WithModes(graph.ModeCustom|graph.ModeUpdates)) {
		require.NoError(t, err)
		if ev.Kind == graph.KindCustom {
			assert.Contains(t, nodes, ev.Node)
			assert.Contains(t, nodes, ev.Payload, "NodeName from the goroutine")
		}
	}
	close(stop)
	<-done
}
