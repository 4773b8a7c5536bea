package agent_test

import (
	"context"
	"strings"
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

func toolNames(req model.Request) []string {
	var out []string
	for _, d := range req.Tools {
		out = append(out, d.Name)
	}
	return out
}

func speakers(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		switch {
		case m.Role == model.RoleUser:
			out = append(out, "user")
		case m.HasToolCalls():
			out = append(out, m.Name+"→"+m.ToolCalls[0].Name)
		case m.Role == model.RoleAssistant:
			out = append(out, m.Name)
		}
	}
	return out
}

func TestSwarmTransfersControlAndResumesAtTheActiveAgent(t *testing.T) {
	alice := scripted.New(scripted.CallTools(scripted.Call(agent.TransferToolName("bob"), `{}`)))
	bob := scripted.New(
		scripted.Reply("Bob here: your refund is on its way."),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("Bob again, about: " + req.Messages[len(req.Messages)-1].Text())}, nil
		}),
	)
	g, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "alice", Description: "Answers general questions.", Model: alice, Options: []agent.Option{agent.WithSystemPrompt("You are Alice.")}},
		{Name: "bob", Description: "Handles refunds.", Model: bob, Options: []agent.Option{agent.WithSystemPrompt("You are Bob.")}},
	}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	assert.Equal(t, agent.SwarmName, g.Name())
	ctx := context.Background()

	out, err := agent.Continue(ctx, g, "customer-1", "I want a refund.")
	require.NoError(t, err)
	assert.Equal(t, "bob", out.Active)
	assert.Equal(t, "Bob here: your refund is on its way.", agent.FinalText(out.Messages))
	assert.Equal(t, []string{"user", "alice→transfer_to_bob", "bob"}, speakers(out.Messages))

	// Alice was offered the transfer to Bob (with his description), Bob the
	// one back to Alice; Bob saw the whole conversation under his own prompt.
	assert.Equal(t, []string{"transfer_to_bob"}, toolNames(alice.Requests()[0]))
	assert.Equal(t, "Transfer the conversation to bob. bob: Handles refunds.", alice.Requests()[0].Tools[0].Description)
	bobReq := bob.Requests()[0]
	assert.Equal(t, []string{"transfer_to_alice"}, toolNames(bobReq))
	assert.Equal(t, "You are Bob.", bobReq.Messages[0].Text())
	assert.Equal(t, "I want a refund.", bobReq.Messages[1].Text())
	assert.Equal(t, "Transferred to bob.", bobReq.Messages[3].Text())

	// The next turn of the thread goes straight to Bob.
	out, err = agent.Continue(ctx, g, "customer-1", "When will it arrive?")
	require.NoError(t, err)
	assert.Equal(t, "Bob again, about: When will it arrive?", agent.FinalText(out.Messages))
	assert.Equal(t, 1, alice.Calls(), "Alice was not asked again")
	assert.Equal(t, "bob", out.Active)

	snap, err := g.GetState(ctx, "customer-1")
	require.NoError(t, err)
	assert.Equal(t, "bob", snap.State.Active, "the active agent is in the checkpoint")
}

func TestSwarmFirstAgentStartsAndRecordsItself(t *testing.T) {
	g, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "front", Model: scripted.New(scripted.Reply("hello from front"))},
		{Name: "back", Model: scripted.New()},
	})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("hi").Chat})
	require.NoError(t, err)
	assert.Equal(t, "front", out.Active)
	assert.Equal(t, "hello from front", agent.FinalText(out.Messages))

	// A state that names an agent starts there.
	back := scripted.New(scripted.Reply("hello from back"))
	g, err = agent.NewSwarm([]agent.SwarmAgent{
		{Name: "front", Model: scripted.New()},
		{Name: "back", Model: back},
	})
	require.NoError(t, err)
	out, err = g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("hi").Chat, Active: "back"})
	require.NoError(t, err)
	assert.Equal(t, "hello from back", agent.FinalText(out.Messages))

	_, err = g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("hi").Chat, Active: "nobody"})
	require.ErrorIs(t, err, graph.ErrRoute)
	assert.Contains(t, err.Error(), "nobody")
}

func TestSwarmFirstTransferOfABatchWins(t *testing.T) {
	a := scripted.New(scripted.CallTools(
		scripted.Call(agent.TransferToolName("b"), `{}`),
		scripted.Call(agent.TransferToolName("c"), `{}`),
	))
	b := scripted.New(scripted.Reply("b answers"))
	c := scripted.New()
	g, err := agent.NewSwarm([]agent.SwarmAgent{{Name: "a", Model: a}, {Name: "b", Model: b}, {Name: "c", Model: c}})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("go").Chat})
	require.NoError(t, err)
	assert.Equal(t, "b", out.Active)
	assert.Equal(t, "b answers", agent.FinalText(out.Messages))
	assert.Equal(t, 0, c.Calls())
}

func TestSwarmAgentsUseTheirOwnToolsAndTransferTargets(t *testing.T) {
	price := tool.MustFunc("price", "prices an item", func(_ context.Context, in struct {
		Item string `json:"item"`
	}) (string, error) {
		return in.Item + " costs 3€", nil
	})
	sales := scripted.New(
		scripted.CallTools(scripted.Call("price", `{"item":"tea"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("Sales: " + req.Messages[len(req.Messages)-1].Text())}, nil
		}),
	)
	g, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "triage", Model: scripted.New(scripted.CallTools(scripted.Call(agent.TransferToolName("sales"), `{}`))), TransfersTo: []string{"sales"}},
		{Name: "sales", Model: sales, Options: []agent.Option{agent.WithTools(price)}},
		{Name: "support", Model: scripted.New()},
	}, agent.WithName("shop"))
	require.NoError(t, err)
	assert.Equal(t, "shop", g.Name())
	assert.ElementsMatch(t, []string{"triage", "triage_tools", "sales", "sales_tools", "support", "support_tools"}, g.Nodes())

	out, err := g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("price of tea?").Chat})
	require.NoError(t, err)
	assert.Equal(t, "Sales: tea costs 3€", agent.FinalText(out.Messages))
	assert.Equal(t, []string{"price", "transfer_to_triage", "transfer_to_support"}, toolNames(sales.Requests()[0]))
}

func TestSwarmSingleAgentWithoutTools(t *testing.T) {
	g, err := agent.NewSwarm([]agent.SwarmAgent{{Name: "solo", Model: scripted.New(scripted.Reply("alone"))}})
	require.NoError(t, err)
	assert.Equal(t, []string{"solo"}, g.Nodes())
	out, err := g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("hi").Chat})
	require.NoError(t, err)
	assert.Equal(t, "alone", agent.FinalText(out.Messages))
}

// customSwarm shows a swarm over a state of one's own.
type customSwarm struct {
	agent.SwarmState
	Ticket string
}

func TestSwarmOverACustomState(t *testing.T) {
	g, err := agent.Swarm[customSwarm]([]agent.SwarmAgent{
		{Name: "x", Model: scripted.New(scripted.CallTools(scripted.Call(agent.TransferToolName("y"), `{}`)))},
		{Name: "y", Model: scripted.New(scripted.Reply("y here"))},
	})
	require.NoError(t, err)
	in := customSwarm{Ticket: "T-1"}
	in.Messages = agent.Ask("hi").Messages
	out, err := g.Invoke(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, "y", out.Active)
	assert.Equal(t, "T-1", out.Ticket)
}

func TestNewSwarmRejectsBadAgents(t *testing.T) {
	m := scripted.New()
	tests := []struct {
		name   string
		agents []agent.SwarmAgent
		want   []string
		opts   []agent.Option
	}{
		{"none", nil, []string{"at least one agent"}, nil},
		{"no name", []agent.SwarmAgent{{Model: m}}, []string{"agent 0 has no name"}, nil},
		{"no model", []agent.SwarmAgent{{Name: "a"}}, []string{`agent "a" has no model`}, nil},
		{"duplicate", []agent.SwarmAgent{{Name: "a", Model: m}, {Name: "a", Model: m}}, []string{`two agents are named "a"`}, nil},
		{"unknown target", []agent.SwarmAgent{{Name: "a", Model: m, TransfersTo: []string{"zed"}}}, []string{`transfers to "zed", which is not an agent`}, nil},
		{"self transfer", []agent.SwarmAgent{{Name: "a", Model: m, TransfersTo: []string{"a"}}}, []string{"cannot transfer to itself"}, nil},
		{"bad name for a tool", []agent.SwarmAgent{{Name: "a", Model: m}, {Name: "b c", Model: m}}, []string{"may hold only"}, nil},
		{"max hops", []agent.SwarmAgent{{Name: "a", Model: m, Options: []agent.Option{agent.WithMaxHops(0)}}}, []string{"max hops must be at least 1"}, nil},
		{"all problems at once", []agent.SwarmAgent{{Name: "a"}, {Name: "b"}}, []string{`"a" has no model`, `"b" has no model`}, nil},
		{"reserved name", []agent.SwarmAgent{{Name: graph.END, Model: m}, {Name: "b", Model: m}}, []string{`agent 0 is named "__end__", which is reserved`}, nil},
		{"name of a tools node", []agent.SwarmAgent{{Name: "a", Model: m}, {Name: "a_tools", Model: m}}, []string{`agent "a_tools" has the name of agent "a"'s tools node`}, nil},
		{"swarm max hops", []agent.SwarmAgent{{Name: "a", Model: m}}, []string{"swarm: max hops must be at least 1, got 0"}, []agent.Option{agent.WithMaxHops(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.NewSwarm(tc.agents, tc.opts...)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.True(t, strings.Contains(err.Error(), w), "%q does not contain %q", err.Error(), w)
			}
		})
	}
}

func TestSwarmStepLimitLeavesRoomForTheAgentsHopCaps(t *testing.T) {
	echo := tool.MustFunc("echo", "echoes", func(context.Context, struct{}) (string, error) { return "ok", nil })
	call := scripted.CallTools(scripted.Call("echo", `{}`))
	steps := make([]scripted.Step, 0, 15)
	for range 14 {
		steps = append(steps, call)
	}
	steps = append(steps, scripted.Reply("done after 14 round trips"))
	g, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "worker", Model: scripted.New(steps...), Options: []agent.Option{agent.WithTools(echo), agent.WithMaxHops(15)}},
	})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("go").Chat})
	require.NoError(t, err, "the agent's own hop cap, not the swarm's default step limit, bounds its loop")
	assert.Equal(t, "done after 14 round trips", agent.FinalText(out.Messages))

	// Past its cap, the agent fails with the typed hop error.
	looping := scripted.New()
	looping.Fallback = &call
	g, err = agent.NewSwarm([]agent.SwarmAgent{
		{Name: "worker", Model: looping, Options: []agent.Option{agent.WithTools(echo), agent.WithMaxHops(15)}},
	})
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("go").Chat})
	var he *nodes.HopLimitError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 15, he.Limit)
	assert.Equal(t, "echo", he.LastReply.ToolCalls[0].Name)
}

func TestSwarmTransferInABatchThatPausesHandsOverOnResume(t *testing.T) {
	confirm, err := tool.NewDeclaration(model.ToolDefinition{Name: "confirm", Description: "asks the user to confirm", InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)
	front := scripted.New(scripted.CallTools(
		scripted.CallWithID("t1", agent.TransferToolName("billing"), `{}`),
		scripted.CallWithID("c1", "confirm", `{}`),
	))
	billing := scripted.New(scripted.Reply("billing here"))
	g, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "front", Model: front, Options: []agent.Option{agent.WithTools(confirm)}},
		{Name: "billing", Model: billing},
	}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = agent.Continue(ctx, g, "customer-7", "refund please")
	require.ErrorIs(t, err, graph.ErrInterrupted, "the confirm call is left to the caller")

	out, err := g.Resume(ctx, "customer-7", graph.WithResumeValue(map[string]tool.Result{"c1": tool.Text("confirmed")}))
	require.NoError(t, err)
	assert.Equal(t, "billing", out.Active, "the transfer answered before the pause still hands control over")
	assert.Equal(t, "billing here", agent.FinalText(out.Messages))
	assert.Equal(t, 1, front.Calls(), "the agent that transferred is not asked again")
	assert.Equal(t, []string{"user", "front→transfer_to_billing", "billing"}, speakers(out.Messages))
}

// An agent's filters are written for its own tools: an allow-list or a
// selector does not hide the swarm's transfer tools, nor leave their calls
// to the caller.
func TestSwarmFiltersLeaveTheTransferToolsAlone(t *testing.T) {
	price := tool.MustFunc("price", "prices an item", func(context.Context, struct{}) (string, error) { return "3€", nil })
	stock := tool.MustFunc("stock", "counts an item", func(context.Context, struct{}) (string, error) { return "12", nil })
	var offered [][]string
	onlyPrice := tool.SelectorFunc(func(_ context.Context, tools []tool.Tool) ([]tool.Tool, error) {
		var names []string
		for _, x := range tools {
			names = append(names, tool.Name(x))
		}
		offered = append(offered, names)
		return tools[:1], nil
	})
	triage := scripted.New(scripted.CallTools(scripted.Call(agent.TransferToolName("sales"), `{}`)))
	g, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "triage", Model: triage, Options: []agent.Option{
			agent.WithTools(price, stock),
			agent.WithResolveOptions(
				tool.VisibleIf(tool.AllowNames("price", "stock")),
				tool.ExecutableIf(tool.AllowNames("stock")),
				tool.SelectWith(onlyPrice)),
		}},
		{Name: "sales", Model: scripted.New(scripted.Reply("Sales here."))},
	})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("hi").Chat})
	require.NoError(t, err)
	assert.Equal(t, "Sales here.", agent.FinalText(out.Messages), "the transfer ran")
	assert.Equal(t, []string{"price", "transfer_to_sales"}, toolNames(triage.Requests()[0]))
	assert.Equal(t, [][]string{{"price", "stock"}}, offered, "the selector sees the agent's own tools")
}
