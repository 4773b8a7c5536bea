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
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/a2a"
)

// ownedServer serves an agent on m whose requests belong to the user the
// X-User header names, as authentication middleware would set it.
func ownedServer(t *testing.T, m model.Model, opts ...agent.Option) (*a2a.Server, *httptest.Server) {
	t.Helper()
	return ownedServerWith(t, m, nil, opts...)
}

// ownedServerWith is ownedServer with server options.
func ownedServerWith(t *testing.T, m model.Model, sopts []a2a.ServerOption, opts ...agent.Option) (*a2a.Server, *httptest.Server) {
	t.Helper()
	g, err := agent.NewReAct(m, opts...)
	require.NoError(t, err)
	srv, err := a2a.NewServer("Echo", "Echoes.", g, append([]a2a.ServerOption{a2a.WithOwner(a2a.RequestOwner)}, sopts...)...)
	require.NoError(t, err)
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user := r.Header.Get("X-User"); user != "" {
			r = r.WithContext(a2a.ContextWithOwner(r.Context(), user))
		}
		srv.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(auth)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		require.NoError(t, srv.Close())
	})
	return srv, hs
}

// rpcAs posts a JSON-RPC request as user and decodes the response.
func rpcAs(t *testing.T, url, user, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if user != "" {
		req.Header.Set("X-User", user)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out
}

func listTasks(t *testing.T, url, user string) []string {
	t.Helper()
	_, resp := rpcAs(t, url, user, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`)
	var ids []string
	for _, task := range path(resp, "result", "tasks").([]any) {
		ids = append(ids, path(task, "id").(string))
	}
	assert.Equal(t, float64(len(ids)), path(resp, "result", "totalSize"), "the total counts the owner's tasks only")
	return ids
}

func TestServerScopesTasksToTheirOwner(t *testing.T) {
	_, hs := ownedServer(t, echoModel())
	_, resp := rpcAs(t, hs.URL, "alice", send10("alice's secret", "shared"))
	aliceTask := path(resp, "result", "task", "id").(string)
	_, resp = rpcAs(t, hs.URL, "bob", send10("bob's question", "shared"))
	bobTask := path(resp, "result", "task", "id").(string)
	assert.Equal(t, "1 messages; last: bob's question", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"),
		"the same contextId of another owner is another conversation")

	assert.Equal(t, []string{aliceTask}, listTasks(t, hs.URL, "alice"))
	assert.Equal(t, []string{bobTask}, listTasks(t, hs.URL, "bob"))
	_, resp = rpcAs(t, hs.URL, "bob", `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"contextId":"shared"}}`)
	assert.Len(t, path(resp, "result", "tasks"), 1)

	// Another owner's task is not found, in the words used for a task
	// that does not exist.
	notFound := func(method, id string) string {
		t.Helper()
		_, resp := rpcAs(t, hs.URL, "bob", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"id":%q}}`, method, id))
		code, msg := rpcError(t, resp)
		assert.Equal(t, a2a.RPCTaskNotFound, code, "%s", method)
		assert.NotContains(t, fmt.Sprint(resp), "secret")
		return strings.ReplaceAll(msg, id, "ID")
	}
	for _, method := range []string{"GetTask", "tasks/get", "CancelTask", "tasks/cancel", "SubscribeToTask", "tasks/resubscribe"} {
		assert.Equal(t, notFound(method, "no-such-task"), notFound(method, aliceTask), "%s", method)
	}
	// A message cannot continue another owner's task either.
	_, resp = rpcAs(t, hs.URL, "bob", `{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"m","taskId":"`+aliceTask+`","role":"ROLE_USER","parts":[{"text":"more"}]}}}`)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCTaskNotFound, code)

	// The owner still reads its task whole.
	_, resp = rpcAs(t, hs.URL, "alice", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"`+aliceTask+`"}}`)
	assert.Equal(t, "alice's secret", path(resp, "result", "history", 0, "parts", 0, "text"))
}

func TestServerCancelOfAnotherOwnersTaskLeavesItRunning(t *testing.T) {
	m := newBlockingModel()
	_, hs := ownedServer(t, m)
	_, resp := rpcAs(t, hs.URL, "alice", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"slow"}]},"configuration":{"returnImmediately":true}}}`)
	id := path(resp, "result", "task", "id").(string)
	<-m.started

	_, resp = rpcAs(t, hs.URL, "bob", `{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCTaskNotFound, code)
	_, resp = rpcAs(t, hs.URL, "alice", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+id+`"}}`)
	assert.Equal(t, "TASK_STATE_WORKING", path(resp, "result", "status", "state"), "bob's cancel did nothing")

	_, resp = rpcAs(t, hs.URL, "alice", `{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
}

func TestServerKeepsOwnersConversationsInThreadsOfTheirOwn(t *testing.T) {
	saver := newSaver()
	g, err := agent.NewReAct(echoModel(), agent.WithCheckpointer(saver))
	require.NoError(t, err)
	srv, hs := ownedServer(t, echoModel(), agent.WithCheckpointer(saver))
	assert.NotEqual(t, srv.ThreadID("alice", "c"), srv.ThreadID("bob", "c"))
	assert.NotEqual(t, srv.ThreadID("a", "b:c"), srv.ThreadID("a:b", "c"))
	assert.True(t, strings.HasPrefix(srv.ThreadID("alice", "c"), a2a.ThreadPrefix))

	rpcAs(t, hs.URL, "alice", send10("from alice", "c"))
	_, resp := rpcAs(t, hs.URL, "bob", send10("from bob", "c"))
	assert.Equal(t, "1 messages; last: from bob", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))
	snap, err := g.GetState(context.Background(), srv.ThreadID("alice", "c"))
	require.NoError(t, err)
	require.NotEmpty(t, snap.State.Messages)
	assert.Equal(t, "from alice", snap.State.Messages[0].Text())

	// Without WithOwner, one owner: the thread is the prefix and the context.
	single, err := a2a.NewServer("Echo", "Echoes.", g)
	require.NoError(t, err)
	defer single.Close()
	assert.Equal(t, a2a.ThreadPrefix+"c", single.ThreadID("anyone", "c"))
}

func TestServerRefusesWhenTheOwnerIsUnknown(t *testing.T) {
	g, err := agent.NewReAct(echoModel())
	require.NoError(t, err)
	srv, err := a2a.NewServer("Echo", "Echoes.", g, a2a.WithOwner(func(*http.Request) (string, error) {
		return "", errors.New("directory at 10.0.0.7 refused: /etc/trellis/ldap.conf")
	}))
	require.NoError(t, err)
	hs := serve(t, srv)
	status, resp := rpcAs(t, hs.URL, "", send10("hello", ""))
	assert.Equal(t, http.StatusUnauthorized, status)
	code, msg := rpcError(t, resp)
	assert.Equal(t, a2a.RPCInvalidRequest, code)
	assert.Contains(t, msg, "not authenticated")
	assert.NotContains(t, fmt.Sprint(resp), "10.0.0.7")
	assert.NotContains(t, fmt.Sprint(resp), "ldap")

	// The card stays public.
	card, err := http.Get(hs.URL + a2a.CardPath)
	require.NoError(t, err)
	card.Body.Close()
	assert.Equal(t, http.StatusOK, card.StatusCode)

	// RequestOwner refuses a request that middleware did not mark.
	_, hs2 := ownedServer(t, echoModel())
	status, resp = rpcAs(t, hs2.URL, "", send10("hello", ""))
	assert.Equal(t, http.StatusUnauthorized, status)
	code, _ = rpcError(t, resp)
	assert.Equal(t, a2a.RPCInvalidRequest, code)
	_, err = a2a.RequestOwner(httptest.NewRequest(http.MethodPost, "/", nil))
	assert.ErrorIs(t, err, a2a.ErrNoOwner)
}

func TestNewServerRefusesANilOwnerFunction(t *testing.T) {
	g, err := agent.NewReAct(echoModel())
	require.NoError(t, err)
	_, err = a2a.NewServer("Echo", "Echoes.", g, a2a.WithOwner(nil))
	assert.ErrorContains(t, err, "WithOwner")
}

// WithMaxTasks bounds each owner's tasks: one owner whose tasks all run
// is refused, and the others are not; WithMaxTotalTasks still bounds all
// owners' together.
func TestOneOwnerCannotTakeEveryOwnersTasks(t *testing.T) {
	m := newBlockingModel()
	_, hs := ownedServerWith(t, m, []a2a.ServerOption{a2a.WithMaxTasks(2), a2a.WithMaxTotalTasks(3)})
	send := func(user, ctxID string) (int, map[string]any) {
		return rpcAs(t, hs.URL, user, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}],"contextId":%q},"configuration":{"returnImmediately":true}}}`, ctxID))
	}
	for i := range 2 {
		status, resp := send("alice", fmt.Sprint("a", i))
		require.Equal(t, http.StatusOK, status, "%v", resp)
	}
	status, resp := send("alice", "a2")
	assert.Equal(t, http.StatusServiceUnavailable, status, "%v", resp)
	_, msg := rpcError(t, resp)
	assert.Contains(t, msg, "2 tasks are running or waiting to run for this owner")

	status, resp = send("bob", "b0")
	assert.Equal(t, http.StatusOK, status, "alice's tasks took bob's room: %v", resp)
	assert.NotNil(t, path(resp, "result", "task", "id"), "%v", resp)

	// Three tasks run, the total: a third owner waits for one to end.
	status, resp = send("carol", "c0")
	assert.Equal(t, http.StatusServiceUnavailable, status, "%v", resp)
	_, msg = rpcError(t, resp)
	assert.Contains(t, msg, "3 tasks are running")
}

// An owner's finished tasks make room for that owner's new ones only: they
// never push another owner's tasks out of memory.
func TestOneOwnersTasksDoNotPushOutAnotherOwners(t *testing.T) {
	_, hs := ownedServerWith(t, echoModel(), []a2a.ServerOption{a2a.WithMaxTasks(2)})
	_, resp := rpcAs(t, hs.URL, "bob", send10("bob's question", "b"))
	bobTask, _ := path(resp, "result", "task", "id").(string)
	require.NotEmpty(t, bobTask, "%v", resp)
	var aliceTasks []string
	for i := range 3 {
		_, resp = rpcAs(t, hs.URL, "alice", send10(fmt.Sprint("alice ", i), fmt.Sprint("a", i)))
		id, _ := path(resp, "result", "task", "id").(string)
		require.NotEmpty(t, id, "%v", resp)
		aliceTasks = append(aliceTasks, id)
	}
	_, resp = rpcAs(t, hs.URL, "bob", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+bobTask+`"}}`)
	assert.Equal(t, "bob's question", path(resp, "result", "history", 0, "parts", 0, "text"), "alice's tasks pushed bob's out: %v", resp)
	// Alice's third task made room by forgetting her first.
	_, resp = rpcAs(t, hs.URL, "alice", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+aliceTasks[0]+`"}}`)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCTaskNotFound, code)
	assert.ElementsMatch(t, aliceTasks[1:], listTasks(t, hs.URL, "alice"))
}

// An owner's conversations make room for that owner's new ones only: one
// owner's many contexts never push another owner's idle conversation, and
// its history (the agent has no checkpointer), out of memory.
func TestOneOwnersContextsDoNotPushOutAnotherOwners(t *testing.T) {
	_, hs := ownedServerWith(t, echoModel(), []a2a.ServerOption{a2a.WithMaxContexts(2)})
	answer := func(user, text, ctxID string) any {
		_, resp := rpcAs(t, hs.URL, user, send10(text, ctxID))
		return path(resp, "result", "task", "artifacts", 0, "parts", 0, "text")
	}
	require.Equal(t, "1 messages; last: bob 0", answer("bob", "bob 0", "b"))
	for i := range 3 {
		require.Equal(t, fmt.Sprint("1 messages; last: alice ", i), answer("alice", fmt.Sprint("alice ", i), fmt.Sprint("a", i)))
	}
	assert.Equal(t, "3 messages; last: bob 1", answer("bob", "bob 1", "b"), "alice's contexts pushed bob's out")
	// Alice's third context made room by forgetting her first.
	assert.Equal(t, "1 messages; last: alice again", answer("alice", "alice again", "a0"))
	assert.Equal(t, "3 messages; last: alice 2 again", answer("alice", "alice 2 again", "a2"))
}

// WithMaxTotalContexts bounds all owners' conversations together: past it,
// the least recently used idle one, whoever's, is forgotten.
func TestServerForgetsOldContextsPastMaxTotalContexts(t *testing.T) {
	_, hs := ownedServerWith(t, echoModel(), []a2a.ServerOption{a2a.WithMaxContexts(2), a2a.WithMaxTotalContexts(3)})
	answer := func(user, text, ctxID string) any {
		_, resp := rpcAs(t, hs.URL, user, send10(text, ctxID))
		return path(resp, "result", "task", "artifacts", 0, "parts", 0, "text")
	}
	answer("alice", "one", "a0")
	answer("alice", "two", "a1")
	answer("bob", "three", "b0")
	answer("carol", "four", "c0") // the fourth: alice's a0, the oldest, goes
	assert.Equal(t, "3 messages; last: five", answer("carol", "five", "c0"))
	assert.Equal(t, "3 messages; last: six", answer("alice", "six", "a1"), "only the oldest was forgotten")
	assert.Equal(t, "1 messages; last: seven", answer("alice", "seven", "a0"), "a0 was forgotten at the total")
}

func TestNewServerRefusesANonPositiveMaxTotalContexts(t *testing.T) {
	g, err := agent.NewReAct(echoModel())
	require.NoError(t, err)
	_, err = a2a.NewServer("Echo", "Echoes.", g, a2a.WithMaxTotalContexts(0))
	assert.ErrorContains(t, err, "WithMaxTotalContexts")
}
