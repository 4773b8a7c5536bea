package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
)

type storeState struct {
	Seen string
}

func TestNodesAndSubgraphsFindTheGraphsStore(t *testing.T) {
	st := memory.New()
	defer st.Close()
	_, err := st.Put(t.Context(), []string{"prefs"}, "drink", []byte(`{"v":"tea"}`))
	require.NoError(t, err)

	read := func(ctx context.Context, s storeState) (storeState, error) {
		found, ok := store.FromContext(ctx)
		if !ok {
			s.Seen += "none;"
			return s, nil
		}
		it, err := found.Get(ctx, []string{"prefs"}, "drink")
		if err != nil {
			return s, err
		}
		s.Seen += string(it.Value) + ";"
		return s, nil
	}
	sub, err := graph.New[storeState]().AddNode("inner", read).AddEdge(graph.START, "inner").Compile()
	require.NoError(t, err)
	g, err := graph.New[storeState]().
		AddNode("outer", read).
		AddSubgraph("sub", graph.Subgraph[storeState](sub)).
		AddEdge(graph.START, "outer").AddEdge("outer", "sub").
		Compile(graph.WithStore(st))
	require.NoError(t, err)
	assert.Equal(t, st, g.Store())

	out, err := g.Invoke(t.Context(), storeState{})
	require.NoError(t, err)
	assert.Equal(t, `{"v":"tea"};{"v":"tea"};`, out.Seen)

	out, err = sub.Invoke(t.Context(), storeState{})
	require.NoError(t, err)
	assert.Equal(t, "none;", out.Seen, "a graph without a store gives none")
	assert.Nil(t, sub.Store())
}
