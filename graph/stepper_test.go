package graph_test

import (
	"context"
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
