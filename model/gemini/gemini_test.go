package gemini_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
)

func TestGenerateSendsTheRequestGeminiExpects(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, replyText))
	m, _ := newModel(t, s, gemini.WithThinkingBudget(512), gemini.WithThoughts())
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{
			model.System("Be brief."),
			{Role: model.RoleUser, Content: []model.Part{model.TextPart("What is this?"), model.ImagePart("image/png", []byte{1, 2, 3})}},
		},
		Tools: []model.ToolDefinition{{
			Name: "get_weather", Description: "Weather for a city",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		}},
		ToolChoice:     model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"},
		ResponseFormat: &model.ResponseFormat{Name: "r", Schema: json.RawMessage(`{"type":"object"}`)},
		Settings:       model.Settings{Temperature: ptr(0.5), MaxTokens: 100, Stop: []string{"END"}, Seed: ptr(int64(7))},
	})
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny today, around 21°C.", resp.Message.Text())
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, "gemini-2.5-flash", resp.Model)
	assert.Equal(t, model.Usage{InputTokens: 9, OutputTokens: 49, TotalTokens: 58}, resp.Usage)

	calls := s.Received()
	require.Len(t, calls, 1)
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", calls[0].Path)
	assert.Equal(t, "test-key", calls[0].Header.Get("X-Goog-Api-Key"))
	assert.JSONEq(t, `{
		"contents": [{"role": "user", "parts": [{"text": "What is this?"}, {"inlineData": {"mimeType": "image/png", "data": "AQID"}}]}],
		"systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
		"tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather for a city",
			"parametersJsonSchema": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}],
		"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
		"generationConfig": {
			"temperature": 0.5, "maxOutputTokens": 100, "stopSequences": ["END"], "seed": 7,
			"responseMimeType": "application/json", "responseJsonSchema": {"type":"object"},
			"thinkingConfig": {"thinkingBudget": 512, "includeThoughts": true}
		}
	}`, calls[0].Body)
}

// A tool round trip keeps what Gemini requires: the call's thought
// signature goes back on the call, the thoughts with theirs, the response
// names the function, and an image in the result goes in the response's
// own parts.
func TestToolRoundTripKeepsSignaturesAndSendsImagesInTheResponse(t *testing.T) {
	s := newServer(t, sequence(jsonReply(http.StatusOK, replyCalls), jsonReply(http.StatusOK, replyText)))
	m, _ := newModel(t, s)
	req := userReq("Weather in Paris and Oslo?")
	req.Tools = []model.ToolDefinition{{Name: "get_weather"}}
	resp, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	require.Len(t, resp.Message.ToolCalls, 2)
	paris, oslo := resp.Message.ToolCalls[0], resp.Message.ToolCalls[1]
	assert.Equal(t, "get_weather", paris.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, string(paris.Arguments))
	assert.JSONEq(t, `{"city":"Oslo"}`, string(oslo.Arguments))
	assert.NotEmpty(t, paris.ID)
	assert.NotEqual(t, paris.ID, oslo.ID, "calls without IDs get distinct ones")
	assert.Contains(t, resp.Message.Reasoning(), "Checking the weather")
	assert.Equal(t, "CiQBVKhc7ZfLq0sXk3mD2fQ=", resp.Message.Metadata[gemini.MetaCallSignature+paris.ID])

	req.Messages = append(req.Messages, resp.Message,
		model.ToolMessage(paris.ID, "get_weather", false, model.TextPart("21°C"), model.ImagePart("image/jpeg", []byte("jpg"))),
		model.ToolMessage(oslo.ID, "", true, model.TextPart("no station")),
	)
	_, err = m.Generate(context.Background(), req)
	require.NoError(t, err)
	var body struct {
		Contents []json.RawMessage `json:"contents"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Received()[1].Body), &body))
	require.Len(t, body.Contents, 3)
	assert.JSONEq(t, `{"role": "model", "parts": [
		{"text": "**Checking the weather**\n\nThe user wants Paris and Oslo.", "thought": true},
		{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "CiQBVKhc7ZfLq0sXk3mD2fQ="},
		{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
	]}`, string(body.Contents[1]))
	assert.JSONEq(t, `{"role": "user", "parts": [
		{"functionResponse": {"name": "get_weather", "response": {"output": "21°C"},
			"parts": [{"inlineData": {"mimeType": "image/jpeg", "data": "`+base64.StdEncoding.EncodeToString([]byte("jpg"))+`"}}]}},
		{"functionResponse": {"name": "get_weather", "response": {"error": "no station"}}}
	]}`, string(body.Contents[2]))
}

func TestImagesTheModelDrawsComeBackAsImageParts(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, replyImage))
	m, _ := newModel(t, s, gemini.WithResponseModalities("TEXT", "IMAGE"))
	resp, err := m.Generate(context.Background(), userReq("Draw a red square."))
	require.NoError(t, err)
	assert.Equal(t, "Here is a red square.", resp.Message.Text())
	require.Len(t, resp.Message.Content, 2)
	img := resp.Message.Content[1]
	assert.Equal(t, model.PartImage, img.Type)
	assert.Equal(t, "image/png", img.MIMEType)
	assert.Equal(t, []byte("\x89PNG\r\n\x1a\n"), img.Data)
	assert.Contains(t, s.Received()[0].Body, `"responseModalities":["TEXT","IMAGE"]`)
}

// An image the server sends without a MIME type is typed by its bytes,
// so the reply holding it can be sent back.
func TestAnUntypedImageIsTypedByItsBytes(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, `{"candidates":[{"content":{"role":"model","parts":[{"inlineData":{"data":"iVBORw0KGgo="}}]},"finishReason":"STOP"}]}`))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("Draw."))
	require.NoError(t, err)
	require.Len(t, resp.Message.Content, 1)
	assert.Equal(t, "image/png", resp.Message.Content[0].MIMEType)
	_, err = m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("x"), resp.Message}})
	require.NoError(t, err)
}

// Code the model ran comes back as provider parts, which go back to
// Gemini as they came and are left out for other providers.
func TestCodeExecutionPartsGoBackAsTheyCame(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, replyCode))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("2^10?"))
	require.NoError(t, err)
	assert.Equal(t, "2^10 is 1024.", resp.Message.Text())
	var provider []model.Part
	for _, p := range resp.Message.Content {
		if p.Type == model.PartProvider {
			provider = append(provider, p)
		}
	}
	require.Len(t, provider, 2)
	assert.Equal(t, gemini.PartMIMEType, provider[0].MIMEType)

	foreign := model.ProviderPart("application/vnd.anthropic.content-block+json", json.RawMessage(`{"type":"server_tool_use"}`))
	resp.Message.Content = append(resp.Message.Content, foreign)
	_, err = m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("2^10?"), resp.Message, model.User("thanks")}})
	require.NoError(t, err)
	var body struct {
		Contents []struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Received()[1].Body), &body))
	parts := body.Contents[1].Parts
	require.Len(t, parts, 3, "text, code and its result; the other provider's part is left out")
	assert.Contains(t, parts[0], "text")
	assert.JSONEq(t, `{"language": "PYTHON", "code": "print(2**10)"}`, string(parts[1]["executableCode"]))
	assert.JSONEq(t, `{"outcome": "OUTCOME_OK", "output": "1024\n"}`, string(parts[2]["codeExecutionResult"]))
}

func TestABlockedPromptFinishesWithContentFilter(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, replyBlocked))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "content_filter", resp.FinishReason)
	assert.Empty(t, resp.Message.Content)
}

func TestRequestsTheAPIWouldRefuseFailBeforeSending(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, replyText))
	m, _ := newModel(t, s)
	for name, req := range map[string]*model.Request{
		"nil":                  nil,
		"tool without name":    {Messages: []model.Message{model.User("x")}, Tools: []model.ToolDefinition{{}}},
		"schema not an object": {Messages: []model.Message{model.User("x")}, Tools: []model.ToolDefinition{{Name: "f", InputSchema: json.RawMessage(`[1]`)}}},
		"choice of a missing tool": {Messages: []model.Message{model.User("x")}, Tools: []model.ToolDefinition{{Name: "f"}},
			ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool, Name: "g"}},
		"bad arguments":     {Messages: []model.Message{model.User("x"), model.Assistant("", model.ToolCall{ID: "1", Name: "f", Arguments: json.RawMessage(`[`)})}},
		"tool with no name": {Messages: []model.Message{model.User("x"), model.ToolMessage("unknown", "", false, model.TextPart("r"))}},
		"seed too large":    {Messages: []model.Message{model.User("x")}, Settings: model.Settings{Seed: ptr(int64(1) << 40)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := m.Generate(context.Background(), req)
			assert.Error(t, err)
		})
	}
	assert.Empty(t, s.Received())
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, opts := range map[string][]gemini.Option{
		"base URL":      {gemini.WithAPIKey("k"), gemini.WithBaseURL("localhost:1")},
		"nil client":    {gemini.WithAPIKey("k"), gemini.WithHTTPClient(nil)},
		"budget":        {gemini.WithAPIKey("k"), gemini.WithThinkingBudget(-2)},
		"level":         {gemini.WithAPIKey("k"), gemini.WithThinkingLevel(" ")},
		"retries":       {gemini.WithAPIKey("k"), gemini.WithMaxRetries(-1)},
		"stream limits": {gemini.WithAPIKey("k"), gemini.WithStreamLimits(model.StreamLimits{MaxBytes: -1})},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := gemini.New("gemini-2.5-flash", opts...)
			assert.Error(t, err)
		})
	}
	_, err := gemini.New("", gemini.WithAPIKey("k"))
	assert.Error(t, err)
}

func TestNewReadsTheKeyFromTheEnvironment(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "env-key")
	s := newServer(t, jsonReply(http.StatusOK, replyText))
	m, err := gemini.New("gemini-2.5-flash", gemini.WithBaseURL(s.URL), gemini.WithHTTPClient(s.Client))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "env-key", s.Received()[0].Header.Get("X-Goog-Api-Key"))
}

// An attempt that outlives the model's timeout is abandoned and retried.
func TestGenerateAttemptsAreBoundedByTheTimeout(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, sequence(func(w http.ResponseWriter, _ int) {
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}, jsonReply(http.StatusOK, replyText)))
	t.Cleanup(func() { close(release) }) // before the server closes
	m, w := newModel(t, s, gemini.WithTimeout(50*time.Millisecond))
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Len(t, w.All(), 1)
	assert.Len(t, s.Received(), 2)
}

func TestInfo(t *testing.T) {
	m, err := gemini.New("gemini-2.5-pro", gemini.WithAPIKey("k"))
	require.NoError(t, err)
	assert.Equal(t, model.Info{Provider: "gemini", Name: "gemini-2.5-pro", StructuredOutput: true}, m.Info())
}

// Audio and resource parts (as MCP servers return them) reach Gemini as
// the text that stands for them, in user messages and in tool results.
func TestAudioAndResourcePartsAreSentAsTheirTextFallback(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, replyText))
	m, _ := newModel(t, s)
	call := model.ToolCall{ID: "c1", Name: "listen", Arguments: json.RawMessage(`{}`)}
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.Part{model.TextPart("Summarize."), model.TextResourcePart("file:///r.md", "text/markdown", "# Readme")}},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call}},
		model.ToolMessage("c1", "listen", false, model.AudioPart("audio/wav", []byte("RIFF"))),
	}})
	require.NoError(t, err)
	var body struct {
		Contents []json.RawMessage `json:"contents"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Received()[0].Body), &body))
	require.Len(t, body.Contents, 3)
	assert.JSONEq(t, `{"role": "user", "parts": [{"text": "Summarize."}, {"text": "# Readme"}]}`, string(body.Contents[0]))
	assert.JSONEq(t, `{"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "listen", "response": {"output": "[audio (audio/wav, 4 bytes)]"}}}]}`, string(body.Contents[2]))
}
