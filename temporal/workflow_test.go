package temporal_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/temporal"
)

// flow is the state of the test graphs.
type flow struct {
	Log    []string `json:"log"`
	N      int      `json:"n"`
	Answer string   `json:"answer"`
}

func appendLog() graph.Option {
	return graph.WithReducer(func(s *flow) *[]string { return &s.Log }, state.Append[string]())
}

func logNode(name string) graph.NodeFunc[flow] {
	return func(_ context.Context, s flow) (flow, error) {
		s.Log = append(s.Log, name)
		return s, nil
	}
}

// runWorkflow runs g's workflow on input in a test environment; setup may
// register callbacks on the environment first.
func runWorkflow(t *testing.T, g *graph.Graph[flow], input flow, setup func(*testsuite.TestWorkflowEnvironment)) (flow, error, *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet())
	env := suite.NewTestWorkflowEnvironment()
	r := temporal.New("flow", g)
	r.Register(env)
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(r.Name(), input)
	require.True(t, env.IsWorkflowCompleted())
	var out flow
	err := env.GetWorkflowError()
	if err == nil {
		require.NoError(t, env.GetWorkflowResult(&out))
	}
	return out, err, env
}

// quiet is a logger that drops the SDK's logs.
func quiet() log.Logger { return log.NewStructuredLogger(slog.New(slog.DiscardHandler)) }

// askNode asks the caller for a string (graph.Interrupt) and keeps it.
func askNode(question string) graph.NodeFunc[flow] {
	return func(ctx context.Context, s flow) (flow, error) {
		v, err := graph.Interrupt[string](ctx, question)
		if err != nil {
			return s, err
		}
		s.Answer = v
		return s, nil
	}
}

// queryStatus reads the running workflow's Status.
func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) temporal.Status[flow] {
	t.Helper()
	v, err := env.QueryWorkflow(temporal.QueryState)
	require.NoError(t, err)
	var s temporal.Status[flow]
	require.NoError(t, v.Get(&s))
	return s
}

func compile(t *testing.T, b *graph.Builder[flow]) *graph.Graph[flow] {
	t.Helper()
	g, err := b.Compile()
	require.NoError(t, err)
	return g
}

func TestWorkflowRunsLinearGraph(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END)
	g := compile(t, b)
	out, err, _ := runWorkflow(t, g, flow{}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, out.Log)
}

func TestWorkflowFollowsConditionalEdges(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("count", func(_ context.Context, s flow) (flow, error) {
		s.N++
		return s, nil
	})
	b.AddNode("done", logNode("done"))
	b.AddEdge(graph.START, "count")
	b.AddConditionalEdges("count", func(_ context.Context, s flow) []string {
		if s.N < 3 {
			return []string{"count"}
		}
		return []string{"done"}
	}, "count", "done")
	b.AddEdge("done", graph.END)
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, nil)
	require.NoError(t, err)
	require.Equal(t, 3, out.N)
	require.Equal(t, []string{"done"}, out.Log)
}

func TestWorkflowRunsFanOutAndJoin(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("split", logNode("split")).AddNode("left", logNode("left")).AddNode("right", logNode("right"))
	b.AddNode("join", func(_ context.Context, s flow) (flow, error) {
		s.N = len(s.Log)
		return s, nil
	})
	b.AddEdge(graph.START, "split").AddEdge("split", "left").AddEdge("split", "right")
	b.AddJoin([]string{"left", "right"}, "join").AddEdge("join", graph.END)
	var starts atomic.Int32
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityStartedListener(func(_ *activity.Info, _ context.Context, _ converter.EncodedValues) { starts.Add(1) })
	})
	require.NoError(t, err)
	// Writes merge in node order whatever order the activities finish in.
	require.Equal(t, []string{"split", "left", "right"}, out.Log)
	require.Equal(t, 3, out.N)
	require.EqualValues(t, 4, starts.Load())
}

func TestWorkflowRunsSends(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("plan", logNode("plan"))
	b.AddNode("work", func(_ context.Context, s flow) (flow, error) {
		s.Log = append(s.Log, "work "+s.Answer)
		return s, nil
	})
	b.AddEdge(graph.START, "plan")
	b.AddFanOut("plan", func(_ context.Context, s flow) []graph.Send[flow] {
		return []graph.Send[flow]{{Node: "work", State: flow{Answer: "x"}}, {Node: "work", State: flow{Answer: "y"}}}
	}, "work")
	b.AddEdge("work", graph.END)
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"plan", "work x", "work y"}, out.Log)
}

func TestWorkflowResumesInterruptWithSignal(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("ask", askNode("your name?"))
	var otherRuns atomic.Int32
	b.AddNode("other", func(_ context.Context, s flow) (flow, error) {
		otherRuns.Add(1)
		s.Log = append(s.Log, "other")
		return s, nil
	})
	b.AddEdge(graph.START, "ask").AddEdge(graph.START, "other").AddEdge("ask", graph.END).AddEdge("other", graph.END)
	var status temporal.Status[flow]
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			status = queryStatus(t, env)
			env.SignalWorkflow(temporal.SignalResume, temporal.Resume{Value: "ada"})
		}, time.Minute)
	})
	require.NoError(t, err)
	require.Equal(t, "ada", out.Answer)
	require.Equal(t, []string{"other"}, out.Log)
	require.EqualValues(t, 1, otherRuns.Load(), "a task that finished is not run again on resume")
	require.Len(t, status.Interrupts, 1)
	require.Equal(t, "ask", status.Interrupts[0].Node)
	require.Equal(t, graph.During, status.Interrupts[0].When)
	require.Equal(t, []string{"ask", "other"}, status.Running)
	require.False(t, status.Done)
}

func TestWorkflowRetriesNodeAsActivity(t *testing.T) {
	var calls atomic.Int32
	b := graph.New[flow](appendLog())
	b.AddNode("flaky", func(_ context.Context, s flow) (flow, error) {
		if calls.Add(1) < 3 {
			return s, errors.New("try again")
		}
		s.Log = append(s.Log, "flaky")
		return s, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second}))
	b.AddEdge(graph.START, "flaky").AddEdge("flaky", graph.END)
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"flaky"}, out.Log)
	require.EqualValues(t, 3, calls.Load())
}

func TestWorkflowStopsRetryingWhenRetryOnRefuses(t *testing.T) {
	var calls atomic.Int32
	fatal := errors.New("fatal")
	b := graph.New[flow](appendLog())
	b.AddNode("fails", func(_ context.Context, s flow) (flow, error) {
		calls.Add(1)
		return s, fatal
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, RetryOn: func(err error) bool { return !errors.Is(err, fatal) }}))
	b.AddEdge(graph.START, "fails").AddEdge("fails", graph.END)
	_, err, _ := runWorkflow(t, compile(t, b), flow{}, nil)
	require.Error(t, err)
	var ae *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, temporal.ErrorTypeNode, ae.Type())
	require.Contains(t, err.Error(), `"fails"`)
	require.EqualValues(t, 1, calls.Load())
}

// A node without a retry policy fails the run at its first error, though
// its task has attempts left for a worker that dies.
func TestWorkflowDoesNotRetryErrorsOfANodeWithoutPolicy(t *testing.T) {
	var calls atomic.Int32
	b := graph.New[flow](appendLog())
	b.AddNode("fails", func(_ context.Context, s flow) (flow, error) {
		calls.Add(1)
		return s, errors.New("broken")
	})
	b.AddEdge(graph.START, "fails").AddEdge("fails", graph.END)
	_, err, _ := runWorkflow(t, compile(t, b), flow{}, nil)
	require.Error(t, err)
	var ae *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, temporal.ErrorTypeNode, ae.Type())
	require.EqualValues(t, 1, calls.Load())
	require.Greater(t, temporal.RetryPolicy(nil).MaximumAttempts, int32(1), "a lost worker's task is tried again")
}

func TestWorkflowCancellationEndsRun(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("ask", func(ctx context.Context, s flow) (flow, error) {
		_, err := graph.Interrupt[string](ctx, "never answered")
		return s, err
	})
	b.AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	_, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	})
	require.Error(t, err)
	require.True(t, sdktemporal.IsCanceledError(err), "%v", err)
}

func TestHeartbeatReachesTaskActivity(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("long", func(ctx context.Context, s flow) (flow, error) {
		for i := range 3 {
			temporal.Heartbeat(ctx, i)
		}
		return s, nil
	})
	b.AddEdge(graph.START, "long").AddEdge("long", graph.END)
	var beats atomic.Int32
	_, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityHeartbeatListener(func(_ *activity.Info, _ converter.EncodedValues) { beats.Add(1) })
	})
	require.NoError(t, err)
	// The SDK throttles heartbeats: the first is recorded at once.
	require.Positive(t, beats.Load())
	temporal.Heartbeat(context.Background(), "outside an activity: nothing happens")
}

func TestWorkflowPausesAtStaticInterrupts(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END)
	g, err := b.Compile(graph.InterruptBefore("b"), graph.InterruptAfter("b"))
	require.NoError(t, err)
	var seen []temporal.Status[flow]
	query := func(env *testsuite.TestWorkflowEnvironment) {
		s := queryStatus(t, env)
		seen = append(seen, s)
		require.Len(t, s.Interrupts, 1)
		env.SignalWorkflow(temporal.SignalResume, temporal.Resume{ID: s.Interrupts[0].ID})
	}
	out, err, _ := runWorkflow(t, g, flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { query(env) }, time.Minute)
		env.RegisterDelayedCallback(func() { query(env) }, 2*time.Minute)
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, out.Log)
	require.Len(t, seen, 2)
	require.Equal(t, graph.Before, seen[0].Interrupts[0].When)
	require.Equal(t, []string{"a"}, seen[0].State.Log)
	require.Equal(t, graph.After, seen[1].Interrupts[0].When)
	require.Equal(t, []string{"a", "b"}, seen[1].State.Log)
}

func TestWorkflowCancellationCancelsRunningTask(t *testing.T) {
	started, stop, stopped := make(chan struct{}), make(chan struct{}), make(chan struct{})
	b := graph.New[flow](appendLog())
	b.AddNode("long", func(ctx context.Context, s flow) (flow, error) {
		defer close(stopped)
		close(started)
		for {
			temporal.Heartbeat(ctx)
			select {
			case <-ctx.Done():
				return s, ctx.Err()
			case <-stop:
				return s, errors.New("stopped by the test")
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	b.AddEdge(graph.START, "long").AddEdge("long", graph.END)
	var cancelled atomic.Bool
	_, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityCanceledListener(func(*activity.Info) { cancelled.Store(true) })
		env.RegisterDelayedCallback(func() {
			<-started
			env.CancelWorkflow()
		}, time.Second)
	})
	// The testsuite resolves a cancelled activity without cancelling its
	// context (a server does, through the task's heartbeat): stop it here.
	close(stop)
	<-stopped
	require.Error(t, err)
	require.True(t, sdktemporal.IsCanceledError(err), "%v", err)
	require.True(t, cancelled.Load(), "the running task was asked to stop")
}

func TestWorkflowRunsSubgraphWithinTask(t *testing.T) {
	inner := graph.New[flow](appendLog())
	inner.AddNode("x", logNode("x")).AddNode("y", logNode("y"))
	inner.AddEdge(graph.START, "x").AddEdge("x", "y").AddEdge("y", graph.END)
	sub := compile(t, inner)
	b := graph.New[flow](appendLog())
	b.AddSubgraph("sub", sub.AsSubgraph()).AddNode("after", logNode("after"))
	b.AddEdge(graph.START, "sub").AddEdge("sub", "after").AddEdge("after", graph.END)
	var activities atomic.Int32
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityStartedListener(func(_ *activity.Info, _ context.Context, _ converter.EncodedValues) { activities.Add(1) })
	})
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y", "after"}, out.Log)
	require.EqualValues(t, 2, activities.Load(), "one task per node of the parent graph")
}

func TestWorkflowResumesInterruptInsideSubgraph(t *testing.T) {
	inner := graph.New[flow](appendLog())
	inner.AddNode("ask", askNode("inner question"))
	inner.AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	b := graph.New[flow](appendLog())
	b.AddSubgraph("sub", compile(t, inner).AsSubgraph())
	b.AddEdge(graph.START, "sub").AddEdge("sub", graph.END)
	var status temporal.Status[flow]
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			status = queryStatus(t, env)
			env.SignalWorkflow(temporal.SignalResume, temporal.Resume{Value: "deep"})
		}, time.Minute)
	})
	require.NoError(t, err)
	require.Equal(t, "deep", out.Answer)
	require.Len(t, status.Interrupts, 1)
	require.Equal(t, "ask", status.Interrupts[0].Node)
	require.Equal(t, []string{"sub"}, status.Interrupts[0].Path)
}

func TestWorkflowTakesAnswerAsUpdateAndRejectsUnknownInterrupt(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("ask", askNode("your name?"))
	b.AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	var rejected, completed error
	accepted := false
	out, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(temporal.UpdateResume, "u1", &testsuite.TestUpdateCallback{
				OnAccept:   func() { t.Error("an answer to no pending interrupt was accepted") },
				OnReject:   func(err error) { rejected = err },
				OnComplete: func(any, error) {},
			}, temporal.Resume{ID: "nope", Value: "x"})
			env.UpdateWorkflow(temporal.UpdateResume, "u2", &testsuite.TestUpdateCallback{
				OnAccept:   func() { accepted = true },
				OnReject:   func(err error) { t.Errorf("rejected: %v", err) },
				OnComplete: func(_ any, err error) { completed = err },
			}, temporal.Resume{Value: "grace"})
		}, time.Minute)
	})
	require.NoError(t, err)
	require.Equal(t, "grace", out.Answer)
	require.ErrorContains(t, rejected, "no such pending interrupt")
	require.True(t, accepted)
	require.NoError(t, completed)
}

func TestWorkflowFailingTaskCancelsItsSiblings(t *testing.T) {
	started, stop, stopped := make(chan struct{}), make(chan struct{}), make(chan struct{})
	b := graph.New[flow](appendLog())
	b.AddNode("slow", func(ctx context.Context, s flow) (flow, error) {
		defer close(stopped)
		close(started)
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-stop:
			return s, errors.New("stopped by the test")
		}
	})
	b.AddNode("bad", func(_ context.Context, s flow) (flow, error) {
		// Fail once the sibling runs: a sibling cancelled before it starts
		// never runs, and the test would wait for it.
		<-started
		return s, errors.New("broken")
	})
	b.AddEdge(graph.START, "slow").AddEdge(graph.START, "bad").AddEdge("slow", graph.END).AddEdge("bad", graph.END)
	var cancelled atomic.Int32
	_, err, _ := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityCanceledListener(func(*activity.Info) { cancelled.Add(1) })
	})
	close(stop) // the testsuite does not cancel an activity's context
	<-stopped
	require.Error(t, err)
	require.False(t, sdktemporal.IsCanceledError(err), "%v", err)
	require.Contains(t, err.Error(), `node "bad": broken`)
	require.EqualValues(t, 1, cancelled.Load(), "the slow sibling was asked to stop")
}
