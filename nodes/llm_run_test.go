package nodes_test

import (
	"context"
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

// emptyStream streams nothing at all, neither a chunk nor an error, the way
// a connection that closes early can.
type emptyStream struct{ silentModel }

func (emptyStream) Generate(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Message: model.Assistant("never used")}, nil
}

func (emptyStream) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(func(model.Chunk, error) bool) {}
}

func TestLLMNodeRejectsAStreamWithoutChunks(t *testing.T) {
	g := llmGraph(t, emptyStream{}, nodes.WithStreaming(true))
	out, err := g.Invoke(context.Background(), user("hi"))
	require.ErrorContains(t, err, "the model returned neither a response nor an error",
		"an empty stream is what a nil response is to Generate")
	assert.Len(t, out.Messages, 1, "no empty reply is appended")
}

func TestToolChoiceTheRunCannotSatisfyIsNotSent(t *testing.T) {
	weather := weatherTool(t)
	hideWeather := nodes.WithResolveOptions(tool.VisibleIf(tool.DenyNames("get_weather")))
	for _, c := range []struct {
		name   string
		choice model.ToolChoice
		opts   []nodes.LLMOption
		want   model.ToolChoice
	}{
		{"the named tool is offered", model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"},
			[]nodes.LLMOption{nodes.WithTools(weather)}, model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"}},
		{"the named tool is filtered out", model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"},
			[]nodes.LLMOption{nodes.WithTools(weather), hideWeather}, model.ToolChoice{}},
		{"required with every tool filtered out", model.ToolChoice{Mode: model.ToolChoiceRequired},
			[]nodes.LLMOption{nodes.WithTools(weather), hideWeather}, model.ToolChoice{}},
		{"required without tools", model.ToolChoice{Mode: model.ToolChoiceRequired}, nil, model.ToolChoice{}},
		{"required with tools", model.ToolChoice{Mode: model.ToolChoiceRequired},
			[]nodes.LLMOption{nodes.WithTools(weather)}, model.ToolChoice{Mode: model.ToolChoiceRequired}},
		{"none with tools", model.ToolChoice{Mode: model.ToolChoiceNone},
			[]nodes.LLMOption{nodes.WithTools(weather)}, model.ToolChoice{Mode: model.ToolChoiceNone}},
		{"the set-model-response tool on a native model", model.ToolChoice{Mode: model.ToolChoiceTool, Name: tool.SetModelResponseName},
			[]nodes.LLMOption{nodes.WithStructuredOutput[verdict]()}, model.ToolChoice{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Reply(`{"label":"ham","score":1}`))
			m.StructuredOutput = true
			_, err := llmGraph(t, m, append(c.opts, nodes.WithToolChoice(c.choice))...).Invoke(context.Background(), user("hi"))
			require.NoError(t, err)
			assert.Equal(t, c.want, m.Requests()[0].ToolChoice)
		})
	}
}

func toolNames(defs []model.ToolDefinition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// TestStructuredOutputToolIsNotSubjectToToolFilters gives a node's own
// tools filters that know nothing of the set-model-response tool: the model
// is still offered it and told how to use it, and the ToolsNode still
// answers an invalid answer with the validation error.
func TestStructuredOutputToolIsNotSubjectToToolFilters(t *testing.T) {
	onlyWeather := tool.SelectorFunc(func(_ context.Context, ts []tool.Tool) ([]tool.Tool, error) {
		var out []tool.Tool
		for _, t := range ts {
			if tool.Name(t) == "get_weather" {
				out = append(out, t)
			}
		}
		return out, nil
	})
	for name, filter := range map[string]nodes.Option{
		"visible":    nodes.WithResolveOptions(tool.VisibleIf(tool.AllowNames("get_weather"))),
		"executable": nodes.WithResolveOptions(tool.ExecutableIf(tool.AllowNames("get_weather"))),
		"selector":   nodes.WithResolveOptions(tool.SelectWith(onlyWeather)),
	} {
		t.Run(name, func(t *testing.T) {
			m := scripted.New(
				scripted.CallTools(scripted.CallWithID("c1", tool.SetModelResponseName, `{"label":"maybe","score":0.5}`)),
				scripted.CallTools(scripted.CallWithID("c2", tool.SetModelResponseName, `{"label":"spam","score":0.5}`)),
			)
			structured := nodes.WithStructuredOutput[verdict]()
			weather := nodes.WithTools(weatherTool(t))
			b := graph.New[agentState]().
				AddNode("llm", nodes.LLM[agentState](m, weather, filter, structured)).
				AddEdge(graph.START, "llm").
				AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
			nodes.AddTools[agentState](b, "tools", "llm", weather, filter, structured)
			g, err := b.Compile(graph.WithCheckpointer(memory.New()))
			require.NoError(t, err)
			out, err := g.Invoke(context.Background(), user("classify"), graph.WithThread("t"))
			require.NoError(t, err, "the invalid answer is not left to the caller")

			req := m.Requests()[0]
			assert.Equal(t, []string{"get_weather", tool.SetModelResponseName}, toolNames(req.Tools))
			assert.Contains(t, req.Messages[0].Text(), "Use get_weather for weather questions.")
			assert.Contains(t, req.Messages[0].Text(), tool.SetModelResponseName, "the model is told to answer through the tool")

			require.Len(t, out.Messages, 4)
			assert.True(t, out.Messages[2].IsError)
			assert.Contains(t, out.Messages[2].Text(), "$.label", "with the validation error, not as an unknown tool")
			v, err := nodes.Structured[verdict](out.Messages[3])
			require.NoError(t, err)
			assert.Equal(t, "spam", v.Label)
		})
	}
}

// ownResponseTool is a tool of the application that has the name of the
// set-model-response tool.
func ownResponseTool() tool.Tool {
	return tool.MustFunc(tool.SetModelResponseName, "mine", func(context.Context, struct{}) (string, error) { return "", nil })
}

func TestStructuredOutputToolNameTakenByAnotherTool(t *testing.T) {
	for name, opts := range map[string][]nodes.LLMOption{
		"unfiltered": {nodes.WithTools(ownResponseTool())},
		"filtered":   {nodes.WithTools(ownResponseTool()), nodes.WithResolveOptions(tool.VisibleIf(tool.DenyNames("x")))},
	} {
		t.Run(name, func(t *testing.T) {
			m := scripted.New(scripted.Reply("never sent"))
			_, err := llmGraph(t, m, append(opts, nodes.WithStructuredOutput[verdict]())...).Invoke(context.Background(), user("hi"))
			var de *tool.DuplicateToolError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tool.SetModelResponseName, de.Name)
			assert.Zero(t, m.Calls())
		})
	}
}

// TestStructuredOutputToolFollowsTheResolvedTools offers the
// set-model-response tool after the node's tools, static or resolved per
// call.
func TestStructuredOutputToolFollowsTheResolvedTools(t *testing.T) {
	set := &countingSet{tools: []tool.Tool{weatherTool(t)}}
	m := scripted.New(scripted.Reply("a"), scripted.Reply("b"))
	g := llmGraph(t, m, nodes.WithToolsets(tool.NewStatic("static", weatherTool(t))), nodes.WithStructuredOutput[verdict]())
	for range 2 {
		_, err := g.Invoke(context.Background(), user("hi"))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"get_weather", tool.SetModelResponseName}, toolNames(m.Requests()[1].Tools))

	m = scripted.New(scripted.Reply("a"), scripted.Reply("b"))
	g = llmGraph(t, m, nodes.WithToolsets(set), nodes.WithStructuredOutput[verdict]())
	for range 2 {
		_, err := g.Invoke(context.Background(), user("hi"))
		require.NoError(t, err)
	}
	assert.Equal(t, int32(2), set.calls.Load(), "a dynamic toolset is resolved on every call")
	assert.Equal(t, []string{"get_weather", tool.SetModelResponseName}, toolNames(m.Requests()[1].Tools))
}

type countingSet struct {
	calls atomic.Int32
	tools []tool.Tool
}

func (s *countingSet) Name() string { return "counting" }
func (s *countingSet) Close() error { return nil }
func (s *countingSet) Tools(context.Context) ([]tool.Tool, error) {
	s.calls.Add(1)
	return s.tools, nil
}

func TestNilOptionsAreIgnored(t *testing.T) {
	var (
		llmOpt   nodes.LLMOption
		toolsOpt nodes.ToolsOption
		shared   nodes.Option
	)
	m := scripted.New(scripted.CallTools(scripted.Call("get_weather", `{"city":"Oslo"}`)), scripted.Reply("done"))
	require.NotPanics(t, func() {
		b := graph.New[agentState]().
			AddNode("llm", nodes.LLM[agentState](m, llmOpt, nodes.WithTools(weatherTool(t)), shared)).
			AddEdge(graph.START, "llm").
			AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
		nodes.AddTools[agentState](b, "tools", "llm", toolsOpt, nodes.WithTools(weatherTool(t)), shared)
		g, err := b.Compile()
		require.NoError(t, err)
		out, err := g.Invoke(context.Background(), user("weather?"))
		require.NoError(t, err)
		assert.Equal(t, "done", out.Messages[len(out.Messages)-1].Text())
	})
}

func TestStructuredOutputTakesAValidAnswerAfterAnInvalidOne(t *testing.T) {
	m := scripted.New(scripted.CallTools(
		scripted.CallWithID("c1", tool.SetModelResponseName, `{"label":"maybe","score":0.5}`),
		scripted.CallWithID("c2", tool.SetModelResponseName, `{"label":"spam","score":0.5}`),
	))
	g := llmGraph(t, m, nodes.WithStructuredOutput[verdict](), nodes.WithAgentName("judge"))
	out, err := g.Invoke(context.Background(), user("classify"))
	require.NoError(t, err)
	require.Len(t, out.Messages, 2)
	last := out.Messages[1]
	assert.False(t, last.HasToolCalls(), "the reply holds a valid answer: it is the final one")
	assert.Equal(t, "judge", last.Name)
	assert.NotEmpty(t, last.ID)
	v, err := nodes.Structured[verdict](last)
	require.NoError(t, err)
	assert.Equal(t, verdict{Label: "spam", Score: 0.5}, v)
}
