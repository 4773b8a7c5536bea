package nodes_test

import (
	"context"
	"encoding/json"
	"iter"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

// sloppyServer behaves like OpenAI-compatible servers that send tool calls
// without IDs, or number them afresh every turn: its replies are given as
// they are, IDs and all.
type sloppyServer struct {
	mu      sync.Mutex
	replies []model.Message
	seen    []model.Request
}

func (m *sloppyServer) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen = append(m.seen, *req)
	reply := m.replies[0]
	m.replies = m.replies[1:]
	return &model.Response{Message: reply}, nil
}

func (m *sloppyServer) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		yield(model.Chunk{Text: resp.Message.Text()}, nil)
	}
}

func sloppyCall(id, city string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{"city":"` + city + `"}`)}
}

func TestToolCallsWithoutUsableIDsGetFreshOnes(t *testing.T) {
	var runs atomic.Int32
	weather := tool.MustFunc("get_weather", "weather", func(_ context.Context, in weatherIn) (string, error) {
		runs.Add(1)
		return "sun in " + in.City, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	m := &sloppyServer{replies: []model.Message{
		model.Assistant("", sloppyCall("", "Paris"), sloppyCall("", "Rome")),            // no IDs
		model.Assistant("", sloppyCall("call_0", "Oslo"), sloppyCall("call_0", "Bern")), // one ID twice
		model.Assistant("", sloppyCall("call_0", "Lima")),                               // an ID of an earlier turn
		model.Assistant("done"),
	}}
	b := graph.New[agentState](nodes.MessagesReducer[agentState]()).
		AddNode("llm", nodes.LLM[agentState](m, nodes.WithTools(weather))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](b, "tools", "llm", nodes.WithTools(weather))
	g, err := b.Compile()
	require.NoError(t, err)

	out, err := g.Invoke(context.Background(), user("weather?"))
	require.NoError(t, err)
	assert.Equal(t, int32(5), runs.Load(), "every call ran once")
	assert.Equal(t, "done", out.Messages[len(out.Messages)-1].Text())

	// Every call has an ID of its own, answered by exactly one tool message
	// that follows it, in order: what providers require of a conversation.
	ids := map[string]bool{}
	var answers []string
	for i, msg := range out.Messages {
		for _, c := range msg.ToolCalls {
			require.NotEmpty(t, c.ID)
			require.False(t, ids[c.ID], "call ID %q used twice", c.ID)
			ids[c.ID] = true
		}
		if msg.Role == model.RoleTool {
			require.True(t, ids[msg.ToolCallID], "message %d answers an unknown call %q", i, msg.ToolCallID)
			answers = append(answers, msg.Text())
		}
	}
	assert.Len(t, ids, 5)
	assert.Equal(t, []string{"sun in Paris", "sun in Rome", "sun in Oslo", "sun in Bern", "sun in Lima"}, answers)
	assert.Len(t, out.Messages, 1+3+3+2+1, "no tool message replaced another")

	// A usable ID is kept as it came.
	assert.Equal(t, "call_0", out.Messages[4].ToolCalls[0].ID)
	assert.NotEqual(t, "call_0", out.Messages[4].ToolCalls[1].ID)
	assert.Len(t, m.seen, 4)
}
