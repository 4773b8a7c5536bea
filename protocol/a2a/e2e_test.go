package a2a_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/a2a"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// serve starts an A2A server for g on 127.0.0.1 and stops it with the test.
func serve(t *testing.T, srv *a2a.Server) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		require.NoError(t, srv.Close())
	})
	return hs
}

// invoke calls a tool the way an executor does and collects its progress.
func invoke(t *testing.T, ctx context.Context, tl tool.Tool, args string) (tool.Result, []tool.Update) {
	t.Helper()
	var mu sync.Mutex
	var ups []tool.Update
	r := tool.Invoke(ctx, tl, model.ToolCall{ID: "call-1", Name: tool.Name(tl), Arguments: json.RawMessage(args)},
		tool.WithProgress(func(u tool.Update) { mu.Lock(); ups = append(ups, u); mu.Unlock() }))
	mu.Lock()
	defer mu.Unlock()
	return r, ups
}

func TestToolAgainstServer(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "send"}[streaming], func(t *testing.T) {
			m := scripted.New(
				scripted.Reply("Paris is the capital of France."),
				scripted.Func(func(req *model.Request) (*model.Response, error) {
					// The second turn sees the first.
					return &model.Response{Message: model.Assistant("You asked me before; I have seen " + strconv.Itoa(len(req.Messages)) + " messages.")}, nil
				}),
			)
			g, err := agent.NewReAct(m, agent.WithSystemPrompt("You answer questions."))
			require.NoError(t, err)
			srv, err := a2a.NewServer("Geo Agent", "Answers geography questions.", g)
			require.NoError(t, err)
			hs := serve(t, srv)

			ctx := context.Background()
			tl, err := a2a.NewTool(ctx, hs.URL, a2a.WithStreaming(streaming))
			require.NoError(t, err)
			assert.Equal(t, "geo_agent", tool.Name(tl))
			assert.Contains(t, tl.Definition().Description, "Answers geography questions.")

			r, ups := invoke(t, ctx, tl, `{"task":"What is the capital of France?"}`)
			require.False(t, r.IsError, r.Text())
			assert.Contains(t, r.Text(), "Paris is the capital of France.")
			reply := r.Details.(a2a.Reply)
			assert.Equal(t, a2a.StateCompleted, reply.State)
			require.NotEmpty(t, reply.ContextID)
			assert.Contains(t, r.Text(), "[context_id: "+reply.ContextID+"]")
			if streaming {
				assert.NotEmpty(t, ups, "a streamed call reports progress")
			}

			r, _ = invoke(t, ctx, tl, `{"task":"And again?","context_id":"`+reply.ContextID+`"}`)
			require.False(t, r.IsError, r.Text())
			// system + user + answer + user
			assert.Contains(t, r.Text(), "I have seen 4 messages")
		})
	}
}

func TestAskUserAcrossTurns(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.Call(nodes.AskUserName, `{"question":"Which city?","choices":["Paris","Rome"]}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			last := req.Messages[len(req.Messages)-1]
			return &model.Response{Message: model.Assistant("Booked a trip to " + last.Text() + ".")}, nil
		}),
	)
	g, err := agent.NewReAct(m, agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	srv, err := a2a.NewServer("Travel", "Books trips.", g)
	require.NoError(t, err)
	require.True(t, srv.Checkpointed())
	hs := serve(t, srv)

	ctx := context.Background()
	tl, err := a2a.NewTool(ctx, hs.URL)
	require.NoError(t, err)
	r, _ := invoke(t, ctx, tl, `{"task":"Book me a trip."}`)
	require.False(t, r.IsError, r.Text())
	reply := r.Details.(a2a.Reply)
	assert.Equal(t, a2a.StateInputRequired, reply.State)
	assert.Contains(t, r.Text(), "Which city?")
	assert.Contains(t, r.Text(), "Paris, Rome")

	r, _ = invoke(t, ctx, tl, `{"task":"Rome","context_id":"`+reply.ContextID+`"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "Booked a trip to Rome.")
	assert.Equal(t, reply.TaskID, r.Details.(a2a.Reply).TaskID, "the answer continues the task that asked")
}

func TestToolCancelsRemoteTaskWhenCallEnds(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "poll"}[streaming], func(t *testing.T) {
			m := newBlockingModel()
			g, err := agent.NewReAct(m)
			require.NoError(t, err)
			srv, err := a2a.NewServer("Slow", "Takes forever.", g)
			require.NoError(t, err)
			hs := serve(t, srv)

			tl, err := a2a.NewTool(context.Background(), hs.URL, a2a.WithStreaming(streaming),
				a2a.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var r tool.Result
			if streaming {
				// Once the task is known (its first update came), the
				// call ends.
				var once sync.Once
				r = tool.Invoke(ctx, tl, model.ToolCall{ID: "c1", Name: tool.Name(tl), Arguments: json.RawMessage(`{"task":"think hard"}`)},
					tool.WithProgress(func(tool.Update) { once.Do(cancel) }))
			} else {
				// The blocking send is abandoned: the server cancels the
				// task nobody can ask about.
				go func() {
					<-m.started
					cancel()
				}()
				r, _ = invoke(t, ctx, tl, `{"task":"think hard"}`)
			}
			require.True(t, r.IsError)
			assert.Equal(t, tool.StatusCancelled, r.Status)

			// The remote task was canceled, not left running.
			c, err := a2a.NewClient(hs.URL)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				for _, st := range listStates(t, c) {
					if st != a2a.StateCanceled {
						return false
					}
				}
				return true
			}, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// listStates returns the states of the tasks the agent behind c lists.
func listStates(t *testing.T, c *a2a.Client) []a2a.TaskState {
	t.Helper()
	ep, err := c.Card(context.Background())
	require.NoError(t, err)
	_, resp := rpc(t, ep.SupportedInterfaces[0].URL, "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`)
	var out []a2a.TaskState
	for _, task := range path(resp, "result", "tasks").([]any) {
		out = append(out, a2a.TaskState(path(task, "status", "state").(string)))
	}
	require.NotEmpty(t, out)
	return out
}

func TestSupervisorWithRemoteWorker(t *testing.T) {
	remote, err := agent.NewReAct(scripted.New(scripted.Reply("Invoice 7 refunded.")))
	require.NoError(t, err)
	srv, err := a2a.NewServer("Billing", "Handles invoices and refunds.", remote)
	require.NoError(t, err)
	hs := serve(t, srv)
	ctx := context.Background()
	billing, err := a2a.NewTool(ctx, hs.URL)
	require.NoError(t, err)

	supModel := scripted.New(
		scripted.CallTools(scripted.Call("billing", `{"task":"Refund invoice 7."}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("Done: " + req.Messages[len(req.Messages)-1].Text())}, nil
		}),
	)
	sup, err := agent.NewSupervisor(supModel, []agent.Worker{{Tool: billing}})
	require.NoError(t, err)
	out, err := sup.Invoke(ctx, agent.Ask("Please refund invoice 7."))
	require.NoError(t, err)
	assert.Contains(t, agent.FinalText(out.Messages), "Done: Invoice 7 refunded.")
	// The supervisor's model was told about the remote worker.
	assert.Contains(t, supModel.Requests()[0].Messages[0].Text(), "billing")
}
