package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
)

type stepState struct {
	Log   []string
	Count int
}

func stepGraph(t *testing.T) *graph.Graph[stepState] {
	t.Helper()
	b := graph.New[stepState](graph.WithReducer(func(s *stepState) *[]string { return &s.Log }, state.Append[string]()))
	node := func(name string) graph.NodeFunc[stepState] {
		return func(_ context.Context, s stepState) (stepState, error) {
			s.Log = append(s.Log, name)
			return s, nil
		}
	}
	b.AddNode("a", node("a")).AddNode("b", node("b")).AddNode("c", node("c"))
	b.AddNode("join", func(_ context.Context, s stepState) (stepState, error) {
		s.Count = len(s.Log)
		return s, nil
	})
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c").AddJoin([]string{"b", "c"}, "join").AddEdge("join", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)
	return g
}

func TestStepperRunsAsInvokeDoes(t *testing.T) {
	ctx := context.Background()
	g := stepGraph(t)
	want, err := g.Invoke(ctx, stepState{})
	require.NoError(t, err)

	s, err := g.NewStepper(ctx, stepState{})
	require.NoError(t, err)
	for !s.Done() {
		tasks := s.Tasks()
		outs := make([]graph.TaskOutput[stepState], len(tasks))
		for i, task := range tasks {
			outs[i], err = g.RunTask(ctx, task, s.State(), graph.TaskScope{Step: s.Step(), Index: i})
			require.NoError(t, err)
		}
		require.NoError(t, s.Advance(ctx, outs))
	}
	require.Equal(t, want, s.State())
	require.Equal(t, 3, s.Step())
}

func TestRunTaskAnswersInterruptsFromScope(t *testing.T) {
	ctx := context.Background()
	b := graph.New[stepState]()
	b.AddNode("ask", func(ctx context.Context, s stepState) (stepState, error) {
		v, err := graph.Interrupt[string](ctx, "name?")
		if err != nil {
			return s, err
		}
		s.Log = append(s.Log, v)
		return s, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 4}))
	b.AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)

	task := graph.StepTask[stepState]{Node: "ask"}
	_, err = g.RunTask(ctx, task, stepState{}, graph.TaskScope{Step: 0})
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	out, err := g.RunTask(ctx, task, stepState{}, graph.TaskScope{Step: 0, Resume: map[string]any{ie.Interrupts[0].ID: "ada"}})
	require.NoError(t, err)
	require.Equal(t, []string{"ada"}, out.State.Log)

	set, ok := g.NodeSettings("ask")
	require.True(t, ok)
	require.Equal(t, 4, set.Retry.WithDefaults().MaxAttempts)
	require.False(t, set.Retry.Retries(ie))
}

func TestStepperReportsConflictsAndStepLimit(t *testing.T) {
	ctx := context.Background()
	b := graph.New[stepState]()
	b.AddNode("a", func(_ context.Context, s stepState) (stepState, error) { s.Count = 1; return s, nil })
	b.AddNode("b", func(_ context.Context, s stepState) (stepState, error) { s.Count = 2; return s, nil })
	b.AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddEdge("a", graph.END).AddEdge("b", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)
	s, err := g.NewStepper(ctx, stepState{})
	require.NoError(t, err)
	require.Error(t, s.Advance(ctx, nil), "one output per task")
	outs := []graph.TaskOutput[stepState]{{State: stepState{Count: 1}}, {State: stepState{Count: 2}}}
	var ce *state.ConflictError
	require.ErrorAs(t, s.Advance(ctx, outs), &ce)
	require.Equal(t, "Count", ce.Field)

	loop := graph.New[stepState]()
	loop.AddNode("again", func(_ context.Context, s stepState) (stepState, error) { return s, nil })
	loop.AddEdge(graph.START, "again").AddEdge("again", "again")
	lg, err := loop.Compile(graph.WithDefaultStepLimit(2))
	require.NoError(t, err)
	ls, err := lg.NewStepper(ctx, stepState{})
	require.NoError(t, err)
	require.NoError(t, ls.Advance(ctx, []graph.TaskOutput[stepState]{{}}))
	var le *graph.StepLimitError
	require.ErrorAs(t, ls.Advance(ctx, []graph.TaskOutput[stepState]{{}}), &le)
}

func TestStepperFollowsCommandsAndSends(t *testing.T) {
	ctx := context.Background()
	b := graph.New[stepState](graph.WithReducer(func(s *stepState) *[]string { return &s.Log }, state.Append[string]()))
	b.AddCommandNode("pick", func(_ context.Context, s stepState) (stepState, graph.Command[stepState], error) {
		return s, graph.Command[stepState]{Send: []graph.Send[stepState]{{Node: "work", State: stepState{Count: 7}}}}, nil
	}, []string{"work"})
	b.AddNode("work", func(_ context.Context, s stepState) (stepState, error) {
		s.Log = append(s.Log, "work")
		return s, nil
	})
	b.AddEdge(graph.START, "pick").AddEdge("work", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)
	s, err := g.NewStepper(ctx, stepState{})
	require.NoError(t, err)
	out, err := g.RunTask(ctx, s.Tasks()[0], s.State(), graph.TaskScope{})
	require.NoError(t, err)
	require.Len(t, out.Send, 1)
	require.NoError(t, s.Advance(ctx, []graph.TaskOutput[stepState]{out}))
	tasks := s.Tasks()
	require.Len(t, tasks, 1)
	require.Equal(t, "work", tasks[0].Node)
	require.Equal(t, 7, tasks[0].Input.Count)
}

func TestStepperReportsStaticInterrupts(t *testing.T) {
	ctx := context.Background()
	b := graph.New[stepState]()
	b.AddNode("a", func(_ context.Context, s stepState) (stepState, error) { return s, nil })
	b.AddNode("b", func(_ context.Context, s stepState) (stepState, error) { return s, nil })
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END)
	g, err := b.Compile(graph.InterruptBefore("b"), graph.InterruptAfter("a"))
	require.NoError(t, err)
	s, err := g.NewStepper(ctx, stepState{})
	require.NoError(t, err)
	require.Empty(t, s.Before())
	require.Empty(t, s.After())
	require.NoError(t, s.Advance(ctx, []graph.TaskOutput[stepState]{{}}))
	after, before := s.After(), s.Before()
	require.Len(t, after, 1)
	require.Equal(t, graph.PendingInterrupt{ID: after[0].ID, When: graph.After, Node: "a"}, after[0])
	require.Len(t, before, 1)
	require.Equal(t, graph.PendingInterrupt{ID: before[0].ID, When: graph.Before, Node: "b"}, before[0])
	require.NotEqual(t, after[0].ID, before[0].ID)
}

// joinAcrossSteps is a graph whose join waits for sources that finish in
// different supersteps: START → a → b, a → c → d, join(b, d) → j.
func joinAcrossSteps(t *testing.T) *graph.Graph[stepState] {
	t.Helper()
	b := graph.New[stepState](graph.WithReducer(func(s *stepState) *[]string { return &s.Log }, state.Append[string]()))
	for _, name := range []string{"a", "b", "c", "d", "j"} {
		b.AddNode(name, func(_ context.Context, s stepState) (stepState, error) {
			s.Log = append(s.Log, name)
			return s, nil
		})
	}
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c").AddEdge("c", "d")
	b.AddJoin([]string{"b", "d"}, "j").AddEdge("j", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)
	return g
}

func TestStepperRestoredFromSaveGoesOnAsTheSavedOne(t *testing.T) {
	ctx := context.Background()
	g := joinAcrossSteps(t)
	want, err := g.Invoke(ctx, stepState{})
	require.NoError(t, err)

	s, err := g.NewStepper(ctx, stepState{})
	require.NoError(t, err)
	sawJoins := false
	for !s.Done() {
		// Every superstep runs on a Stepper restored from the JSON of the
		// previous one's Save.
		data, err := json.Marshal(s.Save())
		require.NoError(t, err)
		var saved graph.StepperState[stepState]
		require.NoError(t, json.Unmarshal(data, &saved))
		sawJoins = sawJoins || len(saved.Joins) > 0
		s, err = g.RestoreStepper(saved)
		require.NoError(t, err)
		tasks := s.Tasks()
		outs := make([]graph.TaskOutput[stepState], len(tasks))
		for i, task := range tasks {
			outs[i], err = g.RunTask(ctx, task, s.State(), graph.TaskScope{Step: s.Step(), Index: i})
			require.NoError(t, err)
		}
		require.NoError(t, s.Advance(ctx, outs))
	}
	require.Equal(t, want, s.State())
	require.Equal(t, []string{"a", "b", "c", "d", "j"}, s.State().Log)
	require.True(t, sawJoins, "a save taken while the join waited for d records it")
}

func TestRestoreStepperRefusesStateOfAnotherGraph(t *testing.T) {
	g := joinAcrossSteps(t)
	_, err := g.RestoreStepper(graph.StepperState[stepState]{Tasks: []graph.StepTask[stepState]{{Node: "gone"}}})
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
	_, err = g.RestoreStepper(graph.StepperState[stepState]{Joins: [][]bool{{true}, {false}}})
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
}

func TestRunTaskSendsTheTaskEventsToScope(t *testing.T) {
	ctx := context.Background()
	b := graph.New[stepState]()
	b.AddNode("talk", func(ctx context.Context, s stepState) (stepState, error) {
		graph.EmitCustom(ctx, "progress", 1)
		graph.Emit(ctx, graph.ModeMessages, graph.Event{Kind: "token", Payload: "hi"})
		return s, nil
	})
	b.AddEdge(graph.START, "talk").AddEdge("talk", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)

	var mu sync.Mutex
	var kinds []graph.EventKind
	collect := func(ev graph.Event) {
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, "talk", ev.Node)
		require.Equal(t, 4, ev.Step)
		kinds = append(kinds, ev.Kind)
	}
	_, err = g.RunTask(ctx, graph.StepTask[stepState]{Node: "talk"}, stepState{}, graph.TaskScope{Step: 4, Events: collect, Modes: graph.ModeAll})
	require.NoError(t, err)
	require.Equal(t, []graph.EventKind{graph.KindNodeStart, graph.KindCustom, "token", graph.KindNodeEnd}, kinds)

	kinds = nil
	_, err = g.RunTask(ctx, graph.StepTask[stepState]{Node: "talk"}, stepState{}, graph.TaskScope{Step: 4, Events: collect, Modes: graph.ModeMessages})
	require.NoError(t, err)
	require.Equal(t, []graph.EventKind{"token"}, kinds, "only the modes asked for")
}
