package agui_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state/memory"
)

// supervisor returns a handler for a supervisor whose researcher worker
// answers (or asks the user first, with ask), on a checkpointer.
func supervisor(t *testing.T, worker *scripted.Model, boss *scripted.Model, ask bool) http.Handler {
	t.Helper()
	var wopts []agent.Option
	if ask {
		wopts = append(wopts, agent.WithTools(nodes.AskUser()))
	}
	researcher, err := agent.NewReAct(worker, wopts...)
	require.NoError(t, err)
	g, err := agent.NewSupervisor(boss, []agent.Worker{{Name: "researcher", Description: "Finds facts.", Agent: researcher}},
		agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)
	return h
}

func v11(in map[string]any) map[string]any {
	in["protocolVersion"] = agui.ProtocolVersion
	return in
}

// The agent a handoff tool runs streams as a subagent: announced, its
// steps and reply attributed to the invocation, and closed before the
// parent gets its result.
func TestSubagentStreams(t *testing.T) {
	worker := scripted.New(scripted.Reply("Go appeared in 2009."))
	boss := scripted.New(
		scripted.CallTools(scripted.CallWithID("h1", "researcher", `{"task":"When did Go appear?"}`)),
		scripted.Reply("It appeared in 2009."),
	)
	evs := run(t, supervisor(t, worker, boss, false), v11(input("t1", "r1", userMsg("u1", "Go's birth year?"))))

	started := ofType(evs, "SUBAGENT_STARTED")
	require.Len(t, started, 1)
	assert.Equal(t, "h1", started[0].str("subagentRunId"))
	assert.Equal(t, "researcher", started[0].str("name"))
	assert.Equal(t, "h1", started[0].str("parentToolCallId"))
	assert.NotContains(t, started[0], "parentSubagentRunId")

	var childText []event
	for _, ev := range ofType(evs, "TEXT_MESSAGE_START") {
		if ev.str("subagentRunId") == "h1" {
			childText = append(childText, ev)
		}
	}
	require.Len(t, childText, 1)
	assert.Equal(t, "Go appeared in 2009.", text(evs, childText[0].str("messageId")))
	for _, ev := range ofType(evs, "TEXT_MESSAGE_CONTENT") {
		if ev.str("messageId") == childText[0].str("messageId") {
			assert.Equal(t, "h1", ev.str("subagentRunId"))
		}
	}
	var childSteps []string
	for _, ev := range ofType(evs, "STEP_STARTED") {
		if ev.str("subagentRunId") == "h1" {
			childSteps = append(childSteps, ev.str("stepName"))
		}
	}
	assert.Equal(t, []string{"agent"}, childSteps)

	finished, result := -1, -1
	for i, ev := range evs {
		switch {
		case ev.typ() == "SUBAGENT_FINISHED" && ev.str("subagentRunId") == "h1":
			finished = i
			assert.NotContains(t, ev, "outcome")
		case ev.typ() == "TOOL_CALL_RESULT" && ev.str("toolCallId") == "h1":
			result = i
			assert.NotContains(t, ev, "subagentRunId")
		}
	}
	require.True(t, finished > 0 && result > 0)
	assert.Less(t, finished, result, "the invocation closes before its call's result")
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	// The snapshot is the supervisor's conversation: the worker's own
	// messages are not in it.
	for _, m := range snapshot(t, evs) {
		assert.NotEqual(t, childText[0].str("messageId"), m.ID)
	}
}

// A client that does not declare a protocol version (0.x) gets no
// subagent events, nor events of the subagent.
func TestSubagentsHiddenFromOldClients(t *testing.T) {
	worker := scripted.New(scripted.Reply("Go appeared in 2009."))
	boss := scripted.New(
		scripted.CallTools(scripted.CallWithID("h1", "researcher", `{"task":"When?"}`)),
		scripted.Reply("2009."),
	)
	evs := run(t, supervisor(t, worker, boss, false), input("t1", "r1", userMsg("u1", "Go's birth year?")))
	assert.Empty(t, ofType(evs, "SUBAGENT_STARTED", "SUBAGENT_FINISHED"))
	for _, ev := range evs {
		assert.NotContains(t, ev, "subagentRunId", "%v", ev)
	}
	assert.Len(t, ofType(evs, "TEXT_MESSAGE_START"), 1, "only the supervisor's answer")
}

// A subagent that asks the user suspends: the interrupt names it, the
// invocation ends suspended before the run finishes, and the next run
// continues it under the same ID.
func TestSubagentInterruptSuspends(t *testing.T) {
	worker := scripted.New(
		scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which version?"}`)),
		scripted.Reply("Version 1.0 came in 2012."),
	)
	boss := scripted.New(
		scripted.CallTools(scripted.CallWithID("h1", "researcher", `{"task":"When did Go reach 1.0?"}`)),
		scripted.Reply("In 2012."),
	)
	h := supervisor(t, worker, boss, true)
	evs := run(t, h, v11(input("t1", "r1", userMsg("u1", "Go 1.0?"))))
	o := outcome(t, evs)
	require.Equal(t, "interrupt", o["type"])
	in := o["interrupts"].([]any)[0].(map[string]any)
	assert.Equal(t, "h1", in["subagentRunId"])
	assert.Equal(t, "Which version?", in["message"])
	fin := ofType(evs, "SUBAGENT_FINISHED")
	require.Len(t, fin, 1)
	assert.Equal(t, map[string]any{"type": "suspended", "interruptIds": []any{in["id"]}}, fin[0]["outcome"])

	next := v11(input("t1", "r2", asInput(snapshot(t, evs))...))
	next["resume"] = []map[string]any{{"interruptId": in["id"], "status": "resolved", "payload": "1.0"}}
	evs = run(t, h, next)
	started := ofType(evs, "SUBAGENT_STARTED")
	require.Len(t, started, 1)
	assert.Equal(t, "h1", started[0].str("subagentRunId"), "the suspended invocation goes on under its ID")
	fin = ofType(evs, "SUBAGENT_FINISHED")
	require.Len(t, fin, 1)
	assert.NotContains(t, fin[0], "outcome")
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	msgs := snapshot(t, evs)
	assert.JSONEq(t, `"In 2012."`, string(msgs[len(msgs)-1].Content))
}

// A worker that fails ends its invocation with SUBAGENT_ERROR; the run
// goes on, the supervisor told of the failure.
func TestSubagentErrorEndsInvocation(t *testing.T) {
	worker := scripted.New() // no steps: the worker's model fails
	boss := scripted.New(
		scripted.CallTools(scripted.CallWithID("h1", "researcher", `{"task":"anything"}`)),
		scripted.Reply("The researcher failed."),
	)
	evs := run(t, supervisor(t, worker, boss, false), v11(input("t1", "r1", userMsg("u1", "go"))))
	errs := ofType(evs, "SUBAGENT_ERROR")
	require.Len(t, errs, 1)
	assert.Equal(t, "h1", errs[0].str("subagentRunId"))
	assert.Equal(t, "The agent failed.", errs[0].str("message"), "the error's text is not told by default")
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
}
