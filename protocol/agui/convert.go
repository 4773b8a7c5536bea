package agui

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// toModel converts a client's conversation into the agent's. Activity and
// reasoning messages, and parts the agent cannot use (audio, video,
// provider file handles), are left out; tool-call arguments that are not
// JSON are repaired, or refused.
func toModel(in []Message) ([]model.Message, error) {
	out := make([]model.Message, 0, len(in))
	names := map[string]string{} // call ID → tool name
	var thoughts []model.Part    // reasoning messages, for the next assistant message
	for _, m := range in {
		var msg model.Message
		switch m.Role {
		case "reasoning":
			if p, ok := reasoningPart(m); ok {
				thoughts = append(thoughts, p)
			}
			continue
		case "developer", "system":
			text, _ := textContent(m.Content, true)
			msg = model.System(text)
		case "user":
			parts, err := modelParts(m.Content)
			if err != nil {
				return nil, badInput("message %q: %s", m.ID, err)
			}
			msg = model.Message{Role: model.RoleUser, Content: parts}
		case "assistant":
			text, _ := textContent(m.Content, false)
			calls := make([]model.ToolCall, 0, len(m.ToolCalls))
			for _, c := range m.ToolCalls {
				args, err := callArguments(c.Function.Arguments)
				if err != nil {
					return nil, badInput("message %q: the arguments of call %q are not JSON: %v", m.ID, c.ID, err)
				}
				calls = append(calls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
				names[c.ID] = c.Function.Name
			}
			msg = model.Assistant(text, calls...)
			if len(thoughts) > 0 {
				msg.Content = append(thoughts, msg.Content...)
			}
		case "tool":
			parts, err := modelParts(m.Content)
			if err != nil {
				return nil, badInput("message %q: %s", m.ID, err)
			}
			parts = withError(parts, m.Error)
			msg = model.ToolMessage(m.ToolCallID, names[m.ToolCallID], m.Error != "", parts...)
		default:
			continue
		}
		thoughts = nil // reasoning belongs to the reply right after it
		msg.ID, msg.Name = m.ID, m.Name
		out = append(out, msg)
	}
	return out, nil
}

// reasoningPart converts a reasoning message back into the reasoning part
// it was made from: its text, and the signature or redacted data in its
// encrypted value (see decodeEncryptedValue). Reasoning without them is
// left out: a provider takes back only the reasoning it signed.
func reasoningPart(m Message) (model.Part, bool) {
	kind, data, ok := decodeEncryptedValue(m.EncryptedValue, m.EncryptedValueType)
	if !ok {
		return model.Part{}, false
	}
	if kind == RedactedReasoning {
		return model.RedactedReasoningPart(data), true
	}
	text, _ := textContent(m.Content, false)
	return model.ReasoningPart(text, data), true
}

// encryptedValue is the encryptedValue of a reasoning message: what its
// bytes are (ReasoningSignature or RedactedReasoning), a colon, and the
// bytes in base64. The kind travels inside the value because the value
// is the only member of a reasoning message that the protocol defines
// for it: clients that check messages against the protocol's schema (the
// protocol's JavaScript client does) drop members it does not define.
func encryptedValue(kind string, data []byte) string {
	return kind + ":" + base64.StdEncoding.EncodeToString(data)
}

// decodeEncryptedValue reads an encryptedValue (see encryptedValue). A
// value without a kind of its own is read as handlers before this form
// sent it, plain base64 with the kind in legacyType (encryptedValueType).
// Values of other forms, other kinds (another producer's), or text that
// is not base64 of some bytes are not Trellis reasoning: ok is false.
func decodeEncryptedValue(value, legacyType string) (kind string, data []byte, ok bool) {
	kind, b64, found := strings.Cut(value, ":")
	if !found {
		kind, b64 = legacyType, value
	}
	if kind != ReasoningSignature && kind != RedactedReasoning || b64 == "" {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(data) == 0 {
		return "", nil, false // base64 skips line breaks: "\n" holds nothing
	}
	return kind, data, true
}

// withError adds to a failed call's result the error the client gave
// (a tool message's error member, which comes with its content, often
// empty): the model is told why the call failed. A result whose text is
// the error already (a message of a MESSAGES_SNAPSHOT sent back) is kept.
func withError(parts []model.Part, msg string) []model.Part {
	if strings.TrimSpace(msg) == "" {
		return parts
	}
	var text strings.Builder
	for _, p := range parts {
		if p.Type == model.PartText {
			text.WriteString(p.Text)
		}
	}
	switch t := strings.TrimSpace(text.String()); {
	case t == strings.TrimSpace(msg):
		return parts
	case t == "":
		return append(slices.DeleteFunc(parts, func(p model.Part) bool { return p.Type == model.PartText }), model.TextPart(msg))
	}
	return append(parts, model.TextPart("\n\nError: "+msg))
}

// callArguments returns a call's arguments as JSON: as they are, "{}" for
// none, or repaired.
func callArguments(s string) (json.RawMessage, error) {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}"), nil
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s), nil
	}
	fixed, err := tool.RepairJSON([]byte(s))
	if err != nil {
		return nil, err
	}
	return fixed, nil
}

// modelParts converts a content member into model parts: text, and images
// inline or by URL; a text document's data becomes text. Other media are
// left out, as the protocol asks of an agent that cannot use them.
func modelParts(raw json.RawMessage) ([]model.Part, error) {
	parts, err := decodeParts(raw)
	if err != nil {
		return nil, err
	}
	out := make([]model.Part, 0, len(parts))
	for i, p := range parts {
		switch {
		case p.Type == "text":
			out = append(out, model.TextPart(p.Text))
		case p.Source.Type == "data" && (p.Type == "image" || p.Type == "document" && isText(p.Source.MIMEType)):
			data, err := base64.StdEncoding.DecodeString(p.Source.Value)
			if err != nil {
				return nil, fmt.Errorf("content part %d: the data is not base64: %w", i, err)
			}
			if p.Type == "image" {
				out = append(out, model.ImagePart(p.Source.MIMEType, data))
			} else {
				out = append(out, model.TextPart(string(data)))
			}
		case p.Type == "image" && p.Source.Type == "url":
			out = append(out, model.ImageURLPart(p.Source.MIMEType, p.Source.Value))
		}
	}
	return out, nil
}

func isText(mime string) bool {
	mime, _, _ = strings.Cut(mime, ";")
	mime = strings.TrimSpace(strings.ToLower(mime))
	return strings.HasPrefix(mime, "text/") || mime == "application/json" || strings.HasSuffix(mime, "+json")
}

// fromModel converts the agent's conversation into AG-UI messages, for a
// MESSAGES_SNAPSHOT. Reasoning is left out. A message without an ID gets
// one derived from its position and content (messageID), which the
// handler recognises when the client sends it back.
func fromModel(msgs []model.Message) []Message {
	out := make([]Message, 0, len(msgs))
	for i, m := range msgs {
		w := Message{ID: messageID(i, m), Name: m.Name}
		switch m.Role {
		case model.RoleSystem:
			w.Role, w.Content = "system", jsonString(m.Text())
		case model.RoleUser:
			w.Role, w.Content = "user", contentOf(m.Content)
		case model.RoleAssistant:
			out = append(out, reasoningMessages(w.ID, m.Content)...)
			w.Role = "assistant"
			if t := m.Text(); t != "" {
				w.Content = jsonString(t)
			}
			for _, c := range m.ToolCalls {
				w.ToolCalls = append(w.ToolCalls, ToolCall{ID: c.ID, Type: "function", Function: FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
			}
		case model.RoleTool:
			w.Role, w.Name, w.ToolCallID = "tool", "", m.ToolCallID
			w.Content = contentOf(m.Content)
			if m.IsError {
				w.Error = cmp.Or(m.Text(), "the tool failed")
			}
		default:
			continue
		}
		out = append(out, w)
	}
	return out
}

// reasoningMessages returns the reasoning parts of the assistant message
// id as reasoning messages that precede it, with the IDs its streamed
// reasoning had: their text, and in their encrypted value the signature
// (or the redacted reasoning) the provider needs to take them back.
func reasoningMessages(id string, parts []model.Part) []Message {
	var out []Message
	k := 0
	for _, p := range parts {
		if !p.IsReasoning() {
			continue
		}
		r := Message{ID: id + ":reasoning:" + strconv.Itoa(k), Role: "reasoning", Content: jsonString(p.Text)}
		k++
		if len(p.Data) > 0 {
			kind := ReasoningSignature
			if p.Type == model.PartRedactedReasoning {
				kind = RedactedReasoning
			}
			r.EncryptedValue = encryptedValue(kind, p.Data)
		}
		out = append(out, r)
	}
	return out
}

// messageID returns m's ID, or, for a message without one, an ID derived
// from its position i in the conversation and its content.
func messageID(i int, m model.Message) string {
	if m.ID != "" {
		return m.ID
	}
	h := sha256.New()
	h.Write([]byte(m.Role))
	h.Write([]byte{0})
	h.Write([]byte(m.Text()))
	return "msg-" + strconv.Itoa(i) + "-" + hex.EncodeToString(h.Sum(nil)[:6])
}

// contentOf returns the content member for parts: a string when they are
// all text (or JSON), else an array of text and image parts.
func contentOf(parts []model.Part) json.RawMessage {
	plain := true
	for _, p := range parts {
		if p.Type == model.PartImage {
			plain = false
		}
	}
	if plain {
		var b strings.Builder
		for _, p := range parts {
			switch p.Type {
			case model.PartText:
				b.WriteString(p.Text)
			case model.PartJSON:
				b.Write(p.JSON)
			}
		}
		return jsonString(b.String())
	}
	out := make([]ContentPart, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case model.PartText:
			out = append(out, ContentPart{Type: "text", Text: p.Text})
		case model.PartJSON:
			out = append(out, ContentPart{Type: "text", Text: string(p.JSON)})
		case model.PartImage:
			src := &PartSource{Type: "url", Value: p.URL, MIMEType: p.MIMEType}
			if len(p.Data) > 0 || p.URL == "" {
				src = &PartSource{Type: "data", Value: base64.StdEncoding.EncodeToString(p.Data), MIMEType: cmp.Or(p.MIMEType, "application/octet-stream")}
			}
			out = append(out, ContentPart{Type: "image", Source: src})
		}
	}
	b, _ := json.Marshal(out)
	return b
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
