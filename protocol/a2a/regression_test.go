package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/a2a"
)

// A page token near the largest int made the page's end overflow, and the
// slice expression panicked with the server's lock held: every later
// request hung.
func TestServerListTasksHugePageToken(t *testing.T) {
	_, hs := newServer(t, echoModel())
	_, resp := rpc(t, hs.URL, "1.0", send10("hello", ""))
	require.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "task", "status", "state"))
	for _, token := range []string{"9223372036854775807", "9223372036854775758", "2"} {
		_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":"`+token+`"}}`)
		assert.Equal(t, []any{}, path(resp, "result", "tasks"), "token %s: %v", token, resp)
		assert.Equal(t, float64(1), path(resp, "result", "totalSize"))
		assert.Equal(t, "", path(resp, "result", "nextPageToken"))
	}
	// The server still answers.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}}`)
	}()
	select {
	case <-done:
		assert.Equal(t, float64(1), path(resp, "result", "totalSize"))
	case <-time.After(5 * time.Second):
		t.Fatal("the server no longer answers")
	}
}

// Messages sent with returnImmediately to a busy agent queued without
// bound: each a task, a goroutine and its conversation, past WithMaxTasks.
func TestServerRefusesTasksPastMaxTasks(t *testing.T) {
	m := newBlockingModel()
	srv, hs := newServer(t, m, a2a.WithMaxTasks(2))
	send := func(ctxID string) (int, map[string]any) {
		return rpc(t, hs.URL, "1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}],"contextId":%q},"configuration":{"returnImmediately":true}}}`, ctxID))
	}
	for i := range 2 {
		status, resp := send("c")
		require.Equal(t, http.StatusOK, status)
		require.NotNil(t, path(resp, "result", "task", "id"), "message %d: %v", i, resp)
	}
	status, resp := send("c")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	code, msg := rpcError(t, resp)
	assert.Equal(t, a2a.RPCInternalError, code)
	assert.Contains(t, msg, "2 tasks are running")

	// Once a task ends, a new one is taken.
	<-m.started
	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`)
	var id string
	for _, task := range path(resp, "result", "tasks").([]any) {
		if path(task, "status", "state") == "TASK_STATE_WORKING" {
			id = path(task, "id").(string)
		}
	}
	require.NotEmpty(t, id, "%v", resp)
	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	require.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
	status, resp = send("d")
	assert.Equal(t, http.StatusOK, status, "%v", resp)
	require.NoError(t, srv.Close())
}

// A task queued behind a running one in its context answers the question
// the running one ends up asking (the thread resumes with its message):
// the asking task must then be over, not left waiting for input forever.
func TestServerQueuedTaskSupersedesWaitingOne(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	var calls atomic.Int32
	m := scripted.New()
	fallback := scripted.Func(func(req *model.Request) (*model.Response, error) {
		if calls.Add(1) == 1 {
			started <- struct{}{}
			<-release
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				scripted.Call(nodes.AskUserName, `{"question":"Which city?"}`),
			}}}, nil
		}
		return &model.Response{Message: model.Assistant("Going to " + req.Messages[len(req.Messages)-1].Text() + ".")}, nil
	})
	m.Fallback = &fallback
	g, err := agent.NewReAct(m, agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(newSaver()))
	require.NoError(t, err)
	srv, err := a2a.NewServer("Asker", "Asks.", g)
	require.NoError(t, err)
	hs := serve(t, srv)
	sendNow := func(text string) string {
		_, resp := rpc(t, hs.URL, "1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":%q}],"contextId":"c"},"configuration":{"returnImmediately":true}}}`, text, text))
		id, _ := path(resp, "result", "task", "id").(string)
		require.NotEmpty(t, id, "%v", resp)
		return id
	}
	first := sendNow("book")
	<-started // the first task holds the conversation
	second := sendNow("Rome")
	close(release)
	state := func(id string) (string, map[string]any) {
		_, resp := rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+id+`"}}`)
		s, _ := path(resp, "result", "status", "state").(string)
		return s, resp
	}
	require.Eventually(t, func() bool { s, _ := state(second); return s == "TASK_STATE_COMPLETED" }, 5*time.Second, 10*time.Millisecond)
	s, resp := state(first)
	assert.Equal(t, "TASK_STATE_CANCELED", s, "%v", resp)
	assert.Contains(t, path(resp, "result", "status", "message", "parts", 0, "text"), second)
}

// Card held the client's lock while it fetched the card, so a second
// caller waited for the first caller's request, past its own deadline.
func TestClientCardHonoursContextWhileAnotherFetches(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "Slow", "url": "http://" + r.Host + "/", "protocolVersion": "0.3.0"})
	}))
	defer hs.Close()
	// Without the fix the second caller waits for this.
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	timer := time.AfterFunc(3*time.Second, free)
	defer timer.Stop()
	c, err := a2a.NewClient(hs.URL)
	require.NoError(t, err)
	firstDone := make(chan error, 1)
	go func() {
		_, err := c.Card(context.Background())
		firstDone <- err
	}()
	require.Eventually(t, func() bool { return hits.Load() == 1 }, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Card(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)

	free()
	require.NoError(t, <-firstDone)
	card, err := c.Card(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "Slow", card.Name)
	assert.Equal(t, int32(1), hits.Load(), "the card is fetched once")
}

// FuzzServeRPC posts request bodies to a running server: whatever comes,
// it answers with one JSON-RPC response (or a stream of them), and keeps
// answering.
func FuzzServeRPC(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":"9223372036854775807","pageSize":100}}`,
		`{"jsonrpc":"2.0","id":1e999,"method":"GetTask","params":{"id":"x","historyLength":-9223372036854775808}}`,
		`{"jsonrpc":"2.0","id":"a","method":"CancelTask","params":null}`,
		`{"jsonrpc":"2.0","id":[1],"method":"SubscribeToTask","params":[]}`,
		`{"jsonrpc":"2.0","id":true,"method":"tasks/get","params":{"id":5}}`,
		`{"jsonrpc":"2.0","id":null,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true,"historyLength":0}}}`,
		`{"jsonrpc":"2.0","id":-0.5,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","taskId":"nope","parts":[{"kind":"text","text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"status":"TASK_STATE_COMPLETED","pageSize":1,"pageToken":"1","historyLength":2147483648}}`,
	} {
		f.Add([]byte(s))
	}
	g, err := agent.NewReAct(echoModel())
	require.NoError(f, err)
	srv, err := a2a.NewServer("Echo", "Echoes.", g, a2a.WithMaxTasks(20))
	require.NoError(f, err)
	f.Cleanup(func() { _ = srv.Close() })
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		out := w.Body.Bytes()
		if w.Header().Get("Content-Type") == "text/event-stream" {
			return
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		require.NoError(t, json.Unmarshal(out, &resp), "%s", out)
		assert.Equal(t, "2.0", resp.JSONRPC)
	})
}
