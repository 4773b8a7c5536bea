package model_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

const blockMIME = "application/vnd.example.block+json"

// A provider part is never text, and survives JSON as it is.
func TestProviderPart(t *testing.T) {
	p := model.ProviderPart(blockMIME, json.RawMessage(`{"type":"server_tool_use","id":"s1"}`))
	assert.Equal(t, model.Part{Type: model.PartProvider, MIMEType: blockMIME, JSON: json.RawMessage(`{"type":"server_tool_use","id":"s1"}`)}, p)
	msg := model.Message{Role: model.RoleAssistant, Content: []model.Part{model.TextPart("a"), p, model.TextPart("b")}}
	assert.Equal(t, "ab", msg.Text())
	assert.Empty(t, model.Message{Role: model.RoleAssistant, Content: []model.Part{p}}.Text())
	assert.False(t, p.IsReasoning())

	raw, err := json.Marshal(msg)
	require.NoError(t, err)
	var back model.Message
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, msg, back)
}

// Whole parts in a stream join the content after the text, in the order
// they arrive, and ResponseChunks replays them so that Collect gives the
// reply back.
func TestAccumulatorKeepsWholeParts(t *testing.T) {
	p1 := model.ProviderPart(blockMIME, json.RawMessage(`{"n":1}`))
	p2 := model.ProviderPart(blockMIME, json.RawMessage(`{"n":2}`))
	var a model.Accumulator
	a.Add(model.Chunk{Text: "Search"})
	a.Add(model.Chunk{Part: &p1})
	a.Add(model.Chunk{Reasoning: &model.ReasoningDelta{Index: 0, Text: "hm"}})
	a.Add(model.Chunk{Part: &p2})
	a.Add(model.Chunk{Text: "ed."})
	resp := a.Response()
	assert.Equal(t, []model.Part{model.ReasoningPart("hm", nil), model.TextPart("Searched."), p1, p2}, resp.Message.Content)

	// The accumulator keeps its own copy of the parts' bytes.
	p1.JSON[2] = 'X'
	resp.Message.Content[3].JSON[2] = 'Y'
	assert.JSONEq(t, `{"n":1}`, string(a.Response().Message.Content[2].JSON))
	assert.JSONEq(t, `{"n":2}`, string(a.Response().Message.Content[3].JSON))

	want := &model.Response{
		Message: model.Message{Role: model.RoleAssistant, Content: []model.Part{
			model.TextPart("Searched."),
			model.ProviderPart(blockMIME, json.RawMessage(`{"n":1}`)),
			model.ProviderPart(blockMIME, json.RawMessage(`{"n":2}`)),
		}, ToolCalls: []model.ToolCall{{ID: "c1", Name: "f", Arguments: json.RawMessage(`{}`)}}},
		Usage:        model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3},
		FinishReason: "tool_calls",
	}
	got, err := model.Collect(model.ResponseChunks(want))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
