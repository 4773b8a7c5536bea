package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
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

// collect drains a stream and returns its events and its error.
func collect(seq func(func(graph.Event, error) bool)) ([]graph.Event, error) {
	var evs []graph.Event
	var last error
	for ev, err := range seq {
		if err != nil {
			last = err
			continue
		}
		evs = append(evs, ev)
	}
	return evs, last
}

func toolEvents(evs []graph.Event) []executor.Event {
	var out []executor.Event
	for _, ev := range evs {
		switch ev.Kind {
		case nodes.KindToolStart, nodes.KindToolUpdate, nodes.KindToolEnd:
			out = append(out, ev.Payload.(executor.Event))
		}
	}
	return out
}

// checkToolEvents checks the pairing rules of tool events within each
// batch (a batch is a maximal run of tool events of one superstep) and
// returns the call IDs of the ToolStart events in order.
func checkToolEvents(t *testing.T, evs []graph.Event) []string {
	t.Helper()
	var starts []string
	type batchKey struct {
		step int
		node string
		path string
	}
	byBatch := map[batchKey][]executor.Event{}
	var order []batchKey
	for _, ev := range evs {
		switch ev.Kind {
		case nodes.KindToolStart, nodes.KindToolUpdate, nodes.KindToolEnd:
		default:
			continue
		}
		te, ok := ev.Payload.(executor.Event)
		require.True(t, ok, "payload %T", ev.Payload)
		assert.Equal(t, string(ev.Kind), string(te.Kind))
		assert.Equal(t, te.Call.Name, ev.Name)
		k := batchKey{ev.Step, ev.Node, strings.Join(ev.Path, "/")}
		if _, seen := byBatch[k]; !seen {
			order = append(order, k)
		}
		byBatch[k] = append(byBatch[k], te)
	}
	for _, k := range order {
		started := map[string]int{}
		ended := map[string]int{}
		var startOrder, endOrder []int
		for _, te := range byBatch[k] {
			id := te.Call.ID
			switch te.Kind {
			case executor.ToolStart:
				started[id]++
				assert.Zero(t, ended[id], "%v: start of %s after its end", k, id)
				startOrder = append(startOrder, te.Index)
				starts = append(starts, id)
			case executor.ToolUpdate:
				assert.Equal(t, 1, started[id], "%v: update of %s before its start", k, id)
				assert.Zero(t, ended[id], "%v: update of %s after its end", k, id)
				assert.Equal(t, id, te.Update.CallID)
			case executor.ToolEnd:
				ended[id]++
				assert.Equal(t, 1, started[id], "%v: end of %s without one start", k, id)
				endOrder = append(endOrder, te.Index)
				assert.NotEmpty(t, te.Result.Status)
			}
		}
		for id, n := range started {
			assert.Equal(t, 1, n, "%v: %s started %d times", k, id, n)
			assert.Equal(t, 1, ended[id], "%v: %s ended %d times", k, id, ended[id])
		}
		assert.True(t, slices.IsSorted(startOrder), "%v: starts out of call order: %v", k, startOrder)
		assert.True(t, slices.IsSorted(endOrder), "%v: ends out of call order: %v", k, endOrder)
	}
	return starts
}

func endsByID(evs []graph.Event) map[string]tool.Result {
	out := map[string]tool.Result{}
	for _, te := range toolEvents(evs) {
		if te.Kind == executor.ToolEnd {
			out[te.Call.ID] = te.Result
		}
	}
	return out
}

type progIn struct {
	N    int  `json:"n"`
	Fail bool `json:"fail,omitempty"`
}

// progress reports N updates, then answers (or fails).
func progress(name string, safe bool) tool.Tool {
	return tool.MustFunc(name, "reports progress", func(ctx context.Context, in progIn) (string, error) {
		for i := range in.N {
			tool.ReportProgress(ctx, tool.Update{Message: fmt.Sprintf("%d/%d", i+1, in.N)})
		}
		if in.Fail {
			return "", errors.New("boom")
		}
		return fmt.Sprintf("did %d", in.N), nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: safe}))
}

// stuck waits for its context to end, then reports progress and returns:
// under a Timeout its update comes after the call was answered. It closes
// entered when it starts: a call whose deadline passes before it could
// start (on a loaded machine) is answered without running.
func stuck(entered chan<- struct{}, release <-chan struct{}, returned chan<- struct{}) tool.Tool {
	return tool.MustFunc("stuck", "never finishes in time", func(ctx context.Context, _ struct{}) (string, error) {
		close(entered)
		tool.ReportProgress(ctx, tool.Update{Message: "waiting"})
		<-ctx.Done()
		<-release
		tool.ReportProgress(ctx, tool.Update{Message: "late"})
		returned <- struct{}{}
		return "late", nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
}

func TestEventsToolPairsAcrossOutcomes(t *testing.T) {
	for _, parallel := range []bool{true, false} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			entered, returned := make(chan struct{}), make(chan struct{}, 1)
			release := make(chan struct{})
			deny := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
				if req.Call.ID == "d" {
					return tool.Deny("not you"), nil
				}
				return tool.Allow(), nil
			})
			var attempts atomic.Int32
			flaky := tool.MustFunc("flaky", "fails once", func(ctx context.Context, _ struct{}) (string, error) {
				tool.ReportProgress(ctx, tool.Update{Message: "try"})
				if attempts.Add(1) == 1 {
					return "", errors.New("flake")
				}
				return "ok", nil
			}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
			tools := []tool.Tool{progress("prog", parallel), stuck(entered, release, returned), flaky}
			m := scripted.New(
				scripted.CallTools(
					scripted.CallWithID("a", "prog", `{"n":3}`),
					scripted.CallWithID("b", "stuck", `{}`),
					scripted.CallWithID("c", "prog", `{"n":2,"fail":true}`),
					scripted.CallWithID("d", "prog", `{"n":1}`),
					scripted.CallWithID("e", "flaky", `{}`),
					scripted.CallWithID("f", "missing", `{}`),
				),
				scripted.Reply("done"),
			)
			opts := []executor.Option{
				nodes.StreamToolEvents(),
				executor.WithMiddleware(
					middleware.Permission(deny),
					middleware.Retry(middleware.WithInitialInterval(time.Microsecond), middleware.WithMaxAttempts(3),
						middleware.WithRetryOn(func(_ context.Context, info middleware.RetryInfo) bool {
							return info.Request.Call.Name == "flaky"
						})),
					middleware.Timeout(0, middleware.WithToolTimeout("stuck", 5*time.Millisecond)),
				),
			}
			var exec executor.Executor
			if parallel {
				po := make([]executor.ParallelOption, len(opts))
				for i, o := range opts {
					po[i] = o
				}
				exec = executor.Parallel(po...)
			} else {
				exec = executor.Sequential(opts...)
			}
			g := loop(t, m, tools, []nodes.ToolsOption{nodes.WithExecutor(exec)})
			evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents)))
			close(release)
			require.NoError(t, err)
			select {
			case <-entered:
				<-returned // its late update was dropped
			default: // it never ran; if it starts now, nothing holds it back
			}
			assert.Equal(t, []string{"a", "b", "c", "d", "e", "f"}, checkToolEvents(t, evs))
			ends := endsByID(evs)
			assert.Equal(t, tool.StatusSuccess, ends["a"].Status, ends["a"].Text())
			assert.Equal(t, tool.StatusTimeout, ends["b"].Status)
			assert.Equal(t, tool.StatusFailed, ends["c"].Status)
			assert.Equal(t, tool.StatusDenied, ends["d"].Status)
			assert.Equal(t, tool.StatusSuccess, ends["e"].Status)
			assert.True(t, ends["f"].IsError)
			var updates []string
			for _, te := range toolEvents(evs) {
				if te.Kind == executor.ToolUpdate {
					updates = append(updates, te.Call.ID+":"+te.Update.Message)
				}
			}
			assert.NotContains(t, updates, "b:late")
			assert.NotContains(t, updates, "d:1/1")
			for _, u := range []string{"a:1/3", "a:2/3", "a:3/3", "c:1/2", "c:2/2", "e:try"} {
				assert.Contains(t, updates, u)
			}
		})
	}
}

func TestEventsCachedCallsStillStartAndEnd(t *testing.T) {
	var runs atomic.Int32
	echo := tool.MustFunc("echo", "echoes", func(ctx context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		runs.Add(1)
		tool.ReportProgress(ctx, tool.Update{Message: "echo"})
		return in.S, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true, ReadOnly: true}))
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("x1", "echo", `{"s":"hi"}`)),
		scripted.CallTools(scripted.CallWithID("x2", "echo", `{"s":"hi"}`), scripted.CallWithID("x3", "echo", `{"s":"hi"}`)),
		scripted.Reply("done"),
	)
	exec := executor.Parallel(nodes.StreamToolEvents(), executor.WithMiddleware(middleware.Cache()))
	g := loop(t, m, []tool.Tool{echo}, []nodes.ToolsOption{nodes.WithExecutor(exec)})
	evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents)))
	require.NoError(t, err)
	assert.Equal(t, []string{"x1", "x2", "x3"}, checkToolEvents(t, evs))
	assert.Equal(t, int32(1), runs.Load())
	for id, r := range endsByID(evs) {
		assert.Equal(t, "hi", r.Text(), id)
	}
}

func TestEventsInterruptInsideToolPairsAcrossResume(t *testing.T) {
	var okRuns atomic.Int32
	ok := tool.MustFunc("ok", "answers", func(context.Context, struct{}) (string, error) {
		okRuns.Add(1)
		return "fine", nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	ask := tool.MustFunc("ask", "asks a human", func(ctx context.Context, _ struct{}) (string, error) {
		tool.ReportProgress(ctx, tool.Update{Message: "asking"})
		v, err := graph.Interrupt[string](ctx, "question")
		if err != nil {
			return "", err
		}
		return "human said " + v, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	external, err := tool.NewDeclaration(model.ToolDefinition{Name: "ext", Description: "the caller runs it", InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("o", "ok", `{}`),
			scripted.CallWithID("q", "ask", `{}`),
			scripted.CallWithID("x", "ext", `{}`),
		),
		scripted.Reply("done"),
	)
	exec := executor.Parallel(nodes.StreamToolEvents())
	g := loop(t, m, []tool.Tool{ok, ask, external}, []nodes.ToolsOption{nodes.WithExecutor(exec)}, graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	modes := graph.WithModes(graph.ModeEvents)

	evs, err := collect(g.Stream(ctx, user("go"), graph.WithThread("t"), modes))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	starts := checkToolEvents(t, evs)
	assert.Equal(t, []string{"o", "q"}, starts[:2])
	all := slices.Clone(evs)

	for range 3 {
		evs, err = collect(g.ResumeStream(ctx, "t", modes, graph.WithResumeValue("yes")))
		starts = append(starts, checkToolEvents(t, evs)...)
		all = append(all, evs...)
		if !errors.As(err, &ie) {
			break
		}
		pending := false
		for _, p := range ie.Interrupts {
			if _, ok := p.Payload.(nodes.PendingToolCalls); ok {
				pending = true
			}
		}
		if pending {
			evs, err = collect(g.ResumeStream(ctx, "t", modes, graph.WithResumeValue(map[string]tool.Result{"x": tool.Text("ext done")})))
			starts = append(starts, checkToolEvents(t, evs)...)
			all = append(all, evs...)
			break
		}
	}
	require.NoError(t, err)
	assert.Equal(t, 1, count(starts, "o"), "%v", starts)
	assert.Zero(t, count(starts, "x"), "%v", starts)
	assert.Equal(t, int32(1), okRuns.Load())
	ends := endsByID(all)
	assert.Equal(t, "human said yes", ends["q"].Text())
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func TestEventsModelStreamingAndModelEnd(t *testing.T) {
	usage := model.Usage{InputTokens: 11, OutputTokens: 7, TotalTokens: 18}
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("a", "prog", `{"n":1}`), scripted.CallWithID("b", "prog", `{"n":12345}`)).WithText("let me check").WithUsage(usage),
		scripted.Reply("the answer is forty two").WithUsage(usage).WithFinishReason("stop"),
	)
	g := loop(t, m, []tool.Tool{progress("prog", true)}, nil)
	evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents|graph.ModeMessages|graph.ModeValues)))
	require.NoError(t, err)

	var (
		text     []strings.Builder
		ends     []nodes.ModelCall
		starts   int
		lastVal  nodes.Chat
		inCall   bool
		callIDs  []string
		callArgs []string
		msgIDs   []string
	)
	for _, ev := range evs {
		switch ev.Kind {
		case nodes.KindModelStart:
			require.False(t, inCall)
			inCall = true
			starts++
			msgIDs = append(msgIDs, ev.Payload.(nodes.ModelCall).MessageID)
			text = append(text, strings.Builder{})
			assert.Equal(t, "llm", ev.Node)
		case nodes.KindModelDelta:
			require.True(t, inCall, "delta outside a model call")
			assert.Equal(t, "llm", ev.Node)
			c := ev.Payload.(model.Chunk)
			text[len(text)-1].WriteString(c.Text)
			if c.ToolCall != nil {
				if c.ToolCall.ID != "" {
					callIDs = append(callIDs, c.ToolCall.ID)
					callArgs = append(callArgs, "")
					require.Equal(t, len(callIDs)-1, c.ToolCall.Index)
				}
				callArgs[c.ToolCall.Index] += c.ToolCall.Arguments
			}
		case nodes.KindModelEnd:
			require.True(t, inCall)
			inCall = false
			require.NoError(t, ev.Err)
			ends = append(ends, ev.Payload.(nodes.ModelCall))
		case graph.KindValues:
			lastVal = ev.State.(agentState).Chat
		}
	}
	require.Equal(t, 2, starts)
	require.Len(t, ends, 2)
	assert.Equal(t, usage, ends[0].Usage)
	assert.Equal(t, "tool_calls", ends[0].FinishReason)
	assert.Equal(t, usage, ends[1].Usage)
	assert.Equal(t, "stop", ends[1].FinishReason)
	assert.Equal(t, "scripted", ends[1].Provider)
	var replies, replyIDs []string
	for _, msg := range lastVal.Messages {
		if msg.Role == model.RoleAssistant {
			replies = append(replies, msg.Text())
			replyIDs = append(replyIDs, msg.ID)
		}
	}
	require.Len(t, replies, 2)
	assert.Equal(t, replyIDs, msgIDs, "each model call announces the ID its reply gets")
	assert.Equal(t, replies[0], text[0].String())
	assert.Equal(t, replies[1], text[1].String())
	assert.Equal(t, "the answer is forty two", replies[1])
	calls := lastVal.Messages[1].ToolCalls
	require.Len(t, calls, 2)
	assert.Equal(t, []string{calls[0].ID, calls[1].ID}, callIDs)
	assert.Equal(t, []string{string(calls[0].Arguments), string(calls[1].Arguments)}, callArgs)
}

func TestEventsModelFailureEndsWithError(t *testing.T) {
	fail := errors.New("provider down")
	m := scripted.New(scripted.Fail(fail))
	g := loop(t, m, nil, nil)
	evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents|graph.ModeMessages)))
	require.ErrorIs(t, err, fail)
	var kinds []graph.EventKind
	for _, ev := range evs {
		if ev.Kind == nodes.KindModelStart || ev.Kind == nodes.KindModelEnd || ev.Kind == nodes.KindModelDelta {
			kinds = append(kinds, ev.Kind)
			if ev.Kind == nodes.KindModelEnd {
				assert.ErrorIs(t, ev.Err, fail)
			}
		}
	}
	assert.Equal(t, []graph.EventKind{nodes.KindModelStart, nodes.KindModelEnd}, kinds)
}

func modeOf(k graph.EventKind) graph.Mode {
	switch k {
	case graph.KindValues:
		return graph.ModeValues
	case graph.KindUpdate:
		return graph.ModeUpdates
	case graph.KindCustom:
		return graph.ModeCustom
	case nodes.KindModelDelta:
		return graph.ModeMessages
	case graph.KindStepStart, graph.KindStepEnd, graph.KindCheckpoint:
		return graph.ModeDebug
	case graph.KindDone, graph.KindInterrupt:
		return 0
	}
	return graph.ModeEvents
}

func TestEventsWithModesIsExact(t *testing.T) {
	all := []graph.Mode{graph.ModeValues, graph.ModeUpdates, graph.ModeEvents, graph.ModeCustom, graph.ModeMessages, graph.ModeDebug}
	script := func() *scripted.Model {
		return scripted.New(
			scripted.CallTools(scripted.CallWithID("a", "prog", `{"n":2}`), scripted.CallWithID("b", "prog", `{"n":1}`)),
			scripted.Reply("all done now"),
		)
	}
	custom := tool.MustFunc("prog", "emits", func(ctx context.Context, in progIn) (string, error) {
		graph.EmitCustom(ctx, "note", in.N)
		for range in.N {
			tool.ReportProgress(ctx, tool.Update{Message: "p"})
		}
		return "ok", nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	seen := map[graph.Mode]bool{}
	for mask := graph.Mode(1); mask <= graph.ModeAll; mask++ {
		g := loop(t, script(), []tool.Tool{custom}, nil)
		evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(mask)))
		require.NoError(t, err)
		got := map[graph.Mode]bool{}
		for _, ev := range evs {
			md := modeOf(ev.Kind)
			if md == 0 {
				continue
			}
			assert.NotZero(t, mask&md, "mask %b: got %s", mask, ev.Kind)
			got[md] = true
		}
		for _, md := range all {
			if mask&md != 0 {
				assert.True(t, got[md], "mask %b: no event of mode %b", mask, md)
				seen[md] = true
			}
		}
		assert.Equal(t, graph.KindDone, evs[len(evs)-1].Kind)
	}
	assert.Len(t, seen, len(all))
}

func TestEventsNodeAndStepInParallelSupersteps(t *testing.T) {
	type st struct {
		nodes.Chat
	}
	b := graph.New[st](nodes.MessagesReducer[st]())
	var mu sync.Mutex
	models := map[string]*scripted.Model{}
	for _, name := range []string{"left", "right"} {
		m := scripted.New(
			scripted.CallTools(scripted.CallWithID(name+"-call", "prog", `{"n":2}`)).WithText(name + " thinks"),
		)
		models[name] = m
		b.AddNode(name, nodes.LLM[st](m, nodes.WithTools(progress("prog", true))))
		b.AddEdge(graph.START, name)
		b.AddEdge(name, "join")
	}
	b.AddNode("join", func(ctx context.Context, s st) (st, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range unansweredCalls(s.Messages) {
			s.Messages = append(s.Messages, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: []model.Part{model.TextPart("x")}})
		}
		return s, nil
	})
	b.AddEdge("join", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)
	evs, err := collect(g.Stream(context.Background(), st{}, graph.WithModes(graph.ModeEvents|graph.ModeMessages)))
	require.NoError(t, err)
	nodeStep := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == graph.KindNodeStart {
			nodeStep[ev.Node] = ev.Step
		}
	}
	require.Equal(t, nodeStep["left"], nodeStep["right"])
	byNode := map[string][]string{}
	for _, ev := range evs {
		switch ev.Kind {
		case nodes.KindModelStart, nodes.KindModelEnd:
			assert.Contains(t, []string{"left", "right"}, ev.Node)
			assert.Equal(t, nodeStep[ev.Node], ev.Step)
		case nodes.KindModelDelta:
			c := ev.Payload.(model.Chunk)
			assert.Equal(t, nodeStep[ev.Node], ev.Step)
			byNode[ev.Node] = append(byNode[ev.Node], c.Text)
			if c.ToolCall != nil && c.ToolCall.ID != "" {
				assert.Equal(t, ev.Node+"-call", c.ToolCall.ID)
			}
		}
	}
	assert.Equal(t, "left thinks", strings.Join(byNode["left"], ""))
	assert.Equal(t, "right thinks", strings.Join(byNode["right"], ""))
}

func unansweredCalls(msgs []model.Message) []model.ToolCall {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []model.ToolCall
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
	}
	return out
}

func TestEventsToolNodeStepInParallelSupersteps(t *testing.T) {
	b := graph.New[agentState]()
	m := scripted.New(scripted.CallTools(
		scripted.CallWithID("a", "prog", `{"n":2}`),
		scripted.CallWithID("b", "prog", `{"n":1}`),
	))
	b.AddNode("llm", nodes.LLM[agentState](m, nodes.WithTools(progress("prog", true))))
	b.AddEdge(graph.START, "llm")
	b.AddEdge("llm", "tools")
	b.AddEdge("llm", "side")
	b.AddNode("side", func(ctx context.Context, s agentState) (agentState, error) {
		graph.EmitCustom(ctx, "side", nil)
		return s, nil
	})
	b.AddEdge("side", graph.END)
	nodes.AddTools[agentState](b, "tools", graph.END, nodes.WithTools(progress("prog", true)))
	g, err := b.Compile()
	require.NoError(t, err)
	evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents|graph.ModeCustom)))
	require.NoError(t, err)
	step := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == graph.KindNodeStart {
			step[ev.Node] = ev.Step
		}
	}
	require.Equal(t, step["tools"], step["side"])
	n := 0
	for _, ev := range evs {
		switch ev.Kind {
		case nodes.KindToolStart, nodes.KindToolUpdate, nodes.KindToolEnd:
			n++
			assert.Equal(t, "tools", ev.Node)
			assert.Equal(t, step["tools"], ev.Step)
		case graph.KindCustom:
			assert.Equal(t, "side", ev.Node)
		}
	}
	assert.Equal(t, 2+2+3, n)
	assert.Equal(t, []string{"a", "b"}, checkToolEvents(t, evs))
}

func TestEventsToolPairsUnderExecutorVariants(t *testing.T) {
	block := func(req *executor.Request) bool { return req.Call.ID == "c" }
	hooks := executor.Hooks{
		BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
			if block(req) {
				r := tool.ErrorResult(tool.CodePermissionDenied, errors.New("blocked"))
				r.Status = tool.StatusDenied
				return &r, nil
			}
			return nil, nil
		},
		AfterCall: func(_ context.Context, _ *executor.Request, res *tool.Result) error { return nil },
	}
	pieces := tool.MustStreamFunc("pieces", "streams", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			for i := range in.N {
				if !yield(fmt.Sprintf("piece %d;", i), nil) {
					return
				}
			}
		}
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true, ConcurrencyGroup: "g"}))
	variants := map[string]executor.Executor{
		"parallel":        executor.Parallel(nodes.StreamToolEvents()),
		"hooks":           executor.Parallel(nodes.StreamToolEvents(), executor.WithHooks(hooks)),
		"max1":            executor.Parallel(nodes.StreamToolEvents(), executor.WithMaxConcurrency(1)),
		"group":           executor.Parallel(nodes.StreamToolEvents(), executor.WithGroupLimit("g", 1)),
		"failfast":        executor.Parallel(nodes.StreamToolEvents(), executor.WithFailFast()),
		"sequential":      executor.Sequential(nodes.StreamToolEvents()),
		"sequentialHooks": executor.Sequential(nodes.StreamToolEvents(), executor.WithHooks(hooks)),
		"unsafe":          executor.Parallel(nodes.StreamToolEvents(), executor.WithConcurrencySafeCheck(true)),
	}
	for name, exec := range variants {
		t.Run(name, func(t *testing.T) {
			tools := []tool.Tool{progress("prog", name != "unsafe"), pieces}
			m := scripted.New(
				scripted.CallTools(
					scripted.CallWithID("a", "prog", `{"n":3}`),
					scripted.CallWithID("b", "pieces", `{"n":3}`),
					scripted.CallWithID("c", "prog", `{"n":1}`),
					scripted.CallWithID("d", "pieces", `{"n":2}`),
					scripted.CallWithID("e", "prog", `{"n":2,"fail":true}`),
				),
				scripted.Reply("done"),
			)
			g := loop(t, m, tools, []nodes.ToolsOption{nodes.WithExecutor(exec)})
			evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents)))
			if name == "failfast" {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, []string{"a", "b", "c", "d", "e"}, checkToolEvents(t, evs))
			ends := endsByID(evs)
			if name != "failfast" {
				assert.Equal(t, "did 3", ends["a"].Text())
				assert.Equal(t, "piece 0;piece 1;piece 2;", ends["b"].Text())
				assert.Equal(t, "piece 0;piece 1;", ends["d"].Text())
				assert.Equal(t, tool.StatusFailed, ends["e"].Status)
				updates := map[string]int{}
				for _, te := range toolEvents(evs) {
					if te.Kind == executor.ToolUpdate {
						updates[te.Call.ID]++
					}
				}
				assert.Equal(t, 3, updates["a"])
				assert.Equal(t, 3, updates["b"])
				assert.Equal(t, 2, updates["d"])
				assert.Equal(t, 2, updates["e"])
			}
			if strings.Contains(name, "ooks") {
				assert.Equal(t, tool.StatusDenied, ends["c"].Status)
			}
			for _, te := range toolEvents(evs) {
				if te.Kind == executor.ToolStart {
					assert.Empty(t, te.Result.Status)
				}
			}
		})
	}
}

func TestEventsLargeBatches(t *testing.T) {
	for _, n := range []int{2, 16, 17, 64, 65, 130} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			calls := make([]model.ToolCall, n)
			want := make([]string, n)
			for i := range calls {
				want[i] = fmt.Sprintf("id%03d", i)
				calls[i] = scripted.CallWithID(want[i], "prog", fmt.Sprintf(`{"n":%d}`, i%3+1))
			}
			m := scripted.New(scripted.CallTools(calls...), scripted.Reply("done"))
			g := loop(t, m, []tool.Tool{progress("prog", true)}, nil)
			evs, err := collect(g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents)))
			require.NoError(t, err)
			assert.Equal(t, want, checkToolEvents(t, evs))
			updates := map[string]int{}
			for _, te := range toolEvents(evs) {
				if te.Kind == executor.ToolUpdate {
					updates[te.Call.ID]++
				}
			}
			for i, id := range want {
				assert.Equal(t, i%3+1, updates[id], id)
			}
		})
	}
}

func TestEventsStreamLeftMidBatch(t *testing.T) {
	for _, exec := range []executor.Executor{
		executor.Parallel(nodes.StreamToolEvents()),
		executor.Parallel(nodes.StreamToolEvents(), executor.WithHooks(executor.Hooks{AfterCall: func(context.Context, *executor.Request, *tool.Result) error { return nil }})),
		executor.Sequential(nodes.StreamToolEvents()),
	} {
		var ran atomic.Int32
		m := scripted.New(
			scripted.CallTools(
				scripted.CallWithID("a", "sleep", `{"ms":100000,"name":"a"}`),
				scripted.CallWithID("b", "prog", `{"n":50}`),
			),
			scripted.Reply("done"),
		)
		g := loop(t, m, []tool.Tool{sleeper(&ran), progress("prog", true)}, []nodes.ToolsOption{nodes.WithExecutor(exec)})
		var got []graph.EventKind
		for ev, err := range g.Stream(context.Background(), user("go"), graph.WithModes(graph.ModeEvents)) {
			require.NoError(t, err)
			got = append(got, ev.Kind)
			if ev.Kind == nodes.KindToolStart {
				break
			}
		}
		assert.Equal(t, nodes.KindToolStart, got[len(got)-1])
	}
}

func TestEventsTwoInterruptsInOneBatch(t *testing.T) {
	ask := tool.MustFunc("ask", "asks", func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		v, err := graph.Interrupt[string](ctx, in.Q)
		if err != nil {
			return "", err
		}
		return in.Q + "=" + v, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("q1", "ask", `{"q":"one"}`), scripted.CallWithID("q2", "ask", `{"q":"two"}`)),
		scripted.Reply("done"),
	)
	g := loop(t, m, []tool.Tool{ask}, nil, graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	modes := graph.WithModes(graph.ModeEvents)
	evs, err := collect(g.Stream(ctx, user("go"), graph.WithThread("two"), modes))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, []string{"q1", "q2"}, checkToolEvents(t, evs))
	require.Len(t, ie.Interrupts, 2)
	var opts []graph.RunOption
	for _, in := range ie.Interrupts {
		opts = append(opts, graph.WithResume(in.ID, "ans-"+in.Payload.(string)))
	}
	evs, err = collect(g.ResumeStream(ctx, "two", append(opts, modes)...))
	require.NoError(t, err)
	assert.Equal(t, []string{"q1", "q2"}, checkToolEvents(t, evs))
	ends := endsByID(evs)
	assert.Equal(t, "one=ans-one", ends["q1"].Text())
	assert.Equal(t, "two=ans-two", ends["q2"].Text())
}
