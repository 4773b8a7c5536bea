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
