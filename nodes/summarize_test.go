package nodes_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
)

// chatWithTools is a system prompt and two turns, each a tool call with
// its result and an answer: short by the estimate.
func chatWithTools() []model.Message {
	call := func(id string) model.Message {
		return model.Assistant("", model.ToolCall{ID: id, Name: "t", Arguments: []byte(`{}`)})
	}
	res := func(id string) model.Message { return model.ToolMessage(id, "t", false, model.TextPart("result "+id)) }
	return []model.Message{
		model.System("sys"),
		model.User("one"), call("a"), res("a"), model.Assistant("answer one"),
		model.User("two"), call("b"), res("b"), model.Assistant("answer two"),
	}
}

// hundredPerMessage counts 100 tokens a message, whatever its text.
var hundredPerMessage = modelmw.TokenCounterFunc(func(_ context.Context, req *model.Request) (int, error) {
	return 100 * len(req.Messages), nil
})

func TestSummarizeNodeGoesByTheCounter(t *testing.T) {
	msgs := chatWithTools()
	require.Less(t, modelmw.EstimateTokens(&model.Request{Messages: msgs}), 500)
	summarizer := scripted.New(scripted.Reply("older turns"))
	node := nodes.Summarize[agentState](summarizer, nodes.SummaryPolicy{MaxTokens: 500, KeepTokens: 300, Counter: hundredPerMessage})
	var s agentState
	s.Messages = msgs
	out, err := node(t.Context(), s)
	require.NoError(t, err)
	require.Equal(t, 1, summarizer.Calls(), "900 tokens by the counter are over 500")
	got := out.Messages
	require.Len(t, got, 5)
	assert.Equal(t, "sys", got[0].Text())
	assert.Equal(t, "true", got[1].Metadata[nodes.MetaSummary])
	// The end that 300 tokens keep: the last call with its result, and
	// the answer.
	assert.Equal(t, "b", got[2].ToolCalls[0].ID)
	assert.Equal(t, "b", got[3].ToolCallID)
	assert.Equal(t, "answer two", got[4].Text())

	// Within the limit by the counter: left alone.
	summarizer = scripted.New()
	node = nodes.Summarize[agentState](summarizer, nodes.SummaryPolicy{MaxTokens: 900, Counter: hundredPerMessage})
	out, err = node(t.Context(), s)
	require.NoError(t, err)
	assert.Zero(t, summarizer.Calls())
	assert.Len(t, out.Messages, len(msgs))
}

func TestSummarizeNodeFailsWhenTheCounterFails(t *testing.T) {
	errCount := errors.New("count endpoint down")
	for _, failAt := range []int{1, 2} {
		calls := 0
		c := modelmw.TokenCounterFunc(func(context.Context, *model.Request) (int, error) {
			calls++
			if calls >= failAt {
				return 0, errCount
			}
			return 10_000, nil
		})
		summarizer := scripted.New(scripted.Reply("older turns"))
		node := nodes.Summarize[agentState](summarizer, nodes.SummaryPolicy{MaxTokens: 500, Counter: c})
		var s agentState
		s.Messages = chatWithTools()
		_, err := node(t.Context(), s)
		require.ErrorIs(t, err, errCount, "failing at count %d", failAt)
		assert.Contains(t, err.Error(), "summarize")
		assert.Zero(t, summarizer.Calls())
	}
}
