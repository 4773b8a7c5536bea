package toolsearch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/toolsearch"
)

func defNames(defs []model.ToolDefinition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// An agent with many tools offers its model only the selected ones, in the
// toolsets' order, and asks the selector's model once per user turn.
func TestAgentOffersOnlyTheSelectedTools(t *testing.T) {
	picker := scripted.New(answer("t9", "t3"))
	main := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "t9", `{"q":"x"}`)),
		scripted.CallTools(scripted.CallWithID("c2", "t3", `{"q":"y"}`)),
		scripted.Reply("all done"),
	)
	var usage model.Usage
	search := toolsearch.New(picker, toolsearch.WithAlwaysInclude("t0"),
		toolsearch.WithUsage(func(u model.Usage) { usage = usage.Add(u) }))
	g, err := agent.NewReAct(main, agent.WithTools(someTools(20)...),
		agent.WithResolveOptions(tool.SelectWith(search)))
	require.NoError(t, err)

	out, err := g.Invoke(context.Background(), agent.Ask("do things nine and three"))
	require.NoError(t, err)
	assert.Equal(t, "all done", agent.FinalText(out.Messages))
	assert.Equal(t, "t9", out.Messages[2].Text(), "the selected tool ran")
	assert.Equal(t, "t3", out.Messages[4].Text())

	reqs := main.Requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		assert.Equal(t, []string{"t0", "t3", "t9"}, defNames(r.Tools), "only the selected tools, in the toolsets' order")
	}
	assert.Equal(t, 1, picker.Calls(), "one selection for the turn's three model calls")
	assert.Contains(t, userPrompt(t, picker), "Request:\ndo things nine and three\n")
	assert.Zero(t, usage.TotalTokens, "the scripted picker reports no tokens")
}

// A fail-closed selector whose model fails fails the run; a fail-open one
// offers every tool.
func TestAgentWithAFailingSelector(t *testing.T) {
	for _, open := range []bool{true, false} {
		picker := scripted.New(scripted.Reply("sorry, I cannot help with that"))
		main := scripted.New(scripted.Reply("hi"))
		g, err := agent.NewReAct(main, agent.WithTools(someTools(12)...),
			agent.WithResolveOptions(tool.SelectWith(toolsearch.New(picker, toolsearch.WithFailOpen(open)))))
		require.NoError(t, err)
		_, err = g.Invoke(context.Background(), agent.Ask("hello"))
		if open {
			require.NoError(t, err)
			assert.Len(t, main.Requests()[0].Tools, 12)
			continue
		}
		require.ErrorIs(t, err, toolsearch.ErrUnusableAnswer)
		assert.Equal(t, 0, main.Calls(), "the main model was not called")
	}
}
