package agent_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

func TestTracerLines(t *testing.T) {
	call := model.ToolCall{ID: "c1", Name: "search", Arguments: []byte(`{ "query": "go\ngenerics" }`)}
	ok := tool.Text("found it")
	failed := tool.ErrorResult(tool.CodeTimeout, errors.New("search timed out"))
	failed.Status = tool.StatusTimeout
	tests := []struct {
		name string
		opts []agent.TraceOption
		ev   graph.Event
		want string
	}{
		{"model end with usage", nil,
			graph.Event{Kind: nodes.KindModelEnd, Graph: "sup", Duration: 1234 * time.Microsecond, Payload: nodes.ModelCall{Provider: "openai", Model: "gpt-4o", Usage: model.Usage{InputTokens: 12, OutputTokens: 3}}},
			"sup ◆ model gpt-4o · 12 in / 3 out tokens · 1ms\n"},
		{"model end without usage or name", []agent.TraceOption{agent.TraceDurations(0)},
			graph.Event{Kind: nodes.KindModelEnd, Graph: "sup", Payload: nodes.ModelCall{Provider: "scripted"}},
			"sup ◆ model scripted\n"},
		{"model failure", []agent.TraceOption{agent.TraceDurations(0)},
			graph.Event{Kind: nodes.KindModelEnd, Graph: "sup", Err: errors.New("401 unauthorized"), Payload: nodes.ModelCall{Model: "m"}},
			"sup ✗ model m failed: 401 unauthorized\n"},
		{"tool start, arguments on one line", nil,
			graph.Event{Kind: nodes.KindToolStart, Graph: "sup", Payload: executor.Event{Kind: executor.ToolStart, Call: call}},
			`sup → search {"query":"go\ngenerics"}` + "\n"},
		{"tool end", []agent.TraceOption{agent.TraceDurations(time.Millisecond)},
			graph.Event{Kind: nodes.KindToolEnd, Graph: "sup", Payload: executor.Event{Kind: executor.ToolEnd, Call: call, Result: ok, Duration: 2600 * time.Microsecond}},
			"sup ✓ search · 3ms: found it\n"},
		{"tool failure", []agent.TraceOption{agent.TraceDurations(0)},
			graph.Event{Kind: nodes.KindToolEnd, Graph: "sup", Payload: executor.Event{Kind: executor.ToolEnd, Call: call, Result: failed}},
			"sup ✗ search timeout: search timed out\n"},
		{"tool update", nil,
			graph.Event{Kind: nodes.KindToolUpdate, Graph: "sup", Payload: executor.Event{Kind: executor.ToolUpdate, Call: call, Update: tool.Update{Message: "page 2 of 3"}}},
			"sup … search: page 2 of 3\n"},
		{"nested path indents and names the chain", []agent.TraceOption{agent.TraceDurations(0)},
			graph.Event{Kind: nodes.KindToolEnd, Graph: "researcher", Path: []string{"researcher", "librarian"}, Payload: executor.Event{Call: call, Result: ok}},
			"    run › researcher › librarian ✓ search: found it\n"},
		{"root named", []agent.TraceOption{agent.TraceRoot("team")},
			graph.Event{Kind: graph.KindCustom, Graph: "x", Path: []string{"w"}, Name: "progress", Payload: map[string]int{"done": 2}},
			`  team › w • progress: {"done":2}` + "\n"},
		{"long text is cut", []agent.TraceOption{agent.TraceWidth(10)},
			graph.Event{Kind: graph.KindCustom, Graph: "sup", Name: "note", Payload: "a very long note indeed"},
			"sup • note: a very lon…\n"},
		{"handoff retry", nil,
			graph.Event{Kind: graph.KindCustom, Graph: "sup", Name: handoff.EventRetry, Payload: handoff.Retry{Agent: "writer", Attempt: 1, Err: "boom", Wait: 20 * time.Millisecond}},
			"sup ↻ writer failed (attempt 1), retrying in 20ms: boom\n"},
		{"interrupt", nil,
			graph.Event{Kind: graph.KindInterrupt, Graph: "sup", Payload: []graph.PendingInterrupt{{Node: "tools", Path: []string{"payer"}, Payload: "pay 40?"}}},
			"  sup › payer ⏸ interrupted at tools: pay 40?\n"},
		{"nodes are quiet by default", nil, graph.Event{Kind: graph.KindNodeStart, Graph: "sup", Node: "agent"}, ""},
		{"node start", []agent.TraceOption{agent.TraceNodes()}, graph.Event{Kind: graph.KindNodeStart, Graph: "sup", Node: "agent"}, "sup ▶ node agent\n"},
		{"node failure", []agent.TraceOption{agent.TraceNodes(), agent.TraceDurations(0)},
			graph.Event{Kind: graph.KindNodeEnd, Graph: "sup", Node: "agent", Err: errors.New("bad")}, "sup ✗ node agent failed: bad\n"},
		{"values are not traced", nil, graph.Event{Kind: graph.KindValues, Graph: "sup", State: agent.Ask("x")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			agent.NewTracer(&b, tc.opts...).Print(tc.ev)
			assert.Equal(t, tc.want, b.String())
		})
	}
}

func TestTracerAnswersAndSwarmAgents(t *testing.T) {
	var b bytes.Buffer
	tr := agent.NewTracer(&b, agent.TraceDurations(0))
	msg := func(id, name, text string, calls ...model.ToolCall) model.Message {
		m := model.Assistant(text, calls...)
		m.ID, m.Name = id, name
		return m
	}
	state := func(msgs ...model.Message) agent.SwarmState {
		return agent.SwarmState{Chat: nodes.Chat{Messages: append([]model.Message{model.User("hi")}, msgs...)}}
	}
	a1 := msg("1", "alice", "Passing you to Bob.", model.ToolCall{ID: "t", Name: "transfer_to_bob"})
	b1 := msg("2", "bob", "Hello,\n\nBob here.")
	for _, ev := range []graph.Event{
		{Kind: nodes.KindModelStart, Graph: "swarm", Payload: nodes.ModelCall{Agent: "alice"}},
		{Kind: nodes.KindModelEnd, Graph: "swarm", Payload: nodes.ModelCall{Agent: "alice", Model: "m"}},
		{Kind: graph.KindUpdate, Graph: "swarm", State: state(a1)},
		{Kind: graph.KindUpdate, Graph: "swarm", State: state(a1)}, // the same message again: not repeated
		{Kind: nodes.KindModelStart, Graph: "swarm", Payload: nodes.ModelCall{Agent: "bob"}},
		{Kind: graph.KindUpdate, Graph: "swarm", State: state(a1, b1)},
		{Kind: graph.KindDone, Graph: "swarm", State: state(a1, b1)},
	} {
		tr.Print(ev)
	}
	require.NoError(t, tr.Err())
	assert.Equal(t, "swarm › alice ◆ model m\n"+
		"swarm › alice » Passing you to Bob.\n"+
		"swarm › bob » Hello,\n\n  Bob here.\n"+
		"swarm › bob ■ done: 1 model call\n", b.String())

	// A reply's reasoning comes first, on one line.
	b.Reset()
	tr = agent.NewTracer(&b, agent.TraceDurations(0))
	thinking := msg("3", "carol", "It is sunny.")
	thinking.Content = append([]model.Part{model.ReasoningPart("The user asks\nabout the weather.", []byte("sig"))}, thinking.Content...)
	tr.Print(graph.Event{Kind: graph.KindUpdate, Graph: "g", State: state(thinking)})
	assert.Equal(t, "g ∴ thinks: The user asks about the weather.\ng » It is sunny.\n", b.String())

	// A final answer not printed before is printed in full.
	b.Reset()
	tr = agent.NewTracer(&b)
	tr.Print(graph.Event{Kind: graph.KindDone, Graph: "g", State: state(b1)})
	assert.Equal(t, "g » Hello,\n\n  Bob here.\ng ■ done\n", b.String())
}

// script plays a fixed sequence of events and errors.
func script(evs []graph.Event, err error) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
		if err != nil {
			yield(graph.Event{}, err)
		}
	}
}

func TestPrintTrace(t *testing.T) {
	t.Run("returns the final state", func(t *testing.T) {
		var b bytes.Buffer
		final, err := agent.PrintTrace(&b, script([]graph.Event{{Kind: graph.KindDone, Graph: "g", State: agent.Ask("q")}}, nil))
		require.NoError(t, err)
		assert.Equal(t, agent.Ask("q"), final)
		assert.Equal(t, "g ■ done\n", b.String())
	})
	t.Run("a failure ends the trace", func(t *testing.T) {
		var b bytes.Buffer
		_, err := agent.PrintTrace(&b, script([]graph.Event{{Kind: graph.KindNodeStart, Graph: "g"}}, errors.New("disk full")))
		require.EqualError(t, err, "disk full")
		assert.Equal(t, "g ✗ run failed: disk full\n", b.String())
	})
	t.Run("an interrupt is not a failure", func(t *testing.T) {
		var b bytes.Buffer
		_, err := agent.PrintTrace(&b, script(nil, &graph.InterruptError{}))
		require.ErrorIs(t, err, graph.ErrInterrupted)
		assert.Equal(t, "run ⏸ the run is waiting to be resumed\n", b.String())
	})
	t.Run("write errors are reported", func(t *testing.T) {
		_, err := agent.PrintTrace(failingWriter{}, script([]graph.Event{{Kind: graph.KindDone, Graph: "g"}}, nil))
		require.EqualError(t, err, "no space left")
	})
	t.Run("no writer or no stream is an error, not a panic", func(t *testing.T) {
		ran := false
		seq := func(yield func(graph.Event, error) bool) { ran = true }
		_, err := agent.PrintTrace(nil, seq)
		require.EqualError(t, err, "agent: the tracer has no writer")
		assert.False(t, ran, "nothing runs")
		_, err = agent.PrintTrace(&bytes.Buffer{}, nil)
		require.EqualError(t, err, "agent: PrintTrace has no stream")

		tr := agent.NewTracer(nil)
		tr.Print(graph.Event{Kind: graph.KindDone, Graph: "g", State: agent.Ask("q")})
		tr.Fail(errors.New("boom"))
		require.EqualError(t, tr.Err(), "agent: the tracer has no writer")
	})
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left") }

func TestTraceOfASupervisorRun(t *testing.T) {
	search := tool.MustFunc("search", "searches the web", func(_ context.Context, in struct {
		Query string `json:"query"`
	}) (string, error) {
		return "Go 1.18 (March 2022) added type parameters.", nil
	})
	approve := tool.MustFunc("approve", "asks the editor", func(ctx context.Context, _ struct{}) (string, error) {
		v, err := graph.Interrupt[string](ctx, "publish?")
		return "editor: " + v, err
	})
	research := scripted.New(
		scripted.CallTools(scripted.Call("search", `{"query":"go generics"}`)).WithUsage(model.Usage{InputTokens: 30, OutputTokens: 8}),
		echoLastTool("Found: "),
	)
	write := scripted.New(scripted.CallTools(scripted.Call("approve", `{}`)), echoLastTool("Draft approved by "))
	rg := newWorker(t, "researcher", research, agent.WithTools(search))
	wg := newWorker(t, "writer", write, agent.WithTools(approve))
	sup := scripted.New(
		scripted.CallTools(scripted.Call("researcher", `{"task":"When did Go get generics?"}`)).WithText("Asking the researcher."),
		scripted.CallTools(scripted.Call("writer", `{"task":"Write it up."}`)),
		echoLastTool("Final: "),
	)
	g, err := agent.NewSupervisor(sup, []agent.Worker{
		{Name: "researcher", Description: "Finds facts.", Agent: rg},
		{Name: "writer", Description: "Writes.", Agent: wg},
	}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	modes := graph.WithModes(graph.ModeEvents | graph.ModeUpdates | graph.ModeCustom)

	var b bytes.Buffer
	_, err = agent.PrintTrace(&b, g.Stream(ctx, agent.Ask("Tell me about Go generics."), graph.WithThread("t"), modes), agent.TraceDurations(0))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	final, err := agent.PrintTrace(&b, g.ResumeStream(ctx, "t", graph.WithResumeValue("yes"), modes), agent.TraceDurations(0))
	require.NoError(t, err)
	assert.Equal(t, "Final: Draft approved by editor: yes", agent.FinalText(final.(agent.State).Messages))
	assert.Equal(t, strings.TrimLeft(`
supervisor ◆ model scripted
supervisor » Asking the researcher.
supervisor → researcher {"task":"When did Go get generics?"}
  supervisor › researcher ◆ model scripted · 30 in / 8 out tokens
  supervisor › researcher → search {"query":"go generics"}
  supervisor › researcher ✓ search: Go 1.18 (March 2022) added type parameters.
  supervisor › researcher ◆ model scripted
  supervisor › researcher » Found: Go 1.18 (March 2022) added type parameters.
supervisor ✓ researcher: Found: Go 1.18 (March 2022) added type parameters.
supervisor ◆ model scripted
supervisor → writer {"task":"Write it up."}
  supervisor › writer ◆ model scripted
  supervisor › writer → approve {}
  supervisor › writer ⏸ approve waits for input
supervisor ⏸ writer waits for input
  supervisor › writer ⏸ interrupted at tools: publish?
supervisor ⏸ the run is waiting to be resumed
supervisor → writer {"task":"Write it up."}
  supervisor › writer → approve {}
  supervisor › writer ✓ approve: editor: yes
  supervisor › writer ◆ model scripted
  supervisor › writer » Draft approved by editor: yes
supervisor ✓ writer: Draft approved by editor: yes
supervisor ◆ model scripted
supervisor » Final: Draft approved by editor: yes
supervisor ■ done: 2 model calls · 2 tool calls
`, "\n"), b.String())
}
