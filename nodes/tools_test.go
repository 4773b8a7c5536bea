package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

type sleepIn struct {
	Ms   int    `json:"ms"`
	Name string `json:"name"`
}

// sleeper answers after Ms milliseconds with its Name; it is concurrency-safe.
func sleeper(counter *atomic.Int32) tool.Tool {
	return tool.MustFunc("sleep", "sleep then answer", func(ctx context.Context, in sleepIn) (string, error) {
		counter.Add(1)
		select {
		case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "slept " + in.Name, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true, ReadOnly: true}))
}

// loop builds llm → tools → llm with the given model, tools and options.
func loop(t *testing.T, m model.Model, tools []tool.Tool, topts []nodes.ToolsOption, copts ...graph.CompileOption) *graph.Graph[agentState] {
	b := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m, nodes.WithTools(tools...))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](b, "tools", "llm", append([]nodes.ToolsOption{nodes.WithTools(tools...)}, topts...)...)
	g, err := b.Compile(copts...)
	require.NoError(t, err)
	return g
}

func user(text string) agentState {
	return agentState{Chat: nodes.Chat{Messages: []model.Message{model.User(text)}}}
}

func TestToolsNodeRunsParallelCallsAndAnswersInCallOrder(t *testing.T) {
	var calls atomic.Int32
	var seen []string
	var mu sync.Mutex
	fastDone := make(chan struct{})
	audit := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		res := next.Handle(ctx, req)
		mu.Lock()
		seen = append(seen, req.Call.ID)
		mu.Unlock()
		if req.Call.ID == "b" {
			close(fastDone)
		}
		return res
	})
	// The other calls answer only once the fast one has finished (or fail
	// after a deadline): with calls run in parallel, the fast one finishes
	// first however loaded the machine, and in call order it could not.
	slow := tool.MustFunc("sleep", "sleep then answer", func(ctx context.Context, in sleepIn) (string, error) {
		calls.Add(1)
		wait := make(chan struct{})
		if in.Name != "fast" {
			wait = fastDone
		} else {
			time.AfterFunc(time.Duration(in.Ms)*time.Millisecond, func() { close(wait) })
		}
		select {
		case <-wait:
		case <-time.After(10 * time.Second):
			return "", errors.New("the fast call did not finish while the slow one ran: calls are not parallel")
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "slept " + in.Name, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true, ReadOnly: true}))
	m := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("a", "sleep", `{"ms":30,"name":"slow"}`),
			scripted.CallWithID("b", "sleep", `{"ms":1,"name":"fast"}`),
			scripted.CallWithID("c", "sleep", `{"ms":"10","name":"coerced"}`),
		),
		scripted.Reply("all done"),
	)
	exec := executor.Parallel(executor.WithMiddleware(audit), executor.WithObserver(nodes.ToolEvents))
	g := loop(t, m, []tool.Tool{slow}, []nodes.ToolsOption{nodes.WithExecutor(exec)})

	var starts, ends []string
	var final agentState
	for ev, err := range g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents)) {
		require.NoError(t, err)
		switch ev.Kind {
		case nodes.KindToolStart:
			starts = append(starts, ev.Payload.(executor.Event).Call.ID)
			assert.Equal(t, "tools", ev.Node)
		case nodes.KindToolEnd:
			ends = append(ends, ev.Payload.(executor.Event).Call.ID)
		case graph.KindDone:
			final = ev.State.(agentState)
		}
	}
	assert.Equal(t, []string{"a", "b", "c"}, starts)
	assert.Equal(t, []string{"a", "b", "c"}, ends, "ToolEnd events come in call order")
	mu.Lock()
	assert.Equal(t, "b", seen[0], "the fast call finished first")
	mu.Unlock()

	msgs := final.Messages
	require.Len(t, msgs, 6)
	for i, want := range []string{"a", "b", "c"} {
		tm := msgs[2+i]
		assert.Equal(t, model.RoleTool, tm.Role)
		assert.Equal(t, want, tm.ToolCallID, "tool messages in call order")
		assert.Equal(t, nodes.ToolMessageID(want), tm.ID)
	}
	assert.Equal(t, "slept slow", msgs[2].Text())
	assert.Equal(t, "slept coerced", msgs[4].Text())
	assert.Equal(t, "all done", msgs[5].Text())
	assert.Equal(t, int32(3), calls.Load())

	// The model's second request carried the three answers.
	req := m.Requests()[1]
	assert.Equal(t, model.RoleTool, req.Messages[len(req.Messages)-1].Role)
}

func TestToolErrorsInformTheModelByDefault(t *testing.T) {
	boom := tool.MustFunc("boom", "fails", func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk on fire")
	})
	m := scripted.New(scripted.CallTools(scripted.Call("boom", `{}`), scripted.Call("bmoo", `{}`)), scripted.Reply("sorry"))
	g := loop(t, m, []tool.Tool{boom}, nil)
	out, err := g.Invoke(context.Background(), user("try"))
	require.NoError(t, err)
	require.Len(t, out.Messages, 5)
	assert.True(t, out.Messages[2].IsError)
	assert.Contains(t, out.Messages[2].Text(), "disk on fire")
	assert.True(t, out.Messages[3].IsError)
	assert.Contains(t, out.Messages[3].Text(), `"boom"`, "the unknown tool's answer suggests the nearest name")
	assert.Equal(t, "sorry", out.Messages[4].Text())

	m2 := scripted.New(scripted.CallTools(scripted.Call("boom", `{}`)), scripted.Reply("unreached"))
	g2 := loop(t, m2, []tool.Tool{boom}, []nodes.ToolsOption{nodes.WithErrorPolicy(nodes.ReturnError, "boom")})
	_, err = g2.Invoke(context.Background(), user("try"))
	var te *nodes.ToolError
	require.ErrorAs(t, err, &te)
	require.ErrorIs(t, err, nodes.ErrToolFailed)
	assert.Equal(t, "boom", te.Call.Name)
	assert.Contains(t, err.Error(), "disk on fire")
	assert.Equal(t, 1, m2.Calls(), "the model is not called again")
}

type counterState struct {
	nodes.Chat
	Total int
}

func TestToolActionsUpdateTransferEscalateTerminate(t *testing.T) {
	add := tool.MustFunc("add", "adds to the total", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (tool.Result, error) {
		r := tool.Text(fmt.Sprint("added ", in.N))
		r.Actions.Update = func(s *counterState) { s.Total += in.N }
		return r, nil
	})
	double := tool.MustFunc("double", "doubles the total", func(context.Context, struct{}) (tool.Result, error) {
		r := tool.Text("doubled")
		r.Actions.Update = func(s counterState) counterState { s.Total *= 2; return s }
		return r, nil
	})
	transfer := func(name, to string) tool.Tool {
		return tool.MustFunc(name, "transfers", func(context.Context, struct{}) (tool.Result, error) {
			r := tool.Text("transferring to " + to)
			r.Actions.TransferTo = to
			return r, nil
		})
	}
	escalate := tool.MustFunc("escalate", "stops", func(context.Context, struct{}) (tool.Result, error) {
		r := tool.Text("escalating")
		r.Actions.Escalate = true
		return r, nil
	})
	finish := tool.MustFunc("finish", "terminates", func(context.Context, struct{}) (tool.Result, error) {
		r := tool.Text("finished")
		r.Terminate = true
		return r, nil
	})
	bad := tool.MustFunc("bad", "bad update", func(context.Context, struct{}) (tool.Result, error) {
		r := tool.Text("bad")
		r.Actions.Update = 42
		return r, nil
	})
	all := []tool.Tool{add, double, transfer("to_a", "agent_a"), transfer("to_b", "agent_b"), escalate, finish, bad}
	build := func(m model.Model) *graph.Graph[counterState] {
		b := graph.New[counterState]().
			AddNode("llm", nodes.LLM[counterState](m, nodes.WithTools(all...))).
			AddNode("agent_a", func(_ context.Context, s counterState) (counterState, error) { s.Total += 1000; return s, nil }).
			AddNode("agent_b", func(_ context.Context, s counterState) (counterState, error) { s.Total += 2000; return s, nil }).
			AddEdge(graph.START, "llm").
			AddConditionalEdges("llm", nodes.ToolsCondition[counterState]("tools"), "tools", graph.END)
		nodes.AddTools[counterState](b, "tools", "llm", nodes.WithTools(all...), nodes.WithTransfers("agent_a", "agent_b"))
		g, err := b.Compile()
		require.NoError(t, err)
		return g
	}
	in := counterState{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}}
	cases := []struct {
		name    string
		calls   []model.ToolCall
		total   int
		modelN  int
		wantErr string
	}{
		{"updates apply in call order", []model.ToolCall{scripted.Call("add", `{"n":3}`), scripted.Call("double", `{}`), scripted.Call("add", `{"n":1}`)}, 7, 2, ""},
		{"first transfer wins", []model.ToolCall{scripted.Call("add", `{"n":1}`), scripted.Call("to_b", `{}`), scripted.Call("to_a", `{}`)}, 2001, 1, ""},
		{"escalate beats transfer", []model.ToolCall{scripted.Call("to_a", `{}`), scripted.Call("escalate", `{}`)}, 0, 1, ""},
		{"all terminate ends the loop", []model.ToolCall{scripted.Call("finish", `{}`), scripted.Call("finish", `{}`)}, 0, 1, ""},
		{"one terminate alone does not", []model.ToolCall{scripted.Call("finish", `{}`), scripted.Call("add", `{"n":5}`)}, 5, 2, ""},
		{"an update of the wrong type is an error", []model.ToolCall{scripted.Call("bad", `{}`)}, 0, 1, "returned a state update of type int"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.CallTools(c.calls...), scripted.Reply("done"))
			out, err := build(m).Invoke(context.Background(), in)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.total, out.Total)
			assert.Equal(t, c.modelN, m.Calls())
		})
	}
}

func TestResultMetadataGoesIntoTheToolMessage(t *testing.T) {
	shared := map[string]string{"source": "cache", "trellis.escalate": "true", "trellis.transfer_to": "x", nodes.MetaTerminate: "true"}
	tagged := tool.MustFunc("tagged", "answers with metadata", func(_ context.Context, in struct {
		Stop bool `json:"stop"`
	}) (tool.Result, error) {
		r := tool.Text("ok")
		r.Metadata, r.Terminate = shared, in.Stop
		return r, nil
	})
	m := scripted.New(scripted.CallTools(scripted.Call("tagged", `{"stop":false}`)), scripted.CallTools(scripted.Call("tagged", `{"stop":true}`)))
	out, err := loop(t, m, []tool.Tool{tagged}, nil).Invoke(context.Background(), user("go"))
	require.NoError(t, err)
	var answers []model.Message
	for _, msg := range out.Messages {
		if msg.Role == model.RoleTool {
			answers = append(answers, msg)
		}
	}
	require.Len(t, answers, 2)
	assert.Equal(t, map[string]string{"source": "cache"}, answers[0].Metadata,
		"the keys that record the run's route come from the result's Terminate and Actions, not from its metadata")
	assert.Equal(t, map[string]string{"source": "cache", nodes.MetaTerminate: "true"}, answers[1].Metadata,
		"the tool's metadata and the framework's side by side")
	assert.Len(t, shared, 4, "the tool's map is copied, not written to")
}

func TestCallerExecutedToolsInterruptAndResume(t *testing.T) {
	var calls atomic.Int32
	external, err := tool.NewDeclaration(model.ToolDefinition{Name: "ask_user", Description: "asks the user", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)})
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("s1", "sleep", `{"ms":1,"name":"one"}`),
			scripted.CallWithID("x1", "ask_user", `{"q":"color?"}`),
		),
		scripted.Reply("thanks"),
	)
	g := loop(t, m, []tool.Tool{sleeper(&calls), external}, nil, graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err = g.Invoke(ctx, user("hi"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	pending, ok := ie.Interrupts[0].Payload.(nodes.PendingToolCalls)
	require.True(t, ok)
	require.Len(t, pending.Calls, 1)
	assert.Equal(t, "x1", pending.Calls[0].ID)

	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "slept one", snap.State.Messages[2].Text(), "the executed call's answer is kept before the pause")

	_, err = g.Resume(ctx, "t", graph.WithResumeValue(map[string]tool.Result{"nope": tool.Text("x")}))
	require.ErrorContains(t, err, `no result was supplied for call x1 of tool "ask_user"`)

	out, err := g.Resume(ctx, "t", graph.WithResumeValue(map[string]tool.Result{"x1": tool.Text("blue")}))
	require.NoError(t, err)
	msgs := out.Messages
	require.Len(t, msgs, 5)
	assert.Equal(t, "s1", msgs[2].ToolCallID)
	assert.Equal(t, "x1", msgs[3].ToolCallID)
	assert.Equal(t, "blue", msgs[3].Text())
	assert.Equal(t, "thanks", msgs[4].Text())
	assert.Equal(t, int32(1), calls.Load(), "the executed call never ran again")
}

func TestLongRunningToolCompletesThroughPending(t *testing.T) {
	var p tool.Pending
	job := tool.MustFunc("render", "renders a video", func(ctx context.Context, in struct{}) (tool.Result, error) {
		id := tool.CallID(ctx)
		go func() {
			// The call is pending once this function has returned: until
			// then, completing it fails.
			for deadline := time.Now().Add(10 * time.Second); p.Complete(id, tool.Text("video ready")) != nil && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}()
		return tool.PendingResult("rendering"), nil
	}, tool.WithLongRunning())
	m := scripted.New(scripted.CallTools(scripted.Call("render", `{}`)), scripted.Reply("here it is"))
	exec := executor.Parallel(executor.WithInvokeOptions(tool.WithPending(&p)))
	g := loop(t, m, []tool.Tool{job}, []nodes.ToolsOption{nodes.WithExecutor(exec), nodes.WithPendingCalls(&p)})
	out, err := g.Invoke(context.Background(), user("make a video"))
	require.NoError(t, err)
	assert.Equal(t, "video ready", out.Messages[2].Text())
}

func TestHopCapInTheLoop(t *testing.T) {
	var calls atomic.Int32
	again := scripted.CallTools(scripted.Call("sleep", `{"ms":0,"name":"x"}`))
	m := scripted.New(again, again, again, again)
	b := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m, nodes.WithTools(sleeper(&calls)), nodes.WithMaxHops(2))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](b, "tools", "llm", nodes.WithTools(sleeper(&calls)))
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), user("loop forever"))
	var he *nodes.HopLimitError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 2, he.Limit)
	assert.Equal(t, int32(2), calls.Load())
	assert.Equal(t, 3, m.Calls())
}

func TestToolsNodeRejectsAnExecutorThatLosesResults(t *testing.T) {
	var calls atomic.Int32
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint(n, " results"), func(t *testing.T) {
			broken := executor.ExecutorFunc(func(_ context.Context, b executor.Batch) ([]tool.Result, error) {
				out := make([]tool.Result, n)
				for i := range out {
					out[i] = tool.Text("?")
				}
				return out, nil
			})
			m := scripted.New(scripted.CallTools(
				scripted.CallWithID("a", "sleep", `{"ms":0,"name":"a"}`),
				scripted.CallWithID("b", "sleep", `{"ms":0,"name":"b"}`),
			))
			g := loop(t, m, []tool.Tool{sleeper(&calls)}, []nodes.ToolsOption{nodes.WithExecutor(broken)})
			out, err := g.Invoke(context.Background(), user("go"))
			require.ErrorContains(t, err, fmt.Sprintf("the executor returned %d results for 2 calls (sleep a, sleep b)", n))
			require.Len(t, out.Messages, 2, "the model's turn is kept; no partial answer is committed")
			assert.Equal(t, model.RoleAssistant, out.Messages[1].Role)
			assert.Equal(t, 1, m.Calls(), "the model is not called with unanswered calls")
		})
	}
}

// TestToolsNodeLeavesTheModelsCallsAsTheyWere runs a batch through an
// executor whose hook rewrites the arguments: the tools see the rewritten
// arguments, while the assistant message in the conversation keeps the
// calls the model made, in the input state and in the state the node
// returns.
func TestToolsNodeLeavesTheModelsCallsAsTheyWere(t *testing.T) {
	var calls atomic.Int32
	for _, ex := range []struct {
		name string
		make func(executor.Option) executor.Executor
	}{
		{"sequential", func(o executor.Option) executor.Executor { return executor.Sequential(o) }},
		{"parallel", func(o executor.Option) executor.Executor { return executor.Parallel(o) }},
	} {
		t.Run(ex.name, func(t *testing.T) {
			rewrite := executor.WithHooks(executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
				req.Call.Arguments = []byte(`{"ms":0,"name":"rewritten"}`)
				return nil, nil
			}})
			node := nodes.Tools[agentState]("llm", nodes.WithTools(sleeper(&calls)), nodes.WithExecutor(ex.make(rewrite)))
			made := []model.ToolCall{
				{ID: "a", Name: "sleep", Arguments: []byte(`{"ms":0,"name":"a"}`)},
				{ID: "b", Name: "sleep", Arguments: []byte(`{"ms":0,"name":"b"}`)},
			}
			in := agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("go"), model.Assistant("", made...)}}}
			out, _, err := node(context.Background(), in)
			require.NoError(t, err)
			require.Len(t, out.Messages, 4)
			assert.Equal(t, "slept rewritten", out.Messages[2].Text())
			assert.Equal(t, "slept rewritten", out.Messages[3].Text())
			want := []model.ToolCall{
				{ID: "a", Name: "sleep", Arguments: []byte(`{"ms":0,"name":"a"}`)},
				{ID: "b", Name: "sleep", Arguments: []byte(`{"ms":0,"name":"b"}`)},
			}
			assert.Equal(t, want, in.Messages[1].ToolCalls, "the input state")
			assert.Equal(t, want, out.Messages[1].ToolCalls, "the returned state")
		})
	}
}

// TestRoutingActionsHoldWhenTheBatchIsAnsweredInParts calls tools that
// route the run alongside a tool the caller executes: the calls that ran
// are answered before the pause, the caller's after it, and the route is
// that of the whole batch, in call order.
func TestRoutingActionsHoldWhenTheBatchIsAnsweredInParts(t *testing.T) {
	routing := func(name string, set func(*tool.Result)) tool.Tool {
		return tool.MustFunc(name, "routes", func(context.Context, struct{}) (tool.Result, error) {
			r := tool.Text(name + " done")
			set(&r)
			return r, nil
		})
	}
	ask, err := tool.NewDeclaration(model.ToolDefinition{Name: "ask_user", Description: "asks the user"})
	require.NoError(t, err)
	all := []tool.Tool{
		ask,
		routing("escalate", func(r *tool.Result) { r.Actions.Escalate = true }),
		routing("finish", func(r *tool.Result) { r.Terminate = true }),
		routing("to_a", func(r *tool.Result) { r.Actions.TransferTo = "agent_a" }),
		routing("plain", func(*tool.Result) {}),
	}
	build := func(m model.Model) *graph.Graph[counterState] {
		b := graph.New[counterState]().
			AddNode("llm", nodes.LLM[counterState](m, nodes.WithTools(all...))).
			AddNode("agent_a", func(_ context.Context, s counterState) (counterState, error) { s.Total += 1000; return s, nil }).
			AddNode("agent_b", func(_ context.Context, s counterState) (counterState, error) { s.Total += 2000; return s, nil }).
			AddEdge(graph.START, "llm").
			AddConditionalEdges("llm", nodes.ToolsCondition[counterState]("tools"), "tools", graph.END)
		nodes.AddTools[counterState](b, "tools", "llm", nodes.WithTools(all...), nodes.WithTransfers("agent_a", "agent_b"))
		g, err := b.Compile(graph.WithCheckpointer(memory.New()))
		require.NoError(t, err)
		return g
	}
	in := counterState{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}}
	cases := []struct {
		name   string
		calls  []model.ToolCall
		answer tool.Result // the caller's answer to ask_user
		total  int
		modelN int
	}{
		{"an escalation before the pause ends the run",
			[]model.ToolCall{scripted.CallWithID("e", "escalate", `{}`), scripted.CallWithID("x", "ask_user", `{}`)}, tool.Text("ok"), 0, 1},
		{"a transfer before the pause holds",
			[]model.ToolCall{scripted.CallWithID("x", "ask_user", `{}`), scripted.CallWithID("a", "to_a", `{}`)}, tool.Text("ok"), 1000, 1},
		{"the first transfer in call order wins across parts",
			[]model.ToolCall{scripted.CallWithID("x", "ask_user", `{}`), scripted.CallWithID("a", "to_a", `{}`)},
			tool.Result{Content: tool.Text("go to b").Content, Actions: tool.Actions{TransferTo: "agent_b"}}, 2000, 1},
		{"an earlier call's transfer wins over a later one answered after the pause",
			[]model.ToolCall{scripted.CallWithID("a", "to_a", `{}`), scripted.CallWithID("x", "ask_user", `{}`)},
			tool.Result{Content: tool.Text("go to b").Content, Actions: tool.Actions{TransferTo: "agent_b"}}, 1000, 1},
		{"a terminating answer after the pause does not end the run alone",
			[]model.ToolCall{scripted.CallWithID("p", "plain", `{}`), scripted.CallWithID("x", "ask_user", `{}`)},
			tool.Result{Content: tool.Text("done").Content, Terminate: true}, 0, 2},
		{"every call terminating, across parts, ends the run",
			[]model.ToolCall{scripted.CallWithID("f", "finish", `{}`), scripted.CallWithID("x", "ask_user", `{}`)},
			tool.Result{Content: tool.Text("done too").Content, Terminate: true}, 0, 1},
		{"one terminating call alone does not",
			[]model.ToolCall{scripted.CallWithID("f", "finish", `{}`), scripted.CallWithID("x", "ask_user", `{}`)}, tool.Text("ok"), 0, 2},
		{"results that route nowhere go back to the model",
			[]model.ToolCall{scripted.CallWithID("p", "plain", `{}`), scripted.CallWithID("x", "ask_user", `{}`)}, tool.Text("ok"), 0, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.CallTools(c.calls...), scripted.Reply("done"))
			g := build(m)
			ctx := context.Background()
			_, err := g.Invoke(ctx, in, graph.WithThread("t"))
			var ie *graph.InterruptError
			require.ErrorAs(t, err, &ie)
			out, err := g.Resume(ctx, "t", graph.WithResumeValue(map[string]tool.Result{"x": c.answer}))
			require.NoError(t, err)
			assert.Equal(t, c.total, out.Total)
			assert.Equal(t, c.modelN, m.Calls())
			msgs := out.Messages
			require.GreaterOrEqual(t, len(msgs), 4)
			for _, msg := range msgs[2:4] {
				assert.Equal(t, model.RoleTool, msg.Role)
			}
		})
	}
}

// TestToolsNodeFailsWhenItsRunStops cancels the node's context while a
// call runs: the calls cut short are not answers, so the node fails with
// the cancellation and appends nothing, and a resume would run the batch
// again.
func TestToolsNodeFailsWhenItsRunStops(t *testing.T) {
	started := make(chan struct{})
	slow := tool.MustFunc("slow", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	quick := tool.MustFunc("quick", "answers", func(context.Context, struct{}) (string, error) { return "ok", nil })
	node := nodes.Tools[agentState]("llm", nodes.WithTools(slow, quick))
	in := agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("go"),
		model.Assistant("", scripted.CallWithID("q", "quick", `{}`), scripted.CallWithID("s", "slow", `{}`))}}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out, _, err := node(ctx, in)
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, out.Messages, 2, "nothing of the batch is kept")

	// A call that times out on its own (a per-call Timeout) while the run
	// goes on is answered as such.
	hang := tool.MustFunc("hang", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	node = nodes.Tools[agentState]("llm", nodes.WithTools(hang),
		nodes.WithExecutor(executor.Sequential(executor.WithMiddleware(middleware.Timeout(time.Millisecond)))))
	out, _, err = node(context.Background(), agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("go"),
		model.Assistant("", scripted.CallWithID("h", "hang", `{}`))}}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)
	assert.True(t, out.Messages[2].IsError)
	assert.Contains(t, out.Messages[2].Text(), "timed out")

	// The run's deadline has passed but its context's timer has not fired:
	// the run is stopping all the same.
	late := lateContext{Context: context.Background(), deadline: time.Now().Add(2 * time.Millisecond)}
	sleepy := tool.MustFunc("sleepy", "overruns", func(context.Context, struct{}) (string, error) {
		time.Sleep(5 * time.Millisecond)
		return "", errors.New("gave up")
	})
	node = nodes.Tools[agentState]("llm", nodes.WithTools(sleepy))
	out, _, err = node(late, agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("go"),
		model.Assistant("", scripted.CallWithID("z", "sleepy", `{}`))}}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, out.Messages, 2, "nothing of the batch is kept")
}

// lateContext has a deadline but never reports it passed, like a context
// whose timer has not fired yet.
type lateContext struct {
	context.Context
	deadline time.Time
}

func (c lateContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Two tools with one name among the tools given as a list fail Compile,
// naming the node and the tool, instead of the first run.
func TestAddToolsRefusesDuplicateNamesAtCompile(t *testing.T) {
	a := tool.MustFunc("lookup", "a", func(context.Context, struct{}) (string, error) { return "a", nil })
	b := tool.MustFunc("lookup", "b", func(context.Context, struct{}) (string, error) { return "b", nil })
	gb := graph.New[agentState](nodes.MessagesReducer[agentState]()).
		AddNode("llm", nodes.LLM[agentState](scripted.New(), nodes.WithTools(a))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](gb, "tools", "llm", nodes.WithTools(a), nodes.WithTools(b))
	_, err := gb.Compile()
	var ce *graph.CompileError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), `ToolsNode "tools"`)
	assert.Contains(t, err.Error(), `"lookup"`)
}

// Tools a node's filters hide cannot clash: with resolve options, the
// names are checked per run, among the visible tools.
func TestAddToolsLeavesFilteredDuplicatesToTheRun(t *testing.T) {
	v1 := tool.MustFunc("search", "v1", func(context.Context, struct{}) (string, error) { return "v1", nil })
	v2 := tool.MustFunc("search", "v2", func(context.Context, struct{}) (string, error) { return "v2", nil })
	onlyV2 := tool.VisibleIf(func(_ context.Context, x tool.Tool) bool { return x.Definition().Description == "v2" })
	gb := graph.New[agentState](nodes.MessagesReducer[agentState]()).
		AddNode("llm", nodes.LLM[agentState](scripted.New(), nodes.WithTools(v1, v2), nodes.WithResolveOptions(onlyV2))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](gb, "tools", "llm", nodes.WithTools(v1, v2), nodes.WithResolveOptions(onlyV2))
	_, err := gb.Compile()
	require.NoError(t, err)
}

// A tool named like the set-model-response tool of structured output
// clashes with it at Compile.
func TestAddToolsRefusesATakenStructuredOutputName(t *testing.T) {
	fake := tool.MustFunc(tool.SetModelResponseName, "mine", func(context.Context, struct{}) (string, error) { return "x", nil })
	gb := graph.New[agentState](nodes.MessagesReducer[agentState]()).
		AddNode("llm", nodes.LLM[agentState](scripted.New(), nodes.WithTools(fake))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agentState]("tools"), "tools", graph.END)
	nodes.AddTools[agentState](gb, "tools", "llm", nodes.WithTools(fake), nodes.WithStructuredOutput[struct {
		A string `json:"a"`
	}]())
	_, err := gb.Compile()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `duplicate tool name "`+tool.SetModelResponseName+`"`)
}

// TestSingleCallAnswersKeepTheirIDs answers single calls whose IDs are of
// every length the node stores with the call's result part, and longer,
// through each executor and one it does not know: each tool message has
// the ID derived from its call, and answers, with the call's result, only
// that call, whichever storage the node used.
func TestSingleCallAnswersKeepTheirIDs(t *testing.T) {
	echo := tool.MustFunc("echo", "echoes", func(_ context.Context, in weatherIn) (string, error) { return "at " + in.City, nil })
	execs := map[string]executor.Executor{
		"parallel":   executor.Parallel(nodes.StreamToolEvents()),
		"sequential": executor.Sequential(),
		"guarded":    executor.Guard(executor.Sequential()),
	}
	for name, ex := range execs {
		node := nodes.Tools[agentState]("llm", nodes.WithTools(echo), nodes.WithExecutor(ex))
		var seen []string
		for _, n := range []int{1, 11, 12, 27, 28, 43, 44, 60} {
			id := strings.Repeat("x", n-1) + fmt.Sprint(n%10)
			in := agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("go"),
				model.Assistant("", scripted.CallWithID(id, "echo", fmt.Sprintf(`{"city":"c%d"}`, n)))}}}
			out, _, err := node(context.Background(), in)
			require.NoError(t, err, "%s, ID of %d bytes", name, n)
			require.Len(t, out.Messages, 3)
			m := out.Messages[2]
			assert.Equal(t, nodes.ToolMessageID(id), m.ID, "%s, ID of %d bytes", name, n)
			assert.Equal(t, id, m.ToolCallID)
			assert.Equal(t, fmt.Sprintf("at c%d", n), m.Text())
			seen = append(seen, m.ID, m.Text())
		}
		// What earlier answers hold is theirs still.
		for i, n := range []int{1, 11, 12, 27, 28, 43, 44, 60} {
			assert.Equal(t, nodes.ToolMessageID(strings.Repeat("x", n-1)+fmt.Sprint(n%10)), seen[2*i])
			assert.Equal(t, fmt.Sprintf("at c%d", n), seen[2*i+1])
		}
	}
}
