package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

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
)

func e2eCollect(seq func(func(graph.Event, error) bool)) ([]graph.Event, error) {
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

func pathOf(ev graph.Event) string { return strings.Join(ev.Path, "/") }

// e2eCheckTools checks, per path, step and node, that every call starts
// once and ends once, in call order, with its updates in between. A nested
// step can run again when its caller re-runs a call (a batch waiting for an
// interrupted call): a batch may start over once all its calls ended.
func e2eCheckTools(t *testing.T, evs []graph.Event) map[string][]string {
	t.Helper()
	type key struct {
		path string
		step int
		node string
	}
	open := map[key]map[string]bool{}
	lastStart := map[key]int{}
	lastEnd := map[key]int{}
	startsByPath := map[string][]string{}
	for _, ev := range evs {
		te, ok := ev.Payload.(executor.Event)
		if !ok {
			continue
		}
		k := key{pathOf(ev), ev.Step, ev.Node}
		if open[k] == nil {
			open[k] = map[string]bool{}
			lastStart[k], lastEnd[k] = -1, -1
		}
		id := te.Call.ID
		switch ev.Kind {
		case nodes.KindToolStart:
			if len(open[k]) == 0 && te.Index <= lastStart[k] {
				lastStart[k], lastEnd[k] = -1, -1 // the batch runs again
			}
			assert.False(t, open[k][id], "%v: %s started while running", k, id)
			open[k][id] = true
			assert.Greater(t, te.Index, lastStart[k], "%v: start of %s out of order", k, id)
			lastStart[k] = te.Index
			startsByPath[k.path] = append(startsByPath[k.path], id)
		case nodes.KindToolUpdate:
			assert.True(t, open[k][id], "%v: update of %s outside its call", k, id)
		case nodes.KindToolEnd:
			assert.True(t, open[k][id], "%v: end of %s without its start", k, id)
			delete(open[k], id)
			assert.Greater(t, te.Index, lastEnd[k], "%v: end of %s out of order", k, id)
			lastEnd[k] = te.Index
		}
	}
	for k, ids := range open {
		assert.Empty(t, ids, "%v: calls without an end", k)
	}
	return startsByPath
}

func stepTool(name string) tool.Tool {
	return tool.MustFunc(name, "does a step", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		for i := range in.N {
			tool.ReportProgress(ctx, tool.Update{Message: fmt.Sprintf("%s %d", name, i)})
		}
		return fmt.Sprintf("%s did %d", name, in.N), nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
}

func TestEventsSupervisorNestedRunsCarryTheirPath(t *testing.T) {
	usage := model.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}
	research := scripted.New(
		scripted.CallTools(scripted.CallWithID("rs1", "search", `{"n":2}`), scripted.CallWithID("rs2", "search", `{"n":1}`)),
		scripted.Reply("generics came in Go 1.18").WithUsage(usage),
	)
	write := scripted.New(
		scripted.CallTools(scripted.CallWithID("wr1", "draft", `{"n":1}`)),
		scripted.Reply("a short draft").WithUsage(usage),
	)
	sup := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("r", "researcher", `{"task":"find"}`),
			scripted.CallWithID("w", "writer", `{"task":"write"}`),
		),
		scripted.Reply("all done here"),
	)
	g, err := agent.NewSupervisor(sup, []agent.Worker{
		{Name: "researcher", Description: "finds facts", Agent: newWorker(t, "researcher", research, agent.WithTools(stepTool("search")))},
		{Name: "writer", Description: "writes", Agent: newWorker(t, "writer", write, agent.WithTools(stepTool("draft")))},
	})
	require.NoError(t, err)
	evs, err := e2eCollect(g.Stream(context.Background(), agent.State{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}},
		graph.WithModes(graph.ModeEvents|graph.ModeMessages)))
	require.NoError(t, err)

	starts := e2eCheckTools(t, evs)
	assert.Equal(t, []string{"r", "w"}, starts[""])
	assert.ElementsMatch(t, []string{"rs1", "rs2"}, starts["researcher"])
	assert.Equal(t, []string{"wr1"}, starts["writer"])

	text := map[string]*strings.Builder{}
	var ends = map[string][]nodes.ModelCall{}
	handoffOpen := map[string]bool{}
	for _, ev := range evs {
		p := pathOf(ev)
		if te, ok := ev.Payload.(executor.Event); ok && p == "" {
			name := map[string]string{"r": "researcher", "w": "writer"}[te.Call.ID]
			switch ev.Kind {
			case nodes.KindToolStart:
				handoffOpen[name] = true
			case nodes.KindToolEnd:
				handoffOpen[name] = false
			}
		}
		if p != "" {
			assert.True(t, handoffOpen[p], "event %s of %q outside its handoff call", ev.Kind, p)
			assert.Contains(t, []string{"researcher", "writer"}, p)
		}
		switch ev.Kind {
		case nodes.KindModelDelta:
			if text[p] == nil {
				text[p] = &strings.Builder{}
			}
			text[p].WriteString(ev.Payload.(model.Chunk).Text)
		case nodes.KindModelEnd:
			mc := ev.Payload.(nodes.ModelCall)
			ends[p] = append(ends[p], mc)
			switch p {
			case "researcher", "writer":
				assert.Equal(t, p, mc.Agent)
			case "":
				assert.Equal(t, agent.SupervisorName, mc.Agent)
			}
		}
	}
	assert.Equal(t, "generics came in Go 1.18", text["researcher"].String())
	assert.Equal(t, "a short draft", text["writer"].String())
	assert.Equal(t, "all done here", text[""].String())
	for _, p := range []string{"researcher", "writer"} {
		require.Len(t, ends[p], 2, p)
		assert.Equal(t, "tool_calls", ends[p][0].FinishReason)
		assert.Equal(t, "stop", ends[p][1].FinishReason)
		assert.Equal(t, usage, ends[p][1].Usage)
	}
}

func TestEventsSwarmTransferPairsAndModes(t *testing.T) {
	alice := scripted.New(
		scripted.CallTools(scripted.CallWithID("a1", "work", `{"n":2}`), scripted.CallWithID("t1", agent.TransferToolName("bob"), `{}`), scripted.CallWithID("a2", "work", `{"n":1}`)),
	)
	bob := scripted.New(scripted.Reply("bob speaking"))
	g, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "alice", Description: "first", Model: alice, Options: []agent.Option{agent.WithTools(stepTool("work"))}},
		{Name: "bob", Description: "second", Model: bob},
	})
	require.NoError(t, err)
	evs, err := e2eCollect(g.Stream(context.Background(), agent.SwarmState{Chat: nodes.Chat{Messages: []model.Message{model.User("hi")}}},
		graph.WithModes(graph.ModeEvents)))
	require.NoError(t, err)
	starts := e2eCheckTools(t, evs)
	assert.Equal(t, []string{"a1", "t1", "a2"}, starts[""])
	var nodesSeen []string
	for _, ev := range evs {
		assert.NotEqual(t, nodes.KindModelDelta, ev.Kind)
		assert.NotEqual(t, graph.KindValues, ev.Kind)
		if ev.Kind == nodes.KindModelStart {
			nodesSeen = append(nodesSeen, ev.Node)
		}
		if _, ok := ev.Payload.(executor.Event); ok {
			assert.Equal(t, agent.SwarmToolsNode("alice"), ev.Node)
		}
	}
	assert.Equal(t, []string{"alice", "bob"}, nodesSeen)
	last := evs[len(evs)-1]
	require.Equal(t, graph.KindDone, last.Kind)
	st := last.State.(agent.SwarmState)
	assert.Equal(t, "bob", st.Active)
	assert.True(t, slices.ContainsFunc(st.Messages, func(m model.Message) bool { return m.Text() == "bob speaking" }))
}

func e2eModeOf(k graph.EventKind) graph.Mode {
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

func TestEventsSupervisorModesAreExactAtEveryDepth(t *testing.T) {
	for _, mode := range []graph.Mode{graph.ModeValues, graph.ModeUpdates, graph.ModeEvents, graph.ModeCustom, graph.ModeMessages, graph.ModeDebug} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			noisy := tool.MustFunc("noisy", "emits", func(ctx context.Context, _ struct{}) (string, error) {
				graph.EmitCustom(ctx, "note", "hello")
				tool.ReportProgress(ctx, tool.Update{Message: "half"})
				return "ok", nil
			})
			worker := newWorker(t, "helper", scripted.New(
				scripted.CallTools(scripted.CallWithID("n1", "noisy", `{}`)),
				scripted.Reply("helped a lot"),
			), agent.WithTools(noisy))
			sup := scripted.New(
				scripted.CallTools(scripted.CallWithID("h", "helper", `{"task":"help"}`)),
				scripted.Reply("finished now"),
			)
			g, err := agent.NewSupervisor(sup, []agent.Worker{{Name: "helper", Description: "helps", Agent: worker}})
			require.NoError(t, err)
			evs, err := e2eCollect(g.Stream(context.Background(), agent.State{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}}, graph.WithModes(mode)))
			require.NoError(t, err)
			depths := map[int]bool{}
			for _, ev := range evs {
				if md := e2eModeOf(ev.Kind); md != 0 {
					assert.Equal(t, mode, md, "got %s at %v", ev.Kind, ev.Path)
					depths[len(ev.Path)] = true
					if len(ev.Path) > 0 {
						assert.Equal(t, []string{"helper"}, ev.Path)
					}
				}
			}
			assert.True(t, depths[1], "no nested event")
			if mode != graph.ModeCustom {
				assert.True(t, depths[0], "no top-level event")
			}
			assert.Equal(t, graph.KindDone, evs[len(evs)-1].Kind)
		})
	}
}

func TestEventsSupervisorNestedInterruptResumes(t *testing.T) {
	var asked int
	confirm := tool.MustFunc("confirm", "asks", func(ctx context.Context, _ struct{}) (string, error) {
		asked++
		tool.ReportProgress(ctx, tool.Update{Message: "asking"})
		ok, err := graph.Interrupt[bool](ctx, "pay?")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("paid=%v", ok), nil
	})
	payer := newWorker(t, "payer", scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "confirm", `{}`)),
		scripted.Reply("payment made"),
	), agent.WithTools(confirm))
	other := newWorker(t, "other", scripted.New(scripted.Reply("other done")))
	sup := scripted.New(
		scripted.CallTools(scripted.CallWithID("p", "payer", `{"task":"pay"}`), scripted.CallWithID("o", "other", `{"task":"x"}`)),
		scripted.Reply("all paid"),
	)
	g, err := agent.NewSupervisor(sup, []agent.Worker{
		{Name: "payer", Description: "pays", Agent: payer},
		{Name: "other", Description: "other", Agent: other},
	}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	modes := graph.WithModes(graph.ModeEvents | graph.ModeMessages)
	evs, err := e2eCollect(g.Stream(ctx, agent.State{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}}, graph.WithThread("b"), modes))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, []string{"payer"}, ie.Interrupts[0].Path)
	e2eCheckTools(t, evs)
	var interrupts int
	for _, ev := range evs {
		if ev.Kind == graph.KindInterrupt {
			interrupts++
		}
	}
	assert.Equal(t, 1, interrupts)

	evs, err = e2eCollect(g.ResumeStream(ctx, "b", modes, graph.WithResume(ie.Interrupts[0].ID, true)))
	require.NoError(t, err)
	starts := e2eCheckTools(t, evs)
	assert.Equal(t, []string{"c1"}, starts["payer"])
	assert.NotContains(t, starts[""], "o")
	var text strings.Builder
	for _, ev := range evs {
		if ev.Kind == nodes.KindModelDelta && pathOf(ev) == "payer" {
			text.WriteString(ev.Payload.(model.Chunk).Text)
		}
		if te, ok := ev.Payload.(executor.Event); ok && ev.Kind == nodes.KindToolEnd && te.Call.ID == "c1" {
			assert.Equal(t, "paid=true", te.Result.Text())
		}
	}
	assert.Equal(t, "payment made", text.String())
	last := evs[len(evs)-1]
	require.Equal(t, graph.KindDone, last.Kind)
	assert.Equal(t, "all paid", last.State.(agent.State).Messages[len(last.State.(agent.State).Messages)-1].Text())
}
