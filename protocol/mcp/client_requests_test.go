package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// The handlers are called directly here; client_run_test.go and
// serve_roundtrip_test.go run them over sessions.
func TestToolsetAnswersElicitationWithDefaultsAndSampling(t *testing.T) {
	ts, err := New(Config{Name: "x", URL: "http://127.0.0.1:1/mcp"},
		WithElicitation(func(_ context.Context, r tool.ElicitRequest) (tool.ElicitResult, error) {
			assert.Equal(t, "who?", r.Message)
			return tool.ElicitResult{Action: "accept", Content: map[string]any{"age": 36}}, nil
		}),
		WithSampling(func(_ context.Context, r tool.SamplingRequest) (tool.SamplingResult, error) {
			assert.Equal(t, "2+2?", r.Messages[0].Text())
			return tool.SamplingResult{Message: model.Message{Role: model.RoleAssistant, Content: []model.Part{model.TextPart("4")}}, Model: "m"}, nil
		}))
	require.NoError(t, err)
	defer ts.Close()
	co := ts.clientOptions()

	e, err := co.ElicitationHandler(t.Context(), &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: "who?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string", "default": "Ada"}, "age": map[string]any{"type": "integer"}}}}})
	require.NoError(t, err)
	assert.Equal(t, &sdk.ElicitResult{Action: "accept", Content: map[string]any{"age": 36, "name": "Ada"}}, e)

	s, err := co.CreateMessageHandler(t.Context(), &sdk.CreateMessageRequest{Params: &sdk.CreateMessageParams{
		Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "2+2?"}}}}})
	require.NoError(t, err)
	assert.Equal(t, "4", s.Content.(*sdk.TextContent).Text)
	assert.Equal(t, "m", s.Model)
}
