package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/a2a"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// echoModel answers every request with the number of messages it was shown
// and the last one's text.
func echoModel() *scripted.Model {
	m := scripted.New()
	fallback := scripted.Func(func(req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		return &model.Response{Message: model.Assistant(fmt.Sprintf("%d messages; last: %s", len(req.Messages), last.Text()))}, nil
	})
	m.Fallback = &fallback
	return m
}

// blockingModel blocks every call until its context ends.
type blockingModel struct{ started chan struct{} }

func newBlockingModel() *blockingModel { return &blockingModel{started: make(chan struct{}, 16)} }

func (m *blockingModel) Generate(ctx context.Context, _ *model.Request) (*model.Response, error) {
	m.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (m *blockingModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		m.started <- struct{}{}
		<-ctx.Done()
		yield(model.Chunk{}, ctx.Err())
	}
}

// newServer serves a ReAct agent on m without a checkpointer.
func newServer(t *testing.T, m model.Model, opts ...a2a.ServerOption) (*a2a.Server, *httptest.Server) {
	t.Helper()
	g, err := agent.NewReAct(m)
	require.NoError(t, err)
	srv, err := a2a.NewServer("Echo", "Echoes.", g, opts...)
	require.NoError(t, err)
	return srv, serve(t, srv)
}

// rpc posts a JSON-RPC request and decodes the response.
func rpc(t *testing.T, url, version, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	assert.Equal(t, "2.0", out["jsonrpc"])
	return resp.StatusCode, out
}

// rpcError returns the code and message of an error response.
func rpcError(t *testing.T, resp map[string]any) (int, string) {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	require.True(t, ok, "want an error response, got %v", resp)
	assert.NotContains(t, resp, "result")
	return int(e["code"].(float64)), e["message"].(string)
}

// path reads a value from decoded JSON: keys and indexes.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			s, _ := v.([]any)
			if k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func send10(text, contextID string) string {
	ctx := ""
	if contextID != "" {
		ctx = fmt.Sprintf(`,"contextId":%q`, contextID)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"messageId":"m-%s","role":"ROLE_USER","parts":[{"text":%q}]%s}}}`, text, text, ctx)
}

func TestServerCard(t *testing.T) {
	_, hs := newServer(t, echoModel(), a2a.WithAgentVersion("3.1.4"), a2a.WithProvider("Example Corp", "https://example.com"),
		a2a.WithSkills(a2a.Skill{ID: "echo", Name: "Echo", Description: "Repeats.", Tags: []string{"test"}}),
		a2a.WithCard(func(c *a2a.Card) { c.IconURL = "https://example.com/icon.png" }))
	resp, err := http.Get(hs.URL + a2a.CardPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var card map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
	assert.Equal(t, "Echo", card["name"])
	assert.Equal(t, "Echoes.", card["description"])
	assert.Equal(t, "3.1.4", card["version"])
	assert.Equal(t, true, path(card, "capabilities", "streaming"))
	assert.Equal(t, "Example Corp", path(card, "provider", "organization"))
	assert.Equal(t, "echo", path(card, "skills", 0, "id"))
	assert.Equal(t, "https://example.com/icon.png", card["iconUrl"])
	assert.Equal(t, []any{
		map[string]any{"url": hs.URL + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		map[string]any{"url": hs.URL + "/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
	}, card["supportedInterfaces"])
	// What a 0.3 client reads.
	assert.Equal(t, hs.URL+"/", card["url"])
	assert.Equal(t, "0.3.0", card["protocolVersion"])
	assert.Equal(t, "JSONRPC", card["preferredTransport"])

	// Mounted under a prefix, the interface follows it.
	srv2, _ := newServer(t, echoModel())
	mux := http.NewServeMux()
	mux.Handle("/agents/echo/", srv2)
	hs2 := httptest.NewServer(mux)
	defer hs2.Close()
	c, err := a2a.NewClient(hs2.URL + "/agents/echo")
	require.NoError(t, err)
	got, err := c.Card(context.Background())
	require.NoError(t, err)
	assert.Equal(t, hs2.URL+"/agents/echo/", got.SupportedInterfaces[0].URL)

	// WithURL wins.
	srv3, hs3 := newServer(t, echoModel(), a2a.WithURL("https://agents.example.com/echo/"))
	resp3, err := http.Get(hs3.URL + a2a.CardPath)
	require.NoError(t, err)
	var card3 a2a.Card
	require.NoError(t, json.NewDecoder(resp3.Body).Decode(&card3))
	resp3.Body.Close()
	assert.Equal(t, "https://agents.example.com/echo/", card3.SupportedInterfaces[0].URL)
	assert.Equal(t, card3, srv3.Card("ignored"))
}

func TestServerMethodNotAllowed(t *testing.T) {
	_, hs := newServer(t, echoModel())
	resp, err := http.Get(hs.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD, POST", resp.Header.Get("Allow"))
}

func TestServerSendMessage10(t *testing.T) {
	_, hs := newServer(t, echoModel())
	status, resp := rpc(t, hs.URL, "1.0", send10("hello", ""))
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "r1", resp["id"])
	task := path(resp, "result", "task")
	require.NotNil(t, task, "%v", resp)
	assert.Equal(t, "TASK_STATE_COMPLETED", path(task, "status", "state"))
	assert.NotEmpty(t, path(task, "id"))
	assert.NotEmpty(t, path(task, "contextId"))
	assert.Equal(t, "answer", path(task, "artifacts", 0, "artifactId"))
	assert.Equal(t, "1 messages; last: hello", path(task, "artifacts", 0, "parts", 0, "text"))
	assert.Equal(t, "ROLE_USER", path(task, "history", 0, "role"))
	assert.Equal(t, "m-hello", path(task, "history", 0, "messageId"))
	assert.Equal(t, "ROLE_AGENT", path(task, "history", 1, "role"))
	assert.NotContains(t, task, "kind")
}

func TestServerSendMessage03(t *testing.T) {
	_, hs := newServer(t, echoModel())
	body := `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"},{"kind":"data","data":{"n":1}}]},"configuration":{"blocking":true}}}`
	_, resp := rpc(t, hs.URL, "", body) // no header: 0.3, by the method's name
	assert.Equal(t, float64(7), resp["id"])
	task := resp["result"]
	assert.Equal(t, "task", path(task, "kind"))
	assert.Equal(t, "completed", path(task, "status", "state"))
	assert.Equal(t, "text", path(task, "artifacts", 0, "parts", 0, "kind"))
	assert.Equal(t, "1 messages; last: hi\n{\"n\":1}", path(task, "artifacts", 0, "parts", 0, "text"))
	assert.Equal(t, "agent", path(task, "history", 1, "role"))

	// The 0.3 names with a 1.0 header answer in 1.0.
	_, resp = rpc(t, hs.URL, "1.0", body)
	assert.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "task", "status", "state"))
	// The 1.0 names with a 0.3 header answer in 0.3.
	_, resp = rpc(t, hs.URL, "0.3", send10("x", ""))
	assert.Equal(t, "completed", path(resp, "result", "status", "state"))
}

func TestServerContextContinuity(t *testing.T) {
	_, hs := newServer(t, echoModel())
	_, resp := rpc(t, hs.URL, "1.0", send10("one", ""))
	ctxID := path(resp, "result", "task", "contextId").(string)

	_, resp = rpc(t, hs.URL, "1.0", send10("two", ctxID))
	assert.Equal(t, ctxID, path(resp, "result", "task", "contextId"))
	assert.Equal(t, "3 messages; last: two", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))

	// Another context starts afresh, and a context the client names is kept.
	_, resp = rpc(t, hs.URL, "1.0", send10("three", "my-own-context"))
	assert.Equal(t, "my-own-context", path(resp, "result", "task", "contextId"))
	assert.Equal(t, "1 messages; last: three", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))
}

func TestServerForgetsOldContexts(t *testing.T) {
	_, hs := newServer(t, echoModel(), a2a.WithMaxContexts(1))
	rpc(t, hs.URL, "1.0", send10("one", "a"))
	rpc(t, hs.URL, "1.0", send10("two", "b"))
	_, resp := rpc(t, hs.URL, "1.0", send10("three", "a"))
	assert.Equal(t, "1 messages; last: three", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"),
		"context a was forgotten when b came")
}

func TestServerGetTaskAndHistoryLength(t *testing.T) {
	_, hs := newServer(t, echoModel())
	_, resp := rpc(t, hs.URL, "1.0", send10("hello", ""))
	id := path(resp, "result", "task", "id").(string)

	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+id+`","historyLength":1}}`)
	assert.Equal(t, id, path(resp, "result", "id"), "GetTask's result is the bare task")
	assert.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "status", "state"))
	hist := path(resp, "result", "history").([]any)
	require.Len(t, hist, 1)
	assert.Equal(t, "ROLE_AGENT", path(hist, 0, "role"))

	_, resp = rpc(t, hs.URL, "", `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"`+id+`"}}`)
	assert.Equal(t, "task", path(resp, "result", "kind"))

	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"nope"}}`)
	code, msg := rpcError(t, resp)
	assert.Equal(t, a2a.RPCTaskNotFound, code)
	assert.Contains(t, msg, `"nope"`)
}

func TestServerReturnImmediately(t *testing.T) {
	m := newBlockingModel()
	_, hs := newServer(t, m)
	_, resp := rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"slow"}]},"configuration":{"returnImmediately":true}}}`)
	state := path(resp, "result", "task", "status", "state")
	assert.Contains(t, []any{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}, state)
	id := path(resp, "result", "task", "id").(string)
	<-m.started

	// A second message to the running task is refused.
	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","taskId":"`+id+`","role":"ROLE_USER","parts":[{"text":"more"}]}}}`)
	code, msg := rpcError(t, resp)
	assert.Equal(t, a2a.RPCUnsupportedOperation, code)
	assert.Contains(t, msg, "still running")

	// Cancel it: the run's context ends, and the task says so.
	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
	assert.Contains(t, path(resp, "result", "status", "message", "parts", 0, "text"), "the client canceled it")

	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	code, msg = rpcError(t, resp)
	assert.Equal(t, a2a.RPCTaskNotCancelable, code)
	assert.Contains(t, msg, "already canceled")

	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m3","taskId":"`+id+`","role":"ROLE_USER","parts":[{"text":"more"}]}}}`)
	code, msg = rpcError(t, resp)
	assert.Equal(t, a2a.RPCUnsupportedOperation, code)
	assert.Contains(t, msg, "takes no more messages")
}

func TestServerCloseCancelsRunningTasks(t *testing.T) {
	m := newBlockingModel()
	g, err := agent.NewReAct(m)
	require.NoError(t, err)
	srv, err := a2a.NewServer("Slow", "Never answers.", g)
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	done := make(chan map[string]any, 1)
	go func() {
		_, resp := rpc(t, hs.URL, "1.0", send10("wait", ""))
		done <- resp
	}()
	<-m.started
	require.NoError(t, srv.Close())
	resp := <-done
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "task", "status", "state"), "%v", resp)
	assert.Contains(t, path(resp, "result", "task", "status", "message", "parts", 0, "text"), "the server shut down")

	status, resp := rpc(t, hs.URL, "1.0", send10("late", ""))
	assert.Equal(t, http.StatusServiceUnavailable, status)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCInternalError, code)
	require.NoError(t, srv.Close(), "Close is idempotent")
}

func TestServerStream(t *testing.T) {
	for _, tc := range []struct {
		name, version, body string
		legacy              bool
	}{
		{name: "1.0", version: "1.0", body: `{"jsonrpc":"2.0","id":"s1","method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"stream please"}]}}}`},
		{name: "0.3", body: `{"jsonrpc":"2.0","id":"s1","method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"stream please"}]}}}`, legacy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(
				scripted.CallTools(scripted.Call("lookup", `{}`)).WithText("Let me look."),
				scripted.Reply("Here is the long streamed answer."),
			)
			g, err := agent.NewReAct(m, agent.WithTools(lookupTool()))
			require.NoError(t, err)
			srv, err := a2a.NewServer("Streamer", "Streams.", g)
			require.NoError(t, err)
			hs := serve(t, srv)

			req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(tc.body))
			if tc.version != "" {
				req.Header.Set("A2A-Version", tc.version)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

			// Framing: "data: " lines, each event ended by a blank line.
			var events []map[string]any
			sc := bufio.NewScanner(resp.Body)
			expectBlank := false
			for sc.Scan() {
				line := sc.Text()
				if expectBlank {
					require.Equal(t, "", line, "an event ends with a blank line")
					expectBlank = false
					continue
				}
				require.True(t, strings.HasPrefix(line, "data: "), "line %q", line)
				var ev map[string]any
				require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev))
				assert.Equal(t, "2.0", ev["jsonrpc"])
				assert.Equal(t, "s1", ev["id"], "every event answers the request")
				events = append(events, ev["result"].(map[string]any))
				expectBlank = true
			}
			require.NoError(t, sc.Err())
			require.GreaterOrEqual(t, len(events), 5)

			kind := func(ev map[string]any) string {
				if tc.legacy {
					return ev["kind"].(string)
				}
				for k := range ev {
					return k
				}
				return ""
			}
			body := func(ev map[string]any) any {
				if tc.legacy {
					return ev
				}
				return ev[kind(ev)]
			}
			state := func(ev map[string]any) string { return path(body(ev), "status", "state").(string) }
			var kinds, notes, deltas []string
			for _, ev := range events {
				kinds = append(kinds, kind(ev))
				if m, ok := path(body(ev), "status", "message").(map[string]any); ok {
					text := path(m, "parts", 0, "text").(string)
					if path(m, "metadata", a2a.MetaDelta) == true {
						deltas = append(deltas, text)
					} else {
						notes = append(notes, text)
					}
				}
			}
			first, last := events[0], events[len(events)-1]
			if tc.legacy {
				assert.Equal(t, "task", kind(first))
				assert.Equal(t, "submitted", state(first))
				assert.Equal(t, "completed", state(last))
				assert.Equal(t, true, last["final"])
				assert.Contains(t, kinds, "artifact-update")
			} else {
				assert.Equal(t, "task", kind(first))
				assert.Equal(t, "TASK_STATE_SUBMITTED", state(first))
				assert.Equal(t, "TASK_STATE_COMPLETED", state(last))
				assert.NotContains(t, body(last), "final")
				assert.Contains(t, kinds, "artifactUpdate")
			}
			assert.Equal(t, []string{"Calling lookup."}, notes)
			assert.Equal(t, "Let me look.Here is the long streamed answer.", strings.Join(deltas, ""), "the model's text, as it came")
			art := events[len(events)-2]
			assert.Equal(t, "Here is the long streamed answer.", path(body(art), "artifact", "parts", 0, "text"))
			assert.Equal(t, true, path(body(art), "lastChunk"))
		})
	}
}

func TestServerSubscribe(t *testing.T) {
	m := newBlockingModel()
	srv, hs := newServer(t, m)
	_, resp := rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"slow"}]},"configuration":{"returnImmediately":true}}}`)
	id := path(resp, "result", "task", "id").(string)
	<-m.started

	c, err := a2a.NewClient(hs.URL)
	require.NoError(t, err)
	var states []a2a.TaskState
	for ev, err := range c.SubscribeToTask(context.Background(), id) {
		require.NoError(t, err)
		switch {
		case ev.Task != nil:
			assert.Equal(t, a2a.StateWorking, ev.Task.Status.State)
			// The subscription is in place: cancel the task.
			go func() { _, _ = c.CancelTask(context.Background(), id) }()
		case ev.StatusUpdate != nil:
			states = append(states, ev.StatusUpdate.Status.State)
		}
	}
	assert.Equal(t, []a2a.TaskState{a2a.StateCanceled}, states)

	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":2,"method":"SubscribeToTask","params":{"id":"`+id+`"}}`)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCUnsupportedOperation, code, "a finished task has nothing to stream")
	_ = srv
}

func TestServerListTasks(t *testing.T) {
	_, hs := newServer(t, echoModel())
	for i := range 3 {
		rpc(t, hs.URL, "1.0", send10(fmt.Sprint("m", i), "ctx-a"))
	}
	rpc(t, hs.URL, "1.0", send10("other", "ctx-b"))

	_, resp := rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"ctx-a","pageSize":2}}`)
	res := resp["result"].(map[string]any)
	assert.Equal(t, float64(3), res["totalSize"])
	assert.Equal(t, float64(2), res["pageSize"])
	assert.Equal(t, "2", res["nextPageToken"])
	tasks := res["tasks"].([]any)
	require.Len(t, tasks, 2)
	assert.NotContains(t, tasks[0], "artifacts", "artifacts only when asked")

	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"contextId":"ctx-a","pageSize":2,"pageToken":"2","includeArtifacts":true,"status":"TASK_STATE_COMPLETED"}}`)
	res = resp["result"].(map[string]any)
	assert.Equal(t, "", res["nextPageToken"])
	require.Len(t, res["tasks"], 1)
	assert.Contains(t, res["tasks"].([]any)[0], "artifacts")

	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageSize":500}}`)
	code, msg := rpcError(t, resp)
	assert.Equal(t, a2a.RPCInvalidParams, code)
	assert.Contains(t, msg, "pageSize")
}

func TestServerForgetsOldTasks(t *testing.T) {
	_, hs := newServer(t, echoModel(), a2a.WithMaxTasks(2))
	var ids []string
	for i := range 3 {
		_, resp := rpc(t, hs.URL, "1.0", send10(fmt.Sprint("m", i), ""))
		ids = append(ids, path(resp, "result", "task", "id").(string))
	}
	_, resp := rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+ids[0]+`"}}`)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCTaskNotFound, code)
	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+ids[2]+`"}}`)
	assert.Contains(t, resp, "result")
}

func TestServerErrors(t *testing.T) {
	_, hs := newServer(t, echoModel(), a2a.WithMaxRequestBytes(2048))
	msg := `"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}`
	for _, tc := range []struct {
		name, version, body string
		status              int
		code                int
		want                string
		id                  any
		nullID              bool // the request's id cannot be read
	}{
		{name: "not JSON", body: `{"jsonrpc":"2.0",`, code: a2a.RPCParseError, want: "not valid JSON"},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, code: a2a.RPCInvalidRequest, want: "batch", nullID: true},
		{name: "not an object", body: `"hello"`, code: a2a.RPCInvalidRequest},
		{name: "no jsonrpc", body: `{"id":1,"method":"GetTask"}`, code: a2a.RPCInvalidRequest, want: `"2.0"`, id: float64(1)},
		{name: "no id", body: `{"jsonrpc":"2.0","method":"GetTask"}`, code: a2a.RPCInvalidRequest, want: "no id"},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, code: a2a.RPCInvalidRequest, want: "string or a number"},
		{name: "no method", body: `{"jsonrpc":"2.0","id":"a"}`, code: a2a.RPCInvalidRequest, want: "no method", id: "a"},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":1,"method":"tasks/explode"}`, code: a2a.RPCMethodNotFound, want: `"tasks/explode"`, id: float64(1)},
		{name: "params array", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}`, code: a2a.RPCInvalidParams, want: "object"},
		{name: "no message", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, code: a2a.RPCInvalidParams, want: "params.message is required"},
		{name: "no parts", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, code: a2a.RPCInvalidParams, want: "params.message.parts"},
		{name: "empty part", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"mediaType":"text/plain"}]}}}`, code: a2a.RPCInvalidParams, want: "parts[0]"},
		{name: "agent role", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}}`, code: a2a.RPCInvalidParams, want: "role"},
		{name: "wrong type", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":"ten"}}`, code: a2a.RPCInvalidParams, want: "historyLength"},
		{name: "no task id", body: `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{}}`, code: a2a.RPCInvalidParams, want: "params.id is required"},
		{name: "unknown task", body: `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"zzz"}}`, code: a2a.RPCTaskNotFound},
		{name: "message to unknown task", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","taskId":"zzz","role":"ROLE_USER","parts":[{"text":"x"}]}}}`, code: a2a.RPCTaskNotFound},
		{name: "push config", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{` + msg + `,"configuration":{"taskPushNotificationConfig":{"url":"https://hook.example.com"}}}}`, code: a2a.RPCPushNotificationNotSupport},
		{name: "push method", body: `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{}}`, code: a2a.RPCPushNotificationNotSupport},
		{name: "extended card", body: `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`, code: a2a.RPCUnsupportedOperation},
		{name: "version", version: "2.0", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, code: a2a.RPCVersionNotSupported, want: `"2.0"`},
		{name: "too large", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("a", 3000) + `"}]}}}`, status: http.StatusRequestEntityTooLarge, code: a2a.RPCInvalidRequest, want: "2048 bytes", nullID: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, resp := rpc(t, hs.URL, tc.version, tc.body)
			want := tc.status
			if want == 0 {
				want = http.StatusOK
			}
			assert.Equal(t, want, status)
			code, m := rpcError(t, resp)
			assert.Equal(t, tc.code, code, m)
			assert.Contains(t, m, tc.want)
			wantID := tc.id
			if wantID == nil && !tc.nullID && strings.Contains(tc.body, `"id":1,`) {
				wantID = float64(1)
			}
			assert.Equal(t, wantID, resp["id"])
		})
	}
}

func TestServerAgentFailure(t *testing.T) {
	m := scripted.New(scripted.Fail(errors.New("the model is overloaded")), scripted.Fail(errors.New("secret internals")))
	_, hs := newServer(t, m, a2a.WithErrorText(func(err error) string {
		if strings.Contains(err.Error(), "secret") {
			return "something went wrong"
		}
		return err.Error()
	}))
	_, resp := rpc(t, hs.URL, "1.0", send10("x", ""))
	assert.Equal(t, "TASK_STATE_FAILED", path(resp, "result", "task", "status", "state"))
	assert.Contains(t, path(resp, "result", "task", "status", "message", "parts", 0, "text"), "The agent failed:")
	assert.Contains(t, path(resp, "result", "task", "status", "message", "parts", 0, "text"), "the model is overloaded")

	_, resp = rpc(t, hs.URL, "1.0", send10("y", ""))
	text := path(resp, "result", "task", "status", "message", "parts", 0, "text").(string)
	assert.Equal(t, "The agent failed: something went wrong", text)
}

func TestServerInterruptWithoutCheckpointer(t *testing.T) {
	m := scripted.New(scripted.CallTools(scripted.Call(nodes.AskUserName, `{"question":"Which city?"}`)))
	g, err := agent.NewReAct(m, agent.WithTools(nodes.AskUser()))
	require.NoError(t, err)
	srv, err := a2a.NewServer("Asker", "Asks.", g)
	require.NoError(t, err)
	assert.False(t, srv.Checkpointed())
	hs := serve(t, srv)
	_, resp := rpc(t, hs.URL, "1.0", send10("book", ""))
	assert.Equal(t, "TASK_STATE_FAILED", path(resp, "result", "task", "status", "state"))
	text := path(resp, "result", "task", "status", "message", "parts", 0, "text").(string)
	assert.Contains(t, text, "Which city?")
	assert.Contains(t, text, "without a checkpointer")
}

func TestServerCancelInputRequired(t *testing.T) {
	_, hs, ctxID, taskID := askingServer(t)
	_, resp := rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"`+taskID+`"}}`)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"))
	// The conversation goes on in a new task: the canceled question was
	// dropped, so the next message is a new user turn, not its answer.
	_, resp = rpc(t, hs.URL, "1.0", send10("Rome", ctxID))
	assert.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "task", "status", "state"), "%v", resp)
	assert.NotEqual(t, taskID, path(resp, "result", "task", "id"))
	assert.Equal(t, "Going to Rome.", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))
}

func TestServerNewTaskAnswersWaitingOne(t *testing.T) {
	_, hs, ctxID, taskID := askingServer(t)
	_, resp := rpc(t, hs.URL, "1.0", send10("Rome", ctxID)) // no taskId
	assert.Equal(t, "Going to Rome.", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))
	_, resp = rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+taskID+`"}}`)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"))
	assert.Contains(t, path(resp, "result", "status", "message", "parts", 0, "text"), "answered its question")
}

func TestServerInputRequiredStream(t *testing.T) {
	_, hs, ctxID, taskID := askingServer(t)
	// Subscribing to a task that waits for input yields the task and ends.
	c, err := a2a.NewClient(hs.URL)
	require.NoError(t, err)
	var got []a2a.Event
	for ev, err := range c.SubscribeToTask(context.Background(), taskID) {
		require.NoError(t, err)
		got = append(got, ev)
	}
	require.Len(t, got, 1)
	assert.Equal(t, a2a.StateInputRequired, got[0].Task.Status.State)

	// Answering over a stream continues the task to its end.
	var states []string
	for ev, err := range c.SendStreamingMessage(context.Background(), a2a.SendRequest{Message: a2a.Message{
		TaskID: taskID, ContextID: ctxID, Parts: []a2a.Part{a2a.TextPart("Rome")},
	}}) {
		require.NoError(t, err)
		if u := ev.StatusUpdate; u != nil && (u.Status.Message == nil || u.Status.Message.Metadata[a2a.MetaDelta] == nil) {
			s := string(u.Status.State)
			if u.Status.Message != nil {
				s += " " + u.Status.Message.Parts[0].Text
			}
			states = append(states, s)
		}
		if ev.Task != nil {
			assert.Equal(t, taskID, ev.Task.ID, "the same task goes on")
		}
	}
	// The resumed ask_user call runs again, and returns the answer.
	assert.Equal(t, []string{"TASK_STATE_WORKING", "TASK_STATE_WORKING Calling ask_user.", "TASK_STATE_COMPLETED"}, states)
}

// askingServer serves an agent that asks for a city, with a checkpointer,
// and sends it a first message: the task waits for input.
func askingServer(t *testing.T) (*a2a.Server, *httptest.Server, string, string) {
	t.Helper()
	m := scripted.New(
		scripted.CallTools(scripted.Call(nodes.AskUserName, `{"question":"Which city?"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("Going to " + req.Messages[len(req.Messages)-1].Text() + ".")}, nil
		}),
	)
	g, err := agent.NewReAct(m, agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(newSaver()))
	require.NoError(t, err)
	srv, err := a2a.NewServer("Asker", "Asks.", g)
	require.NoError(t, err)
	hs := serve(t, srv)
	_, resp := rpc(t, hs.URL, "1.0", send10("book", ""))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", path(resp, "result", "task", "status", "state"), "%v", resp)
	assert.Equal(t, "Which city?", path(resp, "result", "task", "status", "message", "parts", 0, "text"))
	return srv, hs, path(resp, "result", "task", "contextId").(string), path(resp, "result", "task", "id").(string)
}

func TestNewServerErrors(t *testing.T) {
	g, err := agent.NewReAct(echoModel())
	require.NoError(t, err)
	_, err = a2a.NewServer("", "x", g)
	assert.ErrorContains(t, err, "name is empty")
	_, err = a2a.NewServer[agent.State]("x", "x", nil)
	assert.ErrorContains(t, err, "graph is nil")
	_, err = a2a.NewServer("x", "x", g, a2a.WithMaxTasks(0), a2a.WithMaxRequestBytes(1))
	assert.ErrorContains(t, err, "WithMaxTasks")
	assert.ErrorContains(t, err, "WithMaxRequestBytes")
}

func TestServerConcurrentContexts(t *testing.T) {
	_, hs := newServer(t, echoModel())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctxID := fmt.Sprint("c", i%2)
			_, resp := rpc(t, hs.URL, "1.0", send10(fmt.Sprint("n", i), ctxID))
			assert.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "task", "status", "state"))
		}()
	}
	wg.Wait()
	// Each context's turns ran one at a time: its conversation holds all
	// four turns (user and answer each), and the next turn sees them.
	for _, ctxID := range []string{"c0", "c1"} {
		_, resp := rpc(t, hs.URL, "1.0", send10("last", ctxID))
		assert.Equal(t, "9 messages; last: last", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))
	}
}

func lookupTool() tool.Tool {
	return tool.MustFunc("lookup", "Looks things up.", func(context.Context, struct{}) (string, error) { return "found it", nil })
}

func newSaver() *memory.Saver { return memory.New() }

func TestServerPartsBothWays(t *testing.T) {
	var seen []model.Part
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		seen = req.Messages[len(req.Messages)-1].Content
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Part{
			model.TextPart("Here is the chart data:"),
			model.JSONPart(json.RawMessage(`{"bars":[3,1,2]}`)),
			model.ImageURLPart("image/png", "https://charts.example.com/1.png"),
		}}}, nil
	}))
	_, hs := newServer(t, m, a2a.WithRunOptions(graph.WithStepLimit(10)))
	_, resp := rpc(t, hs.URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[
		{"text":"Chart this:"},
		{"data":{"q1":3,"q2":1}},
		{"raw":"iVBORw0KGgo=","mediaType":"image/png","filename":"sketch.png"},
		{"url":"https://docs.example.com/brief.pdf","mediaType":"application/pdf","filename":"brief.pdf"}]}}}`)
	parts := path(resp, "result", "task", "artifacts", 0, "parts").([]any)
	require.Len(t, parts, 3, "%v", resp)
	assert.Equal(t, "Here is the chart data:", path(parts, 0, "text"))
	assert.Equal(t, map[string]any{"bars": []any{float64(3), float64(1), float64(2)}}, path(parts, 1, "data"))
	assert.Equal(t, "https://charts.example.com/1.png", path(parts, 2, "url"))
	assert.Equal(t, "image/png", path(parts, 2, "mediaType"))

	require.Len(t, seen, 3)
	assert.Equal(t, "Chart this:\n{\"q1\":3,\"q2\":1}", seen[0].Text)
	assert.Equal(t, model.PartImage, seen[1].Type)
	assert.Equal(t, "image/png", seen[1].MIMEType)
	assert.Equal(t, "[file brief.pdf (application/pdf): https://docs.example.com/brief.pdf]", seen[2].Text)
}

func TestServerAnswerFromTerminatingTool(t *testing.T) {
	final := tool.MustFunc("final_answer", "Gives the final answer.", func(context.Context, struct{}) (tool.Result, error) {
		r := tool.Text("42, from the tool")
		r.Terminate = true
		return r, nil
	})
	m := scripted.New(scripted.CallTools(scripted.Call("final_answer", `{}`)))
	g, err := agent.NewReAct(m, agent.WithTools(final))
	require.NoError(t, err)
	srv, err := a2a.NewServer("Oracle", "Answers.", g)
	require.NoError(t, err)
	hs := serve(t, srv)
	_, resp := rpc(t, hs.URL, "1.0", send10("question", ""))
	assert.Equal(t, "42, from the tool", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"), "%v", resp)
}
