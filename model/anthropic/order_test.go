package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
)

// A reply whose thinking is interleaved with its text and tool calls.
const messageInterleaved = `{
  "id": "msg_01Inter", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
  "content": [
    {"type": "thinking", "thinking": "First the weather.", "signature": "sig-1"},
    {"type": "text", "text": "Checking Oslo."},
    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
    {"type": "thinking", "thinking": "Then the time.", "signature": "sig-2"},
    {"type": "text", "text": " And the time."},
    {"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {}}
  ],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 30, "output_tokens": 60}
}`

// The same reply, streamed.
var streamInterleaved = []event{
	{"message_start", `{"type":"message_start","message":{"id":"msg_01Inter","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":1}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"First the weather."}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-1"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking "}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Oslo."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":1}`},
	{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Oslo\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":2}`},
	{"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"thinking_delta","thinking":"Then the time."}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"signature_delta","signature":"sig-2"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":3}`},
	{"content_block_start", `{"type":"content_block_start","index":4,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":" And the time."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":4}`},
	{"content_block_start", `{"type":"content_block_start","index":5,"content_block":{"type":"tool_use","id":"toolu_2","name":"clock","input":{}}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":5}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":60}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

const wantInterleaved = `[
	{"type": "thinking", "thinking": "First the weather.", "signature": "sig-1"},
	{"type": "text", "text": "Checking Oslo."},
	{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
	{"type": "thinking", "thinking": "Then the time.", "signature": "sig-2"},
	{"type": "text", "text": " And the time."},
	{"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {}}
]`

// Interleaved thinking goes back in the order it came, from Generate and
// from Stream alike: the reply records it (MetaBlocks).
func TestInterleavedThinkingKeepsItsOrder(t *testing.T) {
	s := newServer(t, jsonReply(200, messageInterleaved))
	m, _ := newModel(t, s)
	generated, err := m.Generate(context.Background(), userReq("Weather and time in Oslo?"))
	require.NoError(t, err)
	assert.Equal(t, "r t14 u:toolu_1 r t14 u:toolu_2", generated.Message.Metadata[anthropic.MetaBlocks])

	s2 := newServer(t, sseReply(streamInterleaved))
	m2, _ := newModel(t, s2)
	streamed, err := model.Collect(m2.Stream(context.Background(), userReq("Weather and time in Oslo?")))
	require.NoError(t, err)
	assert.Equal(t, generated.Message, streamed.Message, "Stream and Generate agree, the record included")

	for _, reply := range []model.Message{generated.Message, streamed.Message} {
		body := sentBody(t, &model.Request{Messages: []model.Message{
			model.User("Weather and time in Oslo?"),
			reply,
			model.ToolMessage("toolu_1", "weather", false, model.TextPart("sunny")),
			model.ToolMessage("toolu_2", "clock", false, model.TextPart("noon")),
		}})
		var msgs []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		require.NoError(t, json.Unmarshal(body["messages"], &msgs))
		require.Len(t, msgs, 3)
		assert.JSONEq(t, wantInterleaved, string(msgs[1].Content))
	}

	// An edited reply no longer matches its record: it goes in the usual
	// order.
	edited := generated.Message
	edited.Content = append([]model.Part(nil), edited.Content...)
	edited.Content[len(edited.Content)-1] = model.TextPart("Changed.")
	kinds := turnBlockTypes(t, edited,
		model.ToolMessage("toolu_1", "weather", false, model.TextPart("sunny")),
		model.ToolMessage("toolu_2", "clock", false, model.TextPart("noon")))
	assert.Equal(t, []string{"thinking", "thinking", "text", "tool_use", "tool_use"}, kinds)
}

// turnBlockTypes sends reply, after a user message and before answers, and
// returns the types of the blocks of its turn as the server received them.
func turnBlockTypes(t *testing.T, reply model.Message, answers ...model.Message) []string {
	t.Helper()
	body := sentBody(t, &model.Request{Messages: append([]model.Message{model.User("q"), reply}, answers...)})
	var msgs []struct {
		Content []struct {
			Type string `json:"type"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(body["messages"], &msgs))
	var kinds []string
	for _, b := range msgs[1].Content {
		kinds = append(kinds, b.Type)
	}
	return kinds
}

// A record that no longer fits the message — calls in another order, text
// that the record would cut inside a character — is not used.
func TestBlockRecordMustFitTheMessage(t *testing.T) {
	base := model.Assistant("ééé",
		model.ToolCall{ID: "toolu_1", Name: "a", Arguments: json.RawMessage(`{}`)},
		model.ToolCall{ID: "toolu_2", Name: "b", Arguments: json.RawMessage(`{}`)})
	base.Content = append([]model.Part{model.ReasoningPart("x", []byte("s1")), model.ReasoningPart("y", []byte("s2"))}, base.Content...)
	kinds := func(rec string) []string {
		msg := base
		msg.Metadata = map[string]string{anthropic.MetaBlocks: rec}
		return turnBlockTypes(t, msg,
			model.ToolMessage("toolu_1", "a", false, model.TextPart("1")), model.ToolMessage("toolu_2", "b", false, model.TextPart("2")))
	}
	usual := []string{"thinking", "thinking", "text", "tool_use", "tool_use"}
	assert.Equal(t, []string{"thinking", "text", "tool_use", "thinking", "text", "tool_use"}, kinds("r t2 u:toolu_1 r t4 u:toolu_2"), "a fitting record")
	assert.Equal(t, usual, kinds("r t3 u:toolu_1 r t3 u:toolu_2"), "a cut inside a character")
	assert.Equal(t, usual, kinds("r t2 u:toolu_2 r t4 u:toolu_1"), "calls in another order")
	assert.Equal(t, usual, kinds("r t2 u:toolu_1 t4 u:toolu_2"), "a thinking block missing")
	assert.Equal(t, usual, kinds("r t2 u:toolu_1 r t2 u:toolu_2"), "text left over")
	assert.Equal(t, usual, kinds("r x u:toolu_1"), "a token it does not know")
}

// The usual order — thinking, then text, then tool calls — records nothing.
func TestUsualOrderRecordsNothing(t *testing.T) {
	s := newServer(t, jsonReply(200, messageToolUse))
	m, _ := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Nil(t, resp.Message.Metadata)
}
