package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/protocol/a2a"
	"github.com/trellis-go/trellis/tool"
)

// rpcReq is a JSON-RPC request a fake agent received.
type rpcReq struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Header http.Header     `json:"-"`
	Path   string          `json:"-"`
}

// fake is a stand-in A2A agent: it serves a card and answers JSON-RPC
// requests with a handler, recording them.
type fake struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []rpcReq
}

func (f *fake) requests() []rpcReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]rpcReq(nil), f.reqs...)
}

func (f *fake) methods() []string {
	var out []string
	for _, r := range f.requests() {
		out = append(out, r.Method)
	}
	return out
}

// newFake starts a fake agent. card returns the card for the server's URL;
// handle answers the n-th request (from 0).
func newFake(t *testing.T, card func(url string) string, handle func(w http.ResponseWriter, r rpcReq, n int)) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == a2a.CardPath {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, card(f.URL))
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req rpcReq
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("fake agent: request is not JSON: %s", body)
			return
		}
		req.Header = r.Header.Clone()
		req.Path = r.URL.Path
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		handle(w, req, n)
	}))
	t.Cleanup(func() { f.CloseClientConnections(); f.Close() })
	return f
}

// card10 is a protocol 1.0 card.
func card10(streaming bool) func(string) string {
	return func(u string) string {
		return fmt.Sprintf(`{
  "name": "Currency Agent",
  "description": "Converts currencies at today's rates.",
  "supportedInterfaces": [
    {"url": "%s/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    {"url": "%s/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
  ],
  "version": "2.1.0",
  "capabilities": {"streaming": %t, "pushNotifications": false},
  "defaultInputModes": ["text/plain"],
  "defaultOutputModes": ["text/plain", "application/json"],
  "skills": [{"id": "convert", "name": "Convert", "description": "Converts an amount between two currencies.", "tags": ["finance"], "examples": ["100 USD in EUR?"]}]
}`, u, u, streaming)
	}
}

// card03 is a protocol 0.3 card.
func card03(streaming bool) func(string) string {
	return func(u string) string {
		return fmt.Sprintf(`{
  "protocolVersion": "0.3.0",
  "name": "Legacy Agent",
  "description": "An agent of the 0.3 era.",
  "url": "%s/rpc",
  "preferredTransport": "JSONRPC",
  "version": "0.9.0",
  "capabilities": {"streaming": %t, "stateTransitionHistory": false},
  "defaultInputModes": ["text"],
  "defaultOutputModes": ["text"],
  "skills": [{"id": "chat", "name": "Chat", "description": "Chats.", "tags": []}]
}`, u, streaming)
	}
}

// result writes a JSON-RPC result.
func result(w http.ResponseWriter, id json.RawMessage, res string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
}

// sse writes a stream of JSON-RPC results, one event each.
func sse(w http.ResponseWriter, id json.RawMessage, results ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, r := range results {
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, r)
		w.(http.Flusher).Flush()
	}
}

const completed10 = `{"task": {
  "id": "task-1", "contextId": "ctx-1",
  "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-03-01T10:00:00.000Z"},
  "artifacts": [{"artifactId": "a1", "name": "conversion", "parts": [
    {"text": "100 USD is 92.40 EUR."},
    {"data": {"amount": 92.4, "currency": "EUR"}, "mediaType": "application/json"},
    {"url": "https://files.example.com/rates.csv", "mediaType": "text/csv", "filename": "rates.csv"}
  ]}]
}}`

func TestClientProtocol10(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		result(w, r.ID, completed10)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL, a2a.WithHeader("Authorization", "Bearer s3cret"),
		a2a.WithHeaderFunc(func(ctx context.Context, h http.Header) error { h.Set("X-User", "ada"); return nil }))
	require.NoError(t, err)
	assert.Equal(t, "currency_agent", tool.Name(tl))
	desc := tl.Definition().Description
	assert.Contains(t, desc, "Converts currencies at today's rates.")
	assert.Contains(t, desc, "- Convert: Converts an amount between two currencies.")

	r, _ := invoke(t, ctx, tl, `{"task":"How much is 100 USD in EUR?"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "100 USD is 92.40 EUR.", r.Content[0].Text)
	assert.JSONEq(t, `{"amount": 92.4, "currency": "EUR"}`, string(r.Content[1].JSON))
	assert.Contains(t, r.Content[2].Text, "[file rates.csv (text/csv): https://files.example.com/rates.csv]")
	assert.Contains(t, r.Text(), "[context_id: ctx-1]")

	reqs := f.requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	assert.Equal(t, "SendMessage", req.Method)
	assert.Equal(t, "/a2a/v1", req.Path, "the JSON-RPC interface, not the gRPC one")
	assert.Equal(t, "1.0", req.Header.Get("A2A-Version"))
	assert.Equal(t, "Bearer s3cret", req.Header.Get("Authorization"))
	assert.Equal(t, "ada", req.Header.Get("X-User"))
	var p struct {
		Message map[string]any `json:"message"`
	}
	require.NoError(t, json.Unmarshal(req.Params, &p))
	assert.Equal(t, "ROLE_USER", p.Message["role"])
	assert.Equal(t, []any{map[string]any{"text": "How much is 100 USD in EUR?"}}, p.Message["parts"])
	assert.NotEmpty(t, p.Message["messageId"])
	assert.NotContains(t, p.Message, "kind")
}

func TestClientProtocol03(t *testing.T) {
	f := newFake(t, card03(false), func(w http.ResponseWriter, r rpcReq, n int) {
		result(w, r.ID, `{
  "kind": "task", "id": "t-9", "contextId": "c-9",
  "status": {"state": "completed", "timestamp": "2025-08-01T10:00:00Z"},
  "artifacts": [{"artifactId": "x", "parts": [{"kind": "text", "text": "Hi from 0.3."}, {"kind": "data", "data": {"ok": true}}]}],
  "history": []
}`)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL)
	require.NoError(t, err)
	assert.Equal(t, "legacy_agent", tool.Name(tl))
	r, _ := invoke(t, ctx, tl, `{"task":"hello","context_id":"c-9"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "Hi from 0.3.", r.Content[0].Text)
	assert.JSONEq(t, `{"ok":true}`, string(r.Content[1].JSON))

	req := f.requests()[0]
	assert.Equal(t, "message/send", req.Method)
	assert.Equal(t, "0.3", req.Header.Get("A2A-Version"))
	assert.Equal(t, "/rpc", req.Path, "the 0.3 card's url is the endpoint")
	var p struct {
		Message       map[string]any `json:"message"`
		Configuration map[string]any `json:"configuration"`
	}
	require.NoError(t, json.Unmarshal(req.Params, &p))
	assert.Equal(t, "message", p.Message["kind"])
	assert.Equal(t, "user", p.Message["role"])
	assert.Equal(t, "c-9", p.Message["contextId"])
	assert.Equal(t, []any{map[string]any{"kind": "text", "text": "hello"}}, p.Message["parts"])
	assert.Equal(t, true, p.Configuration["blocking"])
}

func TestClientEndpointFromLegacyCard(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"name":"x","protocolVersion":"0.3.0","url":"http://%s/rpc"}`, r.Host)
			return
		}
		got = r.URL.Path
		var req rpcReq
		_ = json.NewDecoder(r.Body).Decode(&req)
		result(w, req.ID, `{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"ok"}],"contextId":"c"}`)
	}))
	defer srv.Close()
	c, err := a2a.NewClient(srv.URL)
	require.NoError(t, err)
	ev, err := c.SendMessage(context.Background(), a2a.SendRequest{Message: a2a.Message{Parts: []a2a.Part{a2a.TextPart("hi")}}})
	require.NoError(t, err)
	require.NotNil(t, ev.Message)
	assert.Equal(t, a2a.RoleAgent, ev.Message.Role)
	assert.Equal(t, "/rpc", got)
}

func TestClientTaskOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name, res string
		isError   bool
		code      string
		want      []string
	}{
		{
			name: "failed", isError: true, code: a2a.CodeTaskFailed,
			res:  `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"The rates service is down."}]}}}}`,
			want: []string{`the agent "Currency Agent" failed the task (task t1): The rates service is down.`, "[context_id: c1]"},
		},
		{
			name: "rejected", isError: true, code: a2a.CodeTaskFailed,
			res:  `{"task":{"id":"t2","contextId":"c2","status":{"state":"TASK_STATE_REJECTED"}}}`,
			want: []string{"rejected the task (task t2): it gave no reason"},
		},
		{
			name: "canceled", isError: true, code: a2a.CodeTaskFailed,
			res:  `{"task":{"id":"t3","contextId":"c3","status":{"state":"TASK_STATE_CANCELED"}}}`,
			want: []string{"canceled the task"},
		},
		{
			name: "input required",
			res:  `{"task":{"id":"t4","contextId":"c4","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"Which currency do you want?"}]}}}}`,
			want: []string{`needs more input before it can finish the task: Which currency do you want?`, `call currency_agent again with context_id "c4"`},
		},
		{
			name: "auth required",
			res:  `{"task":{"id":"t5","contextId":"c5","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"Sign in at https://bank.example.com/auth."}]}}}}`,
			want: []string{"needs authentication", "Sign in at https://bank.example.com/auth."},
		},
		{
			name: "message",
			res:  `{"message":{"messageId":"m","contextId":"c6","role":"ROLE_AGENT","parts":[{"text":"Rates are published daily."}]}}`,
			want: []string{"Rates are published daily.", "[context_id: c6]"},
		},
		{
			name: "completed from status message",
			res:  `{"task":{"id":"t7","contextId":"c7","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"Done: 42."}]}}}}`,
			want: []string{"Done: 42."},
		},
		{
			name: "unknown state", isError: true, code: a2a.CodeProtocol,
			res:  `{"task":{"id":"t8","contextId":"c8","status":{"state":"TASK_STATE_PONDERING"}}}`,
			want: []string{"left task t8 in state TASK_STATE_PONDERING"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
				if r.Method == "GetTask" { // the unknown state is polled: answer the same
					result(w, r.ID, strings.TrimSuffix(strings.TrimPrefix(tc.res, `{"task":`), "}"))
					return
				}
				result(w, r.ID, tc.res)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tl, err := a2a.NewTool(ctx, f.URL, a2a.WithPollInterval(time.Millisecond, time.Millisecond))
			require.NoError(t, err)
			r, _ := invoke(t, ctx, tl, `{"task":"convert"}`)
			assert.Equal(t, tc.isError, r.IsError, r.Text())
			assert.Equal(t, tc.code, r.ErrorCode)
			for _, w := range tc.want {
				assert.Contains(t, r.Text(), w)
			}
		})
	}
}

func TestClientContinuesInputRequired(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		switch n {
		case 0:
			result(w, r.ID, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"To which currency?"}]}}}}`)
		default:
			result(w, r.ID, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"92.40 EUR"}]}]}}`)
		}
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL)
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"Convert 100 USD"}`)
	require.False(t, r.IsError)
	r, _ = invoke(t, ctx, tl, `{"task":"EUR","context_id":"c1"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "92.40 EUR")

	var p struct{ Message a2a.Message }
	require.NoError(t, json.Unmarshal(f.requests()[1].Params, &p))
	assert.Equal(t, "t1", p.Message.TaskID, "the answer continues the task that asked")
	assert.Equal(t, "c1", p.Message.ContextID)
}

func TestClientStaleTaskStartsNewTask(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		switch n {
		case 0:
			result(w, r.ID, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}`)
		case 1:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"Task not found"}}`, r.ID)
		default:
			result(w, r.ID, `{"task":{"id":"t2","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"fresh"}]}}}}`)
		}
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL)
	require.NoError(t, err)
	invoke(t, ctx, tl, `{"task":"a"}`)
	r, _ := invoke(t, ctx, tl, `{"task":"b","context_id":"c1"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "fresh")
	reqs := f.requests()
	require.Len(t, reqs, 3)
	var p struct{ Message a2a.Message }
	require.NoError(t, json.Unmarshal(reqs[2].Params, &p))
	assert.Empty(t, p.Message.TaskID)
	assert.Equal(t, "c1", p.Message.ContextID)
}

func TestClientPollsWorkingTask(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		switch {
		case r.Method == "SendMessage":
			result(w, r.ID, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`)
		case n < 3:
			result(w, r.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"Fetching rates (step `+fmt.Sprint(n)+`)"}]}}}`)
		default:
			result(w, r.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"done"}]}]}`)
		}
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL, a2a.WithPollInterval(time.Millisecond, 4*time.Millisecond))
	require.NoError(t, err)
	r, ups := invoke(t, ctx, tl, `{"task":"convert"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "done")
	assert.Equal(t, []string{"SendMessage", "GetTask", "GetTask", "GetTask"}, f.methods())
	var msgs []string
	for _, u := range ups {
		msgs = append(msgs, u.Message)
	}
	assert.Contains(t, msgs, "Fetching rates (step 1)")
	assert.Contains(t, msgs, "Fetching rates (step 2)")
}

func TestClientCancelsWhenCallEnds(t *testing.T) {
	canceled := make(chan string, 1)
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		switch r.Method {
		case "SendMessage":
			result(w, r.ID, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`)
		case "GetTask":
			result(w, r.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}`)
		case "CancelTask":
			var p struct{ ID string }
			_ = json.Unmarshal(r.Params, &p)
			canceled <- p.ID
			result(w, r.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}`)
		}
	})
	tl, err := a2a.NewTool(context.Background(), f.URL, a2a.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	r, _ := invoke(t, ctx, tl, `{"task":"convert"}`)
	require.True(t, r.IsError)
	assert.Equal(t, tool.StatusTimeout, r.Status)
	select {
	case id := <-canceled:
		assert.Equal(t, "t1", id)
	default:
		t.Fatal("the task was not canceled")
	}
}

func TestClientStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		card   func(string) string
		method string
		events []string
	}{
		{
			name: "1.0", card: card10(true), method: "SendStreamingMessage",
			events: []string{
				`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`,
				`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"Looking up rates"}]}}}}`,
				`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"100 USD "}]}}}`,
				`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"is 92.40 EUR."}]},"append":true,"lastChunk":true}}`,
				`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
			},
		},
		{
			name: "0.3", card: card03(true), method: "message/stream",
			events: []string{
				`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"}}`,
				`{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"working","message":{"kind":"message","messageId":"m1","role":"agent","parts":[{"kind":"text","text":"Looking up rates"}]}},"final":false}`,
				`{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"100 USD "}]}}`,
				`{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"is 92.40 EUR."}]},"append":true,"lastChunk":true}`,
				`{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"completed"},"final":true}`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.card, func(w http.ResponseWriter, r rpcReq, n int) {
				assert.Equal(t, "text/event-stream", r.Header.Get("Accept"))
				sse(w, r.ID, tc.events...)
			})
			ctx := context.Background()
			tl, err := a2a.NewTool(ctx, f.URL)
			require.NoError(t, err)
			r, ups := invoke(t, ctx, tl, `{"task":"convert"}`)
			require.False(t, r.IsError, r.Text())
			assert.Equal(t, "100 USD is 92.40 EUR.", r.Content[0].Text)
			assert.Equal(t, []string{tc.method}, f.methods())
			require.NotEmpty(t, ups)
			assert.Equal(t, "Looking up rates", ups[0].Message)
			var chunks []string
			for _, u := range ups {
				if len(u.Content) > 0 {
					chunks = append(chunks, u.Content[0].Text)
				}
			}
			assert.Equal(t, []string{"100 USD ", "is 92.40 EUR."}, chunks)
		})
	}
}

func TestClientStreamEndsEarlyThenPolls(t *testing.T) {
	f := newFake(t, card10(true), func(w http.ResponseWriter, r rpcReq, n int) {
		if r.Method == "SendStreamingMessage" {
			sse(w, r.ID, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`)
			return
		}
		result(w, r.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"polled"}]}]}`)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL, a2a.WithPollInterval(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "polled")
	assert.Equal(t, []string{"SendStreamingMessage", "GetTask"}, f.methods())
}

func TestClientStreamDropsThenPolls(t *testing.T) {
	f := newFake(t, card10(true), func(w http.ResponseWriter, r rpcReq, n int) {
		if r.Method == "SendStreamingMessage" {
			sse(w, r.ID, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`)
			// Cut the connection in the middle of an event.
			conn, buf, err := w.(http.Hijacker).Hijack()
			require.NoError(t, err)
			_, _ = buf.WriteString("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"res")
			_ = buf.Flush()
			conn.Close()
			return
		}
		result(w, r.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"after the drop"}]}]}`)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL, a2a.WithPollInterval(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "after the drop")
	assert.Equal(t, []string{"SendStreamingMessage", "GetTask"}, f.methods())
}

func TestClientFallsBackWhenStreamingUnsupported(t *testing.T) {
	f := newFake(t, card10(true), func(w http.ResponseWriter, r rpcReq, n int) {
		if r.Method == "SendStreamingMessage" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32004,"message":"Streaming is not supported"}}`, r.ID)
			return
		}
		result(w, r.ID, completed10)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL)
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, []string{"SendStreamingMessage", "SendMessage"}, f.methods())
}

func TestClientRPCError(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32005,"message":"Incompatible content types","data":{"accepted":["application/pdf"]}}}`, r.ID)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL)
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.True(t, r.IsError)
	assert.Equal(t, a2a.CodeProtocol, r.ErrorCode)
	assert.Contains(t, r.Text(), "SendMessage: JSON-RPC error -32005 (content type not supported): Incompatible content types")
	assert.Contains(t, r.Text(), `application/pdf`)
	rpcErr, ok := errors.AsType[*a2a.RPCError](r.Err)
	require.True(t, ok)
	assert.Equal(t, a2a.RPCContentTypeNotSupported, rpcErr.Code)
}

func TestClientRetriesTransientStatus(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		if n == 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		result(w, r.ID, completed10)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL)
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.False(t, r.IsError, r.Text())
	reqs := f.requests()
	require.Len(t, reqs, 2)
	var p1, p2 struct{ Message a2a.Message }
	require.NoError(t, json.Unmarshal(reqs[0].Params, &p1))
	require.NoError(t, json.Unmarshal(reqs[1].Params, &p2))
	assert.Equal(t, p1.Message.MessageID, p2.Message.MessageID, "a repeat keeps the messageId")
}

func TestClientGivesUpOnPersistentStatus(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL, a2a.WithRetries(1))
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.True(t, r.IsError)
	assert.Equal(t, a2a.CodeUnavailable, r.ErrorCode)
	se, ok := errors.AsType[*a2a.StatusError](r.Err)
	require.True(t, ok, "%v", r.Err)
	assert.Equal(t, http.StatusServiceUnavailable, se.Status)
	assert.True(t, se.Transient())
	assert.Contains(t, r.Text(), "down for maintenance")
	assert.Len(t, f.requests(), 2)
}

func TestClientLongRetryAfterIsNotWaited(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) {
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "come back later", http.StatusTooManyRequests)
	})
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL)
	require.NoError(t, err)
	start := time.Now()
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.True(t, r.IsError)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Len(t, f.requests(), 1)
}

func TestClientBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(w http.ResponseWriter, r rpcReq)
		opts   []a2a.Option
		is     error
		want   string
	}{
		{
			name: "malformed JSON",
			handle: func(w http.ResponseWriter, r rpcReq) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"task":`)
			},
			is: a2a.ErrInvalidResponse, want: "not a JSON-RPC response",
		},
		{
			name: "neither result nor error",
			handle: func(w http.ResponseWriter, r rpcReq) {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s}`, r.ID)
			},
			is: a2a.ErrInvalidResponse, want: "neither a result nor an error",
		},
		{
			name: "result of the wrong shape",
			handle: func(w http.ResponseWriter, r rpcReq) {
				result(w, r.ID, `{"task":{"id":"t"},"message":{"messageId":"m"}}`)
			},
			is: a2a.ErrInvalidResponse, want: "exactly one of",
		},
		{
			name: "oversized body",
			handle: func(w http.ResponseWriter, r rpcReq) {
				result(w, r.ID, `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"`+strings.Repeat("x", 4096)+`"}]}}`)
			},
			opts: []a2a.Option{a2a.WithMaxResponseBytes(2048)},
			is:   a2a.ErrResponseTooLarge, want: "exceeds 2048 bytes",
		},
		{
			name: "HTML error page",
			handle: func(w http.ResponseWriter, r rpcReq) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, "<html><body>Forbidden</body></html>")
			},
			want: "403 Forbidden",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) { tc.handle(w, r) })
			ctx := context.Background()
			tl, err := a2a.NewTool(ctx, f.URL, tc.opts...)
			require.NoError(t, err)
			r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
			require.True(t, r.IsError)
			if tc.is != nil {
				assert.ErrorIs(t, r.Err, tc.is)
				assert.Equal(t, a2a.CodeProtocol, r.ErrorCode)
			}
			assert.Contains(t, r.Text(), tc.want)
		})
	}
}

func TestClientStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		opts []a2a.Option
		is   error
		want string
	}{
		{
			name: "error event",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t1\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"model quota exceeded\"}}\n\n",
			want: "JSON-RPC error -32603 (internal error): model quota exceeded",
		},
		{
			name: "garbage event",
			body: "data: {not json\n\n",
			is:   a2a.ErrInvalidResponse,
		},
		{
			name: "oversized event",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"" + strings.Repeat("y", 3000) + "\"}]}}}\n\n",
			opts: []a2a.Option{a2a.WithMaxResponseBytes(2048)},
			is:   a2a.ErrResponseTooLarge,
		},
		{
			name: "empty stream",
			body: ": nothing to see\n\n",
			is:   a2a.ErrInvalidResponse, want: "without a task or a message",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, card10(true), func(w http.ResponseWriter, r rpcReq, n int) {
				if r.Method == "CancelTask" {
					result(w, r.ID, `{"id":"t1","status":{"state":"TASK_STATE_CANCELED"}}`)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, tc.body)
			})
			ctx := context.Background()
			tl, err := a2a.NewTool(ctx, f.URL, tc.opts...)
			require.NoError(t, err)
			r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
			require.True(t, r.IsError)
			if tc.is != nil {
				assert.ErrorIs(t, r.Err, tc.is)
			}
			assert.Contains(t, r.Text(), tc.want)
		})
	}
}

func TestClientCardErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		card   string
		is     error
		want   string
	}{
		{name: "not found", status: http.StatusNotFound, card: "no such page", is: a2a.ErrCardNotFound, want: "404"},
		{name: "not JSON", status: 200, card: "<html>hello</html>", is: a2a.ErrInvalidCard, want: "is not a JSON agent card"},
		{name: "no name", status: 200, card: `{"description":"x","supportedInterfaces":[{"url":"http://h/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, is: a2a.ErrInvalidCard, want: "has no name"},
		{name: "gRPC only", status: 200, card: `{"name":"g","supportedInterfaces":[{"url":"https://g.example.com","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`, is: a2a.ErrNoJSONRPC, want: "GRPC at https://g.example.com"},
		{name: "no interface", status: 200, card: `{"name":"g"}`, is: a2a.ErrNoJSONRPC, want: "lists no interface"},
		{name: "future version", status: 200, card: `{"name":"f","supportedInterfaces":[{"url":"https://f.example.com","protocolBinding":"JSONRPC","protocolVersion":"2.0"}]}`, is: a2a.ErrUnsupportedVersion, want: `version "2.0"`},
		{name: "old version", status: 200, card: `{"name":"o","url":"https://o.example.com","protocolVersion":"0.2.5"}`, is: a2a.ErrUnsupportedVersion, want: `version "0.2.5"`},
		{name: "bad interface URL", status: 200, card: `{"name":"b","supportedInterfaces":[{"url":"ftp://b.example.com","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, is: a2a.ErrInvalidCard, want: "not an http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.card)
			}))
			defer srv.Close()
			_, err := a2a.NewTool(context.Background(), srv.URL)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestClientCardIsReadAgainAfterFailure(t *testing.T) {
	var n int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			http.Error(w, "not yet", http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"name":"late","supportedInterfaces":[{"url":"http://%s/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, r.Host)
	}))
	defer srv.Close()
	c, err := a2a.NewClient(srv.URL + "/")
	require.NoError(t, err)
	_, err = c.Card(context.Background())
	require.ErrorIs(t, err, a2a.ErrCardNotFound)
	card, err := c.Card(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "late", card.Name)
	_, err = c.Card(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "a card read is kept")
}

func TestClientOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  a2a.Option
		want string
	}{
		{a2a.WithHTTPClient(nil), "WithHTTPClient"},
		{a2a.WithHeader("Bad\nKey", "v"), "WithHeader"},
		{a2a.WithMaxResponseBytes(10), "WithMaxResponseBytes"},
		{a2a.WithRetries(-1), "WithRetries"},
		{a2a.WithPollInterval(time.Second, time.Millisecond), "WithPollInterval"},
	} {
		_, err := a2a.NewClient("http://127.0.0.1:1", tc.opt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := a2a.NewClient("not a url")
	assert.ErrorContains(t, err, "absolute http or https URL")
}

func TestClientToolOptions(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) { result(w, r.ID, completed10) })
	ctx := context.Background()
	c, err := a2a.NewClient(f.URL + a2a.CardPath) // a card URL works as the base
	require.NoError(t, err)
	tl, err := c.Tool(ctx, a2a.WithName("fx"), a2a.WithDescription("Currency conversion."), a2a.WithoutContextHint(),
		a2a.WithMetadata(tool.Metadata{ReadOnly: true}))
	require.NoError(t, err)
	assert.Equal(t, "fx", tool.Name(tl))
	assert.Equal(t, "Currency conversion.", tl.Definition().Description)
	assert.True(t, tool.MetadataOf(tl).ReadOnly)
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	assert.NotContains(t, r.Text(), "context_id")

	r, _ = invoke(t, ctx, tl, `{"task":"  "}`)
	assert.True(t, r.IsError)
}

func TestClientHeaderFuncRefuses(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) { result(w, r.ID, completed10) })
	var refuse bool
	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, f.URL, a2a.WithHeaderFunc(func(ctx context.Context, h http.Header) error {
		if refuse {
			return errors.New("no token for this user")
		}
		return nil
	}))
	require.NoError(t, err)
	refuse = true
	r, _ := invoke(t, ctx, tl, `{"task":"x"}`)
	require.True(t, r.IsError)
	assert.Equal(t, a2a.CodeRefused, r.ErrorCode)
	assert.ErrorIs(t, r.Err, a2a.ErrHeaderRefused)
	assert.Empty(t, f.requests())
}

func TestClientMethods(t *testing.T) {
	f := newFake(t, card03(false), func(w http.ResponseWriter, r rpcReq, n int) {
		switch r.Method {
		case "tasks/get":
			assert.JSONEq(t, `{"id":"t1","historyLength":2}`, string(r.Params))
			result(w, r.ID, `{"kind":"task","id":"t1","contextId":"c","status":{"state":"input-required"}}`)
		case "tasks/cancel":
			result(w, r.ID, `{"kind":"task","id":"t1","contextId":"c","status":{"state":"canceled"}}`)
		case "tasks/resubscribe":
			sse(w, r.ID, `{"kind":"task","id":"t1","contextId":"c","status":{"state":"working"}}`,
				`{"kind":"status-update","taskId":"t1","contextId":"c","status":{"state":"completed"},"final":true}`)
		}
	})
	ctx := context.Background()
	c, err := a2a.NewClient(f.URL)
	require.NoError(t, err)
	two := 2
	task, err := c.GetTask(ctx, "t1", &two)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateInputRequired, task.Status.State)
	task, err = c.CancelTask(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCanceled, task.Status.State)
	var states []a2a.TaskState
	for ev, err := range c.SubscribeToTask(ctx, "t1") {
		require.NoError(t, err)
		if ev.StatusUpdate != nil {
			states = append(states, ev.StatusUpdate.Status.State)
			assert.True(t, ev.StatusUpdate.Final)
		}
	}
	assert.Equal(t, []a2a.TaskState{a2a.StateCompleted}, states)
	assert.Equal(t, []string{"tasks/get", "tasks/cancel", "tasks/resubscribe"}, f.methods())
}

// TestClientChecksResponseIDs checks that an answer carrying another
// request's id is refused, while an id echoed as a string and a null id
// on an error are taken.
func TestClientChecksResponseIDs(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, id json.RawMessage)
		check  func(t *testing.T, task *a2a.Task, err error)
	}{
		{"another request's id", func(w http.ResponseWriter, id json.RawMessage) {
			result(w, json.RawMessage(`987654`), `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"}}`)
		}, func(t *testing.T, task *a2a.Task, err error) {
			require.ErrorIs(t, err, a2a.ErrInvalidResponse)
			assert.ErrorContains(t, err, "has id 987654, not the request's")
		}},
		{"the id as a string", func(w http.ResponseWriter, id json.RawMessage) {
			result(w, json.RawMessage(`"`+string(id)+`"`), `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"}}`)
		}, func(t *testing.T, task *a2a.Task, err error) {
			require.NoError(t, err)
			assert.Equal(t, "task-1", task.ID)
		}},
		{"a null id on an error", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
		}, func(t *testing.T, task *a2a.Task, err error) {
			var rpcErr *a2a.RPCError
			require.ErrorAs(t, err, &rpcErr)
			assert.Equal(t, -32700, rpcErr.Code)
		}},
		{"a null id on a result", func(w http.ResponseWriter, id json.RawMessage) {
			result(w, json.RawMessage(`null`), `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"}}`)
		}, func(t *testing.T, task *a2a.Task, err error) {
			require.ErrorIs(t, err, a2a.ErrInvalidResponse)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, n int) { tc.answer(w, r.ID) })
			c, err := a2a.NewClient(f.URL)
			require.NoError(t, err)
			task, err := c.GetTask(ctx, "task-1", nil)
			tc.check(t, task, err)
		})
	}
}
