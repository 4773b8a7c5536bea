package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// TestContinueRefusesAThreadWithUnansweredCalls continues a thread whose
// last run failed between the model's tool calls and their answers: a new
// user turn after them is a conversation no provider takes, so Continue
// says which calls are unanswered and how to go on, and writes nothing.
func TestContinueRefusesAThreadWithUnansweredCalls(t *testing.T) {
	failures := 1
	flaky := tool.MustFunc("flaky", "fails once", func(context.Context, struct{}) (string, error) {
		if failures > 0 {
			failures--
			return "", errors.New("backend down")
		}
		return "fine", nil
	})
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "flaky", `{}`)),
		scripted.Reply("all good"),
		scripted.Reply("second turn"),
	)
	g, err := agent.NewReAct(m, agent.WithTools(flaky), agent.WithCheckpointer(memory.New()),
		agent.WithToolsOptions(nodes.WithErrorPolicy(nodes.ReturnError)))
	require.NoError(t, err)
	ctx := context.Background()

	_, err = agent.Continue(ctx, g, "t", "check the backend")
	var te *nodes.ToolError
	require.ErrorAs(t, err, &te)

	_, err = agent.Continue(ctx, g, "t", "and now?")
	require.ErrorIs(t, err, agent.ErrUnansweredCalls)
	assert.ErrorContains(t, err, `thread "t"`)
	assert.ErrorContains(t, err, "c1 (flaky)")
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	last := snap.State.Messages[len(snap.State.Messages)-1]
	assert.Equal(t, model.RoleAssistant, last.Role, "nothing was written")

	// Resuming the thread runs the failed step again; the thread then
	// takes new turns.
	out, err := g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "all good", agent.FinalText(out.Messages))
	out, err = agent.Continue(ctx, g, "t", "and now?")
	require.NoError(t, err)
	assert.Equal(t, "second turn", agent.FinalText(out.Messages))
}
