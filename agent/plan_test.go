package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
)

type planState struct {
	nodes.Chat
	nodes.Plan
}

func askPlan(text string) planState {
	return planState{Chat: nodes.Chat{Messages: []model.Message{model.User(text)}}}
}

// An agent that answers with its plan unfinished is reminded of the open
// items, and goes on.
func TestReActPlanNudges(t *testing.T) {
	write := func(items string) scripted.Step {
		return scripted.CallTools(scripted.Call(nodes.TodoWriteName, `{"todos":`+items+`}`))
	}
	m := scripted.New(
		write(`[{"id":"a","content":"read","status":"completed"},{"id":"b","content":"fix","status":"in_progress"}]`),
		scripted.Reply("I read the code."),
		write(`[{"id":"a","content":"read","status":"completed"},{"id":"b","content":"fix","status":"completed"}]`),
		scripted.Reply("Fixed."),
	)
	g, err := agent.ReAct[planState](m, agent.WithTools(nodes.TodoWrite[planState]()), agent.WithPlanNudges(2))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("fix the bug"))
	require.NoError(t, err)
	assert.Equal(t, "Fixed.", agent.FinalText(out.Messages))
	assert.Empty(t, out.Todos)
	var nudges []string
	for _, msg := range out.Messages {
		if msg.Metadata[nodes.MetaPlanNudge] == "true" {
			nudges = append(nudges, msg.Text())
		}
	}
	require.Len(t, nudges, 1)
	assert.Contains(t, nudges[0], "- [in_progress] fix (b)")
	assert.NotContains(t, nudges[0], "read", "completed items are not listed")
	assert.Equal(t, 4, m.Calls())
}

// A model that keeps answering without working is nudged at most max
// times in a row.
func TestReActPlanNudgesStop(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.Call(nodes.TodoWriteName, `{"todos":[{"id":"a","content":"work","status":"in_progress"}]}`)),
		scripted.Reply("later"), scripted.Reply("later"), scripted.Reply("later"),
	)
	g, err := agent.ReAct[planState](m, agent.WithTools(nodes.TodoWrite[planState]()), agent.WithPlanNudges(2))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("work"))
	require.NoError(t, err)
	assert.Equal(t, "later", agent.FinalText(out.Messages))
	assert.Equal(t, 4, m.Calls(), "the plan, then an answer and two nudged answers")
	assert.Len(t, out.Todos, 1, "the plan is left as it is")

	_, err = agent.ReAct[agent.State](scripted.New(), agent.WithPlanNudges(1), agent.WithTools(nodes.AskUser()))
	assert.ErrorContains(t, err, "WithPlanNudges needs a state that keeps a plan")
}
