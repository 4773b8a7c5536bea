package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func ptr[T any](v T) *T { return &v }

func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.User(text)}}
}

func TestGenerateMapsRequestAndResponse(t *testing.T) {
	s := newServer(t, jsonReply(200, messageText))
	m, _ := newModel(t, s)

	req := &model.Request{
		Messages: []model.Message{
			model.System("You are terse."),
			{Role: model.RoleUser, Content: []model.Part{
				model.TextPart("What is in this image?"),
				model.ImagePart("image/png", []byte{0x89, 'P', 'N', 'G'}),
				model.ImageURLPart("image/jpeg", "https://example.com/cat.jpg"),
			}},
			model.Assistant("Let me check.",
				model.ToolCall{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				model.ToolCall{ID: "call_2", Name: "get_time"},
			),
			model.ToolMessage("call_1", "get_weather", false, model.TextPart("21°C"), model.JSONPart(json.RawMessage(`{"sky":"clear"}`))),
			model.ToolMessage("call_2", "get_time", true, model.TextPart("timeout")),
			model.System("Use metric units."),
			model.User("Thanks"),
		},
		Tools: []model.ToolDefinition{
			{Name: "get_weather", Description: "Current weather", InputSchema: json.RawMessage(
				`{"type":"object","properties":{"city":{"type":"string","maxLength":100}},"required":["city"],"additionalProperties":false}`)},
			{Name: "get_time"},
		},
		ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired},
		ResponseFormat: &model.ResponseFormat{
			Name:   "answer",
			Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		},
		Settings: model.Settings{Temperature: ptr(0.2), TopP: ptr(0.9), MaxTokens: 256, Stop: []string{"END"}, Seed: ptr(int64(7))},
	}
	resp, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, &model.Response{
		Message:      model.Assistant("Paris is sunny today, around 21°C."),
		Usage:        model.Usage{InputTokens: 112, OutputTokens: 14, TotalTokens: 126},
		FinishReason: "stop",
		Model:        "claude-sonnet-4-5-20250929",
	}, resp)

	calls := s.Received()
	require.Len(t, calls, 1)
	assert.Equal(t, http.MethodPost, calls[0].Method)
	assert.Equal(t, "/v1/messages", calls[0].Path)
	assert.Equal(t, "sk-ant-test", calls[0].Header.Get("X-Api-Key"))
	assert.NotEmpty(t, calls[0].Header.Get("Anthropic-Version"))
	assert.JSONEq(t, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 256,
		"system": [
			{"type": "text", "text": "You are terse."},
			{"type": "text", "text": "Use metric units."}
		],
		"messages": [
			{"role": "user", "content": [
				{"type": "text", "text": "What is in this image?"},
				{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
				{"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
			]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Let me check."},
				{"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
				{"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "call_1", "content": [
					{"type": "text", "text": "21°C"},
					{"type": "text", "text": "{\"sky\":\"clear\"}"}
				]},
				{"type": "tool_result", "tool_use_id": "call_2", "is_error": true, "content": [
					{"type": "text", "text": "timeout"}
				]},
				{"type": "text", "text": "Thanks"}
			]}
		],
		"tools": [
			{"name": "get_weather", "description": "Current weather", "input_schema": {
				"type": "object", "properties": {"city": {"type": "string", "maxLength": 100}},
				"required": ["city"], "additionalProperties": false}},
			{"name": "get_time", "input_schema": {"type": "object", "properties": {}}}
		],
		"tool_choice": {"type": "any"},
		"output_config": {"format": {"type": "json_schema", "schema": {
			"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}}},
		"temperature": 0.2,
		"top_p": 0.9,
		"stop_sequences": ["END"]
	}`, calls[0].Body)
}

func TestGenerateToolUse(t *testing.T) {
	s := newServer(t, jsonReply(200, messageToolUse))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("Weather in Paris and Oslo?"))
	require.NoError(t, err)
	assert.Equal(t, &model.Response{
		Message: withReasoning(model.Assistant("I'll check the weather in both cities.",
			model.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)},
			model.ToolCall{ID: "toolu_01B7kq2mXw3Rz9Lp4Vn8Ty6", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Oslo"}`)},
		), model.ReasoningPart("Two cities, two calls.", []byte("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"))),
		Usage:        model.Usage{InputTokens: 592, OutputTokens: 120, TotalTokens: 712, CachedInputTokens: 100},
		FinishReason: "tool_calls",
		Model:        "claude-sonnet-4-5-20250929",
	}, resp)

	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	assert.EqualValues(t, anthropic.DefaultMaxTokens, body["max_tokens"], "max_tokens is always sent")
	assert.NotContains(t, body, "tool_choice")
	assert.NotContains(t, body, "system")
	assert.NotContains(t, body, "output_config")
}

func TestFinishReasons(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
		"model_context_window_exceeded": "length", "refusal": "content_filter", "pause_turn": model.FinishPaused,
	} {
		t.Run(stop, func(t *testing.T) {
			s := newServer(t, jsonReply(200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"x"}],"stop_reason":"`+stop+`","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`))
			m, _ := newModel(t, s)
			resp, err := m.Generate(context.Background(), userReq("x"))
			require.NoError(t, err)
			assert.Equal(t, want, resp.FinishReason)
		})
	}
}

func TestConversationShapes(t *testing.T) {
	tests := []struct {
		name string
		msgs []model.Message
		want string // JSON of "messages"
	}{
		{
			name: "a user message after tool results joins their turn",
			msgs: []model.Message{
				model.Assistant("", model.ToolCall{ID: "a", Name: "t", Arguments: json.RawMessage(`{}`)}),
				model.ToolMessage("a", "t", false, model.TextPart("1")),
				model.User("more"),
				model.Assistant("", model.ToolCall{ID: "b", Name: "t", Arguments: json.RawMessage(`{}`)}),
				model.ToolMessage("b", "t", false),
			},
			want: `[
				{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "1"}]},
					{"type": "text", "text": "more"}
				]},
				{"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "t", "input": {}}]},
				{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}]}
			]`,
		},
		{
			name: "broken call arguments are sent as an empty object",
			msgs: []model.Message{
				model.User("go"),
				model.Assistant("", model.ToolCall{ID: "a", Name: "t", Arguments: json.RawMessage(`{"x": 1`)},
					model.ToolCall{ID: "b", Name: "t", Arguments: json.RawMessage(`[1]`)}),
				model.ToolMessage("a", "t", true, model.TextPart("invalid arguments")),
				model.ToolMessage("b", "t", true, model.TextPart("invalid arguments")),
			},
			want: `[
				{"role": "user", "content": [{"type": "text", "text": "go"}]},
				{"role": "assistant", "content": [
					{"type": "tool_use", "id": "a", "name": "t", "input": {}},
					{"type": "tool_use", "id": "b", "name": "t", "input": {}}
				]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "a", "is_error": true, "content": [{"type": "text", "text": "invalid arguments"}]},
					{"type": "tool_result", "tool_use_id": "b", "is_error": true, "content": [{"type": "text", "text": "invalid arguments"}]}
				]}
			]`,
		},
		{
			name: "tool result with an image; empty text and empty assistant turns left out",
			msgs: []model.Message{
				model.User("draw"),
				model.Assistant(""),
				{Role: model.RoleUser, Content: []model.Part{model.TextPart("")}},
				model.Assistant("", model.ToolCall{ID: "a", Name: "render", Arguments: json.RawMessage(` {"w": 2} `)}),
				model.ToolMessage("a", "render", false, model.TextPart(""), model.ImagePart("image/webp", []byte("RIFF"))),
			},
			want: `[
				{"role": "user", "content": [{"type": "text", "text": "draw"}]},
				{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "render", "input": {"w": 2}}]},
				{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [
					{"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="}}
				]}]}
			]`,
		},
		{
			name: "image media types in the API's form",
			msgs: []model.Message{
				{Role: model.RoleUser, Content: []model.Part{
					model.ImagePart("image/jpg", []byte{0xff}),
					model.ImagePart(" Image/PNG; name=x.png", []byte{0x89}),
					model.ImagePart("image/gif", []byte("G")),
				}},
			},
			want: `[
				{"role": "user", "content": [
					{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/w=="}},
					{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iQ=="}},
					{"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "Rw=="}}
				]}
			]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, jsonReply(200, messageText))
			m, _ := newModel(t, s)
			_, err := m.Generate(context.Background(), &model.Request{Messages: tt.msgs})
			require.NoError(t, err)
			var body map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
			assert.JSONEq(t, tt.want, string(body["messages"]))
		})
	}
}

func TestToolChoice(t *testing.T) {
	tests := []struct {
		choice model.ToolChoice
		want   string
	}{
		{model.ToolChoice{}, ""},
		{model.ToolChoice{Mode: model.ToolChoiceNone}, `{"type":"none"}`},
		{model.ToolChoice{Mode: model.ToolChoiceRequired}, `{"type":"any"}`},
		{model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"}, `{"type":"tool","name":"get_weather"}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.choice.Mode), func(t *testing.T) {
			s := newServer(t, jsonReply(200, messageText))
			m, _ := newModel(t, s)
			req := userReq("hi")
			req.Tools = []model.ToolDefinition{{Name: "get_weather"}}
			req.ToolChoice = tt.choice
			_, err := m.Generate(context.Background(), req)
			require.NoError(t, err)
			var body map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
			if tt.want == "" {
				assert.NotContains(t, body, "tool_choice")
				return
			}
			assert.JSONEq(t, tt.want, string(body["tool_choice"]))
		})
	}
}

func TestDefaultSettings(t *testing.T) {
	tests := []struct {
		name    string
		opts    []anthropic.Option
		req     model.Settings
		wantMax float64
		temp    any
	}{
		{"WithMaxTokens", []anthropic.Option{anthropic.WithMaxTokens(1024)}, model.Settings{}, 1024, nil},
		{"request wins", []anthropic.Option{anthropic.WithMaxTokens(1024)}, model.Settings{MaxTokens: 10}, 10, nil},
		{"WithSettings keeps an earlier WithMaxTokens", []anthropic.Option{anthropic.WithMaxTokens(1024), anthropic.WithSettings(model.Settings{Temperature: ptr(1.0)})},
			model.Settings{}, 1024, 1.0},
		{"explicit zero temperature", []anthropic.Option{anthropic.WithSettings(model.Settings{Temperature: ptr(0.7)})},
			model.Settings{Temperature: ptr(0.0)}, anthropic.DefaultMaxTokens, 0.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, jsonReply(200, messageText))
			m, _ := newModel(t, s, tt.opts...)
			_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("x")}, Settings: tt.req})
			require.NoError(t, err)
			var body map[string]any
			require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
			assert.Equal(t, tt.wantMax, body["max_tokens"])
			assert.Equal(t, tt.temp, body["temperature"])
		})
	}
}

func TestEnvironmentFallbackAndPrecedence(t *testing.T) {
	envSrv := newServer(t, jsonReply(200, messageText))
	optSrv := newServer(t, jsonReply(200, messageText))
	t.Setenv("ANTHROPIC_BASE_URL", envSrv.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")

	fromEnv, err := anthropic.New("claude-haiku-4-5", anthropic.WithHTTPClient(envSrv.Client))
	require.NoError(t, err)
	_, err = fromEnv.Generate(context.Background(), userReq("hi"))
	require.NoError(t, err)
	require.Len(t, envSrv.Received(), 1)
	assert.Equal(t, "sk-ant-from-env", envSrv.Received()[0].Header.Get("X-Api-Key"))

	fromOpts, err := anthropic.New("claude-haiku-4-5", anthropic.WithHTTPClient(optSrv.Client),
		anthropic.WithBaseURL(optSrv.URL), anthropic.WithAPIKey("sk-ant-from-option"), anthropic.WithHeader("anthropic-beta", "test-beta"))
	require.NoError(t, err)
	_, err = fromOpts.Generate(context.Background(), userReq("hi"))
	require.NoError(t, err)
	require.Len(t, optSrv.Received(), 1, "the base URL option wins over ANTHROPIC_BASE_URL")
	assert.Len(t, envSrv.Received(), 1)
	assert.Equal(t, "sk-ant-from-option", optSrv.Received()[0].Header.Get("X-Api-Key"))
	assert.Equal(t, "test-beta", optSrv.Received()[0].Header.Get("Anthropic-Beta"))
}

func TestRequestOptionsAreAppliedLast(t *testing.T) {
	s := newServer(t, jsonReply(200, messageText))
	m, err := anthropic.New("claude-haiku-4-5", anthropic.WithHTTPClient(s.Client), anthropic.WithBaseURL(s.URL), anthropic.WithAPIKey("k"),
		anthropic.WithHeader("anthropic-beta", "from-option"),
		anthropic.WithRequestOptions(option.WithHeader("anthropic-beta", "from-client"), option.WithHeader("X-Extra", "1")))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userReq("hi"))
	require.NoError(t, err)
	h := s.Received()[0].Header
	assert.Equal(t, "from-client", h.Get("Anthropic-Beta"), "the client's options win")
	assert.Equal(t, "1", h.Get("X-Extra"))
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name  string
		model string
		opts  []anthropic.Option
		want  string
	}{
		{"empty name", "", nil, "model name is empty"},
		{"relative base URL", "m", []anthropic.Option{anthropic.WithBaseURL("api.anthropic.com")}, "invalid base URL"},
		{"negative retries", "m", []anthropic.Option{anthropic.WithMaxRetries(-2)}, "negative count -2"},
		{"zero max tokens", "m", []anthropic.Option{anthropic.WithMaxTokens(0)}, "0 is not positive"},
		{"negative default max tokens", "m", []anthropic.Option{anthropic.WithSettings(model.Settings{MaxTokens: -5})}, "negative max tokens"},
		{"nil client", "m", []anthropic.Option{anthropic.WithHTTPClient(nil)}, "nil client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := anthropic.New(tt.model, tt.opts...)
			require.ErrorContains(t, err, tt.want)
			assert.Nil(t, m)
		})
	}
}

func TestRequestMappingErrors(t *testing.T) {
	tests := []struct {
		name string
		req  *model.Request
		want string
	}{
		{"nil request", nil, "nil request"},
		{"unknown role", &model.Request{Messages: []model.Message{{Role: "critic"}}}, `message 0: unknown role "critic"`},
		{"tool message without call ID", &model.Request{Messages: []model.Message{model.ToolMessage("", "t", false)}}, "message 0 (tool): no tool call ID"},
		{"image in system message", &model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: []model.Part{model.ImageURLPart("image/png", "https://x/y.png")}}}}, "image content is not supported"},
		{"image in assistant message", &model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.Part{model.ImageURLPart("image/png", "https://x/y.png")}}}}, "image content is not supported"},
		{"inline image without MIME type", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Part{{Type: model.PartImage, Data: []byte{1}}}}}}, "inline image has no MIME type"},
		{"unknown part", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Part{{Type: "video"}}}}}, `unknown part type "video"`},
		{"call without ID", &model.Request{Messages: []model.Message{model.Assistant("", model.ToolCall{Name: "t"})}}, "needs both an ID and a name"},
		{"tool without name", &model.Request{Tools: []model.ToolDefinition{{}}}, "tool definition has no name"},
		{"schema not an object", &model.Request{Tools: []model.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`"x"`)}}}, `tool "t": input schema is not a JSON object`},
		{"schema of another type", &model.Request{Tools: []model.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`{"type":"array"}`)}}}, `input schema type is "array", want "object"`},
		{"bad required", &model.Request{Tools: []model.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`{"type":"object","required":"a"}`)}}}, `"required" is not a list of names`},
		{"tool choice without name", &model.Request{ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool}}, "tool choice names no tool"},
		{"unknown tool choice", &model.Request{ToolChoice: model.ToolChoice{Mode: "often"}}, `unknown tool choice mode "often"`},
		{"tool call required without tools", &model.Request{ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired}}, "anthropic: tool choice requires a tool call, but the request offers no tools"},
		{"tool choice of a tool not offered", &model.Request{Tools: []model.ToolDefinition{{Name: "search"}, {Name: "fetch"}}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool, Name: "serch"}}, `anthropic: tool choice names tool "serch", which the request does not offer (tools: search, fetch)`},
		{"response format without schema", &model.Request{ResponseFormat: &model.ResponseFormat{Name: "x"}}, "response format schema: empty schema"},
		{"negative max tokens", &model.Request{Settings: model.Settings{MaxTokens: -1}}, "negative max tokens"},
	}
	s := newServer(t, jsonReply(200, messageText))
	m, _ := newModel(t, s)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Generate(context.Background(), tt.req)
			require.ErrorContains(t, err, tt.want)
			_, err = model.Collect(m.Stream(context.Background(), tt.req))
			require.ErrorContains(t, err, tt.want)
		})
	}
	assert.Empty(t, s.Received(), "invalid requests never reach the server")
}

func TestInfo(t *testing.T) {
	m, err := anthropic.New("claude-sonnet-4-5", anthropic.WithAPIKey("k"))
	require.NoError(t, err)
	assert.Equal(t, model.Info{Provider: "anthropic", Name: "claude-sonnet-4-5"}, m.Info())
	m, err = anthropic.New("claude-sonnet-4-5", anthropic.WithAPIKey("k"), anthropic.WithStructuredOutput())
	require.NoError(t, err)
	assert.True(t, m.Info().StructuredOutput)
}

func TestStreamText(t *testing.T) {
	s := newServer(t, sseReply(streamText))
	m, _ := newModel(t, s)
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("Weather?")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
	}
	require.Len(t, chunks, 4)
	assert.Equal(t, model.Chunk{Model: "claude-sonnet-4-5-20250929"}, chunks[0])
	assert.Equal(t, "Paris", chunks[1].Text)
	assert.Equal(t, " is sunny.", chunks[2].Text)
	assert.Equal(t, model.Chunk{
		Usage:        &model.Usage{InputTokens: 25, OutputTokens: 15, TotalTokens: 40},
		FinishReason: "stop",
		Model:        "claude-sonnet-4-5-20250929",
	}, chunks[3])

	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	assert.Equal(t, true, body["stream"])
}

func TestStreamToolUseInterleaved(t *testing.T) {
	s := newServer(t, sseReply(streamToolUse))
	m, _ := newModel(t, s)
	var (
		deltas   []model.ToolCallDelta
		thinking []model.ReasoningDelta
	)
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		if c.ToolCall != nil {
			deltas = append(deltas, *c.ToolCall)
		}
		if c.Reasoning != nil {
			thinking = append(thinking, *c.Reasoning)
		}
	}
	assert.Equal(t, []model.ReasoningDelta{
		{Index: 0},
		{Index: 0, Text: "Both cities need a call."},
		{Index: 0, Data: "EqQBCgIYAhIM1gbcDa9GJwZA"},
	}, thinking, "the thinking block's start, its text, its signature")
	assert.Equal(t, []model.ToolCallDelta{
		{Index: 0, ID: "toolu_01Paris", Name: "get_weather"},
		{Index: 1, ID: "toolu_02Oslo", Name: "get_weather"},
		{Index: 0, Arguments: `{"city": "Pa`},
		{Index: 1, Arguments: `{"city":`},
		{Index: 0, Arguments: `ris"}`},
		{Index: 1, Arguments: ` "Oslo"}`},
		{Index: 2, ID: "toolu_03Time", Name: "get_time"},
	}, deltas, "content blocks 2, 3, 4 become tool calls 0, 1, 2")

	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, &model.Response{
		Message: withReasoning(model.Assistant("Checking both.",
			model.ToolCall{ID: "toolu_01Paris", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
			model.ToolCall{ID: "toolu_02Oslo", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Oslo"}`)},
			model.ToolCall{ID: "toolu_03Time", Name: "get_time", Arguments: json.RawMessage(`{}`)},
		), model.ReasoningPart("Both cities need a call.", []byte("EqQBCgIYAhIM1gbcDa9GJwZA"))),
		Usage:        model.Usage{InputTokens: 500, OutputTokens: 89, TotalTokens: 589, CachedInputTokens: 28},
		FinishReason: "tool_calls",
		Model:        "claude-sonnet-4-5-20250929",
	}, resp)
}

func TestStreamToolInputInStartBlock(t *testing.T) {
	events := []event{
		streamToolUse[0],
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"id":42}}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":480,"output_tokens":12}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	s := newServer(t, sseReply(events))
	m, _ := newModel(t, s)
	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	require.Len(t, resp.Message.ToolCalls, 1)
	assert.JSONEq(t, `{"id":42}`, string(resp.Message.ToolCalls[0].Arguments))
	assert.Equal(t, model.Usage{InputTokens: 508, OutputTokens: 12, TotalTokens: 520, CachedInputTokens: 28}, resp.Usage,
		"message_delta usage updates input tokens when sent; the cache reads of message_start stay")
}

func TestStreamOverloadedFirstEventIsRetried(t *testing.T) {
	s := newServer(t, sequence(
		sseReply([]event{{"error", errorOverloadedEvent}}),
		sseReply(streamText),
	))
	m, w := newModel(t, s)
	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny.", resp.Message.Text())
	assert.Len(t, s.Received(), 2)
	assert.Len(t, w.All(), 1)
}

func TestStreamErrorEventMidStream(t *testing.T) {
	events := append(append([]event{}, streamText[:4]...), event{"error", errorOverloadedEvent})
	s := newServer(t, sseReply(events))
	m, w := newModel(t, s)
	var texts []string
	var gotErr error
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		if err != nil {
			gotErr = err
			break
		}
		texts = append(texts, c.Text)
	}
	assert.Equal(t, []string{"", "Paris"}, texts)
	var pe *model.ProviderError
	require.ErrorAs(t, gotErr, &pe)
	assert.Equal(t, 529, pe.StatusCode)
	assert.Equal(t, "overloaded_error", pe.Type)
	assert.Equal(t, "Overloaded", pe.Message)
	assert.Len(t, s.Received(), 1, "a stream that already yielded is not retried")
	assert.Empty(t, w.All())
}

func TestStreamTruncated(t *testing.T) {
	s := newServer(t, sseReply(streamText[:5]))
	m, _ := newModel(t, s)
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorContains(t, err, "before message_stop")
}

func TestStreamEarlyBreakAndCancel(t *testing.T) {
	s := newServer(t, sseReply(streamText))
	m, _ := newModel(t, s)
	n := 0
	for range m.Stream(context.Background(), userReq("x")) {
		n++
		break
	}
	assert.Equal(t, 1, n)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := model.Collect(m.Stream(ctx, userReq("x")))
	require.ErrorIs(t, err, context.Canceled)
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name      string
		reply     replyFunc
		wantCalls int
		wantWaits []time.Duration
		wantErr   bool
		status    int
		errType   string
		message   string
		exhausted bool
	}{
		{
			name:      "400 surfaces the provider's message",
			reply:     jsonReply(400, errorInvalidRequest, "request-id", "req_011CSHoEeqs5C35K2UUqR7Fy"),
			wantCalls: 1, wantErr: true, status: 400, errType: "invalid_request_error",
			message: "unexpected tool_use_id found in tool_result blocks",
		},
		{
			name:      "401 is not retried",
			reply:     jsonReply(401, errorAuthentication),
			wantCalls: 1, wantErr: true, status: 401, errType: "authentication_error", message: "invalid x-api-key",
		},
		{
			name:      "429 with retry-after is retried after the wait asked for",
			reply:     sequence(jsonReply(429, errorRateLimited, "retry-after", "2"), jsonReply(200, messageText)),
			wantCalls: 2, wantWaits: []time.Duration{2 * time.Second},
		},
		{
			name:      "529 overloaded is retried",
			reply:     sequence(jsonReply(529, errorOverloaded), jsonReply(200, messageText)),
			wantCalls: 2,
		},
		{
			name:      "500 until retries run out",
			reply:     jsonReply(500, errorAPI),
			wantCalls: 3, wantErr: true, status: 500, errType: "api_error", message: "Internal server error", exhausted: true,
		},
		{
			name:      "a gateway's detail message",
			reply:     jsonReply(422, `{"detail":"prompt blocked by the gateway's policy"}`),
			wantCalls: 1, wantErr: true, status: 422, message: "prompt blocked by the gateway's policy",
		},
		{
			name: "non-JSON error body",
			reply: func(w http.ResponseWriter, _ int) {
				w.WriteHeader(403)
				_, _ = io.WriteString(w, "<html>Forbidden by proxy</html>")
			},
			wantCalls: 1, wantErr: true, status: 403, message: "Forbidden by proxy",
		},
	}
	for _, tt := range tests {
		for _, mode := range []string{"generate", "stream"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				reply := tt.reply
				if mode == "stream" {
					reply = func(w http.ResponseWriter, n int) {
						rec := httptest.NewRecorder()
						tt.reply(rec, n)
						if rec.Code == 200 {
							sse(w, streamText)
							return
						}
						for k, v := range rec.Header() {
							w.Header()[k] = v
						}
						w.WriteHeader(rec.Code)
						_, _ = w.Write(rec.Body.Bytes())
					}
				}
				s := newServer(t, reply)
				m, w := newModel(t, s)
				var err error
				if mode == "generate" {
					_, err = m.Generate(context.Background(), userReq("x"))
				} else {
					_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
				}
				assert.Len(t, s.Received(), tt.wantCalls, "attempts")
				if tt.wantWaits != nil {
					assert.Equal(t, tt.wantWaits, w.All())
				} else {
					assert.Len(t, w.All(), tt.wantCalls-1)
				}
				if !tt.wantErr {
					require.NoError(t, err)
					return
				}
				var pe *model.ProviderError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "anthropic", pe.Provider)
				assert.Equal(t, tt.status, pe.StatusCode)
				assert.Equal(t, tt.errType, pe.Type)
				assert.Contains(t, pe.Message, tt.message)
				assert.Contains(t, err.Error(), tt.message, "the message reaches Error()")
				assert.Equal(t, tt.exhausted, errors.Is(err, model.ErrRetriesExhausted))
			})
		}
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()

	w := &waits{}
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	m, err := anthropic.New("claude-haiku-4-5", anthropic.WithBaseURL(url), anthropic.WithAPIKey("k"),
		anthropic.WithHTTPClient(&http.Client{Transport: transport}),
		anthropic.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.Sleep}))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userReq("x"))
	require.ErrorIs(t, err, model.ErrRetriesExhausted)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Len(t, w.All(), 2)
}

func TestMaxRetriesOption(t *testing.T) {
	s := newServer(t, jsonReply(529, errorOverloaded))
	m, err := anthropic.New("claude-haiku-4-5", anthropic.WithBaseURL(s.URL), anthropic.WithAPIKey("k"),
		anthropic.WithHTTPClient(s.Client), anthropic.WithMaxRetries(0))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userReq("x"))
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 529, pe.StatusCode)
	assert.Len(t, s.Received(), 1, "WithMaxRetries(0) disables retries")
}

func TestGenerateRefusesAReplyThatIsNotAMessage(t *testing.T) {
	for name, body := range map[string]string{
		"empty object": `{}`,
		"null content": `{"id":"msg_1","type":"message","role":"assistant","content":null,"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
		"other shape":  `{"result":"ok"}`,
		"null":         `null`,
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, jsonReply(200, body))
			m, w := newModel(t, s)
			resp, err := m.Generate(context.Background(), userReq("x"))
			require.Error(t, err)
			assert.Nil(t, resp)
			assert.Contains(t, err.Error(), "the reply is not a message")
			assert.Contains(t, err.Error(), body, "the error shows what was received")
			assert.Empty(t, w.All(), "a malformed reply is not retried")
		})
	}

	// An empty content array is a message: the model said nothing.
	s := newServer(t, jsonReply(200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Empty(t, resp.Message.Content)
	assert.Equal(t, "stop", resp.FinishReason)
}

func TestGenerateWithALargeMaxTokensStreams(t *testing.T) {
	s := newServer(t, sseReply(streamText))
	m, _ := newModel(t, s, anthropic.WithMaxTokens(64000))
	resp, err := m.Generate(context.Background(), userReq("Weather?"))
	require.NoError(t, err, "a reply that may take longer than the client waits without a stream is streamed")
	assert.Equal(t, "Paris is sunny.", resp.Message.Text())
	assert.Equal(t, model.Usage{InputTokens: 25, OutputTokens: 15, TotalTokens: 40}, resp.Usage)
	assert.Equal(t, "stop", resp.FinishReason)

	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	assert.Equal(t, true, body["stream"])
	assert.EqualValues(t, 64000, body["max_tokens"])

	// With a request timeout of the caller's, the client waits that long
	// for the reply: Generate does not stream.
	s2 := newServer(t, jsonReply(200, messageText))
	m2, _ := newModel(t, s2, anthropic.WithMaxTokens(64000), anthropic.WithRequestOptions(option.WithRequestTimeout(30*time.Minute)))
	_, err = m2.Generate(context.Background(), userReq("Weather?"))
	require.NoError(t, err)
	body = nil
	require.NoError(t, json.Unmarshal([]byte(s2.Received()[0].Body), &body))
	assert.NotContains(t, body, "stream")
}

// A compatible server or gateway that ignores "stream": true answers with the
// whole message as JSON: the stream yields it as chunks, and agrees with
// Generate on the same body, instead of taking it for a stream cut short.
func TestStreamFromAServerThatIgnoresStreaming(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, messageToolUse))
	m, w := newModel(t, s)
	want, err := m.Generate(context.Background(), userReq("Weather in Paris and Oslo?"))
	require.NoError(t, err)
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("Weather in Paris and Oslo?")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
	}
	require.Len(t, chunks, 5) // the thinking, the text, two calls, the end
	assert.Equal(t, &model.ReasoningDelta{Text: "Two cities, two calls.", Data: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}, chunks[0].Reasoning)
	assert.Equal(t, "I'll check the weather in both cities.", chunks[1].Text)
	assert.Equal(t, &model.ToolCallDelta{Index: 1, ID: "toolu_01B7kq2mXw3Rz9Lp4Vn8Ty6", Name: "get_weather", Arguments: `{"city": "Oslo"}`}, chunks[3].ToolCall)
	got, err := model.Collect(func(yield func(model.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	require.NoError(t, err)
	assert.Equal(t, want.Message, got.Message)
	assert.Equal(t, want.Usage, got.Usage)
	assert.Equal(t, want.FinishReason, got.FinishReason)
	assert.Equal(t, "tool_calls", got.FinishReason)
	assert.Len(t, s.Received(), 2, "one request each, not retried")
	assert.Empty(t, w.All())

	// JSON that is not a message is an error that says so.
	s2 := newServer(t, jsonReply(http.StatusOK, `{"status":"ok"}`))
	m2, _ := newModel(t, s2)
	_, err = model.Collect(m2.Stream(context.Background(), userReq("x")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a message")
}

// withReasoning returns msg with parts put before its content, where a
// reply's reasoning stands.
func withReasoning(msg model.Message, parts ...model.Part) model.Message {
	msg.Content = append(parts, msg.Content...)
	return msg
}
