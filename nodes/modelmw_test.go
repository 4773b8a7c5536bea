package nodes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
)

func TestModelEndEventsCarryTheRunsUsageSoFar(t *testing.T) {
	u := model.Usage{InputTokens: 10, OutputTokens: 5}
	m := scripted.New(scripted.CallTools(scripted.Call("echo", `{"text":"a"}`)).WithUsage(u), scripted.Reply("done").WithUsage(u))
	shout := modelmw.After(func(ctx context.Context, req *model.Request, resp *model.Response) (*model.Response, error) {
		out := *resp
		if text := resp.Message.Text(); text != "" {
			out.Message.Content = []model.Part{model.TextPart(strings.ToUpper(text))}
		}
		return &out, nil
	})
	b := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m, nodes.WithTools(echoTool()), nodes.WithModelMiddleware(shout))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](b, "tools", "llm", nodes.WithTools(echoTool()))
	g, err := b.Compile()
	require.NoError(t, err)
	ledger := modelmw.NewLedger()
	var runUsage []int
	var last agentState
	for ev, err := range g.Stream(modelmw.WithLedger(t.Context(), ledger), user("hi"), graph.WithModes(graph.ModeEvents|graph.ModeValues)) {
		require.NoError(t, err)
		if ev.Kind == nodes.KindModelEnd {
			runUsage = append(runUsage, ev.Payload.(nodes.ModelCall).RunUsage.TotalTokens)
		}
		if ev.Kind == graph.KindValues {
			last = ev.State.(agentState)
		}
	}
	assert.Equal(t, []int{15, 30}, runUsage)
	assert.Equal(t, 30, ledger.Total().TotalTokens)
	assert.Equal(t, "DONE", last.Messages[len(last.Messages)-1].Text(), "the node's calls go through its middleware")
}

func TestLLMNodeStoresWhatMiddlewareAddsToHistoryBeforeTheReply(t *testing.T) {
	note := modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		msg := model.System("a note for the thread")
		msg.Metadata = map[string]string{"kind": "note"}
		require.True(t, modelmw.AddToHistory(ctx, msg), "the LLM node takes history")
		return req, nil, nil
	})
	g, err := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](scripted.New(scripted.Reply("hello")), nodes.WithModelMiddleware(note))).
		AddEdge(graph.START, "llm").
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), user("hi"))
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)
	assert.Equal(t, "a note for the thread", out.Messages[1].Text())
	assert.Equal(t, "note", out.Messages[1].Metadata["kind"])
	assert.NotEmpty(t, out.Messages[1].ID, "a stored message gets an ID")
	assert.Equal(t, "hello", out.Messages[2].Text())

	// A call that fails stores nothing.
	failing := nodes.LLM[agentState](scripted.New(scripted.Fail(model.ErrOverloaded)), nodes.WithModelMiddleware(note))
	s, err := failing(t.Context(), user("hi"))
	require.Error(t, err)
	assert.Len(t, s.Messages, 1)
	assert.False(t, modelmw.AddToHistory(t.Context(), model.User("x")), "no history outside an LLM node")
}
