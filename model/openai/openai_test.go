package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/openai"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func ptr[T any](v T) *T { return &v }

func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.User(text)}}
}

func TestGenerateMapsRequestAndResponse(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	m, _ := newModel(t, s)

	req := &model.Request{
		Messages: []model.Message{
			model.System("You are terse."),
			{Role: model.RoleUser, Name: "ada", Content: []model.Part{
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
			model.User("Thanks"),
		},
		Tools: []model.ToolDefinition{
			{Name: "get_weather", Description: "Current weather", InputSchema: json.RawMessage(
				`{"type":"object","properties":{"city":{"type":"string","maxLength":100}},"required":["city"]}`)},
			{Name: "get_time"},
		},
		ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired},
		ResponseFormat: &model.ResponseFormat{
			Name: "answer", Description: "The final answer", Strict: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		},
		Settings: model.Settings{Temperature: ptr(0.2), TopP: ptr(0.9), MaxTokens: 256, Stop: []string{"END"}, Seed: ptr(int64(7))},
	}
	resp, err := m.Generate(context.Background(), req)
	require.NoError(t, err)

	assert.Equal(t, &model.Response{
		Message:      model.Assistant("Paris is sunny today, around 21°C."),
		Usage:        model.Usage{InputTokens: 118, OutputTokens: 12, TotalTokens: 130},
		FinishReason: "stop",
		Model:        "gpt-4o-mini-2024-07-18",
	}, resp)

	calls := s.Received()
	require.Len(t, calls, 1)
	assert.Equal(t, http.MethodPost, calls[0].Method)
	assert.Equal(t, "/v1/chat/completions", calls[0].Path)
	assert.Equal(t, "Bearer sk-test", calls[0].Header.Get("Authorization"))
	assert.JSONEq(t, `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "You are terse."},
			{"role": "user", "name": "ada", "content": [
				{"type": "text", "text": "What is in this image?"},
				{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
				{"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}
			]},
			{"role": "assistant", "content": "Let me check.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": [
				{"type": "text", "text": "21°C"},
				{"type": "text", "text": "{\"sky\":\"clear\"}"}
			]},
			{"role": "tool", "tool_call_id": "call_2", "content": "timeout"},
			{"role": "user", "content": "Thanks"}
		],
		"tools": [
			{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
				"parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 100}}, "required": ["city"]}}},
			{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
		],
		"tool_choice": "required",
		"response_format": {"type": "json_schema", "json_schema": {
			"name": "answer", "description": "The final answer", "strict": true,
			"schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}
		}},
		"temperature": 0.2,
		"top_p": 0.9,
		"max_completion_tokens": 256,
		"stop": ["END"],
		"seed": 7
	}`, calls[0].Body)
}

func TestGenerateToolCalls(t *testing.T) {
	s := newServer(t, jsonReply(200, completionToolCalls))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("Weather and time in Paris?"))
	require.NoError(t, err)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Empty(t, resp.Message.Content)
	assert.Equal(t, []model.ToolCall{
		{ID: "call_8Qm2vXb1Yk3LsT0pRz7Wn4Jd", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)},
		{ID: "call_2Hf9cKd5Nw1QaP6mEo3Ls8Vb", Name: "get_time", Arguments: json.RawMessage(`{"timezone":"Europe/Paris"}`)},
	}, resp.Message.ToolCalls)
	assert.Equal(t, model.Usage{InputTokens: 96, OutputTokens: 51, TotalTokens: 147}, resp.Usage)
}

func TestGenerateCompatibleServer(t *testing.T) {
	s := newServer(t, jsonReply(200, completionOllama))
	m, err := openai.New("llama3.2", openai.WithBaseURL(s.URL+"/v1/"), openai.WithAPIKey("ollama"),
		openai.WithHTTPClient(s.Client), openai.WithLegacyMaxTokens())
	require.NoError(t, err)
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{model.User("hi")},
		Settings: model.Settings{MaxTokens: 64},
	})
	require.NoError(t, err)
	assert.Equal(t, "Hello from Ollama.", resp.Message.Text())
	assert.Equal(t, "llama3.2", resp.Model)
	assert.Equal(t, 31, resp.Usage.TotalTokens)

	calls := s.Received()
	require.Len(t, calls, 1)
	assert.Equal(t, "/v1/chat/completions", calls[0].Path)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(calls[0].Body), &body))
	assert.Equal(t, "llama3.2", body["model"])
	assert.EqualValues(t, 64, body["max_tokens"])
	assert.NotContains(t, body, "max_completion_tokens")
}

func TestToolChoice(t *testing.T) {
	tests := []struct {
		choice model.ToolChoice
		want   string // JSON of tool_choice; empty means absent
	}{
		{model.ToolChoice{}, ""},
		{model.ToolChoice{Mode: model.ToolChoiceNone}, `"none"`},
		{model.ToolChoice{Mode: model.ToolChoiceRequired}, `"required"`},
		{model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"}, `{"type":"function","function":{"name":"get_weather"}}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.choice.Mode), func(t *testing.T) {
			s := newServer(t, jsonReply(200, completionText))
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

func TestDefaultSettingsMerge(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	m, _ := newModel(t, s, openai.WithSettings(model.Settings{Temperature: ptr(0.7), MaxTokens: 100, Seed: ptr(int64(1))}))
	req := userReq("hi")
	req.Model = "gpt-4.1"
	req.Settings = model.Settings{Temperature: ptr(0.0), Stop: []string{"\n\n"}}
	_, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	assert.Equal(t, "gpt-4.1", body["model"], "the request's model overrides the configured one")
	assert.EqualValues(t, 0, body["temperature"], "an explicit zero temperature is sent")
	assert.EqualValues(t, 100, body["max_completion_tokens"])
	assert.EqualValues(t, 1, body["seed"])
	assert.Equal(t, []any{"\n\n"}, body["stop"])
}

// Tool messages take only text on this API: the images of a turn's tool
// results follow the turn's tool messages in one user message, each after
// a label naming its call, and each tool message says where its image went.
func TestToolResultImages(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	m, _ := newModel(t, s)
	req := &model.Request{Messages: []model.Message{
		model.User("compare the charts"),
		model.Assistant("", model.ToolCall{ID: "c1", Name: "chart", Arguments: []byte(`{}`)}, model.ToolCall{ID: "c2", Name: "chart", Arguments: []byte(`{}`)},
			model.ToolCall{ID: "c3", Name: "note", Arguments: []byte(`{}`)}),
		model.ToolMessage("c1", "chart", false, model.TextPart("sales"), model.ImagePart("image/png", []byte{1, 2})),
		model.ToolMessage("c2", "chart", false, model.ImageURLPart("image/jpeg", "https://img.test/costs.jpg")),
		model.ToolMessage("c3", "note", false, model.TextPart("no image")),
		model.User("and now?"),
	}}
	_, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	roles := make([]any, len(body.Messages))
	for i, msg := range body.Messages {
		roles[i] = msg["role"]
	}
	assert.Equal(t, []any{"user", "assistant", "tool", "tool", "tool", "user", "user"}, roles,
		"the images come after every tool message of the turn, before the next message")
	assert.Equal(t, []any{
		map[string]any{"type": "text", "text": "sales"},
		map[string]any{"type": "text", "text": "[image 1: in the user message after the tool results]"},
	}, body.Messages[2]["content"])
	assert.Equal(t, "[image 2: in the user message after the tool results]", body.Messages[3]["content"])
	assert.Equal(t, "no image", body.Messages[4]["content"])
	assert.Equal(t, []any{
		map[string]any{"type": "text", "text": "The images the tool results above refer to:"},
		map[string]any{"type": "text", "text": "Image 1, from the result of call c1 (chart):"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AQI="}},
		map[string]any{"type": "text", "text": "Image 2, from the result of call c2 (chart):"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://img.test/costs.jpg"}},
	}, body.Messages[5]["content"])
	assert.Equal(t, "and now?", body.Messages[6]["content"])

	// At the end of the conversation too.
	req.Messages = req.Messages[:4]
	_, err = m.Generate(context.Background(), req)
	require.NoError(t, err)
	body.Messages = nil
	require.NoError(t, json.Unmarshal([]byte(s.Received()[1].Body), &body))
	require.Len(t, body.Messages, 5)
	assert.Equal(t, "user", body.Messages[4]["role"])
}

func TestHeadersAndCredentials(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	m, _ := newModel(t, s, openai.WithOrganization("org-123"), openai.WithProject("proj_9"), openai.WithHeader("X-Gateway-Key", "gw"))
	_, err := m.Generate(context.Background(), userReq("hi"))
	require.NoError(t, err)
	h := s.Received()[0].Header
	assert.Equal(t, "org-123", h.Get("OpenAI-Organization"))
	assert.Equal(t, "proj_9", h.Get("OpenAI-Project"))
	assert.Equal(t, "gw", h.Get("X-Gateway-Key"))
	assert.Equal(t, "application/json", h.Get("Content-Type"))
}

func TestRequestOptionsAreAppliedLast(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	m, _ := newModel(t, s, openai.WithHeader("X-Gateway-Key", "from-option"),
		openai.WithRequestOptions(option.WithHeader("X-Gateway-Key", "from-client"), option.WithHeader("X-Extra", "1")))
	_, err := m.Generate(context.Background(), userReq("hi"))
	require.NoError(t, err)
	h := s.Received()[0].Header
	assert.Equal(t, "from-client", h.Get("X-Gateway-Key"), "the client's options win")
	assert.Equal(t, "1", h.Get("X-Extra"))
}

func TestEnvironmentFallbackAndPrecedence(t *testing.T) {
	envSrv := newServer(t, jsonReply(200, completionText))
	optSrv := newServer(t, jsonReply(200, completionText))
	t.Setenv("OPENAI_BASE_URL", envSrv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")

	fromEnv, err := openai.New("gpt-4o-mini", openai.WithHTTPClient(envSrv.Client))
	require.NoError(t, err)
	_, err = fromEnv.Generate(context.Background(), userReq("hi"))
	require.NoError(t, err)
	require.Len(t, envSrv.Received(), 1)
	assert.Equal(t, "Bearer sk-from-env", envSrv.Received()[0].Header.Get("Authorization"))

	fromOpts, err := openai.New("gpt-4o-mini", openai.WithHTTPClient(optSrv.Client),
		openai.WithBaseURL(optSrv.URL+"/v1"), openai.WithAPIKey("sk-from-option"))
	require.NoError(t, err)
	_, err = fromOpts.Generate(context.Background(), userReq("hi"))
	require.NoError(t, err)
	require.Len(t, optSrv.Received(), 1, "the base URL option wins over OPENAI_BASE_URL")
	assert.Len(t, envSrv.Received(), 1)
	assert.Equal(t, "Bearer sk-from-option", optSrv.Received()[0].Header.Get("Authorization"))
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name string
		opts []openai.Option
		want string
	}{
		{"empty name", nil, "model name is empty"},
		{"relative base URL", []openai.Option{openai.WithBaseURL("localhost:11434/v1")}, "invalid base URL"},
		{"bad scheme", []openai.Option{openai.WithBaseURL("ftp://example.com/v1")}, "invalid base URL"},
		{"negative retries", []openai.Option{openai.WithMaxRetries(-1)}, "negative count -1"},
		{"nil client", []openai.Option{openai.WithHTTPClient(nil)}, "nil client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "gpt-4o"
			if tt.name == "empty name" {
				name = ""
			}
			m, err := openai.New(name, tt.opts...)
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
		{"unknown role", &model.Request{Messages: []model.Message{{Role: "critic"}}}, `message 0 (critic): unknown role "critic"`},
		{"tool message without call ID", &model.Request{Messages: []model.Message{model.ToolMessage("", "t", false, model.TextPart("x"))}}, "no tool call ID"},
		{"image in system message", &model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: []model.Part{model.ImageURLPart("image/png", "https://x/y.png")}}}}, "image content is not supported"},
		{"inline image without MIME type in tool message", &model.Request{Messages: []model.Message{model.ToolMessage("c1", "t", false, model.TextPart("x"), model.Part{Type: model.PartImage, Data: []byte{1}})}}, "part 1: inline image has no MIME type"},
		{"tool message of one part of unknown type", &model.Request{Messages: []model.Message{model.ToolMessage("c1", "t", false, model.Part{Type: "video"})}}, "part 0: video content is not supported in tool messages"},
		{"inline image without MIME type", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Part{model.TextPart("a"), {Type: model.PartImage, Data: []byte{1}}}}}}, "inline image has no MIME type"},
		{"empty image", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Part{model.TextPart("a"), {Type: model.PartImage}}}}}, "neither data nor a URL"},
		{"call without ID", &model.Request{Messages: []model.Message{model.Assistant("", model.ToolCall{Name: "t"})}}, "needs both an ID and a name"},
		{"tool without name", &model.Request{Tools: []model.ToolDefinition{{}}}, "tool definition has no name"},
		{"schema not an object", &model.Request{Tools: []model.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`[1]`)}}}, `tool "t": input schema is not a JSON object`},
		{"tool choice without name", &model.Request{ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool}}, "tool choice names no tool"},
		{"unknown tool choice", &model.Request{ToolChoice: model.ToolChoice{Mode: "sometimes"}}, `unknown tool choice mode "sometimes"`},
		{"tool call required without tools", &model.Request{ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired}}, "openai: tool choice requires a tool call, but the request offers no tools"},
		{"tool choice of a tool not offered", &model.Request{Tools: []model.ToolDefinition{{Name: "search"}, {Name: "fetch"}}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool, Name: "serch"}}, `openai: tool choice names tool "serch", which the request does not offer (tools: search, fetch)`},
		{"response format without schema", &model.Request{ResponseFormat: &model.ResponseFormat{Name: "x"}}, "response format has no schema"},
		{"response format with bad schema", &model.Request{ResponseFormat: &model.ResponseFormat{Name: "x", Schema: json.RawMessage(`{`)}}, "schema is not valid JSON"},
		{"negative max tokens", &model.Request{Settings: model.Settings{MaxTokens: -1}}, "negative max tokens"},
	}
	s := newServer(t, jsonReply(200, completionText))
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
	m, err := openai.New("gpt-4o", openai.WithAPIKey("k"))
	require.NoError(t, err)
	assert.Equal(t, model.Info{Provider: "openai", Name: "gpt-4o", StructuredOutput: true}, m.Info())
}

func TestStreamText(t *testing.T) {
	s := newServer(t, sseReply(streamText))
	m, _ := newModel(t, s)
	var texts []string
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("Weather in Paris?")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
		texts = append(texts, c.Text)
	}
	require.NotEmpty(t, chunks)
	assert.Equal(t, []string{"Paris", " is", " sunny.", ""}, texts)
	last := chunks[len(chunks)-1]
	assert.Equal(t, "stop", last.FinishReason)
	assert.Equal(t, "gpt-4o-mini-2024-07-18", last.Model)
	require.NotNil(t, last.Usage)
	assert.Equal(t, model.Usage{InputTokens: 20, OutputTokens: 3, TotalTokens: 23}, *last.Usage)

	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	assert.Equal(t, true, body["stream"])
	assert.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
}

func TestStreamParallelToolCallsInterleaved(t *testing.T) {
	s := newServer(t, sseReply(streamParallelCalls))
	m, _ := newModel(t, s)
	var indices []int
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		if c.ToolCall != nil {
			indices = append(indices, c.ToolCall.Index)
		}
	}
	assert.Equal(t, []int{0, 1, 0, 1, 2, 0, 1}, indices, "deltas keep the provider's indices")

	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, &model.Response{
		Message: model.Assistant("Checking.",
			model.ToolCall{ID: "call_Paris", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
			model.ToolCall{ID: "call_Oslo", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Oslo"}`)},
			model.ToolCall{ID: "call_Time", Name: "get_time", Arguments: json.RawMessage(`{}`)},
		),
		Usage:        model.Usage{InputTokens: 80, OutputTokens: 40, TotalTokens: 120},
		FinishReason: "tool_calls",
		Model:        "gpt-4o-mini-2024-07-18",
	}, resp)
}

func TestStreamErrorEventMidStream(t *testing.T) {
	events := append([]string{}, streamText[:2]...)
	events = append(events, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
	s := newServer(t, func(w http.ResponseWriter, _ int) { sse(w, events, false) })
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
	assert.Equal(t, []string{"Paris"}, texts)
	var pe *model.ProviderError
	require.ErrorAs(t, gotErr, &pe)
	assert.Equal(t, "The server had an error while processing your request.", pe.Message)
	assert.Equal(t, "server_error", pe.Type)
	assert.Len(t, s.Received(), 1, "a stream that already yielded is not retried")
	assert.Empty(t, w.All())
}

func TestStreamTruncated(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ int) { sse(w, streamText[:3], false) })
	m, _ := newModel(t, s)
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorContains(t, err, "stream ended before the reply was complete")
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
		wantWaits []time.Duration // nil: no waits expected; checked exactly when set
		wantErr   bool
		status    int
		message   string
		exhausted bool
	}{
		{
			name:      "400 surfaces the provider's message",
			reply:     jsonReply(400, errorInvalidRequest),
			wantCalls: 1, wantErr: true, status: 400,
			message: "Invalid 'messages[1].content': string too long.",
		},
		{
			name:      "401 is not retried",
			reply:     jsonReply(401, errorUnauthorized),
			wantCalls: 1, wantErr: true, status: 401,
			message: "Incorrect API key provided",
		},
		{
			name:      "429 with Retry-After is retried after the wait asked for",
			reply:     sequence(jsonReply(429, errorRateLimited, "Retry-After", "3"), jsonReply(200, completionText)),
			wantCalls: 2, wantWaits: []time.Duration{3 * time.Second},
		},
		{
			name:      "429 with retry-after-ms",
			reply:     sequence(jsonReply(429, errorRateLimited, "retry-after-ms", "250", "Retry-After", "1"), jsonReply(200, completionText)),
			wantCalls: 2, wantWaits: []time.Duration{250 * time.Millisecond},
		},
		{
			name:      "500 is retried",
			reply:     sequence(jsonReply(500, errorServer), jsonReply(200, completionText)),
			wantCalls: 2,
		},
		{
			name:      "503 until retries run out",
			reply:     jsonReply(503, errorServer),
			wantCalls: 3, wantErr: true, status: 503, exhausted: true,
			message: "The server had an error while processing your request.",
		},
		{
			name: "non-JSON error body",
			reply: func(w http.ResponseWriter, _ int) {
				w.WriteHeader(404)
				_, _ = io.WriteString(w, "404 page not found\n")
			},
			wantCalls: 1, wantErr: true, status: 404, message: "404 page not found",
		},
		{
			name:      "compatible server's flat error shape",
			reply:     jsonReply(400, `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":400}`),
			wantCalls: 1, wantErr: true, status: 400, message: "max_tokens must be at least 1",
		},
	}
	for _, tt := range tests {
		for _, mode := range []string{"generate", "stream"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				reply := tt.reply
				if mode == "stream" {
					// Successful attempts answer with a stream.
					reply = func(w http.ResponseWriter, n int) {
						rec := httptest.NewRecorder()
						tt.reply(rec, n)
						if rec.Code == 200 {
							sse(w, streamText, true)
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
				assert.Equal(t, "openai", pe.Provider)
				assert.Equal(t, tt.status, pe.StatusCode)
				assert.Contains(t, pe.Message, tt.message)
				assert.Contains(t, err.Error(), tt.message, "the message reaches Error()")
				assert.Contains(t, err.Error(), http.StatusText(tt.status))
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
	m, err := openai.New("gpt-4o-mini", openai.WithBaseURL(url+"/v1"), openai.WithAPIKey("k"),
		openai.WithHTTPClient(&http.Client{Transport: transport}),
		openai.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.Sleep}))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userReq("x"))
	require.ErrorIs(t, err, model.ErrRetriesExhausted)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Len(t, w.All(), 2)
}

func TestMaxRetriesOption(t *testing.T) {
	s := newServer(t, jsonReply(500, errorServer))
	m, err := openai.New("gpt-4o-mini", openai.WithBaseURL(s.URL), openai.WithAPIKey("k"),
		openai.WithHTTPClient(s.Client), openai.WithMaxRetries(0))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userReq("x"))
	require.Error(t, err)
	assert.Len(t, s.Received(), 1, "WithMaxRetries(0) disables retries")
	assert.Equal(t, "/chat/completions", s.Received()[0].Path)
}

// Audio and resource parts (as MCP servers return them) are sent as the
// text that stands for them, in user messages and in tool results.
func TestAudioAndResourcePartsAreSentAsTheirTextFallback(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	m, _ := newModel(t, s)
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.Part{model.TextPart("Summarize."), model.BlobResourcePart("file:///r.zip", "application/zip", []byte("PK"))}},
		model.Assistant("", model.ToolCall{ID: "c1", Name: "listen", Arguments: []byte(`{}`)}),
		model.ToolMessage("c1", "listen", false, model.AudioPart("audio/wav", []byte("RIFF"))),
	}})
	require.NoError(t, err)
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	require.Len(t, body.Messages, 3)
	assert.Contains(t, fmt.Sprint(body.Messages[0]["content"]), "[resource file:///r.zip (application/zip, 2 bytes)]")
	assert.Equal(t, "[audio (audio/wav, 4 bytes)]", body.Messages[2]["content"])
}
