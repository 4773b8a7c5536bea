package temporalruns_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/temporalruns"
	"github.com/trellis-go/trellis/temporal/temporaltest"
)

type flow struct {
	Log    []string `json:"log"`
	Answer string   `json:"answer"`
}

func logNode(name string) graph.NodeFunc[flow] {
	return func(_ context.Context, s flow) (flow, error) {
		s.Log = append(s.Log, name)
		return s, nil
	}
}

// setup registers a graph's Runner with a test environment and returns a
// runs.Client over it. Tasks publish their events to the environment.
func setup(t *testing.T, build func(b *graph.Builder[flow]), opts ...temporal.Option) (runs.Client, *temporaltest.Client) {
	t.Helper()
	return setupCompiled(t, build, nil, opts...)
}

// setupCompiled is setup with the graph compiled with copts.
func setupCompiled(t *testing.T, build func(b *graph.Builder[flow]), copts []graph.CompileOption, opts ...temporal.Option) (runs.Client, *temporaltest.Client) {
	t.Helper()
	b := graph.New[flow](graph.WithReducer(func(s *flow) *[]string { return &s.Log }, state.Append[string]()))
	build(b)
	g, err := b.Compile(copts...)
	require.NoError(t, err)
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	opts = append([]temporal.Option{temporal.WithSink(temporal.SignalSink(temporaltest.Signaler{Env: env})), temporal.WithEventInterval(time.Millisecond)}, opts...)
	temporal.New("flow", g, opts...).Register(env)
	c := temporaltest.NewClient(env)
	t.Cleanup(func() {
		if l := c.Live(); l != nil {
			select {
			case <-l.Done():
			case <-time.After(10 * time.Second):
				t.Error("the workflow did not end")
			}
		}
	})
	return temporalruns.New(c, "flows", temporalruns.WithPollInterval(time.Millisecond)), c
}

func ctxWithDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// collect reads a stream to its end.
func collect(t *testing.T, seq func(func(runs.Event, error) bool)) []runs.Event {
	t.Helper()
	var out []runs.Event
	for ev, err := range seq {
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

func kinds(evs []runs.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Kind) + " " + ev.Node
	}
	return out
}

func TestManagerStartsStreamsAndWaitsForARun(t *testing.T) {
	ctx := ctxWithDeadline(t)
	var m runs.Client
	m, _ = setup(t, func(b *graph.Builder[flow]) {
		b.AddNode("a", logNode("a")).AddNode("b", logNode("b"))
		b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END)
	})
	run, err := m.Start(ctx, runs.Request{Graph: "flow", Thread: "t1", Input: json.RawMessage(`{"log":["in"]}`), Metadata: map[string]any{"user": "ada"}})
	require.NoError(t, err)
	require.Equal(t, "t1", run.ID)
	require.Equal(t, "t1", run.Thread)

	evs := collect(t, m.Stream(ctx, run.ID, 0))
	require.Equal(t, []string{"update a", "values ", "update b", "values ", "run_end "}, kinds(evs))
	end := evs[len(evs)-1]
	require.Equal(t, runs.StatusSuccess, end.Status)
	require.JSONEq(t, `{"log":["in","a","b"],"answer":""}`, string(end.State))
	require.Equal(t, run.ID, end.Run)

	done, err := m.Wait(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, done.Status)
	require.Equal(t, "flow", done.Graph)
	require.Equal(t, map[string]any{"user": "ada"}, done.Metadata)
	out, err := m.Output(ctx, run.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"log":["in","a","b"],"answer":""}`, string(out))

	// A stream resumed after a cursor yields what follows it.
	rest := collect(t, m.Stream(ctx, run.ID, evs[2].Seq))
	require.Equal(t, []string{"values ", "run_end "}, kinds(rest))

	st, err := m.ThreadState(ctx, "flow", run.Thread, "")
	require.NoError(t, err)
	require.JSONEq(t, `{"log":["in","a","b"],"answer":""}`, string(st.Values))
	require.Empty(t, st.Next)
}

func TestManagerResumesAnInterruptedRun(t *testing.T) {
	ctx := ctxWithDeadline(t)
	m, _ := setup(t, func(b *graph.Builder[flow]) {
		b.AddNode("ask", func(ctx context.Context, s flow) (flow, error) {
			v, err := graph.Interrupt[string](ctx, "your name?")
			if err != nil {
				return s, err
			}
			s.Answer = v
			return s, nil
		})
		b.AddNode("after", logNode("after"))
		b.AddEdge(graph.START, "ask").AddEdge("ask", "after").AddEdge("after", graph.END)
	})
	run, err := m.Start(ctx, runs.Request{Graph: "flow"})
	require.NoError(t, err)
	require.NotEmpty(t, run.Thread, "a new thread is made")

	paused, err := m.Wait(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusInterrupted, paused.Status, paused.Error)
	require.Len(t, paused.Interrupts, 1)
	evs := collect(t, m.Stream(ctx, run.ID, 0))
	require.Equal(t, []string{"interrupt ", "run_end "}, kinds(evs))
	require.Equal(t, runs.StatusInterrupted, evs[1].Status)
	st, err := m.ThreadState(ctx, "flow", run.Thread, "")
	require.NoError(t, err)
	require.Equal(t, []string{"ask"}, st.Next)
	require.Len(t, st.Interrupts, 1)

	_, err = m.Start(ctx, runs.Request{Graph: "flow", Thread: run.Thread, Resume: &runs.Resume{ByID: map[string]json.RawMessage{"nope": json.RawMessage(`"x"`)}}})
	require.ErrorIs(t, err, runs.ErrInvalid)
	require.ErrorIs(t, err, temporal.ErrNotPending)

	resumed, err := m.Start(ctx, runs.Request{Graph: "flow", Thread: run.Thread, Resume: &runs.Resume{HasValue: true, Value: json.RawMessage(`"ada"`)}})
	require.NoError(t, err)
	require.Equal(t, run.ID, resumed.ID, "the same run goes on")
	done, err := m.Wait(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, done.Status)
	out, err := m.Output(ctx, run.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"log":["after"],"answer":"ada"}`, string(out))
	// The stream goes on after the interrupt.
	rest := collect(t, m.Stream(ctx, run.ID, evs[0].Seq))
	require.Equal(t, []string{"update ask", "values ", "update after", "values ", "run_end "}, kinds(rest))
}

func TestManagerCancelsARun(t *testing.T) {
	ctx := ctxWithDeadline(t)
	m, _ := setup(t, func(b *graph.Builder[flow]) {
		b.AddNode("ask", func(ctx context.Context, s flow) (flow, error) {
			_, err := graph.Interrupt[string](ctx, "never answered")
			return s, err
		})
		b.AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	})
	run, err := m.Start(ctx, runs.Request{Graph: "flow", Thread: "t"})
	require.NoError(t, err)
	_, err = m.Wait(ctx, run.ID)
	require.NoError(t, err)
	require.NoError(t, m.Cancel(ctx, run.ID, runs.CancelInterrupt))
	done, err := m.Wait(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusCancelled, done.Status)
	_, err = m.Output(ctx, run.ID)
	require.ErrorIs(t, err, runs.ErrNoOutput)
	require.NoError(t, m.Cancel(ctx, run.ID, ""), "cancelling a run that ended does nothing")
	evs := collect(t, m.Stream(ctx, run.ID, 0))
	require.Equal(t, runs.StatusCancelled, evs[len(evs)-1].Status)
}

func TestManagerStreamKeepsTheModesAskedFor(t *testing.T) {
	ctx := ctxWithDeadline(t)
	m, _ := setup(t, func(b *graph.Builder[flow]) {
		b.AddNode("a", func(ctx context.Context, s flow) (flow, error) {
			graph.EmitCustom(ctx, "note", "hi")
			s.Log = append(s.Log, "a")
			return s, nil
		})
		b.AddEdge(graph.START, "a").AddEdge("a", graph.END)
	}, temporal.WithStreamModes(graph.ModeAll))
	run, err := m.Start(ctx, runs.Request{Graph: "flow", Modes: graph.ModeCustom | graph.ModeValues})
	require.NoError(t, err)
	evs := collect(t, m.Stream(ctx, run.ID, 0))
	require.Equal(t, []string{"custom a", "values ", "run_end "}, kinds(evs))
	require.JSONEq(t, `"hi"`, string(evs[0].Payload))
}

func TestManagerRefusesWhatTemporalCannotDo(t *testing.T) {
	ctx := ctxWithDeadline(t)
	m, _ := setup(t, func(b *graph.Builder[flow]) {
		b.AddNode("a", logNode("a"))
		b.AddEdge(graph.START, "a").AddEdge("a", graph.END)
	})
	unsupported := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, errors.ErrUnsupported)
		var ue *temporalruns.UnsupportedError
		require.ErrorAs(t, err, &ue)
	}
	_, err := m.Start(ctx, runs.Request{Graph: "flow", Strategy: runs.StrategyEnqueue})
	unsupported(err)
	_, err = m.Start(ctx, runs.Request{Graph: "flow", IfNotExists: runs.IfNotExistsReject})
	unsupported(err)
	_, err = m.Start(ctx, runs.Request{Graph: "flow", StepLimit: 3})
	unsupported(err)
	_, err = m.Get(ctx, "t")
	require.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.Start(ctx, runs.Request{Graph: "flow", Input: json.RawMessage(`[1]`)})
	require.ErrorIs(t, err, runs.ErrInvalid)

	run, err := m.Start(ctx, runs.Request{Graph: "flow", Thread: "t"})
	require.NoError(t, err)
	_, err = m.Wait(ctx, run.ID)
	require.NoError(t, err)
	unsupported(m.Cancel(ctx, run.ID, runs.CancelRollback))
	_, err = m.ThreadState(ctx, "flow", "t", "some-checkpoint")
	require.ErrorIs(t, err, runs.ErrNotFound, "a thread's state at a checkpoint is supported: this one does not exist")
	_, err = m.Start(ctx, runs.Request{Graph: "flow", Thread: "t"})
	unsupported(err) // a second run on the thread
}

func TestManagerRefusesARunOnABusyThread(t *testing.T) {
	ctx := ctxWithDeadline(t)
	m, _ := setup(t, func(b *graph.Builder[flow]) {
		b.AddNode("ask", func(ctx context.Context, s flow) (flow, error) {
			_, err := graph.Interrupt[string](ctx, "wait")
			return s, err
		})
		b.AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	})
	run, err := m.Start(ctx, runs.Request{Graph: "flow", Thread: "t"})
	require.NoError(t, err)
	_, err = m.Wait(ctx, run.ID)
	require.NoError(t, err)
	_, err = m.Start(ctx, runs.Request{Graph: "flow", Thread: "t"})
	require.ErrorIs(t, err, runs.ErrThreadBusy)
	require.NoError(t, m.Cancel(ctx, run.ID, ""))
	_, err = m.Wait(ctx, run.ID)
	require.NoError(t, err)
}

func TestManagerContinuesPastAStaticInterrupt(t *testing.T) {
	ctx := ctxWithDeadline(t)
	m, _ := setupCompiled(t, func(b *graph.Builder[flow]) {
		b.AddNode("a", logNode("a")).AddNode("b", logNode("b"))
		b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END)
	}, []graph.CompileOption{graph.InterruptBefore("b")})
	run, err := m.Start(ctx, runs.Request{Graph: "flow"})
	require.NoError(t, err)
	paused, err := m.Wait(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusInterrupted, paused.Status)
	require.Equal(t, graph.Before, paused.Interrupts[0].When)
	_, err = m.Start(ctx, runs.Request{Graph: "flow", Thread: run.Thread, Resume: &runs.Resume{Continue: true}})
	require.NoError(t, err)
	done, err := m.Wait(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, done.Status)
	out, err := m.Output(ctx, run.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"log":["a","b"],"answer":""}`, string(out))
}
