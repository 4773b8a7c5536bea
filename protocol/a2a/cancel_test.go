package a2a_test

import (
	"context"
	"fmt"
	"iter"
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

// lateModel blocks every call until its context ends, then answers all the
// same, as a model whose answer was already on its way does.
type lateModel struct{ started chan struct{} }

func (m *lateModel) Generate(ctx context.Context, _ *model.Request) (*model.Response, error) {
	m.started <- struct{}{}
	<-ctx.Done()
	return &model.Response{Message: model.Assistant("late answer")}, nil
}

func (m *lateModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		yield(model.Chunk{Text: resp.Message.Text()}, nil)
	}
}

// sendNow starts a task on hs and returns its ID without waiting for it.
func sendNow(t *testing.T, url, text string) string {
	t.Helper()
	_, resp := rpc(t, url, "1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":%q}]},"configuration":{"returnImmediately":true}}}`, text, text))
	id, _ := path(resp, "result", "task", "id").(string)
	require.NotEmpty(t, id, "%v", resp)
	return id
}

func cancelTask(t *testing.T, url, id string) map[string]any {
	t.Helper()
	_, resp := rpc(t, url, "1.0", `{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	return resp
}

func getTask(t *testing.T, url, id string) map[string]any {
	t.Helper()
	_, resp := rpc(t, url, "1.0", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+id+`"}}`)
	return resp
}

// A cancel that takes effect (the run's context ends) cancels the task,
// even when the run returns an answer a moment later: CancelTask answered
// with the completed task.
func TestServerCancelWinsOverLateAnswer(t *testing.T) {
	m := &lateModel{started: make(chan struct{}, 1)}
	_, hs := newServer(t, m)
	id := sendNow(t, hs.URL, "slow")
	<-m.started

	resp := cancelTask(t, hs.URL, id)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
	assert.Contains(t, path(resp, "result", "status", "message", "parts", 0, "text"), "the client canceled it")
	assert.Nil(t, path(resp, "result", "artifacts"), "a canceled task has no answer")

	resp = getTask(t, hs.URL, id)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
	assert.Nil(t, path(resp, "result", "artifacts"))
}

// A CancelTask that races a task's completion either takes effect (the
// answer is the canceled task, and it stays canceled) or comes too late
// (the answer is "task not cancelable", and the task stays completed):
// never the completed task as the answer to a cancel.
func TestServerCancelRacingCompletion(t *testing.T) {
	// The model takes a moment, deaf to its context, so that cancels land
	// both before and after the runs' answers.
	var n atomic.Int32
	m := scripted.New()
	fallback := scripted.Func(func(*model.Request) (*model.Response, error) {
		time.Sleep(time.Duration(n.Add(1)%4) * 500 * time.Microsecond)
		return &model.Response{Message: model.Assistant("done")}, nil
	})
	m.Fallback = &fallback
	_, hs := newServer(t, m)
	var canceled, tooLate int
	for i := range 40 {
		id := sendNow(t, hs.URL, fmt.Sprintf("hi %d", i))
		resp := cancelTask(t, hs.URL, id)
		var final string
		require.Eventually(t, func() bool {
			final, _ = path(getTask(t, hs.URL, id), "result", "status", "state").(string)
			return final == "TASK_STATE_COMPLETED" || final == "TASK_STATE_CANCELED"
		}, 5*time.Second, time.Millisecond)
		if _, failed := resp["error"]; failed {
			code, msg := rpcError(t, resp)
			assert.Equal(t, a2a.RPCTaskNotCancelable, code, msg)
			assert.Contains(t, msg, "already completed")
			assert.Equal(t, "TASK_STATE_COMPLETED", final, "task %d", i)
			tooLate++
			continue
		}
		assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "task %d: %v", i, resp)
		assert.Equal(t, "TASK_STATE_CANCELED", final, "task %d", i)
		canceled++
	}
	t.Logf("%d canceled, %d too late", canceled, tooLate)
}

// Canceling a task that waits for input drops its question from the
// context's thread: the next message of the context starts a new turn, and
// the model is told that the question's call was canceled, rather than
// getting the message as the answer.
func TestServerCancelWaitingTaskDropsQuestion(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("ask1", nodes.AskUserName, `{"question":"Which city?"}`)),
		scripted.Reply("Done."),
	)
	g, err := agent.NewReAct(m, agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(newSaver()))
	require.NoError(t, err)
	srv, err := a2a.NewServer("Asker", "Asks.", g)
	require.NoError(t, err)
	hs := serve(t, srv)

	_, resp := rpc(t, hs.URL, "1.0", send10("book", ""))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", path(resp, "result", "task", "status", "state"), "%v", resp)
	ctxID := path(resp, "result", "task", "contextId").(string)
	taskID := path(resp, "result", "task", "id").(string)

	resp = cancelTask(t, hs.URL, taskID)
	assert.Equal(t, "TASK_STATE_CANCELED", path(resp, "result", "status", "state"), "%v", resp)
	// The thread no longer waits, as soon as CancelTask has answered.
	snap, err := g.GetState(context.Background(), a2a.ThreadPrefix+ctxID)
	require.NoError(t, err)
	assert.Empty(t, snap.Interrupts, "the canceled question is still pending")
	assert.Empty(t, snap.Next)

	_, resp = rpc(t, hs.URL, "1.0", send10("What's the weather?", ctxID))
	assert.Equal(t, "TASK_STATE_COMPLETED", path(resp, "result", "task", "status", "state"), "%v", resp)
	assert.NotEqual(t, taskID, path(resp, "result", "task", "id"))
	assert.Equal(t, "Done.", path(resp, "result", "task", "artifacts", 0, "parts", 0, "text"))

	reqs := m.Requests()
	require.Len(t, reqs, 2)
	msgs := reqs[1].Messages
	require.GreaterOrEqual(t, len(msgs), 4, "%v", msgs)
	last, answer := msgs[len(msgs)-1], msgs[len(msgs)-2]
	assert.Equal(t, model.RoleUser, last.Role, "the new message is a user turn")
	assert.Equal(t, "What's the weather?", last.Text())
	assert.Equal(t, model.RoleTool, answer.Role)
	assert.Equal(t, "ask1", answer.ToolCallID)
	assert.True(t, answer.IsError, "the question's call is answered as canceled")
	assert.Contains(t, answer.Text(), "canceled")
	for _, msg := range msgs {
		if msg.Role == model.RoleTool {
			assert.NotContains(t, msg.Text(), "weather", "the new message was taken as the answer")
		}
	}
}
