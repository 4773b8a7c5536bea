package anthropic_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
)

// Blocks of a web search, as the API sends them.
const (
	blockSearchUse    = `{"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "name": "web_search", "input": {"query": "Paris weather today"}}`
	blockSearchResult = `{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "content": [
      {"type": "web_search_result", "url": "https://weather.example.com/paris", "title": "Paris <weather> & more", "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2MSDGJ", "page_age": "November 25, 2026"},
      {"type": "web_search_result", "url": "https://meteo.example.org/fr/paris", "title": "Météo Paris", "encrypted_content": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNmE5", "page_age": null}
    ]}`
	blockCitedText = `{"type": "text", "text": "Paris is sunny today, ", "citations": [
      {"type": "web_search_result_location", "url": "https://weather.example.com/paris", "title": "Paris <weather> & more", "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm", "cited_text": "Sunny, 21°C"}
    ]}`
)

// messageWebSearch is a reply that searched the web: text, the search's
// call and result, and text that cites the result.
const messageWebSearch = `{
  "id": "msg_01WebSearch",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "text", "text": "I'll search for the weather in Paris."},
    ` + blockSearchUse + `,
    ` + blockSearchResult + `,
    ` + blockCitedText + `,
    {"type": "text", "text": "around 21°C."}
  ],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 6039,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 931,
    "server_tool_use": {"web_search_requests": 1}
  }
}`

// streamWebSearch is messageWebSearch as the API streams it.
var streamWebSearch = []event{
	{"message_start", `{"type":"message_start","message":{"id":"msg_01WebSearch","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":6039,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll search for the weather in Paris."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","name":"web_search","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"Paris wea"}}`},
	{"ping", `{"type": "ping"}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ther today\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":1}`},
	{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","content":[{"type":"web_search_result","title":"Paris <weather> & more","url":"https://weather.example.com/paris","encrypted_content":"EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2MSDGJ","page_age":"November 25, 2026"},{"type":"web_search_result","title":"Météo Paris","url":"https://meteo.example.org/fr/paris","encrypted_content":"Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNmE5","page_age":null}]}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":2}`},
	{"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"Sunny, 21°C","url":"https://weather.example.com/paris","title":"Paris <weather> & more","encrypted_index":"Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Paris is sunny today, "}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":3}`},
	{"content_block_start", `{"type":"content_block_start","index":4,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"around 21°C."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":4}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":931,"server_tool_use":{"web_search_requests":1}}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

// messageSearchThenTool searched the web, then calls a function tool.
const messageSearchThenTool = `{
  "id": "msg_01SearchTool",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "text", "text": "Let me look that up."},
    ` + blockSearchUse + `,
    ` + blockSearchResult + `,
    ` + blockCitedText + `,
    {"type": "tool_use", "id": "toolu_01Forecast", "name": "forecast", "input": {"city": "Paris", "days": 3}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 7000, "output_tokens": 120}
}`

// streamOf returns the events that stream the reply msg: text in two
// deltas (its citations as a citations_delta first), tool_use and
// server_tool_use blocks started with an empty input that then arrives in
// two input_json_delta fragments, and other blocks whole at their start.
func streamOf(t *testing.T, msg string) []event {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(msg), &m))
	var blocks []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(m["content"], &blocks))
	started := map[string]json.RawMessage{}
	for k, v := range m {
		started[k] = v
	}
	started["content"] = json.RawMessage(`[]`)
	started["stop_reason"] = json.RawMessage(`null`)
	start, err := json.Marshal(map[string]any{"type": "message_start", "message": started})
	require.NoError(t, err)
	mk := func(v map[string]any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	out := []event{{"message_start", string(start)}}
	for i, b := range blocks {
		var typ string
		require.NoError(t, json.Unmarshal(b["type"], &typ))
		delta := func(d map[string]any) {
			out = append(out, event{"content_block_delta", mk(map[string]any{"type": "content_block_delta", "index": i, "delta": d})})
		}
		switch typ {
		case "text":
			var text string
			require.NoError(t, json.Unmarshal(b["text"], &text))
			out = append(out, event{"content_block_start", mk(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})})
			var cites []json.RawMessage
			if c, ok := b["citations"]; ok {
				require.NoError(t, json.Unmarshal(c, &cites))
			}
			for _, c := range cites {
				delta(map[string]any{"type": "citations_delta", "citation": c})
			}
			half := len(text) / 2
			for half > 0 && !utf8Start(text[half]) {
				half--
			}
			delta(map[string]any{"type": "text_delta", "text": text[:half]})
			delta(map[string]any{"type": "text_delta", "text": text[half:]})
		case "tool_use", "server_tool_use":
			in := string(b["input"])
			started := map[string]json.RawMessage{}
			for k, v := range b {
				started[k] = v
			}
			started["input"] = json.RawMessage(`{}`)
			out = append(out, event{"content_block_start", mk(map[string]any{"type": "content_block_start", "index": i, "content_block": started})})
			delta(map[string]any{"type": "input_json_delta", "partial_json": in[:len(in)/2]})
			delta(map[string]any{"type": "input_json_delta", "partial_json": in[len(in)/2:]})
		default:
			out = append(out, event{"content_block_start", mk(map[string]any{"type": "content_block_start", "index": i, "content_block": b})})
		}
		out = append(out, event{"content_block_stop", `{"type":"content_block_stop","index":` + strconv.Itoa(i) + `}`})
	}
	out = append(out,
		event{"message_delta", mk(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": m["stop_reason"]}, "usage": m["usage"]})},
		event{"message_stop", `{"type":"message_stop"}`})
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// providerJSON returns the JSON of the message's provider parts, checking
// that they are this package's.
func providerJSON(t *testing.T, msg model.Message) []string {
	t.Helper()
	var out []string
	for _, p := range msg.Content {
		if p.Type == model.PartProvider {
			assert.Equal(t, anthropic.ContentBlockMIMEType, p.MIMEType)
			out = append(out, string(p.JSON))
		}
	}
	return out
}

// A reply that used a server tool keeps the tool's call and result as
// provider parts, in their place, and has no tool call for the application
// to run.
func TestServerToolBlocksAreKept(t *testing.T) {
	s := newServer(t, jsonReply(200, messageWebSearch))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("Weather in Paris?"))
	require.NoError(t, err)

	msg := resp.Message
	assert.Empty(t, msg.ToolCalls, "the server ran its tool: nothing for the application to run")
	assert.False(t, msg.HasToolCalls())
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, "I'll search for the weather in Paris.Paris is sunny today, around 21°C.", msg.Text())
	require.Len(t, msg.Content, 3)
	assert.Equal(t, model.PartText, msg.Content[0].Type)
	got := providerJSON(t, msg)
	require.Len(t, got, 2)
	assert.JSONEq(t, blockSearchUse, got[0])
	assert.JSONEq(t, blockSearchResult, got[1])
	assert.Contains(t, got[1], "Paris <weather> & more", "kept as the API wrote it, not HTML-escaped")
	assert.Equal(t, "t37 p p t22 t13", msg.Metadata[anthropic.MetaBlocks])
	assert.Equal(t, model.Usage{InputTokens: 6039, OutputTokens: 931, TotalTokens: 6970}, resp.Usage)
}

// Streamed, the same reply gives the same Response; the server tool's call
// is never presented as a tool call, and its blocks arrive as whole parts.
func TestServerToolStreamMatchesGenerate(t *testing.T) {
	s := newServer(t, jsonReply(200, messageWebSearch))
	m, _ := newModel(t, s)
	want, err := m.Generate(context.Background(), userReq("Weather in Paris?"))
	require.NoError(t, err)

	for name, reply := range map[string]replyFunc{
		"as the API streams it":         sseReply(streamWebSearch),
		"in other fragments":            sseReply(streamOf(t, messageWebSearch)),
		"from a server that ignores it": jsonReply(200, messageWebSearch),
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, reply)
			m, _ := newModel(t, s)
			var (
				acc   model.Accumulator
				parts []string
			)
			for c, err := range m.Stream(context.Background(), userReq("Weather in Paris?")) {
				require.NoError(t, err)
				assert.Nil(t, c.ToolCall, "a server tool's call is not a tool call")
				if c.Part != nil {
					parts = append(parts, string(c.Part.JSON))
				}
				acc.Add(c)
			}
			assert.Equal(t, providerJSON(t, want.Message), parts)
			assert.Equal(t, want, acc.Response())
		})
	}
}

// The blocks of a server tool go back in the next request as they came, in
// their place among the text and the function tool's call — from Generate
// and from Stream alike.
func TestServerToolBlocksGoBackInOrder(t *testing.T) {
	const next = `[
		{"type": "text", "text": "Let me look that up."},
		` + blockSearchUse + `,
		` + blockSearchResult + `,
		{"type": "text", "text": "Paris is sunny today, "},
		{"type": "tool_use", "id": "toolu_01Forecast", "name": "forecast", "input": {"city": "Paris", "days": 3}}
	]`
	s := newServer(t, jsonReply(200, messageSearchThenTool))
	m, _ := newModel(t, s)
	generated, err := m.Generate(context.Background(), userReq("Weather in Paris?"))
	require.NoError(t, err)
	require.Len(t, generated.Message.ToolCalls, 1, "only the function tool's call")
	assert.Equal(t, "forecast", generated.Message.ToolCalls[0].Name)
	assert.Equal(t, "tool_calls", generated.FinishReason)

	s2 := newServer(t, sseReply(streamOf(t, messageSearchThenTool)))
	m2, _ := newModel(t, s2)
	streamed, err := model.Collect(m2.Stream(context.Background(), userReq("Weather in Paris?")))
	require.NoError(t, err)
	assert.Equal(t, generated, streamed)

	for _, reply := range []model.Message{generated.Message, streamed.Message} {
		// Through JSON, as a checkpoint keeps the message.
		raw, err := json.Marshal(reply)
		require.NoError(t, err)
		var kept model.Message
		require.NoError(t, json.Unmarshal(raw, &kept))

		body := sentBody(t, &model.Request{Messages: []model.Message{
			model.User("Weather in Paris?"),
			kept,
			model.ToolMessage("toolu_01Forecast", "forecast", false, model.TextPart("sunny for three days")),
		}})
		var msgs []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		require.NoError(t, json.Unmarshal(body["messages"], &msgs))
		require.Len(t, msgs, 3)
		assert.Equal(t, "assistant", msgs[1].Role)
		var want []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(next), &want))
		require.Len(t, msgs[1].Content, len(want))
		for i := range want {
			assert.JSONEq(t, string(want[i]), string(msgs[1].Content[i]), "block %d", i)
		}
	}
}

// Without its record (the application rebuilt the message), a reply's
// server tool blocks go after its thinking and before its text and tool
// calls, in the order of its parts.
func TestServerToolBlocksWithoutRecord(t *testing.T) {
	reply := model.Assistant("Found it.", model.ToolCall{ID: "toolu_1", Name: "f", Arguments: json.RawMessage(`{}`)})
	reply.Content = append([]model.Part{model.ReasoningPart("hmm", []byte("sig"))}, reply.Content...)
	reply.Content = append(reply.Content,
		model.ProviderPart(anthropic.ContentBlockMIMEType, json.RawMessage(blockSearchUse)),
		model.ProviderPart("application/vnd.example.block+json", json.RawMessage(`{"type":"other"}`)),
		model.ProviderPart(anthropic.ContentBlockMIMEType, json.RawMessage(blockSearchResult)))
	kinds := turnBlockTypes(t, reply, model.ToolMessage("toolu_1", "f", false, model.TextPart("ok")))
	assert.Equal(t, []string{"thinking", "server_tool_use", "web_search_tool_result", "text", "tool_use"}, kinds)

	// A record that names more provider blocks than the message has is
	// not used.
	reply.Metadata = map[string]string{anthropic.MetaBlocks: "r p t9 p p u:toolu_1"}
	kinds = turnBlockTypes(t, reply, model.ToolMessage("toolu_1", "f", false, model.TextPart("ok")))
	assert.Equal(t, []string{"thinking", "server_tool_use", "web_search_tool_result", "text", "tool_use"}, kinds)
	reply.Metadata = map[string]string{anthropic.MetaBlocks: "r p t9 p u:toolu_1"}
	kinds = turnBlockTypes(t, reply, model.ToolMessage("toolu_1", "f", false, model.TextPart("ok")))
	assert.Equal(t, []string{"thinking", "server_tool_use", "text", "web_search_tool_result", "tool_use"}, kinds, "a fitting record")
}

// Provider parts of another provider are left out wherever they are;
// this package's go as the blocks they hold, in user and tool messages
// too; a broken one is refused.
func TestProviderPartsInRequests(t *testing.T) {
	foreign := model.ProviderPart("application/vnd.example.block+json", json.RawMessage(`{"type":"other"}`))
	doc := model.ProviderPart(anthropic.ContentBlockMIMEType, json.RawMessage(`{"type":"search_result","source":"https://example.com","title":"T","content":[{"type":"text","text":"fact"}]}`))
	body := sentBody(t, &model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: []model.Part{model.TextPart("Be brief."), foreign, doc}},
		{Role: model.RoleUser, Content: []model.Part{model.TextPart("q"), foreign, doc}},
		{Role: model.RoleAssistant, Content: []model.Part{foreign, model.TextPart("calling")}, ToolCalls: []model.ToolCall{{ID: "t1", Name: "f", Arguments: json.RawMessage(`{}`)}}},
		model.ToolMessage("t1", "f", false, model.TextPart("r"), foreign, doc),
	}})
	assert.JSONEq(t, `[{"type":"text","text":"Be brief."}]`, string(body["system"]))
	assert.NotContains(t, string(body["messages"]), `"other"`)
	var msgs []struct {
		Content []json.RawMessage `json:"content"`
	}
	require.NoError(t, json.Unmarshal(body["messages"], &msgs))
	require.Len(t, msgs, 3)
	require.Len(t, msgs[0].Content, 2)
	assert.JSONEq(t, string(doc.JSON), string(msgs[0].Content[1]))
	assert.JSONEq(t, `[{"type":"text","text":"calling"},{"type":"tool_use","id":"t1","name":"f","input":{}}]`, mustJSON(t, msgs[1].Content))
	assert.JSONEq(t, `[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"},`+string(doc.JSON)+`]}]`, mustJSON(t, msgs[2].Content))

	s := newServer(t, jsonReply(200, messageText))
	m, _ := newModel(t, s)
	broken := model.Message{Role: model.RoleAssistant, Content: []model.Part{model.ProviderPart(anthropic.ContentBlockMIMEType, json.RawMessage(`[1]`))}}
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("q"), broken}})
	require.ErrorContains(t, err, "message 1 (assistant): part 0: the provider part's block is not a JSON object")
	assert.Empty(t, s.Received())
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Server tools go in every request, after the request's function tools.
func TestWithServerToolsSendsTools(t *testing.T) {
	fetch := sdk.ToolUnionParam{OfWebFetchTool20250910: &sdk.WebFetchTool20250910Param{MaxUses: sdk.Int(2)}}
	body := sentBody(t, &model.Request{
		Messages: []model.Message{model.User("q")},
		Tools:    []model.ToolDefinition{{Name: "forecast", Description: "Forecast."}},
	}, anthropic.WithServerTools(anthropic.WebSearch(3, "example.com", "example.org"), fetch))
	assert.JSONEq(t, `[
		{"name": "forecast", "description": "Forecast.", "input_schema": {"type": "object", "properties": {}}},
		{"type": "web_search_20250305", "name": "web_search", "max_uses": 3, "allowed_domains": ["example.com", "example.org"]},
		{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2}
	]`, string(body["tools"]))

	// Without function tools, and without limits.
	body = sentBody(t, userReq("q"), anthropic.WithServerTools(anthropic.WebSearch(0)))
	assert.JSONEq(t, `[{"type": "web_search_20250305", "name": "web_search"}]`, string(body["tools"]))

	// Without the option, no tools at all.
	body = sentBody(t, userReq("q"))
	assert.NotContains(t, body, "tools")
}

// A function tool may not take a server tool's name; the error names both.
func TestServerToolNameClash(t *testing.T) {
	s := newServer(t, jsonReply(200, messageText))
	m, _ := newModel(t, s, anthropic.WithServerTools(anthropic.WebSearch(1)))
	req := &model.Request{Messages: []model.Message{model.User("q")}, Tools: []model.ToolDefinition{{Name: "lookup"}, {Name: "web_search"}}}
	_, err := m.Generate(context.Background(), req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `server tool "web_search" (web_search_20250305)`)
	assert.Contains(t, err.Error(), `function tool "web_search"`)
	for _, err := range collectErrs(m.Stream(context.Background(), req)) {
		assert.Contains(t, err.Error(), `function tool "web_search"`)
	}
	assert.Empty(t, s.Received(), "nothing is sent")
}

func collectErrs(seq func(func(model.Chunk, error) bool)) []error {
	var errs []error
	for _, err := range seq {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// WithServerTools refuses what is not one server tool, and two tools of
// one name.
func TestWithServerToolsValidates(t *testing.T) {
	cases := map[string]struct {
		tools []sdk.ToolUnionParam
		want  string
	}{
		"empty union":   {[]sdk.ToolUnionParam{{}}, "tool 0: no tool"},
		"function tool": {[]sdk.ToolUnionParam{anthropic.WebSearch(1), {OfTool: &sdk.ToolParam{Name: "f"}}}, "tool 1: a function tool"},
		"two variants": {[]sdk.ToolUnionParam{{
			OfWebSearchTool20250305: &sdk.WebSearchTool20250305Param{},
			OfWebFetchTool20250910:  &sdk.WebFetchTool20250910Param{},
		}}, "tool 0: web_search_20250305: cannot be encoded"},
		"same name": {[]sdk.ToolUnionParam{anthropic.WebSearch(1), anthropic.WebSearch(2, "example.com")}, `tool 1 (web_search_20250305): another server tool is named "web_search"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := anthropic.New("claude-sonnet-4-5", anthropic.WithAPIKey("k"), anthropic.WithServerTools(tc.tools...))
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "anthropic: WithServerTools: "), err.Error())
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := anthropic.New("claude-sonnet-4-5", anthropic.WithAPIKey("k"), anthropic.WithServerTools(anthropic.WebSearch(1), sdk.ToolUnionParam{OfWebFetchTool20250910: &sdk.WebFetchTool20250910Param{}}))
	require.NoError(t, err)
}
