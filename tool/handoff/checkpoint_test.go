package handoff_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// echoModel answers every request with the text of its last message.
func echoModel(prefix string) *scripted.Model {
	m := scripted.New()
	echo := scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant(prefix + req.Messages[len(req.Messages)-1].Text())}, nil
	})
	m.Fallback = &echo
	return m
}

// checkpointBefore returns the ID of the thread's checkpoint after which
// node runs next.
func checkpointBefore(t *testing.T, g *graph.Graph[agent.State], thread, node string) string {
	t.Helper()
	hist, err := g.History(context.Background(), thread, 0)
	require.NoError(t, err)
	for _, s := range hist {
		if len(s.Next) == 1 && s.Next[0] == node {
			return s.CheckpointID
		}
	}
	require.Failf(t, "no checkpoint", "before %s", node)
	return ""
}

// A call whose task was changed on a fork of the caller's thread is a new
// task: the agent runs on it instead of answering with the run it made for
// the old task.
func TestACallEditedOnAForkRunsTheAgentOnTheNewTask(t *testing.T) {
	wm := echoModel("did: ")
	h, err := handoff.New("w", "works", worker(t, "w", wm))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.CallWithID("w1", "w", `{"task":"first"}`)))
	answer := lastToolText("boss: ")
	pm.Fallback = &answer
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := context.Background()

	out, err := g.Invoke(ctx, agent.Ask("go"), graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, "boss: did: first", agent.FinalText(out.Messages))

	// Go back to before the tools ran, and change the call's task.
	_, err = g.UpdateState(ctx, "t", agent.AgentNode, func(s agent.State) agent.State {
		s.Messages = append(s.Messages[:1:1], model.Assistant("", scripted.CallWithID("w1", "w", `{"task":"second"}`)))
		return s
	}, graph.FromCheckpoint(checkpointBefore(t, g, "t", agent.ToolsNode)))
	require.NoError(t, err)
	out, err = g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "boss: did: second", agent.FinalText(out.Messages))
	assert.Equal(t, 2, wm.Calls())
}

// An agent paused by an interrupt whose task the caller's thread changed
// before resuming starts over on the new task.
func TestAPausedCallWhoseTaskChangedStartsOver(t *testing.T) {
	approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, in struct {
		Plan string `json:"plan"`
	}) (string, error) {
		ok, err := graph.Interrupt[string](ctx, "approve "+in.Plan+"?")
		if err != nil {
			return "", err
		}
		return "human says " + ok + " to " + in.Plan, nil
	})
	wm := scripted.New()
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			return &model.Response{Message: model.Assistant("worker: " + last.Text())}, nil
		}
		return &model.Response{Message: model.Assistant("", scripted.Call("approve", `{"plan":"`+last.Text()+`"}`))}, nil
	})
	wm.Fallback = &step
	h, err := handoff.New("planner", "plans", worker(t, "planner", wm, agent.WithTools(approve)))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.CallWithID("p1", "planner", `{"task":"A"}`)))
	answer := lastToolText("boss: ")
	pm.Fallback = &answer
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := context.Background()

	_, err = g.Invoke(ctx, agent.Ask("go"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, "approve A?", ie.Interrupts[0].Payload)

	// The caller's call is rewritten before anyone answers.
	_, err = g.UpdateState(ctx, "t", agent.AgentNode, func(s agent.State) agent.State {
		s.Messages = append(s.Messages[:1:1], model.Assistant("", scripted.CallWithID("p1", "planner", `{"task":"B"}`)))
		return s
	}, graph.FromCheckpoint(checkpointBefore(t, g, "t", agent.ToolsNode)))
	require.NoError(t, err)
	_, err = g.Resume(ctx, "t")
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, "approve B?", ie.Interrupts[0].Payload, "the agent works on the new task")

	out, err := g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.Equal(t, "boss: worker: human says yes to B", agent.FinalText(out.Messages))
}

// Two calls of one handoff in a batch: one pauses for a human while the
// other finishes. Each keeps its own run: the paused one resumes with the
// answer (its agent's work before the pause is not done again), and the
// finished one's answer is kept.
func TestParallelCallsOnePausesTheOtherFinishes(t *testing.T) {
	for name, opts := range map[string][]handoff.Option{"isolated": nil, "shared history": {handoff.WithSharedHistory()}} {
		t.Run(name, func(t *testing.T) {
			approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, in struct {
				Plan string `json:"plan"`
			}) (string, error) {
				ok, err := graph.Interrupt[string](ctx, "approve "+in.Plan+"?")
				if err != nil {
					return "", err
				}
				return "human says " + ok + " to " + in.Plan, nil
			})
			wm := scripted.New()
			step := scripted.Func(func(req *model.Request) (*model.Response, error) {
				last := req.Messages[len(req.Messages)-1]
				switch {
				case last.Role == model.RoleTool:
					return &model.Response{Message: model.Assistant("worker: " + last.Text())}, nil
				case last.Text() == "ask":
					return &model.Response{Message: model.Assistant("", scripted.Call("approve", `{"plan":"launch"}`))}, nil
				}
				return &model.Response{Message: model.Assistant("quick answer")}, nil
			})
			wm.Fallback = &step
			h, err := handoff.New("planner", "plans", worker(t, "planner", wm, agent.WithTools(approve)), opts...)
			require.NoError(t, err)
			pm := scripted.New(scripted.CallTools(
				scripted.CallWithID("p1", "planner", `{"task":"ask"}`),
				scripted.CallWithID("p2", "planner", `{"task":"quick"}`),
			))
			answer := lastToolText("boss: ")
			pm.Fallback = &answer
			g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
			ctx := context.Background()

			_, err = g.Invoke(ctx, agent.Ask("go"), graph.WithThread("t"))
			var ie *graph.InterruptError
			require.ErrorAs(t, err, &ie)
			require.Len(t, ie.Interrupts, 1)
			assert.Equal(t, []string{"planner"}, ie.Interrupts[0].Path)
			assert.Equal(t, 2, wm.Calls(), "one model call per agent")

			out, err := g.Resume(ctx, "t", graph.WithResumeValue("yes"))
			require.NoError(t, err)
			assert.Equal(t, "quick answer", toolMessage(t, out.Messages, "p2").Text())
			assert.Equal(t, "worker: human says yes to launch", toolMessage(t, out.Messages, "p1").Text())
			assert.Equal(t, 3, wm.Calls(), "the paused agent resumed where it stopped")
		})
	}
}
