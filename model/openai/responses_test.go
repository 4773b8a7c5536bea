package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/openai"
)

// responsesSSE writes events as the Responses API does: "event: type" and
// "data: json" per event, no end marker.
func responsesSSE(events []string) replyFunc {
	return func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal([]byte(e), &head)
			_, _ = io.WriteString(w, "event: "+head.Type+"\ndata: "+e+"\n\n")
			w.(http.Flusher).Flush()
		}
	}
}

func TestResponsesAPISendsTheConversationAsInputItems(t *testing.T) {
	s := newServer(t, sequence(jsonReply(http.StatusOK, responseReasoningCall), jsonReply(http.StatusOK, responseWebSearch)))
	m, _ := newModel(t, s, openai.WithResponsesAPI(), openai.WithReasoningEffort("medium"), openai.WithReasoningSummary("auto"))
	req := &model.Request{
		Messages: []model.Message{model.System("Be brief."), model.User("Weather in Paris?")},
		Tools: []model.ToolDefinition{{Name: "get_weather", Description: "Weather",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		Settings: model.Settings{MaxTokens: 500},
	}
	resp, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, "o4-mini-2025-04-16", resp.Model)
	assert.Equal(t, model.Usage{InputTokens: 61, OutputTokens: 214, TotalTokens: 275}, resp.Usage)
	require.Len(t, resp.Message.ToolCalls, 1)
	call := resp.Message.ToolCalls[0]
	assert.Equal(t, model.ToolCall{ID: "call_Xq3v9TzL0bN4sR8mW2kY7pAe", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}, call)
	assert.Equal(t, "**Looking up the weather**\n\nThe user asks about Paris.\n\nI will call get_weather.", resp.Message.Reasoning())

	calls := s.Received()
	assert.Equal(t, "/v1/responses", calls[0].Path)
	assert.JSONEq(t, `{
		"model": "gpt-4o-mini",
		"input": [
			{"type": "message", "role": "system", "content": "Be brief."},
			{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}
		],
		"store": false,
		"include": ["reasoning.encrypted_content"],
		"tools": [{"type": "function", "name": "get_weather", "description": "Weather",
			"parameters": {"type":"object","properties":{"city":{"type":"string"}}}, "strict": false}],
		"max_output_tokens": 500,
		"reasoning": {"effort": "medium", "summary": "auto"}
	}`, calls[0].Body)

	// The reasoning item goes back as it came, before the call it led to,
	// and the tool's result, image included, as the call's output.
	req.Messages = append(req.Messages, resp.Message,
		model.ToolMessage(call.ID, call.Name, false, model.TextPart("21°C"), model.ImagePart("image/png", []byte{1})))
	_, err = m.Generate(context.Background(), req)
	require.NoError(t, err)
	var body struct {
		Input []json.RawMessage `json:"input"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Received()[1].Body), &body))
	require.Len(t, body.Input, 5)
	assert.JSONEq(t, `{"id": "rs_68af3c1e5b3c8190b7d1f0a9e2c4d6b8", "type": "reasoning", "encrypted_content": "gAAAAABor7Ie9xK2mQ==",
		"summary": [{"type": "summary_text", "text": "**Looking up the weather**\n\nThe user asks about Paris."}, {"type": "summary_text", "text": "I will call get_weather."}]}`, string(body.Input[2]))
	assert.JSONEq(t, `{"type": "function_call", "call_id": "call_Xq3v9TzL0bN4sR8mW2kY7pAe", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}`, string(body.Input[3]))
	assert.JSONEq(t, `{"type": "function_call_output", "call_id": "call_Xq3v9TzL0bN4sR8mW2kY7pAe",
		"output": [{"type": "input_text", "text": "21°C"}, {"type": "input_image", "image_url": "data:image/png;base64,AQ=="}]}`, string(body.Input[4]))
}

// A built-in tool's call comes back as a provider part, goes back to the
// Responses API as it came, and is left out by Chat Completions.
func TestBuiltinToolCallsArePassedThroughAsProviderParts(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, responseWebSearch))
	m, _ := newModel(t, s, openai.WithBuiltinTools(json.RawMessage(`{"type":"web_search"}`)))
	resp, err := m.Generate(context.Background(), userReq("Weather in Paris?"))
	require.NoError(t, err)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.True(t, strings.HasPrefix(resp.Message.Text(), "Paris is sunny today"))
	var provider []model.Part
	for _, p := range resp.Message.Content {
		if p.Type == model.PartProvider {
			provider = append(provider, p)
		}
	}
	require.Len(t, provider, 1)
	assert.Equal(t, openai.ItemMIMEType, provider[0].MIMEType)
	assert.Contains(t, string(provider[0].JSON), `"web_search_call"`)
	assert.Contains(t, s.Received()[0].Body, `"tools":[{"type":"web_search"}]`)

	next := &model.Request{Messages: []model.Message{model.User("Weather in Paris?"), resp.Message, model.User("And tomorrow?")}}
	_, err = m.Generate(context.Background(), next)
	require.NoError(t, err)
	assert.Contains(t, s.Received()[1].Body, `"type":"web_search_call"`)

	chat := newServer(t, jsonReply(http.StatusOK, completionText))
	cm, _ := newModel(t, chat)
	_, err = cm.Generate(context.Background(), next)
	require.NoError(t, err)
	assert.NotContains(t, chat.Received()[0].Body, "web_search_call")
}

func TestResponsesStructuredOutputAndIncompleteReplies(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, responseIncomplete))
	m, _ := newModel(t, s, openai.WithResponsesAPI())
	req := userReq("x")
	req.ResponseFormat = &model.ResponseFormat{Name: "weather report", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}
	resp, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "length", resp.FinishReason)
	assert.Equal(t, "Paris is", resp.Message.Text())
	assert.Contains(t, s.Received()[0].Body, `"text":{"format":{"name":"weather_report","schema":{"type":"object"},"strict":true,"type":"json_schema"}}`)

	req = userReq("x")
	req.Settings.Stop = []string{"x"}
	_, err = m.Generate(context.Background(), req)
	assert.ErrorContains(t, err, "stop sequences")
}

func TestResponsesStreamAgreesWithTheWholeReply(t *testing.T) {
	s := newServer(t, responsesSSE(responseStreamEvents))
	m, _ := newModel(t, s, openai.WithResponsesAPI())
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
	}
	require.NotNil(t, chunks[0].Reasoning, "the reasoning streams first")
	var acc model.Accumulator
	for _, c := range chunks {
		acc.Add(c)
	}
	resp := acc.Response()
	assert.Equal(t, "Checking Paris.", resp.Message.Text())
	assert.Equal(t, "**Planning** the lookup.\n\nCalling the tool.", resp.Message.Reasoning())
	assert.Equal(t, []model.ToolCall{{ID: "call_S1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}, resp.Message.ToolCalls)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, "o4-mini-2025-04-16", resp.Model)
	assert.Equal(t, model.Usage{InputTokens: 50, OutputTokens: 90, TotalTokens: 140}, resp.Usage)
	var items int
	for _, p := range resp.Message.Content {
		if p.Type == model.PartProvider {
			items++
			assert.Contains(t, string(p.JSON), "gAAAAABstream==", "the reasoning item is kept whole")
		}
	}
	assert.Equal(t, 1, items)
	assert.Contains(t, s.Received()[0].Body, `"stream":true`)
}

// An error event or a failed response before anything was yielded is
// retried when transient; after the reply began it ends the stream.
func TestResponsesStreamErrors(t *testing.T) {
	head := responseStreamEvents[:2]
	s := newServer(t, sequence(responsesSSE(append(append([]string{}, head...), responseFailedEvent)), responsesSSE(responseStreamEvents)))
	m, w := newModel(t, s, openai.WithResponsesAPI())
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Len(t, w.All(), 1, "the rate limit was retried")

	s = newServer(t, responsesSSE(append(append([]string{}, responseStreamEvents[:6]...), responseErrorEvent)))
	m, w = newModel(t, s, openai.WithResponsesAPI())
	_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
	pe, ok := errors.AsType[*model.ProviderError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusInternalServerError, pe.StatusCode)
	assert.Equal(t, "server_error", pe.Code)
	assert.Empty(t, w.All())

	s = newServer(t, responsesSSE(responseStreamEvents[:10]))
	m, _ = newModel(t, s, openai.WithResponsesAPI())
	_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// The Responses API's errors are classified like Chat Completions'.
func TestResponsesErrorStatuses(t *testing.T) {
	for _, c := range []struct {
		status    int
		body      string
		transient bool
	}{
		{429, errorRateLimited, true},
		{500, errorServer, true},
		{400, `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, false},
		{401, errorUnauthorized, false},
	} {
		s := newServer(t, jsonReply(c.status, c.body))
		m, _ := newModel(t, s, openai.WithResponsesAPI())
		_, err := m.Generate(context.Background(), userReq("x"))
		pe, ok := errors.AsType[*model.ProviderError](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, c.status, pe.StatusCode)
		assert.Equal(t, c.transient, model.IsTransient(err))
	}
}

func TestWithBuiltinToolsRefusesWhatIsNotATool(t *testing.T) {
	_, err := openai.New("gpt-4.1", openai.WithBuiltinTools(json.RawMessage(`"web_search"`)))
	assert.ErrorContains(t, err, "WithBuiltinTools")
}
