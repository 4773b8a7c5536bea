package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
)

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
