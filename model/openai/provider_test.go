package openai_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

// Provider parts belong to another provider (Anthropic's server tool
// blocks, say): they are left out of the request wherever they are, and
// the request is the one the conversation without them makes.
func TestProviderPartsAreLeftOut(t *testing.T) {
	block := model.ProviderPart("application/vnd.anthropic.content-block+json",
		json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}`))
	call := model.ToolCall{ID: "call_1", Name: "f", Arguments: json.RawMessage(`{}`)}
	with := []model.Message{
		{Role: model.RoleSystem, Content: []model.Part{model.TextPart("Be brief."), block}},
		{Role: model.RoleUser, Content: []model.Part{block, model.TextPart("Weather?")}},
		{Role: model.RoleAssistant, Content: []model.Part{model.TextPart("Searching."), block, block}, ToolCalls: []model.ToolCall{call}},
		model.ToolMessage("call_1", "f", false, model.TextPart("sunny"), block),
		{Role: model.RoleAssistant, Content: []model.Part{block}},
	}
	without := []model.Message{
		model.System("Be brief."),
		{Role: model.RoleUser, Content: []model.Part{model.TextPart("Weather?")}},
		{Role: model.RoleAssistant, Content: []model.Part{model.TextPart("Searching.")}, ToolCalls: []model.ToolCall{call}},
		model.ToolMessage("call_1", "f", false, model.TextPart("sunny")),
		{Role: model.RoleAssistant},
	}
	sent := func(msgs []model.Message) string {
		s := newServer(t, jsonReply(200, completionText))
		m, _ := newModel(t, s)
		_, err := m.Generate(context.Background(), &model.Request{Messages: msgs})
		require.NoError(t, err)
		var body map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
		return string(body["messages"])
	}
	got := sent(with)
	assert.JSONEq(t, sent(without), got)
	assert.NotContains(t, got, "srvtoolu_1")
}
