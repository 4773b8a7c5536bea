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
	assert.ErrorContains(t, err, "WithPlanNudges: agent.State keeps no plan: embed nodes.Plan")
	_, err = agent.ReAct[pointerPlanState](scripted.New(), agent.WithPlanNudges(1), agent.WithTools(nodes.AskUser()))
	assert.ErrorContains(t, err, "embeds its plan through a pointer")
}

type pointerPlanState struct {
	nodes.Chat
	*nodes.Plan
}

// Nudges fit the step limit with few hops, and a plan left from an earlier
// turn does not nudge a later one.
func TestReActPlanNudgesAcrossHopsAndTurns(t *testing.T) {
	write := scripted.CallTools(scripted.Call(nodes.TodoWriteName, `{"todos":[{"id":"a","content":"work","status":"in_progress"}]}`))
	step := scripted.CallTools(scripted.Call(nodes.TodoWriteName, `{"todos":[{"id":"a","content":"work","status":"in_progress"},{"id":"b","content":"more","status":"pending"}]}`))
	m := scripted.New(
		write, step, scripted.Reply("1"), // two hops, nudged
		step, step, scripted.Reply("2"), // two more, nudged again
		step, step, scripted.Reply("3"), // and the last turn ends here
	)
	g, err := agent.ReAct[planState](m, agent.WithTools(nodes.TodoWrite[planState]()), agent.WithPlanNudges(2), agent.WithMaxHops(2))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("work"))
	require.NoError(t, err, "the step limit allows for the nudges")
	assert.Equal(t, "3", agent.FinalText(out.Messages))
	assert.Equal(t, 9, m.Calls())

	// A new user turn with the old plan still open: no nudge until the
	// model writes its plan again.
	m2 := scripted.New(scripted.Reply("you're welcome"))
	g2, err := agent.ReAct[planState](m2, agent.WithTools(nodes.TodoWrite[planState]()), agent.WithPlanNudges(2))
	require.NoError(t, err)
	in := out
	in.Messages = append(in.Messages, model.User("thanks"))
	out2, err := g2.Invoke(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, "you're welcome", agent.FinalText(out2.Messages))
	assert.Equal(t, 1, m2.Calls())
}
