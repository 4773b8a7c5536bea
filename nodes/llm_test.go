package nodes_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

type agentState struct {
	nodes.Chat
	Topic string
}

type weatherIn struct {
	City string `json:"city" jsonschema:"description=City name"`
}

func weatherTool(t testing.TB) tool.Tool {
	return tool.MustFunc("get_weather", "Current weather of a city", func(_ context.Context, in weatherIn) (string, error) {
		return "sunny in " + in.City, nil
	}, tool.WithInstruction("Use get_weather for weather questions."))
}

func llmGraph(t *testing.T, m model.Model, opts ...nodes.LLMOption) *graph.Graph[agentState] {
	g, err := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m, opts...)).
		AddEdge(graph.START, "llm").
		Compile()
	require.NoError(t, err)
	return g
}

func TestLLMNodeSendsPromptToolsAndAppendsReply(t *testing.T) {
	m := scripted.New(scripted.Reply("It is sunny."))
	g := llmGraph(t, m,
		nodes.WithSystemPrompt("You are a weather bot."),
		nodes.WithTools(weatherTool(t)),
		nodes.WithAgentName("forecaster"),
		nodes.WithSettings(model.Settings{MaxTokens: 50}))
	out, err := g.Invoke(context.Background(), agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("weather in Paris?")}}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 2)
	reply := out.Messages[1]
	assert.Equal(t, model.RoleAssistant, reply.Role)
	assert.Equal(t, "It is sunny.", reply.Text())
	assert.Equal(t, "forecaster", reply.Name)
	assert.NotEmpty(t, reply.ID)

	reqs := m.Requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Len(t, req.Messages, 2)
	assert.Equal(t, model.RoleSystem, req.Messages[0].Role)
	assert.Equal(t, "You are a weather bot.\n\nUse get_weather for weather questions.", req.Messages[0].Text())
	assert.Equal(t, "weather in Paris?", req.Messages[1].Text())
	require.Len(t, req.Tools, 1)
	assert.Equal(t, "get_weather", req.Tools[0].Name)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"],"additionalProperties":false}`, string(req.Tools[0].InputSchema))
	assert.Equal(t, 50, req.Settings.MaxTokens)
}

func TestLLMNodeStreamsTokensWhenSomeoneListens(t *testing.T) {
	m := scripted.New(scripted.Reply("one two three"))
	g := llmGraph(t, m)
	var deltas []string
	var ends []nodes.ModelCall
	for ev, err := range g.Stream(context.Background(), agentState{}, graph.WithModes(graph.ModeMessages|graph.ModeEvents)) {
		require.NoError(t, err)
		switch ev.Kind {
		case nodes.KindModelDelta:
			deltas = append(deltas, ev.Payload.(model.Chunk).Text)
			assert.Equal(t, "llm", ev.Node)
		case nodes.KindModelEnd:
			ends = append(ends, ev.Payload.(nodes.ModelCall))
		case graph.KindDone:
			assert.Equal(t, "one two three", ev.State.(agentState).Messages[0].Text())
		}
	}
	assert.Greater(t, len(deltas), 1, "the reply arrives in several chunks")
	assert.Equal(t, "one two three", joinAll(deltas))
	require.Len(t, ends, 1)
	assert.Equal(t, "scripted", ends[0].Provider)
}

func joinAll(ss []string) string {
	out := ""
	for _, s := range ss {
		out += s
	}
	return out
}

type verdict struct {
	Label string  `json:"label" jsonschema:"enum=spam,enum=ham"`
	Score float64 `json:"score"`
}

func TestStructuredOutputThroughSetModelResponseTool(t *testing.T) {
	// The scripted model does not support response formats: the node offers
	// the set-model-response tool and turns its call into the final answer.
	m := scripted.New(scripted.CallTools(scripted.Call(tool.SetModelResponseName, `{"label":"spam","score":"0.9"}`)))
	g := llmGraph(t, m, nodes.WithStructuredOutput[verdict]())
	out, err := g.Invoke(context.Background(), agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("classify: WIN $$$")}}})
	require.NoError(t, err)
	last := out.Messages[len(out.Messages)-1]
	assert.False(t, last.HasToolCalls())
	v, err := nodes.Structured[verdict](last)
	require.NoError(t, err)
	assert.Equal(t, verdict{Label: "spam", Score: 0.9}, v, "the arguments were coerced and validated")
	req := m.Requests()[0]
	assert.Nil(t, req.ResponseFormat)
	require.Len(t, req.Tools, 1)
	assert.Equal(t, tool.SetModelResponseName, req.Tools[0].Name)
}

func TestStructuredOutputNative(t *testing.T) {
	m := scripted.New(scripted.Reply(`{"label":"ham","score":0.1}`))
	m.StructuredOutput = true
	g := llmGraph(t, m, nodes.WithStructuredOutput[verdict]())
	out, err := g.Invoke(context.Background(), agentState{})
	require.NoError(t, err)
	v, err := nodes.Structured[verdict](out.Messages[0])
	require.NoError(t, err)
	assert.Equal(t, "ham", v.Label)
	req := m.Requests()[0]
	require.NotNil(t, req.ResponseFormat)
	assert.Equal(t, "verdict", req.ResponseFormat.Name)
	assert.Empty(t, req.Tools)
}

func TestLLMNodeHopLimit(t *testing.T) {
	call := scripted.CallTools(scripted.Call("get_weather", `{"city":"x"}`))
	m := scripted.New(call)
	msgs := []model.Message{model.User("go")}
	for range 3 {
		msgs = append(msgs, model.Assistant("", scripted.Call("get_weather", `{"city":"x"}`)), model.ToolMessage("c", "get_weather", false, model.TextPart("ok")))
	}
	g := llmGraph(t, m, nodes.WithTools(weatherTool(t)), nodes.WithMaxHops(3))
	out, err := g.Invoke(context.Background(), agentState{Chat: nodes.Chat{Messages: msgs}})
	var he *nodes.HopLimitError
	require.ErrorAs(t, err, &he)
	require.ErrorIs(t, err, nodes.ErrHopLimit)
	assert.Equal(t, 3, he.Limit)
	assert.Equal(t, "get_weather", he.LastReply.ToolCalls[0].Name)
	assert.Len(t, out.Messages, len(msgs), "the reply is not committed")
}

func TestLLMNodeModelErrorFailsTheNode(t *testing.T) {
	m := scripted.New(scripted.Fail(errors.New("provider down")))
	g := llmGraph(t, m)
	_, err := g.Invoke(context.Background(), agentState{})
	require.ErrorContains(t, err, "provider down")
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "llm", ne.Node)
}

func TestToolsCondition(t *testing.T) {
	route := nodes.ToolsCondition[agentState]("tools")
	ctx := context.Background()
	assert.Equal(t, []string{graph.END}, route(ctx, agentState{}))
	withCalls := agentState{Chat: nodes.Chat{Messages: []model.Message{model.Assistant("", scripted.Call("x", `{}`))}}}
	assert.Equal(t, []string{"tools"}, route(ctx, withCalls))
	text := agentState{Chat: nodes.Chat{Messages: []model.Message{model.Assistant("done")}}}
	assert.Equal(t, []string{graph.END}, route(ctx, text))
}

// labelled is a generic answer type: its response format is named after
// the type, without its type arguments.
type labelled[T any] struct {
	Label T `json:"label"`
}

func TestStructuredOutputFormatNames(t *testing.T) {
	for name, opt := range map[string]nodes.Option{
		"verdict":  nodes.WithStructuredOutput[*verdict](),
		"labelled": nodes.WithStructuredOutput[labelled[verdict]](),
		"response": nodes.WithStructuredOutput[map[string]int](),
	} {
		t.Run(name, func(t *testing.T) {
			m := scripted.New(scripted.Reply(`{}`))
			m.StructuredOutput = true
			_, err := llmGraph(t, m, opt).Invoke(context.Background(), agentState{})
			require.NoError(t, err)
			req := m.Requests()[0]
			require.NotNil(t, req.ResponseFormat)
			assert.Equal(t, name, req.ResponseFormat.Name)
		})
	}
}

func TestForcedToolChoiceAppliesToTheTurnsFirstCall(t *testing.T) {
	echo := tool.MustFunc("echo", "echoes", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	run := func(t *testing.T, opts ...nodes.LLMOption) []model.ToolChoice {
		m := scripted.New(
			scripted.CallTools(scripted.Call("echo", `{"text":"a"}`)),
			scripted.Reply("done"),
			scripted.CallTools(scripted.Call("echo", `{"text":"b"}`)),
			scripted.Reply("done again"),
		)
		b := graph.New[agentState]().
			AddNode("llm", nodes.LLM[agentState](m, append([]nodes.LLMOption{nodes.WithTools(echo)}, opts...)...)).
			AddEdge(graph.START, "llm").
			AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
		nodes.AddTools[agentState](b, "tools", "llm", nodes.WithTools(echo))
		g, err := b.Compile()
		require.NoError(t, err)
		out, err := g.Invoke(context.Background(), user("go"))
		require.NoError(t, err)
		// The next turn forces its first call again.
		out.Messages = append(out.Messages, model.User("again"))
		_, err = g.Invoke(context.Background(), out)
		require.NoError(t, err)
		var got []model.ToolChoice
		for _, r := range m.Requests() {
			got = append(got, r.ToolChoice)
		}
		return got
	}
	required := model.ToolChoice{Mode: model.ToolChoiceRequired}
	assert.Equal(t, []model.ToolChoice{required, {}, required, {}},
		run(t, nodes.WithToolChoice(required)), "the call after the tools answered chooses freely")
	named := model.ToolChoice{Mode: model.ToolChoiceTool, Name: "echo"}
	assert.Equal(t, []model.ToolChoice{named, {}, named, {}}, run(t, nodes.WithToolChoice(named)))
	none := model.ToolChoice{Mode: model.ToolChoiceNone}
	assert.Equal(t, []model.ToolChoice{none, none, none, none}, run(t, nodes.WithToolChoice(none)), "a choice that forces nothing holds")
	assert.Equal(t, []model.ToolChoice{required, required, required, required},
		run(t, nodes.WithToolChoice(required), nodes.WithToolChoiceOnEveryCall()))
}
