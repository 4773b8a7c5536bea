package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/temporaltest"
)

// follower reads a run's stream with a cursor, as a caller does.
type follower struct {
	after  int64
	events []temporal.Event
}

func (f *follower) poll(t *testing.T, l *temporaltest.Live) {
	t.Helper()
	p := events(t, l, f.after)
	for _, ev := range p.Events {
		require.Equal(t, f.after+1, ev.Seq, "events come once each, in order")
		f.after = ev.Seq
		f.events = append(f.events, ev)
	}
}

func (f *follower) has(kind graph.EventKind, payload string) bool {
	for _, ev := range f.events {
		if ev.Kind == kind && (payload == "" || string(ev.Payload) == payload) {
			return true
		}
	}
	return false
}

// describe lists the events as kind, node and payload.
func describe(evs []temporal.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Kind) + " " + ev.Node + " " + string(ev.Payload)
	}
	return out
}

func TestStreamShowsTokensAndUpdatesInOrderWhileTheRunGoesOn(t *testing.T) {
	release := make(chan struct{})
	b := graph.New[flow](appendLog())
	b.AddNode("talk", func(ctx context.Context, s flow) (flow, error) {
		for _, tok := range []string{"hel", "lo"} {
			graph.Emit(ctx, graph.ModeMessages, graph.Event{Kind: "token", Payload: tok})
		}
		graph.EmitCustom(ctx, "said", 2)
		select {
		case <-release:
		case <-ctx.Done():
			return s, ctx.Err()
		}
		s.Log = append(s.Log, "talk")
		return s, nil
	})
	b.AddNode("before", logNode("before")).AddNode("after", logNode("after"))
	b.AddEdge(graph.START, "before").AddEdge("before", "talk").AddEdge("talk", "after").AddEdge("after", graph.END)
	env := newEnv()
	r := temporal.New("flow", compile(t, b),
		temporal.WithStreamModes(temporal.DefaultStreamModes|graph.ModeMessages|graph.ModeCustom),
		temporal.WithSink(temporal.SignalSink(temporaltest.Signaler{Env: env})),
		temporal.WithEventInterval(time.Millisecond))
	r.Register(env)
	live := startLive(t, env, r.Name(), flow{})

	var f follower
	waitFor(t, "the tokens and the custom event", func() bool {
		f.poll(t, live)
		return f.has("token", `"lo"`) && f.has(graph.KindCustom, "")
	})
	require.Equal(t, []string{"update before ", "values  ", `token talk "hel"`, `token talk "lo"`, "custom talk 2"},
		describe(f.events), "the caller sees the first superstep and the tokens of the second while it runs")
	// The node has not returned: the caller saw its tokens while it ran.
	v, err := live.Query(temporal.QueryState)
	require.NoError(t, err)
	var status temporal.Status[flow]
	require.NoError(t, v.Get(&status))
	require.False(t, status.Done)
	require.Equal(t, []string{"talk"}, status.Running)

	close(release)
	waitFor(t, "the run's end", func() bool {
		f.poll(t, live)
		return f.has(temporal.KindRunEnd, "")
	})
	require.Equal(t, []string{
		"update before ", "values  ",
		`token talk "hel"`, `token talk "lo"`, "custom talk 2", "update talk ", "values  ",
		"update after ", "values  ", "run_end  ",
	}, describe(f.events))
	end := f.events[len(f.events)-1]
	require.Equal(t, temporal.StatusSuccess, end.Status)
	var out flow
	require.NoError(t, json.Unmarshal(end.State, &out))
	require.Equal(t, []string{"before", "talk", "after"}, out.Log)
	require.Equal(t, "said", f.events[4].Name)
	require.Equal(t, 1, f.events[2].Step, "a task's events carry its superstep")
	require.Equal(t, 2, f.events[7].Step)
}

func TestStreamRecordsInterruptsAndFailures(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("ask", askNode("go on?"))
	b.AddNode("fail", func(_ context.Context, s flow) (flow, error) { return s, context.DeadlineExceeded })
	b.AddEdge(graph.START, "ask").AddEdge("ask", "fail").AddEdge("fail", graph.END)
	g := compile(t, b)
	var page temporal.EventPage
	_, err, env := runWorkflow(t, g, flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(temporal.SignalResume, temporal.Resume{Value: "yes"})
		}, time.Minute)
	})
	require.Error(t, err)
	v, qerr := env.QueryWorkflow(temporal.QueryEvents, int64(0))
	require.NoError(t, qerr)
	require.NoError(t, v.Get(&page))
	require.True(t, page.Done)
	kinds := describe(page.Events)
	require.Equal(t, []string{"interrupt  ", "update ask ", "values  ", "run_end  "}, kinds)
	require.Len(t, page.Events[0].Interrupts, 1)
	end := page.Events[3]
	require.Equal(t, temporal.StatusError, end.Status)
	require.Contains(t, end.Error, `node "fail"`)

	// A cursor reads what comes after it.
	v, qerr = env.QueryWorkflow(temporal.QueryEvents, int64(2))
	require.NoError(t, qerr)
	page = temporal.EventPage{}
	require.NoError(t, v.Get(&page))
	require.Equal(t, []string{"values  ", "run_end  "}, describe(page.Events))
	require.EqualValues(t, 1, page.First)
}

// recordingSink keeps what tasks publish and fails the first batch.
type recordingSink struct {
	mu     sync.Mutex
	runs   []temporal.Execution
	events []temporal.Event
	calls  int
	first  chan struct{} // closed at the first call
}

func (s *recordingSink) Publish(_ context.Context, run temporal.Execution, evs []temporal.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls == 1 {
		close(s.first)
		return errors.New("broker down")
	}
	s.runs = append(s.runs, run)
	s.events = append(s.events, evs...)
	return nil
}

func TestTaskEventsGoThroughTheSinkAndItsErrorsFailNothing(t *testing.T) {
	b := graph.New[flow](appendLog())
	sink := &recordingSink{first: make(chan struct{})}
	b.AddNode("a", func(ctx context.Context, s flow) (flow, error) {
		graph.EmitCustom(ctx, "first", 1) // its batch leaves at once, and is refused
		<-sink.first
		graph.EmitCustom(ctx, "second", 2)
		s.Log = append(s.Log, "a")
		return s, nil
	})
	b.AddEdge(graph.START, "a").AddEdge("a", graph.END)
	env := newEnv()
	r := temporal.New("flow", compile(t, b), temporal.WithSink(sink),
		temporal.WithStreamModes(graph.ModeCustom), temporal.WithEventInterval(time.Hour))
	r.Register(env)
	env.ExecuteWorkflow(r.Name(), flow{})
	require.NoError(t, env.GetWorkflowError())
	sink.mu.Lock()
	defer sink.mu.Unlock()
	// The first event left at once and was refused; the second waited for
	// the interval, which the task's end cut short.
	require.Equal(t, 2, sink.calls)
	require.Len(t, sink.events, 1)
	require.Equal(t, "second", sink.events[0].Name)
	require.NotEmpty(t, sink.runs[0].WorkflowID)
}

func TestStreamCarriesModelTokensBeforeTheNodesUpdate(t *testing.T) {
	m := scripted.New(scripted.Reply("hello there world"))
	g, err := agent.NewReAct(m)
	require.NoError(t, err)
	env := newEnv()
	r := temporal.New("agent", g, temporal.WithStreamModes(temporal.DefaultStreamModes|graph.ModeMessages),
		temporal.WithSink(temporal.SignalSink(temporaltest.Signaler{Env: env})), temporal.WithEventInterval(time.Millisecond))
	r.Register(env)
	env.ExecuteWorkflow(r.Name(), agent.Ask("hi"))
	require.NoError(t, env.GetWorkflowError())
	v, err := env.QueryWorkflow(temporal.QueryEvents, int64(0))
	require.NoError(t, err)
	var page temporal.EventPage
	require.NoError(t, v.Get(&page))
	var text string
	update := -1
	for i, ev := range page.Events {
		switch ev.Kind {
		case nodes.KindModelDelta:
			require.Equal(t, -1, update, "tokens come before the node's update")
			var chunk model.Chunk
			require.NoError(t, json.Unmarshal(ev.Payload, &chunk))
			text += chunk.Text
		case graph.KindUpdate:
			update = i
		}
	}
	require.Equal(t, "hello there world", text)
	require.NotEqual(t, -1, update)
}
