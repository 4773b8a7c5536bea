package nodes_test

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// countingModel counts how a model is called: one-shot or streaming.
type countingModel struct {
	*scripted.Model
	generates, streams atomic.Int32
}

func (m *countingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.generates.Add(1)
	return m.Model.Generate(ctx, req)
}

func (m *countingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	m.streams.Add(1)
	return m.Model.Stream(ctx, req)
}

func TestLLMNodeSystemPromptFuncReadsTheRunState(t *testing.T) {
	m := scripted.New(scripted.Reply("ok"))
	g := llmGraph(t, m,
		nodes.WithSystemPromptFunc(func(ctx context.Context) string {
			s, ok := tool.RunState[agentState](ctx)
			if !ok {
				return "no state"
			}
			return "Talk about " + s.Topic + "."
		}),
		nodes.WithSystemPrompt("ignored: the function wins"),
		nodes.WithTools(weatherTool(t)))
	_, err := g.Invoke(context.Background(), agentState{Topic: "graphs", Chat: nodes.Chat{Messages: []model.Message{model.User("hi")}}})
	require.NoError(t, err)
	req := m.Requests()[0]
	require.Equal(t, model.RoleSystem, req.Messages[0].Role)
	assert.Equal(t, "Talk about graphs.\n\nUse get_weather for weather questions.", req.Messages[0].Text(),
		"the prompt is computed from the state, and the tools' instructions follow it")
}

func TestLLMNodeWithoutPromptSendsNoSystemMessage(t *testing.T) {
	m := scripted.New(scripted.Reply("ok"))
	g := llmGraph(t, m)
	_, err := g.Invoke(context.Background(), user("hi"))
	require.NoError(t, err)
	req := m.Requests()[0]
	require.Len(t, req.Messages, 1)
	assert.Equal(t, model.RoleUser, req.Messages[0].Role)
	assert.Empty(t, req.Tools)
}

func TestLLMNodeModelNameAndToolChoice(t *testing.T) {
	m := scripted.New(scripted.Reply("ok"))
	choice := model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"}
	g := llmGraph(t, m, nodes.WithModelName("big-model"), nodes.WithToolChoice(choice), nodes.WithTools(weatherTool(t)))
	var starts []nodes.ModelCall
	for ev, err := range g.Stream(context.Background(), user("hi"), graph.WithModes(graph.ModeEvents)) {
		require.NoError(t, err)
		if ev.Kind == nodes.KindModelStart {
			starts = append(starts, ev.Payload.(nodes.ModelCall))
		}
	}
	req := m.Requests()[0]
	assert.Equal(t, "big-model", req.Model)
	assert.Equal(t, choice, req.ToolChoice)
	require.Len(t, starts, 1)
	assert.Equal(t, "big-model", starts[0].Model, "events name the model the request asked for")
	assert.Equal(t, 1, starts[0].Tools)
}

func TestLLMNodeStreamingOption(t *testing.T) {
	t.Run("on without listeners", func(t *testing.T) {
		m := &countingModel{Model: scripted.New(scripted.Reply("streamed reply"))}
		g := llmGraph(t, m, nodes.WithStreaming(true))
		out, err := g.Invoke(context.Background(), user("hi"))
		require.NoError(t, err)
		assert.Equal(t, int32(1), m.streams.Load())
		assert.Equal(t, int32(0), m.generates.Load())
		assert.Equal(t, "streamed reply", out.Messages[1].Text(), "the chunks are assembled into the reply")
	})
	t.Run("off with listeners", func(t *testing.T) {
		m := &countingModel{Model: scripted.New(scripted.Reply("one shot"))}
		g := llmGraph(t, m, nodes.WithStreaming(false))
		deltas := 0
		var final agentState
		for ev, err := range g.Stream(context.Background(), user("hi"), graph.WithModes(graph.ModeMessages|graph.ModeValues)) {
			require.NoError(t, err)
			switch ev.Kind {
			case nodes.KindModelDelta:
				deltas++
			case graph.KindDone:
				final = ev.State.(agentState)
			}
		}
		assert.Zero(t, deltas, "no token events when streaming is off")
		assert.Equal(t, int32(0), m.streams.Load())
		assert.Equal(t, int32(1), m.generates.Load())
		require.Len(t, final.Messages, 2)
		assert.Equal(t, "one shot", final.Messages[1].Text())
	})
	t.Run("default follows the listeners", func(t *testing.T) {
		m := &countingModel{Model: scripted.New(scripted.Reply("a"), scripted.Reply("b"))}
		g := llmGraph(t, m)
		_, err := g.Invoke(context.Background(), user("hi"))
		require.NoError(t, err)
		for _, err := range g.Stream(context.Background(), user("hi"), graph.WithModes(graph.ModeMessages)) {
			require.NoError(t, err)
		}
		assert.Equal(t, int32(1), m.generates.Load(), "Invoke: nobody listens to tokens")
		assert.Equal(t, int32(1), m.streams.Load(), "Stream with ModeMessages: tokens are wanted")
	})
}

func TestSetModelResponseToolForcedOnANativeModel(t *testing.T) {
	m := scripted.New(scripted.CallTools(scripted.Call(tool.SetModelResponseName, `{"label":"ham","score":0.2}`)))
	m.StructuredOutput = true
	g := llmGraph(t, m, nodes.WithStructuredOutput[verdict](), nodes.WithSetModelResponseTool())
	out, err := g.Invoke(context.Background(), user("classify: hello"))
	require.NoError(t, err)
	req := m.Requests()[0]
	assert.Nil(t, req.ResponseFormat, "the native format is not used")
	require.Len(t, req.Tools, 1)
	assert.Equal(t, tool.SetModelResponseName, req.Tools[0].Name)
	v, err := nodes.Structured[verdict](out.Messages[len(out.Messages)-1])
	require.NoError(t, err)
	assert.Equal(t, verdict{Label: "ham", Score: 0.2}, v)
}

func TestStructuredOutputInvalidAnswerGoesBackToTheModel(t *testing.T) {
	// An answer outside the schema stays a tool call: the ToolsNode answers
	// it with the validation error, and the model tries again.
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", tool.SetModelResponseName, `{"label":"maybe","score":0.5}`)),
		scripted.CallTools(scripted.CallWithID("c2", tool.SetModelResponseName, `{"label":"spam","score":0.5}`)),
	)
	structured := nodes.WithStructuredOutput[verdict]()
	b := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m, structured)).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](b, "tools", "llm", structured)
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), user("classify"))
	require.NoError(t, err)
	require.Len(t, out.Messages, 4)
	assert.Equal(t, "c1", out.Messages[1].ToolCalls[0].ID)
	assert.True(t, out.Messages[2].IsError, "the invalid answer is refused")
	assert.Contains(t, out.Messages[2].Text(), "$.label", "with the validation error, not as an unknown tool")
	v, err := nodes.Structured[verdict](out.Messages[3])
	require.NoError(t, err)
	assert.Equal(t, "spam", v.Label)
}

// topicTools is a toolset whose tools depend on the run's state: a math
// topic gets the calculator, anything else the weather.
type topicTools struct {
	calls atomic.Int32
	fail  error
}

func (s *topicTools) Name() string { return "by topic" }
func (s *topicTools) Close() error { return nil }
func (s *topicTools) Tools(ctx context.Context) ([]tool.Tool, error) {
	s.calls.Add(1)
	if s.fail != nil {
		return nil, s.fail
	}
	st, _ := tool.RunState[agentState](ctx)
	if st.Topic == "math" {
		return []tool.Tool{tool.MustFunc("add", "adds", func(_ context.Context, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (int, error) {
			return in.A + in.B, nil
		})}, nil
	}
	return []tool.Tool{tool.MustFunc("get_weather", "weather", func(_ context.Context, in weatherIn) (string, error) {
		return "rain in " + in.City, nil
	})}, nil
}

func TestToolsetsAreResolvedPerRunFromTheState(t *testing.T) {
	set := &topicTools{}
	m := scripted.New(
		scripted.CallTools(scripted.Call("add", `{"a":2,"b":3}`)), scripted.Reply("5"),
		scripted.CallTools(scripted.Call("get_weather", `{"city":"Oslo"}`)), scripted.Reply("rainy"),
	)
	b := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m, nodes.WithToolsets(set))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](b, "tools", "llm", nodes.WithToolsets(set))
	g, err := b.Compile()
	require.NoError(t, err)

	math, err := g.Invoke(context.Background(), agentState{Topic: "math", Chat: nodes.Chat{Messages: []model.Message{model.User("2+3?")}}})
	require.NoError(t, err)
	assert.Equal(t, "5", math.Messages[2].Text(), "the ToolsNode ran the tool the state selected")
	weather, err := g.Invoke(context.Background(), agentState{Topic: "travel", Chat: nodes.Chat{Messages: []model.Message{model.User("Oslo?")}}})
	require.NoError(t, err)
	assert.Equal(t, "rain in Oslo", weather.Messages[2].Text())

	reqs := m.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "add", reqs[0].Tools[0].Name)
	assert.Equal(t, "get_weather", reqs[2].Tools[0].Name)
	assert.Equal(t, int32(6), set.calls.Load(), "resolved on every model call and every batch")
}

func TestToolsetErrorFailsTheNode(t *testing.T) {
	set := &topicTools{fail: errors.New("registry unreachable")}
	m := scripted.New(scripted.Reply("never sent"))
	g := llmGraph(t, m, nodes.WithToolsets(set))
	_, err := g.Invoke(context.Background(), user("hi"))
	require.ErrorContains(t, err, "registry unreachable")
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "llm", ne.Node)
	assert.Zero(t, m.Calls(), "the model is not called without its tools")
}

func TestResolveOptionsHideToolsAndLeaveCallsToTheCaller(t *testing.T) {
	var ran atomic.Int32
	lookup := tool.MustFunc("lookup", "looks up", func(_ context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		ran.Add(1)
		return "found " + in.Q, nil
	})
	pay := tool.MustFunc("pay", "pays", func(_ context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		ran.Add(1)
		return "paid", nil
	})
	secret := tool.MustFunc("secret", "hidden", func(context.Context, struct{}) (string, error) {
		ran.Add(1)
		return "leaked", nil
	})
	opts := nodes.WithResolveOptions(
		tool.VisibleIf(tool.DenyNames("secret")),
		tool.ExecutableIf(tool.DenyNames("pay")),
	)
	m := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("c1", "lookup", `{"q":"x"}`),
			scripted.CallWithID("c2", "pay", `{"amount":5}`),
			scripted.CallWithID("c3", "secret", `{}`),
		),
		scripted.Reply("done"),
	)
	b := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m, nodes.WithTools(lookup, pay, secret), opts)).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](b, "tools", "llm", nodes.WithTools(lookup, pay, secret), opts)
	g, err := b.Compile(graph.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()

	_, err = g.Invoke(ctx, user("pay for x"), graph.WithThread("t1"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	pending := ie.Interrupts[0].Payload.(nodes.PendingToolCalls)
	require.Len(t, pending.Calls, 1)
	assert.Equal(t, "c2", pending.Calls[0].ID, "pay is left to the caller")

	var offered []string
	for _, d := range m.Requests()[0].Tools {
		offered = append(offered, d.Name)
	}
	assert.Equal(t, []string{"lookup", "pay"}, offered, "secret is not shown to the model")

	out, err := g.Resume(ctx, "t1", graph.WithResumeValue(map[string]tool.Result{"c2": tool.Text("paid by the caller")}))
	require.NoError(t, err)
	byID := map[string]model.Message{}
	for _, msg := range out.Messages {
		if msg.Role == model.RoleTool {
			byID[msg.ToolCallID] = msg
		}
	}
	assert.Equal(t, "found x", byID["c1"].Text())
	assert.Equal(t, "paid by the caller", byID["c2"].Text())
	assert.True(t, byID["c3"].IsError, "a hidden tool is an unknown tool")
	assert.Contains(t, byID["c3"].Text(), "secret")
	assert.Equal(t, int32(1), ran.Load(), "only lookup ran in-process")
	assert.Equal(t, "done", out.Messages[len(out.Messages)-1].Text())
}

func TestHopLimitErrorNamesTheToolsAndTheLimit(t *testing.T) {
	err := &nodes.HopLimitError{Limit: 4, LastReply: model.Assistant("", scripted.Call("a", `{}`), scripted.Call("b", `{}`))}
	assert.Equal(t, "nodes: the model asked for tools (a, b) after 4 round trips, the limit", err.Error())
	assert.ErrorIs(t, err, nodes.ErrHopLimit)
}

// silentModel answers with neither a response nor an error.
type silentModel struct{}

func (silentModel) Generate(context.Context, *model.Request) (*model.Response, error) {
	return nil, nil
}

func (silentModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(func(model.Chunk, error) bool) {}
}

func TestLLMNodeRejectsAModelThatReturnsNothing(t *testing.T) {
	g := llmGraph(t, silentModel{})
	out, err := g.Invoke(context.Background(), user("hi"))
	require.ErrorContains(t, err, "the model returned neither a response nor an error")
	assert.NotContains(t, err.Error(), "panic")
	assert.Len(t, out.Messages, 1, "nothing is appended")
}

func TestStructuredOutputAcceptsAJSONTextAnswer(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       *verdict // nil: the text stays as it came
	}{
		{"bare JSON", `{"label":"ham","score":"0.25"}`, &verdict{Label: "ham", Score: 0.25}},
		{"fenced JSON", "```json\n{\"label\":\"spam\",\"score\":1}\n```", &verdict{Label: "spam", Score: 1}},
		{"JSON outside the schema", `{"label":"maybe","score":1}`, nil},
		{"prose", "It is probably spam.", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Reply(c.text))
			g := llmGraph(t, m, nodes.WithStructuredOutput[verdict]())
			out, err := g.Invoke(context.Background(), user("classify"))
			require.NoError(t, err)
			last := out.Messages[len(out.Messages)-1]
			if c.want == nil {
				assert.Equal(t, c.text, last.Text())
				return
			}
			v, err := nodes.Structured[verdict](last)
			require.NoError(t, err)
			assert.Equal(t, *c.want, v, "validated and coerced like a call of the tool")
		})
	}
}

// The LLM node's prompt functions and toolsets read the node's own
// conversation, even inside a run started by a tool that carries its
// caller's (a handoff's nested agent, say).
func TestLLMNodeContextCarriesItsOwnConversation(t *testing.T) {
	m := scripted.New(scripted.Reply("ok"))
	var seen []model.Message
	g := llmGraph(t, m, nodes.WithSystemPromptFunc(func(ctx context.Context) string {
		seen = tool.Conversation(ctx)
		return "prompt"
	}))
	caller := []model.Message{model.User("the caller's question"), model.Assistant("the caller's answer")}
	ctx := tool.WithConversation(context.Background(), caller)
	_, err := g.Invoke(ctx, user("the nested agent's task"))
	require.NoError(t, err)
	require.Len(t, seen, 1)
	assert.Equal(t, "the nested agent's task", seen[0].Text())
}
