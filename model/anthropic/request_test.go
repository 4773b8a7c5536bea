package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
)

// sentBody sends req with m and returns the JSON body the server received.
func sentBody(t *testing.T, req *model.Request, opts ...anthropic.Option) map[string]json.RawMessage {
	t.Helper()
	s := newServer(t, jsonReply(200, messageText))
	m, _ := newModel(t, s, opts...)
	_, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	calls := s.Received()
	require.Len(t, calls, 1)
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(calls[0].Body), &body))
	return body
}

// The API rejects text blocks that hold only whitespace ("text content
// blocks must contain non-whitespace text"), wherever they are.
func TestWhitespaceOnlyTextIsLeftOut(t *testing.T) {
	body := sentBody(t, &model.Request{Messages: []model.Message{
		model.System(" \n"),
		model.System("Be brief."),
		{Role: model.RoleUser, Content: []model.Part{model.TextPart("  "), model.TextPart("go")}},
		model.Assistant("\n\n", model.ToolCall{ID: "a", Name: "t", Arguments: json.RawMessage(`{}`)}),
		model.ToolMessage("a", "t", false, model.TextPart("\t"), model.TextPart("done")),
		{Role: model.RoleUser, Content: []model.Part{model.TextPart("\n")}},
	}})
	assert.JSONEq(t, `[{"type": "text", "text": "Be brief."}]`, string(body["system"]))
	assert.JSONEq(t, `[
		{"role": "user", "content": [{"type": "text", "text": "go"}]},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "done"}]}]}
	]`, string(body["messages"]))
}

// Messages of the same role that end up next to each other form one turn,
// and in a user turn the tool_result blocks come first, as the API requires
// after a turn with tool_use blocks.
func TestAdjacentTurnsOfOneRoleAreMerged(t *testing.T) {
	call := func(id string) model.ToolCall {
		return model.ToolCall{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}
	}
	tests := []struct {
		name string
		msgs []model.Message
		want string
	}{
		{
			name: "a system message between tool results",
			msgs: []model.Message{
				model.User("go"),
				model.Assistant("", call("a"), call("b")),
				model.ToolMessage("a", "t", false, model.TextPart("1")),
				model.System("Use metric units."),
				model.ToolMessage("b", "t", false, model.TextPart("2")),
			},
			want: `[
				{"role": "user", "content": [{"type": "text", "text": "go"}]},
				{"role": "assistant", "content": [
					{"type": "tool_use", "id": "a", "name": "t", "input": {}},
					{"type": "tool_use", "id": "b", "name": "t", "input": {}}
				]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "1"}]},
					{"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "2"}]}
				]}
			]`,
		},
		{
			name: "an empty user message between tool results",
			msgs: []model.Message{
				model.User("go"),
				model.Assistant("", call("a"), call("b")),
				model.ToolMessage("a", "t", false, model.TextPart("1")),
				{Role: model.RoleUser},
				model.ToolMessage("b", "t", true, model.TextPart("2")),
			},
			want: `[
				{"role": "user", "content": [{"type": "text", "text": "go"}]},
				{"role": "assistant", "content": [
					{"type": "tool_use", "id": "a", "name": "t", "input": {}},
					{"type": "tool_use", "id": "b", "name": "t", "input": {}}
				]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "1"}]},
					{"type": "tool_result", "tool_use_id": "b", "is_error": true, "content": [{"type": "text", "text": "2"}]}
				]}
			]`,
		},
		{
			name: "a user message before the tool results",
			msgs: []model.Message{
				model.User("go"),
				model.Assistant("On it.", call("a")),
				model.User("Also hurry."),
				model.ToolMessage("a", "t", false, model.TextPart("1")),
				model.User("Thanks."),
			},
			want: `[
				{"role": "user", "content": [{"type": "text", "text": "go"}]},
				{"role": "assistant", "content": [
					{"type": "text", "text": "On it."},
					{"type": "tool_use", "id": "a", "name": "t", "input": {}}
				]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "1"}]},
					{"type": "text", "text": "Also hurry."},
					{"type": "text", "text": "Thanks."}
				]}
			]`,
		},
		{
			name: "consecutive user and assistant messages",
			msgs: []model.Message{
				model.User("one"),
				model.System("x"),
				model.User("two"),
				model.Assistant("three"),
				model.Assistant(""),
				model.Assistant("four", call("a")),
				model.ToolMessage("a", "t", false),
			},
			want: `[
				{"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
				{"role": "assistant", "content": [
					{"type": "text", "text": "three"},
					{"type": "text", "text": "four"},
					{"type": "tool_use", "id": "a", "name": "t", "input": {}}
				]},
				{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}
			]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := sentBody(t, &model.Request{Messages: tt.msgs})
			assert.JSONEq(t, tt.want, string(body["messages"]))
		})
	}
}

// The API refuses any tool_choice in a request without tools ("tool_choice
// may only be specified while providing tools"); without tools, none is
// what the model gets anyway.
func TestToolChoiceNoneWithoutTools(t *testing.T) {
	body := sentBody(t, &model.Request{
		Messages:   []model.Message{model.User("hi")},
		ToolChoice: model.ToolChoice{Mode: model.ToolChoiceNone},
	})
	assert.NotContains(t, body, "tool_choice")
	assert.NotContains(t, body, "tools")
}

// Recent Claude models refuse temperature and top_p together. A request
// that sets one of them must not get the other from the model's defaults.
func TestTemperatureAndTopPPrecedence(t *testing.T) {
	tests := []struct {
		name     string
		defaults model.Settings
		req      model.Settings
		temp     any
		topP     any
	}{
		{"request top_p replaces default temperature", model.Settings{Temperature: ptr(0.7)}, model.Settings{TopP: ptr(0.9)}, nil, 0.9},
		{"request temperature replaces default top_p", model.Settings{TopP: ptr(0.9)}, model.Settings{Temperature: ptr(0.2)}, 0.2, nil},
		{"request sets both", model.Settings{}, model.Settings{Temperature: ptr(0.2), TopP: ptr(0.9)}, 0.2, 0.9},
		{"defaults only", model.Settings{Temperature: ptr(0.7)}, model.Settings{MaxTokens: 10}, 0.7, nil},
		{"request temperature over default temperature and top_p", model.Settings{Temperature: ptr(0.7), TopP: ptr(0.5)}, model.Settings{Temperature: ptr(0.1)}, 0.1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := sentBody(t, &model.Request{Messages: []model.Message{model.User("x")}, Settings: tt.req},
				anthropic.WithSettings(tt.defaults))
			var body map[string]any
			b, _ := json.Marshal(raw)
			require.NoError(t, json.Unmarshal(b, &body))
			assert.Equal(t, tt.temp, body["temperature"])
			assert.Equal(t, tt.topP, body["top_p"])
		})
	}
}

// The API refuses empty stop sequences.
func TestEmptyStopSequencesAreLeftOut(t *testing.T) {
	body := sentBody(t, &model.Request{Messages: []model.Message{model.User("x")}, Settings: model.Settings{Stop: []string{"", "END", "\n\n"}}})
	assert.JSONEq(t, `["END", "\n\n"]`, string(body["stop_sequences"]))

	body = sentBody(t, &model.Request{Messages: []model.Message{model.User("x")}, Settings: model.Settings{Stop: []string{""}}})
	assert.NotContains(t, body, "stop_sequences")
}

type recordingTransport struct {
	mu   sync.Mutex
	urls []string
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	rt.mu.Lock()
	rt.urls = append(rt.urls, r.URL.String())
	rt.mu.Unlock()
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(messageText)),
		Request:    r,
	}, nil
}

// A set but empty ANTHROPIC_BASE_URL means the default, not a relative URL.
func TestEmptyBaseURLEnvironmentMeansDefault(t *testing.T) {
	for _, v := range []string{"", " "} {
		t.Setenv("ANTHROPIC_BASE_URL", v)
		rt := &recordingTransport{}
		m, err := anthropic.New("claude-haiku-4-5", anthropic.WithAPIKey("k"), anthropic.WithHTTPClient(&http.Client{Transport: rt}))
		require.NoError(t, err)
		_, err = m.Generate(context.Background(), userReq("x"))
		require.NoError(t, err)
		assert.Equal(t, []string{"https://api.anthropic.com/v1/messages"}, rt.urls)
	}
}

func TestInvalidBaseURLEnvironmentIsRefused(t *testing.T) {
	for _, v := range []string{"localhost:8080", "/v1", "ftp://example.test"} {
		t.Setenv("ANTHROPIC_BASE_URL", v)
		_, err := anthropic.New("claude-haiku-4-5", anthropic.WithAPIKey("k"))
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "invalid ANTHROPIC_BASE_URL")
	}
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")
	_, err := anthropic.New("claude-haiku-4-5", anthropic.WithAPIKey("k"))
	require.NoError(t, err)
}

// The model's thinking goes back with its assistant message, before the
// text and the tool calls, as the API requires when the model thought
// before it called tools; reasoning without a signature (another
// provider's, or shown without one) cannot be, and is left out.
func TestThinkingIsSentBack(t *testing.T) {
	reply := model.Assistant("Checking.", model.ToolCall{ID: "a", Name: "t", Arguments: json.RawMessage(`{"x":1}`)})
	reply.Content = append([]model.Part{
		model.ReasoningPart("Two cities.", []byte("sig-1")),
		model.ReasoningPart("unsigned", nil),
		model.RedactedReasoningPart([]byte("ENCRYPTED")),
	}, reply.Content...)
	body := sentBody(t, &model.Request{Messages: []model.Message{
		model.User("go"),
		reply,
		model.ToolMessage("a", "t", false, model.TextPart("done")),
	}})
	assert.JSONEq(t, `[
		{"role": "user", "content": [{"type": "text", "text": "go"}]},
		{"role": "assistant", "content": [
			{"type": "thinking", "thinking": "Two cities.", "signature": "sig-1"},
			{"type": "redacted_thinking", "data": "ENCRYPTED"},
			{"type": "text", "text": "Checking."},
			{"type": "tool_use", "id": "a", "name": "t", "input": {"x": 1}}
		]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "done"}]}]}
	]`, string(body["messages"]))
	_, ok := body["thinking"]
	assert.False(t, ok, "thinking is not configured without WithThinking")

	// Reasoning has no place in a user's message.
	s := newServer(t, jsonReply(200, messageText))
	m, _ := newModel(t, s)
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.Part{model.ReasoningPart("x", []byte("s"))}},
	}})
	require.ErrorContains(t, err, `message 0 (user): part 0: unknown part type "reasoning"`)
	assert.Empty(t, s.Received())
}

func TestThinkingOptions(t *testing.T) {
	body := sentBody(t, userReq("x"), anthropic.WithThinking(2048))
	assert.JSONEq(t, `{"type": "enabled", "budget_tokens": 2048}`, string(body["thinking"]))

	body = sentBody(t, userReq("x"), anthropic.WithAdaptiveThinking())
	assert.JSONEq(t, `{"type": "adaptive"}`, string(body["thinking"]))

	_, err := anthropic.New("claude", anthropic.WithThinking(1000))
	require.ErrorContains(t, err, "WithThinking: budget 1000 is below the minimum of 1024 tokens")

	// The budget counts against max_tokens: a budget that leaves no room
	// for the answer fails before anything is sent.
	s := newServer(t, jsonReply(200, messageText))
	m, _ := newModel(t, s, anthropic.WithThinking(8000), anthropic.WithMaxTokens(8000))
	_, err = m.Generate(context.Background(), userReq("x"))
	require.ErrorContains(t, err, "thinking budget of 8000 tokens is not less than max_tokens 8000")
	assert.Empty(t, s.Received())
	req := userReq("x")
	req.Settings.MaxTokens = 16000
	_, err = m.Generate(context.Background(), req)
	require.NoError(t, err, "a request's own max_tokens makes room")

	// What the API refuses with thinking fails before anything is sent.
	sent := len(s.Received())
	for _, c := range []struct {
		edit func(*model.Request)
		want string
	}{
		{func(r *model.Request) { r.Settings.Temperature = new(0.2) }, "temperature 0.2 cannot be set with extended thinking"},
		{func(r *model.Request) { r.Settings.TopP = new(0.5) }, "top_p 0.5 cannot be used with extended thinking"},
		{func(r *model.Request) {
			r.Tools = []model.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}}
			r.ToolChoice = model.ToolChoice{Mode: model.ToolChoiceRequired}
		}, "forces a tool call (required) cannot be used with extended thinking"},
	} {
		req := userReq("x")
		req.Settings.MaxTokens = 16000
		c.edit(req)
		_, err := m.Generate(context.Background(), req)
		require.ErrorContains(t, err, c.want)
	}
	assert.Len(t, s.Received(), sent)
	req = userReq("x")
	req.Settings.MaxTokens, req.Settings.Temperature, req.Settings.TopP = 16000, new(1.0), new(0.97)
	_, err = m.Generate(context.Background(), req)
	require.NoError(t, err, "temperature 1 and top_p from 0.95 are allowed")
}

// A redacted_thinking block streams whole in its start event.
func TestStreamRedactedThinking(t *testing.T) {
	events := []event{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"Short "}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"answer."}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"Eq0B"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":1}`},
		{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Yes."}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":2}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	s := newServer(t, sseReply(events))
	m, _ := newModel(t, s)
	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, []model.Part{
		model.RedactedReasoningPart([]byte("EmwKAhgBEgy3va3pzix")),
		model.ReasoningPart("Short answer.", []byte("Eq0B")),
		model.TextPart("Yes."),
	}, resp.Message.Content)
	assert.Equal(t, "Yes.", resp.Message.Text())
	assert.Equal(t, "Short answer.", resp.Message.Reasoning())
}

// Audio and resource parts (as MCP servers return them) are sent as the
// text that stands for them, in user messages and in tool results.
func TestAudioAndResourcePartsAreSentAsTheirTextFallback(t *testing.T) {
	body := sentBody(t, &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.Part{model.TextPart("Summarize."), model.TextResourcePart("file:///r.md", "text/markdown", "# Readme")}},
		model.Assistant("", model.ToolCall{ID: "a", Name: "listen", Arguments: json.RawMessage(`{}`)}),
		model.ToolMessage("a", "listen", false, model.AudioPart("audio/wav", []byte("RIFF"))),
	}})
	assert.JSONEq(t, `[
		{"role": "user", "content": [{"type": "text", "text": "Summarize."}, {"type": "text", "text": "# Readme"}]},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "listen", "input": {}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "[audio (audio/wav, 4 bytes)]"}]}]}
	]`, string(body["messages"]))
}
