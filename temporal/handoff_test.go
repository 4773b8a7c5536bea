package temporal_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// lastToolText answers with the text of the last tool message it was
// shown, prefixed.
func lastToolText(prefix string) scripted.Step {
	return scripted.Func(func(req *model.Request) (*model.Response, error) {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == model.RoleTool {
				return &model.Response{Message: model.Assistant(prefix + m.Text())}, nil
			}
		}
		return &model.Response{Message: model.Assistant(prefix + "(no tool result)")}, nil
	})
}

// An interrupt raised by a tool of an agent that a handoff runs stops the
// task of the caller's ToolsNode; the answer runs the task again, and the
// agent, which has no checkpoints under Temporal, runs again from its start
// and gets the answer at the same interrupt.
func TestWorkflowResumesInterruptInsideHandoff(t *testing.T) {
	var asked atomic.Int32
	approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, in struct {
		Plan string `json:"plan"`
	}) (string, error) {
		asked.Add(1)
		ok, err := graph.Interrupt[string](ctx, "approve "+in.Plan+"?")
		if err != nil {
			return "", err
		}
		return "human says " + ok, nil
	})
	askApproval := scripted.CallTools(scripted.CallWithID("a1", "approve", `{"plan":"launch"}`))
	// The worker's model is asked twice to call the tool: once in the run
	// that is interrupted, once in the run that gets the answer.
	wm := scripted.New(askApproval, askApproval, lastToolText("worker: "))
	wg, err := agent.NewReAct(wm, agent.WithName("planner"), agent.WithTools(approve))
	require.NoError(t, err)
	h, err := handoff.New("planner", "plans", wg)
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.CallWithID("p1", "planner", `{"task":"plan the launch"}`)), lastToolText("boss: "))
	g, err := agent.NewReAct(pm, agent.WithName("boss"), agent.WithTools(h))
	require.NoError(t, err)

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet())
	env := suite.NewTestWorkflowEnvironment()
	r := temporal.New("boss", g)
	r.Register(env)
	var status temporal.Status[agent.State]
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(temporal.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&status))
		env.SignalWorkflow(temporal.SignalResume, temporal.Resume{Value: "yes"})
	}, time.Minute)
	env.ExecuteWorkflow(r.Name(), agent.Ask("launch?"))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out agent.State
	require.NoError(t, env.GetWorkflowResult(&out))

	require.Len(t, status.Interrupts, 1)
	require.Equal(t, []string{"planner"}, status.Interrupts[0].Path, "the interrupt names the agent it comes from")
	payload, err := json.Marshal(status.Interrupts[0].Payload)
	require.NoError(t, err)
	require.JSONEq(t, `"approve launch?"`, string(payload))
	require.Equal(t, "boss: worker: human says yes", agent.FinalText(out.Messages))
	require.EqualValues(t, 2, asked.Load(), "the tool ran once to ask and once with the answer")
	require.Equal(t, 2, pm.Calls(), "the caller's model is not asked again on resume")
}
