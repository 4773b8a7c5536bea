package handoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// lastToolText is a scripted step that answers with the text of the last
// tool message it was shown, prefixed.
func lastToolText(prefix string) scripted.Step {
	return scripted.Func(func(req *model.Request) (*model.Response, error) {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == model.RoleTool {
				return &model.Response{Message: model.Assistant(prefix + m.Text())}, nil
			}
		}
		return &model.Response{Message: model.Assistant(prefix + "(no tool result)")}, nil
	})
}

// toolMessage returns the tool message answering the call with the given ID.
func toolMessage(t *testing.T, msgs []model.Message, callID string) model.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Role == model.RoleTool && m.ToolCallID == callID {
			return m
		}
	}
	require.Failf(t, "no tool message", "for call %s in %d messages", callID, len(msgs))
	return model.Message{}
}

func worker(t *testing.T, name string, m model.Model, opts ...agent.Option) *graph.Graph[agent.State] {
	t.Helper()
	g, err := agent.NewReAct(m, append([]agent.Option{agent.WithName(name), agent.WithSystemPrompt("You are the " + name + ".")}, opts...)...)
	require.NoError(t, err)
	return g
}

func parent(t *testing.T, m model.Model, tools []tool.Tool, opts ...agent.Option) *graph.Graph[agent.State] {
	t.Helper()
	g, err := agent.NewReAct(m, append([]agent.Option{agent.WithName("boss"), agent.WithTools(tools...)}, opts...)...)
	require.NoError(t, err)
	return g
}

func TestHandoffRunsTheAgentIsolatedAndReturnsItsFinalAnswer(t *testing.T) {
	wm := scripted.New(scripted.Reply("Paris has 2.1 million people."))
	researcher, err := handoff.New("researcher", "Finds facts.", worker(t, "researcher", wm))
	require.NoError(t, err)
	assert.True(t, tool.MetadataOf(researcher).ConcurrencySafe, "handoffs may run side by side")

	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("h1", "researcher", `{"task":"How many people live in Paris?","context":"Use 2023 figures."}`)),
		lastToolText("Answer: "),
	)
	out, err := parent(t, pm, []tool.Tool{researcher}).Invoke(context.Background(), agent.Ask("secret question: Paris?"))
	require.NoError(t, err)
	assert.Equal(t, "Answer: Paris has 2.1 million people.", agent.FinalText(out.Messages))

	// The worker saw its system prompt and the task with its context, and
	// nothing of the parent's conversation.
	reqs := wm.Requests()
	require.Len(t, reqs, 1)
	require.Len(t, reqs[0].Messages, 2)
	assert.Equal(t, "You are the researcher.", reqs[0].Messages[0].Text())
	assert.Equal(t, "Context:\nUse 2023 figures.\n\nTask:\nHow many people live in Paris?", reqs[0].Messages[1].Text())
	assert.Equal(t, model.RoleUser, reqs[0].Messages[1].Role)

	msg := toolMessage(t, out.Messages, "h1")
	assert.False(t, msg.IsError)
	assert.Equal(t, "Paris has 2.1 million people.", msg.Text())
}

func TestHandoffResultDetailsAndAllMessages(t *testing.T) {
	lookup := tool.MustFunc("lookup", "looks up", func(_ context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		return "found " + in.Q, nil
	})
	newWorker := func() *graph.Graph[agent.State] {
		return worker(t, "w", scripted.New(
			scripted.CallTools(scripted.CallWithID("l1", "lookup", `{"q":"x"}`)),
			lastToolText("done: "),
		), agent.WithTools(lookup))
	}
	tests := []struct {
		name string
		opts []handoff.Option
		want func(t *testing.T, r tool.Result)
	}{
		{"final answer", nil, func(t *testing.T, r tool.Result) {
			assert.Equal(t, "done: found x", r.Text())
		}},
		{"all messages", []handoff.Option{handoff.WithAllMessages()}, func(t *testing.T, r tool.Result) {
			var msgs []model.Message
			require.NoError(t, json.Unmarshal([]byte(r.Text()), &msgs))
			require.Len(t, msgs, 3)
			assert.Equal(t, "lookup", msgs[0].ToolCalls[0].Name)
			assert.Equal(t, "found x", msgs[1].Text())
			assert.Equal(t, "done: found x", msgs[2].Text())
			assert.Equal(t, "w", msgs[2].Name)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := handoff.New("w", "works", newWorker(), tc.opts...)
			require.NoError(t, err)
			r := tool.Invoke(context.Background(), h, model.ToolCall{ID: "c1", Name: "w", Arguments: json.RawMessage(`{"task":"find x"}`)})
			require.False(t, r.IsError, r.Text())
			tc.want(t, r)
			out, ok := r.Details.(handoff.Output)
			require.True(t, ok, "Details hold the output, got %T", r.Details)
			assert.Equal(t, "w", out.Agent)
			assert.Equal(t, "done: found x", out.Answer)
			assert.Equal(t, 1, out.Attempts)
			assert.Len(t, out.Messages, 3)
		})
	}
}

func TestHandoffSharedHistory(t *testing.T) {
	wm := scripted.New(scripted.Reply("the user is Ada"))
	h, err := handoff.New("memory", "Remembers.", worker(t, "memory", wm), handoff.WithSharedHistory())
	require.NoError(t, err)
	pm := scripted.New(
		scripted.Reply("Nice to meet you."),
		scripted.CallTools(scripted.CallWithID("m1", "memory", `{"task":"Who is the user?"}`)).WithText("Let me check."),
		lastToolText(""),
	)
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err = agent.Continue(ctx, g, "th", "I am Ada.")
	require.NoError(t, err)
	out, err := agent.Continue(ctx, g, "th", "Who am I?")
	require.NoError(t, err)
	assert.Equal(t, "the user is Ada", agent.FinalText(out.Messages))

	// The worker saw the conversation up to the user's question, not the
	// assistant message with the pending call, then the task.
	got := wm.Requests()[0].Messages
	var texts []string
	for _, m := range got {
		texts = append(texts, string(m.Role)+":"+m.Text())
	}
	assert.Equal(t, []string{
		"system:You are the memory.",
		"user:I am Ada.",
		"assistant:Nice to meet you.",
		"user:Who am I?",
		"user:Who is the user?",
	}, texts)
}

func TestFailingAgentBecomesAnErrorResultTheCallerReads(t *testing.T) {
	wm := scripted.New(scripted.Fail(errors.New("quota exceeded")))
	h, err := handoff.New("flaky", "Fails.", worker(t, "flaky", wm))
	require.NoError(t, err)
	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("f1", "flaky", `{"task":"do it"}`)),
		lastToolText("I could not: "),
	)
	out, err := parent(t, pm, []tool.Tool{h}).Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err, "the caller's run goes on")
	msg := toolMessage(t, out.Messages, "f1")
	assert.True(t, msg.IsError)
	assert.Contains(t, msg.Text(), "quota exceeded")
	assert.Contains(t, msg.Text(), `agent "flaky"`)
	assert.True(t, strings.HasPrefix(agent.FinalText(out.Messages), "I could not: "))
}

func TestHandoffRetries(t *testing.T) {
	fail := scripted.Fail(errors.New("model overloaded"))
	tests := []struct {
		name     string
		steps    []scripted.Step
		opts     []handoff.Option
		wantErr  string
		wantText string
		calls    int
		retries  int
	}{
		{
			name:     "succeeds on the second attempt",
			steps:    []scripted.Step{fail, scripted.Reply("ok")},
			opts:     []handoff.Option{handoff.WithRetries(2, time.Millisecond)},
			wantText: "ok", calls: 2, retries: 1,
		},
		{
			name:    "gives up after the last retry",
			steps:   []scripted.Step{fail, fail, fail, scripted.Reply("too late")},
			opts:    []handoff.Option{handoff.WithRetries(2, time.Millisecond)},
			wantErr: `agent "w" failed 3 times, last:`, calls: 3, retries: 2,
		},
		{
			name:    "no retries by default",
			steps:   []scripted.Step{fail, scripted.Reply("unused")},
			wantErr: "model overloaded", calls: 1,
		},
		{
			name:  "retry filter",
			steps: []scripted.Step{fail, scripted.Reply("unused")},
			opts: []handoff.Option{handoff.WithRetries(3, time.Millisecond), handoff.WithRetryIf(func(err error) bool {
				return !strings.Contains(err.Error(), "overloaded")
			})},
			wantErr: "model overloaded", calls: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wm := scripted.New(tc.steps...)
			h, err := handoff.New("w", "works", worker(t, "w", wm), tc.opts...)
			require.NoError(t, err)
			pm := scripted.New(scripted.CallTools(scripted.CallWithID("r1", "w", `{"task":"t"}`)), scripted.Reply("end"))
			var retries []handoff.Retry
			var res tool.Result
			for ev, err := range parent(t, pm, []tool.Tool{h}).Stream(context.Background(), agent.Ask("go"), graph.WithModes(graph.ModeCustom|graph.ModeUpdates)) {
				require.NoError(t, err)
				if ev.Kind == graph.KindCustom && ev.Name == handoff.EventRetry {
					retries = append(retries, ev.Payload.(handoff.Retry))
				}
				if ev.Kind == graph.KindDone {
					msg := toolMessage(t, ev.State.(agent.State).Messages, "r1")
					res = tool.Result{IsError: msg.IsError, Content: msg.Content}
				}
			}
			assert.Equal(t, tc.calls, wm.Calls())
			require.Len(t, retries, tc.retries)
			for i, r := range retries {
				assert.Equal(t, i+1, r.Attempt)
				assert.Equal(t, "w", r.Agent)
				assert.Contains(t, r.Err, "model overloaded")
				assert.Equal(t, time.Millisecond<<i, r.Wait, "the wait doubles")
			}
			if tc.wantErr != "" {
				assert.True(t, res.IsError)
				assert.Contains(t, res.Text(), tc.wantErr)
				return
			}
			assert.False(t, res.IsError, res.Text())
			assert.Equal(t, tc.wantText, res.Text())
		})
	}
}

func TestHandoffValidator(t *testing.T) {
	mustCite := func(_ context.Context, out handoff.Output) error {
		if !strings.Contains(out.Answer, "[source]") {
			return errors.New("the answer cites no source")
		}
		return nil
	}
	t.Run("a rejected answer is retried", func(t *testing.T) {
		wm := scripted.New(scripted.Reply("Paris is big."), scripted.Reply("Paris is big [source]."))
		h, err := handoff.New("w", "works", worker(t, "w", wm), handoff.WithValidator(mustCite), handoff.WithRetries(1, 0))
		require.NoError(t, err)
		r := tool.Invoke(context.Background(), h, model.ToolCall{ID: "v1", Name: "w", Arguments: json.RawMessage(`{"task":"t"}`)})
		require.False(t, r.IsError, r.Text())
		assert.Equal(t, "Paris is big [source].", r.Text())
		assert.Equal(t, 2, r.Details.(handoff.Output).Attempts)
	})
	t.Run("the last rejection is the error", func(t *testing.T) {
		wm := scripted.New(scripted.Reply("Paris is big."))
		h, err := handoff.New("w", "works", worker(t, "w", wm), handoff.WithValidator(mustCite))
		require.NoError(t, err)
		r := tool.Invoke(context.Background(), h, model.ToolCall{ID: "v1", Name: "w", Arguments: json.RawMessage(`{"task":"t"}`)})
		require.True(t, r.IsError)
		require.ErrorIs(t, r.Err, handoff.ErrInvalidResult)
		assert.Contains(t, r.Text(), "the answer cites no source")
	})
}

func TestAgentWithoutAnswer(t *testing.T) {
	// A graph that adds no message at all.
	g, err := graph.New[agent.State]().
		AddNode("noop", func(_ context.Context, s agent.State) (agent.State, error) { return s, nil }).
		AddEdge(graph.START, "noop").Compile()
	require.NoError(t, err)
	h, err := handoff.New("mute", "says nothing", g)
	require.NoError(t, err)
	r := tool.Invoke(context.Background(), h, model.ToolCall{ID: "n1", Name: "mute", Arguments: json.RawMessage(`{"task":"t"}`)})
	require.True(t, r.IsError)
	require.ErrorIs(t, r.Err, handoff.ErrNoAnswer)
}

func TestHandoffDepthLimit(t *testing.T) {
	// boss → middle → leaf → deepest, with a limit of 2 on the deepest
	// handoff: the leaf's call of it is refused.
	var mu sync.Mutex
	var refused []error
	capture := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		r := next.Handle(ctx, req)
		if r.Err != nil {
			mu.Lock()
			refused = append(refused, r.Err)
			mu.Unlock()
		}
		return r
	})
	deepestModel := scripted.New(scripted.Reply("never"))
	deepest, err := handoff.New("deepest", "d", worker(t, "deepest", deepestModel), handoff.WithMaxDepth(2))
	require.NoError(t, err)
	leafModel := scripted.New(scripted.CallTools(scripted.CallWithID("d1", "deepest", `{"task":"go deeper"}`)), lastToolText("leaf saw: "))
	leaf, err := handoff.New("leaf", "l", worker(t, "leaf", leafModel, agent.WithTools(deepest), agent.WithMiddleware(capture)))
	require.NoError(t, err)
	middleModel := scripted.New(scripted.CallTools(scripted.CallWithID("l1", "leaf", `{"task":"go"}`)), lastToolText("middle saw: "))
	middle, err := handoff.New("middle", "m", worker(t, "middle", middleModel, agent.WithTools(leaf)))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.CallWithID("m1", "middle", `{"task":"go"}`)), lastToolText("boss saw: "))

	out, err := parent(t, pm, []tool.Tool{middle}).Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Equal(t, 0, deepestModel.Calls(), "the refused agent did not run")
	require.Len(t, refused, 1)
	var de *handoff.DepthError
	require.ErrorAs(t, refused[0], &de)
	assert.Equal(t, handoff.DepthError{Agent: "deepest", Depth: 2, Limit: 2}, *de)
	require.ErrorIs(t, refused[0], handoff.ErrDepthLimit)
	final := agent.FinalText(out.Messages)
	assert.True(t, strings.HasPrefix(final, "boss saw: middle saw: leaf saw: "), final)
	assert.Contains(t, final, "the limit is 2")
}

func TestHandoffDepthCountsFromTheTop(t *testing.T) {
	var depths []int
	probe := tool.MustFunc("probe", "reports the depth", func(ctx context.Context, _ struct{}) (string, error) {
		depths = append(depths, handoff.Depth(ctx))
		return "ok", nil
	})
	wm := scripted.New(scripted.CallTools(scripted.Call("probe", `{}`)), scripted.Reply("done"))
	h, err := handoff.New("w", "works", worker(t, "w", wm, agent.WithTools(probe)))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.Call("probe", `{}`), scripted.Call("w", `{"task":"t"}`)), scripted.Reply("end"))
	_, err = parent(t, pm, []tool.Tool{probe, h}, agent.WithExecutor(executor.Sequential())).Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, depths)
}

func TestInterruptInsideTheAgentResumesThroughTheCheckpointer(t *testing.T) {
	var asked int
	approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, in struct {
		Plan string `json:"plan"`
	}) (string, error) {
		asked++
		ok, err := graph.Interrupt[string](ctx, "approve "+in.Plan+"?")
		if err != nil {
			return "", err
		}
		return "human says " + ok, nil
	})
	wm := scripted.New(scripted.CallTools(scripted.CallWithID("a1", "approve", `{"plan":"launch"}`)), lastToolText("worker: "))
	h, err := handoff.New("planner", "plans", worker(t, "planner", wm, agent.WithTools(approve)))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.CallWithID("p1", "planner", `{"task":"plan the launch"}`)), lastToolText("boss: "))
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := context.Background()

	_, err = g.Invoke(ctx, agent.Ask("launch?"), graph.WithThread("t1"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	in := ie.Interrupts[0]
	assert.Equal(t, []string{"planner"}, in.Path, "the interrupt names the agent it comes from")
	assert.Equal(t, agent.ToolsNode, in.Node)
	assert.Equal(t, "approve launch?", in.Payload)

	out, err := g.Resume(ctx, "t1", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.Equal(t, "boss: worker: human says yes", agent.FinalText(out.Messages))
	assert.Equal(t, 2, wm.Calls(), "the worker resumed: its first model call was not made again")
	assert.Equal(t, 2, pm.Calls())
	assert.Equal(t, 2, asked)
}

func TestChildEventsReachTheParentStreamWithTheirPath(t *testing.T) {
	lookup := tool.MustFunc("lookup", "looks up", func(ctx context.Context, _ struct{}) (string, error) {
		graph.EmitCustom(ctx, "looking", "up")
		return "found", nil
	})
	newParent := func(opts ...handoff.Option) *graph.Graph[agent.State] {
		wm := scripted.New(scripted.CallTools(scripted.Call("lookup", `{}`)), scripted.Reply("done"))
		h, err := handoff.New("researcher", "finds", worker(t, "researcher-graph", wm, agent.WithTools(lookup)), opts...)
		require.NoError(t, err)
		pm := scripted.New(scripted.CallTools(scripted.Call("researcher", `{"task":"t"}`)), scripted.Reply("end"))
		return parent(t, pm, []tool.Tool{h})
	}
	collect := func(g *graph.Graph[agent.State]) []graph.Event {
		var evs []graph.Event
		for ev, err := range g.Stream(context.Background(), agent.Ask("go"), graph.WithModes(graph.ModeEvents|graph.ModeCustom)) {
			require.NoError(t, err)
			evs = append(evs, ev)
		}
		return evs
	}

	var child []string
	for _, ev := range collect(newParent()) {
		if len(ev.Path) > 0 {
			assert.Equal(t, []string{"researcher"}, ev.Path)
			assert.Equal(t, "researcher-graph", ev.Graph)
			child = append(child, string(ev.Kind)+":"+ev.Node+":"+ev.Name)
		}
	}
	assert.Equal(t, []string{
		"node_start:agent:", "model_start:agent:", "model_end:agent:", "node_end:agent:",
		"node_start:tools:", "tool_start:tools:lookup", "custom:tools:looking", "tool_end:tools:lookup", "node_end:tools:",
		"node_start:agent:", "model_start:agent:", "model_end:agent:", "node_end:agent:",
	}, child)

	for _, ev := range collect(newParent(handoff.WithEvents(graph.ModeCustom))) {
		if len(ev.Path) > 0 {
			assert.Equal(t, graph.KindCustom, ev.Kind, "only the modes asked for")
		}
	}
	for _, ev := range collect(newParent(handoff.WithEvents(0))) {
		assert.Empty(t, ev.Path, "no child event")
	}
}

// Two calls of one agent in one batch run side by side; each child run's
// events carry the ID of the call that started it, so that they can be
// shown under the right call, and the parent's own events carry none.
func TestChildEventsCarryTheirCallID(t *testing.T) {
	wm := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant("done: " + req.Messages[len(req.Messages)-1].Text())}, nil
	}))
	h, err := handoff.New("researcher", "finds", worker(t, "researcher", wm))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(
		scripted.CallWithID("r1", "researcher", `{"task":"a"}`),
		scripted.CallWithID("r2", "researcher", `{"task":"b"}`),
	), scripted.Reply("end"))
	g := parent(t, pm, []tool.Tool{h})
	byCall := map[string][]string{}
	for ev, err := range g.Stream(context.Background(), agent.Ask("go"), graph.WithModes(graph.ModeEvents)) {
		require.NoError(t, err)
		if len(ev.Path) == 0 {
			assert.Empty(t, ev.CallID, "the parent's own %s event", ev.Kind)
			continue
		}
		byCall[ev.CallID] = append(byCall[ev.CallID], string(ev.Kind))
	}
	want := []string{"node_start", "model_start", "model_end", "node_end"}
	assert.Equal(t, map[string][]string{"r1": want, "r2": want}, byCall)
}

func TestCancelledCallerIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	wm := scripted.New(scripted.Func(func(*model.Request) (*model.Response, error) {
		cancel()
		return nil, context.Canceled
	}), scripted.Reply("unused"))
	h, err := handoff.New("w", "works", worker(t, "w", wm), handoff.WithRetries(3, time.Hour))
	require.NoError(t, err)
	r := tool.Invoke(ctx, h, model.ToolCall{ID: "c", Name: "w", Arguments: json.RawMessage(`{"task":"t"}`)})
	assert.True(t, r.IsError)
	assert.Equal(t, tool.StatusCancelled, r.Status)
	assert.Equal(t, 1, wm.Calls())
}

func TestNewRejectsBadSettings(t *testing.T) {
	g := worker(t, "w", scripted.New())
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"nil graph", func() error { _, err := handoff.New[agent.State]("w", "d", nil); return err }, "graph is nil"},
		{"bad name", func() error { _, err := handoff.New("bad name", "d", g); return err }, "may hold only"},
		{"negative retries", func() error { _, err := handoff.New("w", "d", g, handoff.WithRetries(-1, 0)); return err }, "negative number of retries"},
		{"negative backoff", func() error { _, err := handoff.New("w", "d", g, handoff.WithRetries(1, -time.Second)); return err }, "negative backoff"},
		{"zero depth", func() error { _, err := handoff.New("w", "d", g, handoff.WithMaxDepth(0)); return err }, "at least 1"},
		{"shared and persistent history", func() error {
			_, err := handoff.New("w", "d", g, handoff.WithSharedHistory(), handoff.WithPersistentHistory(nil))
			return err
		}, "exclude each other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			require.ErrorIs(t, err, tool.ErrInvalidTool)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestHandoffMetadataAndToolOptions(t *testing.T) {
	h, err := handoff.New("w", "works", worker(t, "w", scripted.New()),
		handoff.WithMetadata(tool.Metadata{Sequential: true}),
		handoff.WithToolOptions(tool.WithInstruction("Use w for work.")))
	require.NoError(t, err)
	assert.Equal(t, tool.Metadata{Sequential: true}, tool.MetadataOf(h))
	assert.Equal(t, "Use w for work.", tool.CollectInstructions([]tool.Tool{h}))
	def := h.Definition()
	assert.Equal(t, "works", def.Description)
	assert.JSONEq(t, `{"type":"object","additionalProperties":false,"required":["task"],"properties":{
		"task":{"type":"string","minLength":1,"description":"The task for the agent, stated so that it can be done without asking back."},
		"context":{"type":"string","description":"Facts, data or earlier results the agent needs for the task (optional)."}}}`, string(def.InputSchema))
}
