package handoff_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// escalating returns a worker whose model calls its "decide" tool, which
// answers with handoff.ToParent(text, to).
func escalating(t *testing.T, text, to string) *graph.Graph[agent.State] {
	t.Helper()
	decide := tool.MustFunc("decide", "Decides where the caller goes.", func(context.Context, struct{}) (tool.Result, error) {
		return handoff.ToParent(text, to), nil
	})
	m := scripted.New(scripted.CallTools(scripted.Call("decide", `{}`)))
	return worker(t, "triage", m, agent.WithTools(decide))
}

func TestToParentEndEndsTheCallersTurnWithTheAgentsAnswer(t *testing.T) {
	triage, err := handoff.New("triage", "Triages a request.", escalating(t, "Refund approved; nothing more to do.", graph.END))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.Call("triage", `{"task":"Refund order 42."}`)))
	out, err := parent(t, pm, []tool.Tool{triage}).Invoke(t.Context(), agent.Ask("refund please"))
	require.NoError(t, err)
	assert.Equal(t, 1, pm.Calls(), "the parent's model is not called again: its turn ended")
	assert.Equal(t, "Refund approved; nothing more to do.", agent.FinalText(out.Messages))
}

func TestToParentRoutesTheCallersGraphToANode(t *testing.T) {
	triage, err := handoff.New("triage", "Triages a request.", escalating(t, "needs a human", "human"))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.Call("triage", `{"task":"Refund order 42."}`)))
	b := graph.New[agent.State](nodes.MessagesReducer[agent.State]()).
		AddNode("llm", nodes.LLM[agent.State](pm, nodes.WithTools(triage))).
		AddNode("human", func(_ context.Context, s agent.State) (agent.State, error) {
			s.Messages = append(s.Messages, model.Assistant("A human takes it from here."))
			return s, nil
		}).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[agent.State]("tools"), "tools", graph.END)
	nodes.AddTools[agent.State](b, "tools", "llm", nodes.WithTools(triage), nodes.WithTransfers("human"))
	g, err := b.Compile()
	require.NoError(t, err)

	out, err := g.Invoke(t.Context(), agent.Ask("refund please"))
	require.NoError(t, err)
	assert.Equal(t, 1, pm.Calls(), "the parent went to the node the agent named, not back to its model")
	assert.Equal(t, "A human takes it from here.", agent.FinalText(out.Messages))
	call := out.Messages[1].ToolCalls[0]
	assert.Equal(t, "needs a human", toolMessage(t, out.Messages, call.ID).Text(), "the agent's answer is the handoff's result")
}

func TestInputFilterDecidesWhatTheAgentSees(t *testing.T) {
	wm := scripted.New(scripted.Reply("done"))
	helper, err := handoff.New("helper", "Helps.", worker(t, "helper", wm), handoff.WithInputFilter(handoff.WithoutTools))
	require.NoError(t, err)
	lookup := tool.MustFunc("lookup", "Looks up.", func(context.Context, struct{}) (string, error) { return "secret lookup", nil })
	pm := scripted.New(
		scripted.CallTools(scripted.Call("lookup", `{}`)),
		scripted.CallTools(scripted.Call("helper", `{"task":"Summarize."}`)),
		scripted.Reply("ok"),
	)
	_, err = parent(t, pm, []tool.Tool{helper, lookup}).Invoke(t.Context(), agent.Ask("the user's question"))
	require.NoError(t, err)
	sent := wm.Requests()[0].Messages
	var texts []string
	for _, m := range sent {
		assert.NotEqual(t, model.RoleTool, m.Role, "no tool traffic")
		assert.False(t, m.HasToolCalls(), "no tool calls")
		texts = append(texts, m.Text())
	}
	assert.Contains(t, texts, "the user's question")
	assert.NotContains(t, texts, "secret lookup")
	assert.Contains(t, texts[len(texts)-1], "Summarize.")

	last := handoff.LastMessages(1)
	in, err := last(t.Context(), []model.Message{model.User("a"), model.Assistant("", model.ToolCall{ID: "c"}), model.ToolMessage("c", "t", false)}, model.User("task"))
	require.NoError(t, err)
	assert.Equal(t, []model.Message{model.User("task")}, in, "a cut never starts with a tool result")

	_, err = handoff.New("bad", "Bad.", worker(t, "bad", wm), handoff.WithInputFilter(handoff.WithoutTools), handoff.WithSharedHistory())
	assert.Error(t, err)
}

func TestToParentRouteSurvivesTheAgentsInterruptAndResume(t *testing.T) {
	var decided atomic.Int32
	decide := tool.MustFunc("decide", "Decides where the caller goes.", func(context.Context, struct{}) (tool.Result, error) {
		decided.Add(1)
		return handoff.ToParent("case closed", graph.END), nil
	})
	approve := tool.MustFunc("approve", "Asks a human.", func(ctx context.Context, _ struct{}) (string, error) {
		ok, err := graph.Interrupt[string](ctx, "close the case?")
		if err != nil {
			return "", err
		}
		return "human says " + ok, nil
	})
	// One batch: the route is decided, then the other call pauses the
	// agent. When it resumes, the batch is not all terminating, so the
	// agent's model answers once more before the route is taken.
	wm := scripted.New(scripted.CallTools(scripted.CallWithID("d1", "decide", `{}`), scripted.CallWithID("a1", "approve", `{}`)),
		lastToolText("worker: "))
	h, err := handoff.New("triage", "Triages a request.", worker(t, "triage", wm, agent.WithTools(decide, approve)))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.CallWithID("p1", "triage", `{"task":"Close case 7."}`)))
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := t.Context()

	_, err = g.Invoke(ctx, agent.Ask("close it"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	out, err := g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.Equal(t, int32(1), decided.Load(), "the call that decided the route did not run again")
	assert.Equal(t, 1, pm.Calls(), "the caller's turn ended as the route recorded before the interrupt said")
	assert.Equal(t, "worker: human says yes", agent.FinalText(out.Messages))
}
