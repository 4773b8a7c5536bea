package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
)

// An input given as a partial state reaches the thread's state through the
// fields' reducers, as a write of START: appended fields grow, summed
// fields add up, and fields without a reducer are replaced; fields not
// named stay as they were.
func TestApplyWritesNamedFieldsThroughTheirReducers(t *testing.T) {
	g := mustCompile(t, graph.New[doc](
		logReducer(),
		graph.WithReducer(func(s *doc) *int { return &s.Sum }, state.Sum[int]()),
		graph.WithReducer(func(s *doc) *map[string]int { return &s.Tags }, state.MergeMap[string, int]()),
	).AddNode("n", appendLog("n")).AddEdge(graph.START, "n"))

	base := doc{Log: []string{"a"}, Sum: 2, Count: 7, Answer: "kept", Tags: map[string]int{"x": 1}}
	update := doc{Log: []string{"b", "c"}, Sum: 3, Count: 1, Answer: "ignored", Tags: map[string]int{"y": 2}}
	out, err := g.Apply(base, update, "Log", "Sum", "Count", "Tags")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, out.Log)
	assert.Equal(t, 5, out.Sum)
	assert.Equal(t, 1, out.Count, "a field without a reducer takes the update's value")
	assert.Equal(t, "kept", out.Answer, "a field not named is not written")
	assert.Equal(t, map[string]int{"x": 1, "y": 2}, out.Tags)
	assert.Equal(t, []string{"a"}, base.Log, "base is not changed")
}

func TestApplyNamesEveryUnknownField(t *testing.T) {
	g := mustCompile(t, graph.New[doc]().AddNode("n", appendLog("n")).AddEdge(graph.START, "n"))
	_, err := g.Apply(doc{}, doc{}, "Log", "Nope", "Neither")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"Nope"`)
	assert.Contains(t, err.Error(), `"Neither"`)
}

type promotedBase struct{ Count int }

type promotedState struct {
	promotedBase
	Log []string
}

func TestApplyNamesPromotedFieldsByTheirPath(t *testing.T) {
	g := mustCompile(t, graph.New[promotedState]().
		AddNode("n", func(_ context.Context, s promotedState) (promotedState, error) { return s, nil }).
		AddEdge(graph.START, "n"))
	out, err := g.Apply(promotedState{}, promotedState{promotedBase: promotedBase{Count: 4}}, "promotedBase.Count")
	require.NoError(t, err)
	assert.Equal(t, 4, out.Count)
}
