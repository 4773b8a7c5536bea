package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// responseSeeds are answers shaped like real agents', of both generations.
var responseSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-03-01T10:00:00.000Z"},"artifacts":[{"artifactId":"a","parts":[{"text":"hi"},{"data":{"x":1}},{"url":"https://e.com/f.pdf","mediaType":"application/pdf","filename":"f.pdf"},{"raw":"aGVsbG8=","mediaType":"image/png"}]}]}}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hello"}]}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"..."}],"metadata":{"trellis.delta":true}}}}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]},"append":true,"lastChunk":false}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","contextId":"c","status":{"state":"input-required","message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"?"}]}}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"file","file":{"uri":"https://e.com/x","mimeType":"text/plain","name":"x"}},{"kind":"file","file":{"bytes":"aGk="}}]}}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found","data":{"taskId":"t"}}}`,
	`{"jsonrpc":"2.0","id":1,"result":null}`,
	`{"jsonrpc":"2.0","id":1,"result":{"kind":"nonsense"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"},"message":{}}}`,
	`not json`,
}

// FuzzDecodeResponse feeds answers to the decoders the client reads agents
// with: they must never panic, and what they accept must write back out.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		result, err := decodeResponse("SendMessage", body)
		if err != nil {
			var rpcErr *RPCError
			if !errors.As(err, &rpcErr) && !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("unclassified error: %v", err)
			}
			_ = err.Error()
			return
		}
		if task, err := decodeTask("GetTask", result); err == nil && task.ID == "" {
			t.Fatal("decodeTask accepted a task without an id")
		}
		ev, err := decodeEvent("SendMessage", result)
		if err != nil {
			if !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		set := 0
		for _, p := range []bool{ev.Task != nil, ev.Message != nil, ev.StatusUpdate != nil, ev.ArtifactUpdate != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("decoded event holds %d members", set)
		}
		// Parts without known content cannot be written; anything else
		// writes in both generations and reads back.
		if out, err := json.Marshal(ev); err == nil {
			var back Event
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("re-reading %s: %v", out, err)
			}
		}
		if _, err := json.Marshal(legacyEvent(ev)); err != nil {
			t.Fatalf("writing the 0.3 form: %v", err)
		}
		if ev.Task != nil {
			_ = answerParts(ev.Task)
			_ = content(answerParts(ev.Task))
			_ = statusText(ev.Task.Status)
		}
	})
}

// FuzzReadSSE feeds streams to the event reader: it must never panic, never
// return more than its limit, and end.
func FuzzReadSSE(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte("data: " + s + "\n\n"))
	}
	f.Add([]byte(": keep-alive\r\n\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: x\nid: 3\nretry: 10\ndata\n\n"))
	f.Add([]byte("data: one\rdata: two\r\rdata: three"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		const max = 4096
		r := newSSEReader(bytes.NewReader(stream), max)
		for range len(stream) + 2 {
			data, err := r.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrResponseTooLarge) {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if len(data) > max {
				t.Fatalf("an event of %d bytes passed the limit of %d", len(data), max)
			}
			if result, err := decodeResponse("SendStreamingMessage", data); err == nil {
				_, _ = decodeEvent("SendStreamingMessage", result)
			}
		}
		t.Fatal("the reader did not end")
	})
}

// FuzzServerRequest feeds request bodies to what the server parses them
// with: no panic, and a failure always carries a JSON-RPC code.
func FuzzServerRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"},{"data":[1,2]},{"raw":"aGk=","mediaType":"image/png"},{"url":"https://e.com/x.png","mediaType":"image/png"}]},"configuration":{"returnImmediately":true,"historyLength":2}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"t","historyLength":-3}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"status":"working","pageSize":5,"pageToken":"10"}}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":{},"method":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, fail := parseCall(body)
		if fail != nil {
			if fail.code >= -32000 || fail.msg == "" {
				t.Fatalf("failure without a JSON-RPC code: %+v", fail)
			}
			if !json.Valid(c.id) {
				t.Fatalf("the id to answer with is not JSON: %q", c.id)
			}
			return
		}
		if _, fail := generation("", c.method); fail != nil {
			t.Fatal("no header must not fail")
		}
		var p sendParamsIn
		if c.decodeParams(&p) == nil && checkMessage(p.Message) == nil {
			m := userMessage(*p.Message)
			if len(m.Content) == 0 && strings.TrimSpace(partsText(p.Message.Parts)) != "" {
				t.Fatal("a message with content became an empty user message")
			}
		}
		var tp taskIDParams
		_ = c.decodeParams(&tp)
		var lp listParams
		_ = c.decodeParams(&lp)
	})
}
