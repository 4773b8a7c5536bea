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
	"github.com/trellis-go/trellis/tool/plan"
)

type planState struct {
	nodes.Chat
	plan.Plan
}

func askPlan(text string) planState {
	return planState{Chat: nodes.Chat{Messages: []model.Message{model.User(text)}}}
}

// An agent that answers with its plan unfinished is reminded of the open
// items, and goes on.
func TestReActPlanNudges(t *testing.T) {
	write := func(items string) scripted.Step {
		return scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":`+items+`}`))
	}
	m := scripted.New(
		write(`[{"id":"a","content":"read","status":"completed"},{"id":"b","content":"fix","status":"in_progress"}]`),
		scripted.Reply("I read the code."),
		write(`[{"id":"a","content":"read","status":"completed"},{"id":"b","content":"fix","status":"completed"}]`),
		scripted.Reply("Fixed."),
	)
	g, err := agent.ReAct[planState](m, agent.WithTools(plan.Write[planState]()), agent.WithPlanNudges(2))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("fix the bug"))
	require.NoError(t, err)
	assert.Equal(t, "Fixed.", agent.FinalText(out.Messages))
	assert.Empty(t, out.Todos)
	var nudges []string
	for _, msg := range out.Messages {
		if msg.Metadata[plan.MetaNudge] == "true" {
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
		scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":[{"id":"a","content":"work","status":"in_progress"}]}`)),
		scripted.Reply("later"), scripted.Reply("later"), scripted.Reply("later"),
	)
	g, err := agent.ReAct[planState](m, agent.WithTools(plan.Write[planState]()), agent.WithPlanNudges(2))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("work"))
	require.NoError(t, err)
	assert.Equal(t, "later", agent.FinalText(out.Messages))
	assert.Equal(t, 4, m.Calls(), "the plan, then an answer and two nudged answers")
	assert.Len(t, out.Todos, 1, "the plan is left as it is")

	_, err = agent.ReAct[agent.State](scripted.New(), agent.WithPlanNudges(1), agent.WithTools(nodes.AskUser()))
	assert.ErrorContains(t, err, "WithPlanNudges: agent.State keeps no plan: embed plan.Plan")
	_, err = agent.ReAct[pointerPlanState](scripted.New(), agent.WithPlanNudges(1), agent.WithTools(nodes.AskUser()))
	assert.ErrorContains(t, err, "embeds its plan through a pointer")
}

type pointerPlanState struct {
	nodes.Chat
	*plan.Plan
}

// Nudges fit the step limit with few hops, and a plan left from an earlier
// turn does not nudge a later one.
func TestReActPlanNudgesAcrossHopsAndTurns(t *testing.T) {
	write := scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":[{"id":"a","content":"work","status":"in_progress"}]}`))
	step := scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":[{"id":"a","content":"work","status":"in_progress"},{"id":"b","content":"more","status":"pending"}]}`))
	m := scripted.New(
		write, step, scripted.Reply("1"), // two hops, nudged
		step, step, scripted.Reply("2"), // two more, nudged again
		step, step, scripted.Reply("3"), // and the last turn ends here
	)
	g, err := agent.ReAct[planState](m, agent.WithTools(plan.Write[planState]()), agent.WithPlanNudges(2), agent.WithMaxHops(2))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("work"))
	require.NoError(t, err, "the step limit allows for the nudges")
	assert.Equal(t, "3", agent.FinalText(out.Messages))
	assert.Equal(t, 9, m.Calls())

	// A new user turn with the old plan still open: no nudge until the
	// model writes its plan again.
	m2 := scripted.New(scripted.Reply("you're welcome"))
	g2, err := agent.ReAct[planState](m2, agent.WithTools(plan.Write[planState]()), agent.WithPlanNudges(2))
	require.NoError(t, err)
	in := out
	in.Messages = append(in.Messages, model.User("thanks"))
	out2, err := g2.Invoke(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, "you're welcome", agent.FinalText(out2.Messages))
	assert.Equal(t, 1, m2.Calls())
}

// nudgesOf returns the texts of the plan nudges in msgs.
func nudgesOf(msgs []model.Message) []string {
	var out []string
	for _, msg := range msgs {
		if msg.Metadata[plan.MetaNudge] == "true" {
			out = append(out, msg.Text())
		}
	}
	return out
}

// A model that declares a blocker for its plan is not nudged about it,
// until it writes the plan again.
func TestReActPlanNudgesStopAtABlocker(t *testing.T) {
	write := scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":[{"id":"a","content":"deploy","status":"in_progress"}]}`))
	m := scripted.New(
		write,
		scripted.CallTools(scripted.Call(plan.DeclareBlockerName, `{"reason":"no credentials for the server"}`)),
		scripted.Reply("I need the credentials."),
	)
	g, err := agent.ReAct[planState](m, agent.WithTools(plan.Tools[planState]()...), agent.WithPlanNudges(3))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("deploy"))
	require.NoError(t, err)
	assert.Equal(t, "I need the credentials.", agent.FinalText(out.Messages))
	assert.Equal(t, 3, m.Calls(), "no nudge after the blocker")
	assert.Empty(t, nudgesOf(out.Messages))
	assert.Equal(t, "no credentials for the server", out.Blocker)
	assert.Len(t, out.Todos, 1, "the plan is left as it is")

	// The next turn writes the plan again: the blocker is cleared, and an
	// answer with the plan open is nudged.
	m2 := scripted.New(write, scripted.Reply("later"), scripted.Reply("done"))
	g2, err := agent.ReAct[planState](m2, agent.WithTools(plan.Tools[planState]()...), agent.WithPlanNudges(1))
	require.NoError(t, err)
	in := out
	in.Messages = append(in.Messages, model.User("here they are"))
	out2, err := g2.Invoke(context.Background(), in)
	require.NoError(t, err)
	assert.Empty(t, out2.Blocker)
	assert.Len(t, nudgesOf(out2.Messages[len(in.Messages):]), 1)
	assert.Equal(t, 3, m2.Calls())
}

// WithPlanNudges takes what a nudge says, and a hook that decides before
// each one.
func TestReActPlanNudgeOptions(t *testing.T) {
	write := scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":[{"id":"a","content":"work","status":"in_progress","active_form":"Working"}]}`))
	m := scripted.New(write, scripted.Reply("later"), scripted.Reply("later"), scripted.Reply("later"))
	var sent []int
	g, err := agent.ReAct[planState](m, agent.WithTools(plan.Write[planState]()),
		agent.WithPlanNudges(5,
			nodes.WithNudgeMessage("Carry on."),
			nodes.WithNudgeHook(func(_ context.Context, n nodes.Nudge) (string, bool) {
				sent = append(sent, n.Sent)
				if n.Sent == 0 {
					return "", true // the message as configured
				}
				if n.Sent == 1 {
					return "Second reminder: " + n.Open[0].Label(), true
				}
				return "", false // enough
			})))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), askPlan("work"))
	require.NoError(t, err)
	assert.Equal(t, "later", agent.FinalText(out.Messages))
	assert.Equal(t, []int{0, 1, 2}, sent, "asked before each nudge, declining the third")
	assert.Equal(t, []string{"Your plan still has open items:\n- [in_progress] work (a): Working\nCarry on.", "Second reminder: Working"}, nudgesOf(out.Messages))
	assert.Equal(t, 4, m.Calls())
}
