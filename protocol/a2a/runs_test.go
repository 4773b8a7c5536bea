package a2a_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/a2a"
	"github.com/trellis-go/trellis/runs"
	runsqlite "github.com/trellis-go/trellis/runs/sqlite"
	"github.com/trellis-go/trellis/tool"
)

// replicas serves one agent from two servers on one runs database: the
// first works the runs (its model answers), the second only accepts and
// reads them (its model must never be called). Requests name their owner
// in the X-User header.
func replicas(t *testing.T, worker model.Model, tools ...tool.Tool) (workerURL, frontURL string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "runs.db")
	owner := a2a.WithOwner(func(r *http.Request) (string, error) {
		if o := r.Header.Get("X-User"); o != "" {
			return o, nil
		}
		return "", a2a.ErrNoOwner
	})
	open := func(m model.Model, work bool) string {
		mgr, err := runsqlite.Open(t.Context(), db, runsqlite.WithRuns(runs.WithLease(2*time.Second)))
		require.NoError(t, err)
		g, err := agent.NewReAct(m, agent.WithName("Asker"), agent.WithTools(tools...), agent.WithCheckpointer(mgr.Saver()))
		require.NoError(t, err)
		require.NoError(t, mgr.Register(runs.Graph(g)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		if work {
			go func() { done <- mgr.Work(ctx) }()
		}
		srv, err := a2a.NewServer("Asker", "Asks.", g, a2a.WithRuns(mgr), owner)
		require.NoError(t, err)
		hs := httptest.NewServer(srv)
		t.Cleanup(func() {
			hs.CloseClientConnections()
			hs.Close()
			assert.NoError(t, srv.Close())
			cancel()
			if work {
				assert.NoError(t, <-done)
			}
			assert.NoError(t, mgr.Close())
		})
		return hs.URL
	}
	workerURL = open(worker, true)
	never := scripted.Func(func(*model.Request) (*model.Response, error) {
		t.Error("the replica that does not work runs called its model")
		return nil, errors.New("not this replica")
	})
	frontURL = open(scripted.New(never), false)
	return workerURL, frontURL
}

// as is rpcAs without the status code.
func as(t *testing.T, url, user, body string) map[string]any {
	t.Helper()
	_, out := rpcAs(t, url, user, body)
	return out
}

func askingModel() *scripted.Model {
	return scripted.New(
		scripted.CallTools(scripted.Call(nodes.AskUserName, `{"question":"Which city?"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("Going to " + req.Messages[len(req.Messages)-1].Text() + ".")}, nil
		}),
	)
}

func TestRunsTasksAreAnsweredByAnyReplica(t *testing.T) {
	worker, front := replicas(t, askingModel(), nodes.AskUser())
	// The front replica accepts the message; the worker runs it.
	resp := as(t, front, "ana", send10("book", ""))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", path(resp, "result", "task", "status", "state"), "%v", resp)
	assert.Equal(t, "Which city?", path(resp, "result", "task", "status", "message", "parts", 0, "text"))
	taskID := path(resp, "result", "task", "id").(string)
	ctxID := path(resp, "result", "task", "contextId").(string)

	// Either replica reads it; another owner finds nothing.
	for _, url := range []string{worker, front} {
		resp = as(t, url, "ana", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+taskID+`"}}`)
		assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", path(resp, "result", "status", "state"), "%v", resp)
		resp = as(t, url, "bob", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+taskID+`"}}`)
		code, msg := rpcError(t, resp)
		assert.Equal(t, a2a.RPCTaskNotFound, code, msg)
		resp = as(t, url, "bob", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`)
		assert.Empty(t, path(resp, "result", "tasks"), "another owner's list")
	}

	// The answer, sent to the worker replica, continues the same task.
	resp = as(t, worker, "ana", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","taskId":"`+
		taskID+`","contextId":"`+ctxID+`","parts":[{"text":"Rome"}]}}}`)
	require.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "task", "status", "state"), "%v", resp)
	assert.Equal(t, taskID, path(resp, "result", "task", "id"), "the same task goes on")
	assert.Equal(t, "Going to Rome.", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))

	resp = as(t, front, "ana", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+taskID+`"}}`)
	assert.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "status", "state"))
	history, _ := path(resp, "result", "history").([]any)
	require.Len(t, history, 4, "book, the question, Rome, the answer: %v", history)
	assert.Equal(t, "book", path(history[0], "parts", 0, "text"))
	assert.Equal(t, "Which city?", path(history[1], "parts", 0, "text"))
	assert.Equal(t, "Rome", path(history[2], "parts", 0, "text"))
	assert.Equal(t, "Going to Rome.", path(history[3], "parts", 0, "text"))

	resp = as(t, front, "ana", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"includeArtifacts":true}}`)
	tasks, _ := path(resp, "result", "tasks").([]any)
	require.Len(t, tasks, 1, "%v", resp)
	assert.Equal(t, taskID, path(tasks[0], "id"))
	assert.Equal(t, "Going to Rome.", path(tasks[0], "artifacts", 0, "parts", 0, "text"))

	// A finished task takes no more messages, on any replica.
	resp = as(t, front, "ana", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m3","role":"ROLE_USER","taskId":"`+
		taskID+`","parts":[{"text":"again"}]}}}`)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCUnsupportedOperation, code)
}

func TestRunsCancelInputRequiredDropsTheQuestion(t *testing.T) {
	_, front := replicas(t, askingModel(), nodes.AskUser())
	resp := as(t, front, "ana", send10("book", ""))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", path(resp, "result", "task", "status", "state"), "%v", resp)
	taskID := path(resp, "result", "task", "id").(string)
	ctxID := path(resp, "result", "task", "contextId").(string)

	resp = as(t, front, "ana", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"`+taskID+`"}}`)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
	// The next message of the context is a new turn in a new task, not
	// the answer to the dropped question.
	resp = as(t, front, "ana", send10("Rome", ctxID))
	assert.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "task", "status", "state"), "%v", resp)
	assert.NotEqual(t, taskID, path(resp, "result", "task", "id"))
	assert.Equal(t, "Going to Rome.", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))
}

func TestRunsCancelFromAnotherReplicaStopsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a cancel reaches a SQLite worker at its next lease renewal, about a second")
	}
	slow := newBlockingModel()
	worker, front := replicas(t, slow)
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}}`
	resp := as(t, front, "ana", body)
	taskID, _ := path(resp, "result", "task", "id").(string)
	require.NotEmpty(t, taskID, "%v", resp)
	select {
	case <-slow.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not start the task within 30s")
	}
	resp = as(t, front, "ana", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+taskID+`"}}`)
	assert.Equal(t, "TASK_STATE_WORKING", path(resp, "result", "status", "state"))
	// A client follows the task through the other replica.
	followed := make(chan a2a.TaskState, 1)
	sub, err := a2a.NewClient(worker, a2a.WithHTTPClient(userClient("ana")))
	require.NoError(t, err)
	subscribed := make(chan struct{})
	go func() {
		last := a2a.StateUnspecified
		for ev, err := range sub.SubscribeToTask(context.Background(), taskID) {
			if err != nil {
				break
			}
			if ev.Task != nil {
				close(subscribed)
			}
			if ev.StatusUpdate != nil {
				last = ev.StatusUpdate.Status.State
			}
		}
		followed <- last
	}()
	select {
	case <-subscribed:
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription did not start within 30s")
	}
	resp = as(t, front, "bob", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"`+taskID+`"}}`)
	code, _ := rpcError(t, resp)
	assert.Equal(t, a2a.RPCTaskNotFound, code, "another owner cannot cancel it")
	resp = as(t, front, "ana", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"`+taskID+`"}}`)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
	select {
	case state := <-followed:
		assert.Equal(t, a2a.StateCanceled, state, "the follower on the other replica sees the end")
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription did not end within 30s of the cancel")
	}
}

func TestRunsStreamFromAnyReplica(t *testing.T) {
	worker, front := replicas(t, echoModel())
	c, err := a2a.NewClient(front, a2a.WithHTTPClient(userClient("ana")))
	require.NoError(t, err)
	var (
		states []a2a.TaskState
		answer string
		taskID string
	)
	for ev, err := range c.SendStreamingMessage(t.Context(), a2a.SendRequest{Message: a2a.Message{Parts: []a2a.Part{a2a.TextPart("hello")}}}) {
		require.NoError(t, err)
		switch {
		case ev.Task != nil:
			taskID = ev.Task.ID
			states = append(states, ev.Task.Status.State)
		case ev.StatusUpdate != nil && ev.StatusUpdate.Status.Message == nil:
			states = append(states, ev.StatusUpdate.Status.State)
		case ev.StatusUpdate != nil && ev.StatusUpdate.Status.State != a2a.StateWorking:
			states = append(states, ev.StatusUpdate.Status.State)
		case ev.ArtifactUpdate != nil:
			answer = ev.ArtifactUpdate.Artifact.Parts[0].Text
		}
	}
	// The task's first event is its state when the stream begins: submitted,
	// or already working when the worker replica was quicker than the front.
	want := []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateCompleted}
	if len(states) > 0 && states[0] == a2a.StateWorking {
		want = want[1:]
	}
	assert.Equal(t, want, states)
	assert.Equal(t, "1 messages; last: hello", answer)
	w, err := a2a.NewClient(worker, a2a.WithHTTPClient(userClient("ana")))
	require.NoError(t, err)
	task, err := w.GetTask(t.Context(), taskID, nil)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, task.Status.State)
}

// userClient is an HTTP client whose requests name owner.
func userClient(owner string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: userTransport(owner)}
}

type userTransport string

func (o userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-User", string(o))
	return http.DefaultTransport.RoundTrip(r)
}
