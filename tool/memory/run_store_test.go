package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/store"
	storemem "github.com/trellis-go/trellis/store/memory"
	"github.com/trellis-go/trellis/tool/memory"
)

// TestAnAgentsMemoryToolWritesToTheRunsStore runs a ReAct agent compiled
// with a store, whose memory tools take the store from the run: what the
// model saves lands in the store the graph was given.
func TestAnAgentsMemoryToolWritesToTheRunsStore(t *testing.T) {
	st := storemem.New()
	defer st.Close()
	mem, err := memory.New(memory.WithRunStore())
	require.NoError(t, err)
	tools, err := memory.Tools(mem)
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(scripted.Call(memory.AddName, `{"text":"Ana is allergic to peanuts","topics":["health"]}`)),
		scripted.Reply("Noted."),
	)
	a, err := agent.NewReAct(m, agent.WithToolsets(tools), agent.WithCompileOptions(graph.WithStore(st)))
	require.NoError(t, err)

	_, err = a.Invoke(memory.WithScope(t.Context(), "ana"), agent.Ask("I am allergic to peanuts"))
	require.NoError(t, err)

	items, err := st.Search(t.Context(), nil, store.Query{})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, []string{"trellis", "memory", "scope:ana"}, items[0].Namespace)
	var e memory.Entry
	require.NoError(t, items[0].Decode(&e))
	assert.Equal(t, "Ana is allergic to peanuts", e.Text)
}
