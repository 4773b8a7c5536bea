package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// Tools that come with one run (tool.AddTools through tool.ResolveWith):
// one the framework runs, one the caller does (a user interface's), next
// to the agent's own.
func TestToolsAddedForOneRun(t *testing.T) {
	own := tool.MustFunc("lookup", "looks a city up", func(_ context.Context, in cityIn) (string, error) {
		return in.City + " found", nil
	})
	ran := 0
	clock := tool.MustFunc("clock", "tells the time", func(context.Context, struct{}) (string, error) {
		ran++
		return "noon", nil
	})
	pick, err := tool.NewDeclaration(model.ToolDefinition{Name: "ui_pick_date", Description: "the user picks a date",
		InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)

	var offered [][]string
	record := func(req *model.Request) {
		var names []string
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		offered = append(offered, names)
	}
	m := scripted.New(
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			record(req)
			return &model.Response{Message: model.Assistant("", model.ToolCall{ID: "c1", Name: "clock", Arguments: []byte(`{}`)})}, nil
		}),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			record(req)
			return &model.Response{Message: model.Assistant("", model.ToolCall{ID: "c2", Name: "ui_pick_date", Arguments: []byte(`{}`)})}, nil
		}),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			record(req)
			return &model.Response{Message: model.Assistant("booked for " + req.Messages[len(req.Messages)-1].Text())}, nil
		}),
	)
	g, err := agent.NewReAct(m, agent.WithTools(own), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)

	ctx := tool.ResolveWith(context.Background(), tool.AddTools(clock, pick))
	_, err = g.Invoke(ctx, agent.Ask("book a table"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	pending := ie.Interrupts[0].Payload.(nodes.PendingToolCalls)
	require.Len(t, pending.Calls, 1)
	assert.Equal(t, "ui_pick_date", pending.Calls[0].Name)
	assert.Equal(t, 1, ran, "the framework ran the added clock tool")

	out, err := g.Resume(ctx, "t", graph.WithResumeValue(map[string]tool.Result{"c2": tool.Text("Friday")}))
	require.NoError(t, err)
	assert.Equal(t, "booked for Friday", agent.FinalText(out.Messages))
	for i, names := range offered {
		assert.Equal(t, []string{"lookup", "clock", "ui_pick_date"}, names, "turn %d", i)
	}

	// Another run of the same agent, without them, sees its own tool only.
	offered = nil
	m2 := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		record(req)
		return &model.Response{Message: model.Assistant("done")}, nil
	}))
	g2, err := agent.NewReAct(m2, agent.WithTools(own))
	require.NoError(t, err)
	_, err = g2.Invoke(context.Background(), agent.Ask("hi"))
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"lookup"}}, offered)
}

// A run resumed without the options it paused under still takes the
// caller's answer to the call it was asked for, although the tool is no
// longer in the run's list: the answer is not lost, nor the call answered
// as one of an unknown tool.
func TestCallerAnswerKeptWhenResumedWithOtherTools(t *testing.T) {
	pick, err := tool.NewDeclaration(model.ToolDefinition{Name: "ui_pick_date", Description: "the user picks a date",
		InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "ui_pick_date", `{}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("booked for " + req.Messages[len(req.Messages)-1].Text())}, nil
		}),
	)
	g, err := agent.NewReAct(m, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	_, err = g.Invoke(tool.ResolveWith(context.Background(), tool.AddTools(pick)), agent.Ask("book"), graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	out, err := g.Resume(context.Background(), "t", graph.WithResumeValue(map[string]tool.Result{"c1": tool.Text("Friday")}))
	require.NoError(t, err)
	assert.Equal(t, "booked for Friday", agent.FinalText(out.Messages))
	tm := out.Messages[len(out.Messages)-2]
	assert.Equal(t, "c1", tm.ToolCallID)
	assert.False(t, tm.IsError)
}

// An agent without tools of its own still offers the tools and the
// instructions a run adds (tool.AddTools, tool.AddInstructions).
func TestRunToolsReachAgentWithoutTools(t *testing.T) {
	pick, err := tool.NewDeclaration(model.ToolDefinition{Name: "ui_pick_date", Description: "the user picks a date",
		InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)
	var names []string
	var system string
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		if req.Messages[0].Role == model.RoleSystem {
			system = req.Messages[0].Text()
		}
		return &model.Response{Message: model.Assistant("", model.ToolCall{ID: "c1", Name: "ui_pick_date", Arguments: []byte(`{}`)})}, nil
	}))
	g, err := agent.NewReAct(m, agent.WithSystemPrompt("Book tables."))
	require.NoError(t, err)
	ctx := tool.ResolveWith(context.Background(), tool.AddTools(pick), tool.AddInstructions("Today is Monday."))
	_, err = g.Invoke(ctx, agent.Ask("book"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie, "the added tool's call is left to the caller")
	assert.Equal(t, []string{"ui_pick_date"}, names)
	assert.Equal(t, "Book tables.\n\nToday is Monday.", system)
}
