package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
)

// endlessLoop is a graph whose node "tick" runs forever.
func endlessLoop(t *testing.T, opts ...graph.CompileOption) *graph.Graph[sampleState] {
	return mustCompile(t, graph.New[sampleState]().
		AddNode("tick", sampleIncr).
		AddEdge(graph.START, "tick").
		AddEdge("tick", "tick"), opts...)
}

// A run that still has work after its superstep limit fails with a
// *StepLimitError that names the limit and the last superstep's nodes, and
// returns the state after that superstep.
func TestStepLimitError(t *testing.T) {
	t.Run("graph default", func(t *testing.T) {
		g := endlessLoop(t, graph.WithDefaultStepLimit(3))
		out, err := g.Invoke(context.Background(), sampleState{})
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
		g := endlessLoop(t, graph.WithDefaultStepLimit(3))
		out, err := g.Invoke(context.Background(), sampleState{}, graph.WithStepLimit(5))
		assert.EqualError(t, err, `graph: superstep limit of 5 reached; last superstep ran "tick"`)
		var sle *graph.StepLimitError
		require.ErrorAs(t, err, &sle)
		assert.Equal(t, 5, sle.Limit)
		assert.Equal(t, 5, out.Count)
	})
	t.Run("package default", func(t *testing.T) {
		out, err := endlessLoop(t).Invoke(context.Background(), sampleState{})
		assert.EqualError(t, err, fmt.Sprintf(`graph: superstep limit of %d reached; last superstep ran "tick"`, graph.DefaultMaxSteps))
		assert.Equal(t, graph.DefaultMaxSteps, out.Count)
	})
	t.Run("several nodes in the last superstep", func(t *testing.T) {
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("a", func(_ context.Context, s sampleState) (sampleState, error) { s.A++; return s, nil }).
			AddNode("b", func(_ context.Context, s sampleState) (sampleState, error) { s.B++; return s, nil }).
			AddEdge(graph.START, "a").AddEdge(graph.START, "b").
			AddEdge("a", "a").AddEdge("b", "b"),
			graph.WithDefaultStepLimit(2))
		out, err := g.Invoke(context.Background(), sampleState{})
		assert.EqualError(t, err, `graph: superstep limit of 2 reached; last superstep ran "a", "b"`)
		var sle *graph.StepLimitError
		require.ErrorAs(t, err, &sle)
		assert.Equal(t, []string{"a", "b"}, sle.Nodes)
		assert.Equal(t, sampleState{A: 2, B: 2}, out)
	})
	t.Run("names the superstep that ran, not the one due next", func(t *testing.T) {
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("ping", sampleIncr).AddNode("pong", sampleIncr).
			AddEdge(graph.START, "ping").AddEdge("ping", "pong").AddEdge("pong", "ping"),
			graph.WithDefaultStepLimit(3))
		out, err := g.Invoke(context.Background(), sampleState{})
		assert.EqualError(t, err, `graph: superstep limit of 3 reached; last superstep ran "ping"`)
		assert.Equal(t, 3, out.Count)
	})
	t.Run("a run that ends at the limit succeeds", func(t *testing.T) {
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("a", sampleIncr).AddNode("b", sampleIncr).
			AddEdge(graph.START, "a").AddEdge("a", "b"),
			graph.WithDefaultStepLimit(2))
		out, err := g.Invoke(context.Background(), sampleState{})
		require.NoError(t, err)
		assert.Equal(t, 2, out.Count)
	})
}

var errRouteBoom = errors.New("route exploded")

// A route that panics fails the run with a *RouteError whose Unwrap returns
// the error describing the panic; a route that picks an undeclared
// destination fails with one that wraps nothing.
func TestRouteErrorUnwrap(t *testing.T) {
	panicking := func(context.Context, sampleState) []string { panic(errRouteBoom) }

	t.Run("route after a node panics", func(t *testing.T) {
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("a", sampleNoop).AddNode("b", sampleIncr).
			AddEdge(graph.START, "a").
			AddConditionalEdges("a", panicking, "b", graph.END))
		out, err := g.Invoke(context.Background(), sampleState{})
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
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("b", sampleIncr).
			AddConditionalEdges(graph.START, panicking, "b"))
		_, err := g.Invoke(context.Background(), sampleState{})
		var re *graph.RouteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, graph.START, re.From)
		require.Error(t, errors.Unwrap(re))
		assert.Regexp(t, `^panic: route exploded\n`, errors.Unwrap(re).Error())
	})
	t.Run("undeclared destination wraps nothing", func(t *testing.T) {
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("a", sampleNoop).AddNode("b", sampleIncr).AddNode("c", sampleIncr).
			AddEdge(graph.START, "a").AddEdge(graph.START, "c").
			AddConditionalEdges("a", func(context.Context, sampleState) []string { return []string{"c"} }, "b", graph.END))
		_, err := g.Invoke(context.Background(), sampleState{})
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

	g := mustCompile(t, graph.New[sampleState]().
		AddNode("ask", func(ctx context.Context, s sampleState) (sampleState, error) {
			v, err := graph.Interrupt[string](ctx, "ok?")
			if err != nil {
				return s, err
			}
			s.Answer = v
			return s, nil
		}).
		AddEdge(graph.START, "ask"))
	_, err := g.Invoke(context.Background(), sampleState{})
	require.ErrorIs(t, err, graph.ErrInterrupted)
	wrapped := fmt.Errorf("tool call: %w", err)
	var p permanent
	require.ErrorAs(t, wrapped, &p)
	assert.True(t, p.Permanent())
	var ie *graph.InterruptError
	require.ErrorAs(t, wrapped, &ie)
	assert.True(t, ie.Permanent())

	failing := mustCompile(t, graph.New[sampleState]().
		AddNode("fail", func(_ context.Context, s sampleState) (sampleState, error) { return s, errors.New("nope") }).
		AddEdge(graph.START, "fail"))
	_, err = failing.Invoke(context.Background(), sampleState{})
	require.Error(t, err)
	assert.False(t, errors.As(err, &p), "a node failure is not permanent")
}
