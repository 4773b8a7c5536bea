package agui_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
)

// protocolMembers keeps of each message only the members AG-UI 1.0
// defines for its role, as a client that checks messages against the
// protocol's schema does (the protocol's JavaScript client drops the
// others): a reasoning message keeps id, role, content and
// encryptedValue.
func protocolMembers(msgs []map[string]any) []map[string]any {
	defined := map[string][]string{
		"reasoning": {"id", "role", "content", "encryptedValue"},
		"assistant": {"id", "role", "content", "name", "toolCalls", "encryptedValue"},
		"user":      {"id", "role", "content", "name"},
		"tool":      {"id", "role", "content", "toolCallId", "error", "encryptedValue"},
		"system":    {"id", "role", "content", "name"},
	}
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		kept := map[string]any{}
		for _, k := range defined[m["role"].(string)] {
			if v, ok := m[k]; ok {
				kept[k] = v
			}
		}
		out = append(out, kept)
	}
	return out
}

// Without a checkpointer, a reply's reasoning comes back into the reply
// from a client that keeps only the members the protocol defines: what
// the provider needs (its signature, or its redacted reasoning) and what
// it is travel in encryptedValue alone.
func TestReasoningSurvivesAClientThatKeepsOnlyProtocolMembers(t *testing.T) {
	var got model.Message
	thinking := model.Message{Role: model.RoleAssistant, Content: []model.Part{
		model.ReasoningPart("The user wants a date.", []byte("sig-1")),
		model.RedactedReasoningPart([]byte("ENC")),
	}, ToolCalls: []model.ToolCall{{ID: "c1", Name: "pick_date", Arguments: []byte(`{}`)}}}
	m := scripted.New(
		scripted.Respond(thinking),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			for _, msg := range req.Messages {
				if msg.Role == model.RoleAssistant {
					got = msg
				}
			}
			return &model.Response{Message: model.Assistant("Booked.")}, nil
		}),
	)
	h := handler(t, m, nil)
	in := input("t1", "r1", userMsg("u1", "book"))
	in["tools"] = []map[string]any{{"name": "pick_date", "description": "The user picks a date."}}
	evs := run(t, h, in)

	kept := protocolMembers(asInput(snapshot(t, evs)))
	for _, msg := range kept {
		if msg["role"] == "reasoning" {
			assert.NotEmpty(t, msg["encryptedValue"])
		}
	}
	next := input("t1", "r2", append(kept, map[string]any{"id": "r1", "role": "tool", "toolCallId": "c1", "content": "Friday"})...)
	next["tools"] = in["tools"]
	evs = run(t, h, next)
	require.Equal(t, "RUN_FINISHED", evs[len(evs)-1].typ())
	require.Len(t, got.Content, 2)
	assert.Equal(t, model.ReasoningPart("The user wants a date.", []byte("sig-1")), got.Content[0])
	assert.Equal(t, model.RedactedReasoningPart([]byte("ENC")), got.Content[1])
}

// Reasoning messages kept from handlers of earlier versions (the kind in
// encryptedValueType, the value in plain base64) still come back into
// the reply; values of other forms or kinds (another producer's) are left
// out.
func TestReasoningOfEarlierFormsAndOtherProducers(t *testing.T) {
	var got model.Message
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		got = req.Messages[1]
		return &model.Response{Message: model.Assistant("ok")}, nil
	}))
	h := handler(t, m, nil)
	msgs := []map[string]any{
		userMsg("u1", "hi"),
		{"id": "x0", "role": "reasoning", "content": "kept", "encryptedValue": "c2lnLTE=", "encryptedValueType": "trellis.reasoning.signature"},
		{"id": "x1", "role": "reasoning", "content": "other", "encryptedValue": "opaque-blob-of-another-agent"},
		{"id": "x2", "role": "reasoning", "content": "other kind", "encryptedValue": "acme.thoughts:c2ln"},
		{"id": "x3", "role": "reasoning", "content": "not base64", "encryptedValue": "trellis.reasoning.signature:%%%"},
		{"id": "a1", "role": "assistant", "content": "hello"},
		userMsg("u2", "again"),
	}
	run(t, h, input("t1", "r1", msgs...))
	require.Equal(t, model.RoleAssistant, got.Role)
	require.Len(t, got.Content, 2)
	assert.Equal(t, model.ReasoningPart("kept", []byte("sig-1")), got.Content[0])
	assert.Equal(t, "hello", got.Content[1].Text)
}
