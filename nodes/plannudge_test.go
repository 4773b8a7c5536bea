package nodes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool/plan"
)

// plannerState is a conversation with a plan.
type plannerState struct {
	nodes.Chat
	plan.Plan
}

// PlanNudgeCommand says what WithNudgeMessage gives, asks its hook before
// each nudge, and ends the branch when the hook declines.
func TestPlanNudgeCommand(t *testing.T) {
	s := plannerState{Plan: plan.Plan{Todos: []plan.Todo{
		{ID: "a", Content: "read", Status: plan.Completed},
		{ID: "b", Content: "fix", Status: plan.InProgress},
	}}}
	s.Messages = []model.Message{model.User("go"), model.Assistant("later")}
	ctx := context.Background()

	// Default: the same message as PlanNudge.
	out, cmd, err := nodes.PlanNudgeCommand[plannerState]("llm")(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, []string{"llm"}, cmd.Goto)
	want, err := nodes.PlanNudge[plannerState]()(ctx, s)
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)
	assert.Equal(t, want.Messages[2].Text(), out.Messages[2].Text())
	assert.Equal(t, "true", out.Messages[2].Metadata[plan.MetaNudge])

	out, _, err = nodes.PlanNudgeCommand[plannerState]("llm", nodes.WithNudgeMessage("Finish the fix."), nil, nodes.WithNudgeMessage(" "))(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, "Your plan still has open items:\n- [in_progress] fix (b)\nFinish the fix.", out.Messages[2].Text())

	var asked []nodes.Nudge
	hook := func(msg string, nudge bool) nodes.NudgeOption {
		return nodes.WithNudgeHook(func(_ context.Context, n nodes.Nudge) (string, bool) {
			asked = append(asked, n)
			return msg, nudge
		})
	}
	out, cmd, err = nodes.PlanNudgeCommand[plannerState]("llm", nodes.WithNudgeMessage("Finish."), hook("Keep at it: b.", true))(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, []string{"llm"}, cmd.Goto)
	assert.Equal(t, "Keep at it: b.", out.Messages[2].Text())
	assert.Equal(t, "true", out.Messages[2].Metadata[plan.MetaNudge])
	require.Len(t, asked, 1)
	assert.Equal(t, s.Todos, asked[0].Todos)
	assert.Equal(t, s.Todos[1:], asked[0].Open)
	assert.Equal(t, 0, asked[0].Sent)
	assert.Equal(t, "Your plan still has open items:\n- [in_progress] fix (b)\nFinish.", asked[0].Message)

	out.Messages = append(out.Messages, model.Assistant("still later"))
	out2, _, err := nodes.PlanNudgeCommand[plannerState]("llm", hook("", true))(ctx, out)
	require.NoError(t, err)
	assert.Equal(t, 1, asked[1].Sent, "one nudge since the user spoke")
	assert.Equal(t, asked[1].Message, out2.Messages[len(out2.Messages)-1].Text(), "an empty message keeps the default")

	out, cmd, err = nodes.PlanNudgeCommand[plannerState]("llm", hook("ignored", false))(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, []string{graph.END}, cmd.Goto, "a declined nudge ends the branch")
	assert.Len(t, out.Messages, 2, "and says nothing")

	// Nothing open: nothing to say, and the hook is not asked.
	asked = nil
	s.Todos[1].Status = plan.Completed
	out, cmd, err = nodes.PlanNudgeCommand[plannerState]("llm", hook("x", true))(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, []string{graph.END}, cmd.Goto)
	assert.Len(t, out.Messages, 2)
	assert.Empty(t, asked)
}
