package openai_test

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
	"github.com/trellis-go/trellis/model/openai"
)

// OpenAI opens every stream with a chunk that carries only the assistant
// role. An error that follows it, before any text, has cost the caller
// nothing, so it is retried like one sent before the role.
func TestStreamErrorBeforeAnyOutputIsRetried(t *testing.T) {
	failing := []string{streamText[0], `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`}
	s := newServer(t, sequence(
		func(w http.ResponseWriter, _ int) { sse(w, failing, false) },
		sseReply(streamText),
	))
	m, w := newModel(t, s)
	var texts []string
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		texts = append(texts, c.Text)
	}
	assert.Equal(t, []string{"Paris", " is", " sunny.", ""}, texts, "nothing of the failed attempt is yielded")
	assert.Len(t, s.Received(), 2)
	assert.Len(t, w.All(), 1)
}

func TestStreamCutShortBeforeAnyOutputIsRetried(t *testing.T) {
	s := newServer(t, sequence(
		func(w http.ResponseWriter, _ int) { sse(w, streamText[:1], false) },
		sseReply(streamText),
	))
	m, w := newModel(t, s)
	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny.", resp.Message.Text())
	assert.Len(t, s.Received(), 2)
	assert.Len(t, w.All(), 1)
}

func TestStreamEmptyReply(t *testing.T) {
	events := []string{streamText[0], streamText[4], streamText[5]}
	s := newServer(t, sseReply(events))
	m, w := newModel(t, s)
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
	}
	require.Len(t, chunks, 1)
	assert.Equal(t, "stop", chunks[0].FinishReason)
	require.NotNil(t, chunks[0].Usage)
	assert.Equal(t, 23, chunks[0].Usage.TotalTokens)
	assert.Len(t, s.Received(), 1)
	assert.Empty(t, w.All())
}

// OpenAI accepts only letters, digits, '_' and '-' (at most 64) in a
// response format's name; names taken from Go types hold other characters.
func TestResponseFormatNameIsSanitized(t *testing.T) {
	tests := map[string]string{
		"":                      "response",
		"Weather":               "Weather",
		"weather-report_2":      "weather-report_2",
		"map[string]int":        "map_string_int",
		"Result[main.Weather]":  "Result_main_Weather_",
		"Wetter für Köln":       "Wetter_f_r_K_ln",
		strings.Repeat("a", 70): strings.Repeat("a", 64),
	}
	for name, want := range tests {
		s := newServer(t, jsonReply(200, completionText))
		m, _ := newModel(t, s)
		req := userReq("x")
		req.ResponseFormat = &model.ResponseFormat{Name: name, Schema: json.RawMessage(`{"type":"object"}`)}
		_, err := m.Generate(context.Background(), req)
		require.NoError(t, err)
		var body struct {
			ResponseFormat struct {
				JSONSchema struct {
					Name string `json:"name"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
		assert.Equal(t, want, body.ResponseFormat.JSONSchema.Name, "name %q", name)
	}
}

type recordingTransport struct {
	mu   sync.Mutex
	urls []string
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.urls = append(rt.urls, r.URL.String())
	rt.mu.Unlock()
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(completionText)),
		Request:    r,
	}, nil
}

// An environment variable that is set but empty, as container and CI
// configurations often leave it, is no base URL.
func TestBlankBaseURLEnvironmentUsesTheDefault(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", " ")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	rt := &recordingTransport{}
	m, err := openai.New("gpt-4o-mini", openai.WithHTTPClient(&http.Client{Transport: rt}))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, []string{"https://api.openai.com/v1/chat/completions"}, rt.urls)
}

// Some compatible servers report prompt and completion tokens only.
func TestUsageWithoutTotal(t *testing.T) {
	const reply = `{"id":"c1","object":"chat.completion","created":1,"model":"local",
		"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":7,"completion_tokens":2}}`
	s := newServer(t, jsonReply(200, reply))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, model.Usage{InputTokens: 7, OutputTokens: 2, TotalTokens: 9}, resp.Usage)

	events := []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"local","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}`,
	}
	s2 := newServer(t, sseReply(events))
	m2, _ := newModel(t, s2)
	resp, err = model.Collect(m2.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, model.Usage{InputTokens: 7, OutputTokens: 2, TotalTokens: 9}, resp.Usage)
}

// Servers that predate tool calls answer with the legacy function_call,
// and its finish reason is reported as "tool_calls": the call must not be
// lost on the way.
func TestLegacyFunctionCall(t *testing.T) {
	const reply = `{"id":"c1","object":"chat.completion","created":1,"model":"local",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,
			"function_call":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},"finish_reason":"function_call"}]}`
	want := []model.ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}

	s := newServer(t, jsonReply(200, reply))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, want, resp.Message.ToolCalls)

	const prefix = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"local",`
	events := []string{
		prefix + `"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`,
		prefix + `"choices":[{"index":0,"delta":{"function_call":{"name":"get_weather","arguments":""}},"finish_reason":null}]}`,
		prefix + `"choices":[{"index":0,"delta":{"function_call":{"arguments":"{\"city\":"}},"finish_reason":null}]}`,
		prefix + `"choices":[{"index":0,"delta":{"function_call":{"arguments":"\"Paris\"}"}},"finish_reason":null}]}`,
		prefix + `"choices":[{"index":0,"delta":{},"finish_reason":"function_call"}]}`,
	}
	s2 := newServer(t, sseReply(events))
	m2, _ := newModel(t, s2)
	resp, err = model.Collect(m2.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, want, resp.Message.ToolCalls)
}

// Servers that speak the API name some finish reasons their own way; they
// are reported under the normalized names, and unknown ones as sent.
func TestFinishReasonsOfOtherServers(t *testing.T) {
	for sent, want := range map[string]string{
		"stop": "stop", "eos_token": "stop", "eos": "stop", "end_turn": "stop", "stop_sequence": "stop",
		"length": "length", "max_tokens": "length", "model_length": "length",
		"tool_calls": "tool_calls", "tool_use": "tool_calls",
		"content_filter": "content_filter", "abort": "abort",
	} {
		t.Run(sent, func(t *testing.T) {
			reply := `{"id":"c1","object":"chat.completion","created":1,"model":"local",
				"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"` + sent + `"}]}`
			s := newServer(t, jsonReply(200, reply))
			m, _ := newModel(t, s)
			resp, err := m.Generate(context.Background(), userReq("x"))
			require.NoError(t, err)
			assert.Equal(t, want, resp.FinishReason)

			const prefix = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"local",`
			s2 := newServer(t, sseReply([]string{
				prefix + `"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`,
				prefix + `"choices":[{"index":0,"delta":{},"finish_reason":"` + sent + `"}]}`,
			}))
			m2, _ := newModel(t, s2)
			resp, err = model.Collect(m2.Stream(context.Background(), userReq("x")))
			require.NoError(t, err)
			assert.Equal(t, want, resp.FinishReason)
		})
	}
}

// OpenAI answers a tool_choice sent without tools with 400 ("'tool_choice'
// is only allowed when 'tools' are specified"). Tool lists are resolved per
// call, so a node that forbids tool calls may have none to offer.
func TestToolChoiceNoneWithoutTools(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	m, _ := newModel(t, s)
	req := userReq("x")
	req.ToolChoice = model.ToolChoice{Mode: model.ToolChoiceNone}
	_, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	assert.NotContains(t, body, "tool_choice")
	assert.NotContains(t, body, "tools")
}

// Some compatible servers send the content as an array of parts, reasoning
// included.
func TestContentAsAnArrayOfParts(t *testing.T) {
	const reply = `{"id":"c1","object":"chat.completion","created":1,"model":"magistral-small",
		"choices":[{"index":0,"message":{"role":"assistant","content":[
			{"type":"thinking","thinking":[{"type":"text","text":"The user greets me."}]},
			{"type":"text","text":"Hello"},{"type":"text","text":" there."}]},"finish_reason":"stop"}]}`
	s := newServer(t, jsonReply(200, reply))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "Hello there.", resp.Message.Text())

	const prefix = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"magistral-small",`
	events := []string{
		prefix + `"choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Hm."}]}]},"finish_reason":null}]}`,
		prefix + `"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Hello"}]},"finish_reason":null}]}`,
		prefix + `"choices":[{"index":0,"delta":{"content":" there."},"finish_reason":"stop"}]}`,
	}
	s2 := newServer(t, sseReply(events))
	m2, _ := newModel(t, s2)
	var texts []string
	for c, err := range m2.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		if c.Text != "" {
			texts = append(texts, c.Text)
		}
	}
	assert.Equal(t, []string{"Hello", " there."}, texts)

	resp, err = model.Collect(m2.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, []model.Part{model.ReasoningPart("Hm.", nil), model.TextPart("Hello there.")}, resp.Message.Content)
}

// Servers that reason (DeepSeek, vLLM, SGLang, llama.cpp, Ollama) send the
// reasoning beside the content, as "reasoning_content" or "reasoning". It
// becomes a reasoning part, before the text, and is not sent back.
func TestReasoningOfCompatibleServers(t *testing.T) {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		t.Run(key, func(t *testing.T) {
			reply := `{"id":"c1","object":"chat.completion","created":1,"model":"deepseek-reasoner",
				"choices":[{"index":0,"message":{"role":"assistant","content":"",` + `"` + key + `":"Oslo needs a lookup.",
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},
				"finish_reason":"tool_calls"}]}`
			s := newServer(t, jsonReply(200, reply))
			m, _ := newModel(t, s)
			resp, err := m.Generate(context.Background(), userReq("Weather in Oslo?"))
			require.NoError(t, err)
			assert.Equal(t, []model.Part{model.ReasoningPart("Oslo needs a lookup.", nil)}, resp.Message.Content)
			assert.Equal(t, "Oslo needs a lookup.", resp.Message.Reasoning())
			assert.Empty(t, resp.Message.Text())
			require.Len(t, resp.Message.ToolCalls, 1)

			const prefix = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner",`
			events := []string{
				prefix + `"choices":[{"index":0,"delta":{"role":"assistant","content":null,"` + key + `":"Oslo "},"finish_reason":null}]}`,
				prefix + `"choices":[{"index":0,"delta":{"content":null,"` + key + `":"needs a lookup."},"finish_reason":null}]}`,
				prefix + `"choices":[{"index":0,"delta":{"content":"It is ","` + key + `":null},"finish_reason":null}]}`,
				prefix + `"choices":[{"index":0,"delta":{"content":"sunny."},"finish_reason":"stop"}]}`,
			}
			s2 := newServer(t, sseReply(events))
			m2, _ := newModel(t, s2)
			streamed, err := model.Collect(m2.Stream(context.Background(), userReq("x")))
			require.NoError(t, err)
			assert.Equal(t, []model.Part{model.ReasoningPart("Oslo needs a lookup.", nil), model.TextPart("It is sunny.")}, streamed.Message.Content)

			// The reply goes back without its reasoning.
			s3 := newServer(t, jsonReply(200, completionText))
			m3, _ := newModel(t, s3)
			_, err = m3.Generate(context.Background(), &model.Request{Messages: []model.Message{
				model.User("Weather in Oslo?"), streamed.Message, model.User("Thanks"),
			}})
			require.NoError(t, err)
			calls := s3.Received()
			require.Len(t, calls, 1)
			var body struct {
				Messages []map[string]json.RawMessage `json:"messages"`
			}
			require.NoError(t, json.Unmarshal([]byte(calls[0].Body), &body))
			require.Len(t, body.Messages, 3)
			assert.JSONEq(t, `"It is sunny."`, string(body.Messages[1]["content"]))
			for k := range body.Messages[1] {
				assert.NotContains(t, k, "reasoning")
			}
		})
	}
}

func TestInvalidBaseURLEnvironmentIsRefused(t *testing.T) {
	for _, v := range []string{"localhost:11434", "/v1", "ftp://example.test"} {
		t.Setenv("OPENAI_BASE_URL", v)
		_, err := openai.New("gpt-4o-mini")
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "invalid OPENAI_BASE_URL")
	}
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
	_, err := openai.New("llama3.2")
	require.NoError(t, err)
}

// Some compatible servers and gateways ignore "stream": true and answer with
// the whole completion as JSON. The stream yields that reply as chunks, the
// way it would have arrived, instead of taking it for a stream cut short.
func TestStreamFromAServerThatIgnoresStreaming(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, completionToolCalls))
	m, w := newModel(t, s)
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("Weather and time in Paris?")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
	}
	require.Len(t, chunks, 3)
	assert.Equal(t, &model.ToolCallDelta{Index: 0, ID: "call_8Qm2vXb1Yk3LsT0pRz7Wn4Jd", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "celsius"}`}, chunks[0].ToolCall)
	assert.Equal(t, &model.ToolCallDelta{Index: 1, ID: "call_2Hf9cKd5Nw1QaP6mEo3Ls8Vb", Name: "get_time", Arguments: `{"timezone":"Europe/Paris"}`}, chunks[1].ToolCall)
	last := chunks[2]
	assert.Equal(t, "tool_calls", last.FinishReason)
	assert.Equal(t, "gpt-4o-mini-2024-07-18", last.Model)
	require.NotNil(t, last.Usage)
	assert.Equal(t, 147, last.Usage.TotalTokens)
	assert.Len(t, s.Received(), 1, "not retried")
	assert.Empty(t, w.All())

	s2 := newServer(t, jsonReply(http.StatusOK, completionText))
	m2, _ := newModel(t, s2)
	resp, err := model.Collect(m2.Stream(context.Background(), userReq("Weather in Paris?")))
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny today, around 21°C.", resp.Message.Text())
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, 130, resp.Usage.TotalTokens)

	// A JSON body that is not a completion is an error that says so.
	s3 := newServer(t, jsonReply(http.StatusOK, `{"status":"ok"}`))
	m3, _ := newModel(t, s3)
	_, err = model.Collect(m3.Stream(context.Background(), userReq("x")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no choices")
}

func TestReasoningEffort(t *testing.T) {
	for _, c := range []struct {
		opts []openai.Option
		want string // the field's JSON, "" when absent
	}{
		{nil, ""},
		{[]openai.Option{openai.WithReasoningEffort("low")}, `"low"`},
	} {
		s := newServer(t, jsonReply(200, completionText))
		m, _ := newModel(t, s, c.opts...)
		_, err := m.Generate(context.Background(), userReq("x"))
		require.NoError(t, err)
		var body map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
		if c.want == "" {
			assert.NotContains(t, body, "reasoning_effort")
		} else {
			assert.JSONEq(t, c.want, string(body["reasoning_effort"]))
		}
	}
	_, err := openai.New("o3", openai.WithReasoningEffort(" "))
	require.ErrorContains(t, err, "WithReasoningEffort: empty effort")
}
