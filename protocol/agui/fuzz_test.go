package agui

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/trellis-go/trellis/model"
)

// FuzzDecodeInput feeds arbitrary request bodies through the checks and
// conversions a handler applies before a run: nothing panics; a body
// DecodeInput accepts converts, or is refused with an *InputError; and
// the conversation a run starts from answers every tool call before it
// goes on.
func FuzzDecodeInput(f *testing.F) {
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":"x","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1"}}]},{"id":"u","role":"user","content":"next"}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"data","value":"AAAA","mimeType":"image/png"}},{"type":"document","source":{"type":"data","value":"aGk=","mimeType":"text/plain"}}]},{"id":"t1","role":"tool","toolCallId":"c","content":[{"type":"text","text":"r"}],"error":"e"}],"tools":[{"name":"x","description":"d","parameters":{"type":"object"}}],"resume":[{"interruptId":"i","status":"resolved","payload":{"a":[1]}}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"x","role":"reasoning","content":"hm","encryptedValue":"c2ln","encryptedValueType":"trellis.reasoning.signature"},{"id":"a","role":"assistant","content":"ok"}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"x","role":"reasoning","content":"hm","encryptedValue":"trellis.reasoning.redacted:RU5D"},{"id":"a","role":"assistant","content":"ok"}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodeInput(body)
		if err != nil {
			if _, ok := err.(*InputError); !ok {
				t.Fatalf("DecodeInput error %T is not an *InputError: %v", err, err)
			}
			return
		}
		msgs, err := toModel(in.Messages)
		if err != nil {
			if _, ok := err.(*InputError); !ok {
				t.Fatalf("toModel error %T is not an *InputError: %v", err, err)
			}
			return
		}
		for _, m := range msgs {
			for _, c := range m.ToolCalls {
				if !jsonValid(c.Arguments) {
					t.Fatalf("call %q keeps arguments that are not JSON: %q", c.ID, c.Arguments)
				}
			}
		}
		fixed := answerOpenCalls(msgs, unanswered)
		open := map[string]bool{}
		for i, m := range fixed {
			if m.Role == model.RoleTool {
				delete(open, m.ToolCallID)
				continue
			}
			if len(open) > 0 {
				t.Fatalf("message %d (%s) follows calls without answers: %v", i, m.Role, open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
		if len(open) > 0 {
			t.Fatalf("the conversation ends with calls without answers: %v", open)
		}
		_ = fromModel(fixed)
	})
}

func jsonValid(b []byte) bool { return json.Valid(b) }

// FuzzEncryptedValue reads arbitrary encrypted values of reasoning
// messages, which clients send back: nothing panics, what is read is of a
// Trellis kind, and a value read reads the same once written again; and
// any bytes written as either kind read back as they were.
func FuzzEncryptedValue(f *testing.F) {
	f.Add("trellis.reasoning.signature:c2lnLTE=", "", []byte("sig"))
	f.Add("c2lnLTE=", "trellis.reasoning.redacted", []byte{0, 1, 2})
	f.Add("acme:c2ln", "trellis.reasoning.signature", []byte{})
	f.Add("trellis.reasoning.signature:", "", []byte(":"))
	f.Fuzz(func(t *testing.T, value, legacy string, data []byte) {
		if kind, got, ok := decodeEncryptedValue(value, legacy); ok {
			if kind != ReasoningSignature && kind != RedactedReasoning {
				t.Fatalf("read kind %q", kind)
			}
			again, back, ok := decodeEncryptedValue(encryptedValue(kind, got), "")
			if !ok || again != kind || !bytes.Equal(back, got) {
				t.Fatalf("%q read as %q %x, written again reads %v %q %x", value, kind, got, ok, again, back)
			}
		}
		if len(data) == 0 {
			return // reasoning without bytes has no encrypted value
		}
		for _, kind := range []string{ReasoningSignature, RedactedReasoning} {
			again, back, ok := decodeEncryptedValue(encryptedValue(kind, data), legacy)
			if !ok || again != kind || !bytes.Equal(back, data) {
				t.Fatalf("%s %x reads back as %v %q %x", kind, data, ok, again, back)
			}
		}
	})
}

// FuzzReadEvents feeds arbitrary streams to the client's SSE decoder:
// nothing panics, and every event it yields has a type and its raw JSON.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("data: {\"type\":\"RUN_STARTED\"}\n\n: comment\n\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":\"hi\"}\n\n"))
	f.Add([]byte("data: {\"type\":\n data: \"X\"}\n\n"))
	f.Add([]byte("data:{\"type\":\"RUN_FINISHED\",\"outcome\":{\"type\":\"interrupt\",\"interrupts\":[{\"id\":\"i\",\"reason\":\"r\"}]}}\r\n\r\n"))
	f.Add([]byte("event: x\nid: 1\ndata: []\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		for ev, err := range readEvents(bytes.NewReader(stream), 4096) {
			if err != nil {
				return
			}
			if ev.Type == "" || !json.Valid(ev.Raw) {
				t.Fatalf("event %+v without a type or raw JSON", ev)
			}
		}
	})
}
