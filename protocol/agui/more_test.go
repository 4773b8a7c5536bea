package agui_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/jsonpatch"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// A client that appends a call's result after a later message has it
// moved up to its call, rather than answered a second time as missing.
func TestLateAnswerMovesToItsCall(t *testing.T) {
	var got []string
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		for _, msg := range req.Messages {
			got = append(got, string(msg.Role)+":"+msg.Text())
		}
		return &model.Response{Message: model.Assistant("ok")}, nil
	}))
	h := handler(t, m, nil)
	evs := run(t, h, input("t1", "r1",
		userMsg("u1", "hi"),
		map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "pick", "arguments": "{}"}}}},
		userMsg("u2", "well?"),
		map[string]any{"id": "t1", "role": "tool", "toolCallId": "c1", "content": "late"},
	))
	assert.Equal(t, []string{"user:hi", "assistant:", "tool:late", "user:well?"}, got)
	ids := []string{}
	for _, msg := range snapshot(t, evs) {
		ids = append(ids, msg.ID)
	}
	assert.Equal(t, []string{"u1", "a1", "t1", "u2", ids[4]}, ids)
}

// A request that abandons the thread's question but whose state the
// handler refuses leaves the thread waiting, as it was.
func TestRefusedAbandonLeavesThreadWaiting(t *testing.T) {
	m := scripted.New(scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which day?"}`)))
	saver := memory.New()
	g, err := agent.NewReAct(m, agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(saver))
	require.NoError(t, err)
	h, err := agui.NewHandler(g, agui.WithState(func(_ context.Context, in json.RawMessage, _ *agent.State) error {
		if string(in) == `"bad"` {
			return errors.New("bad state")
		}
		return nil
	}))
	require.NoError(t, err)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "book")))
	id := outcome(t, evs)["interrupts"].([]any)[0].(map[string]any)["id"].(string)

	next := input("t1", "r2", append(asInput(snapshot(t, evs)), userMsg("u2", "never mind"))...)
	next["resume"] = []map[string]any{{"interruptId": id, "status": "cancelled"}}
	next["state"] = "bad"
	resp := post(t, h, next)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "bad state")

	snap, err := g.GetState(context.Background(), agui.ThreadPrefix+"t1")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1, "the thread still waits")
	assert.Equal(t, id, snap.Interrupts[0].ID)
}

// A tool message whose call the conversation does not name (a node of the
// application wrote it) is not shown as a call without a name; the
// snapshot carries it.
func TestOrphanToolMessageNotStartedAsCall(t *testing.T) {
	g, err := graph.New[agent.State]().
		AddNode("write", func(_ context.Context, s agent.State) (agent.State, error) {
			msg := model.ToolMessage("zz", "", false, model.TextPart("from nowhere"))
			msg.ID = "orphan"
			s.Messages = append(s.Messages, msg, model.Message{ID: "a9", Role: model.RoleAssistant, Content: []model.Part{model.TextPart("done")}})
			return s, nil
		}).
		AddEdge(graph.START, "write").AddEdge("write", graph.END).Compile()
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "go")))
	assert.Empty(t, ofType(evs, "TOOL_CALL_START", "TOOL_CALL_RESULT"))
	assert.Equal(t, "done", text(evs, "a9"))
	msgs := snapshot(t, evs)
	require.Len(t, msgs, 3)
	assert.Equal(t, "orphan", msgs[1].ID)
}

// A tool result's event carries, in its metadata, what interfaces render
// besides the text the model read: the result's Details, the tool's
// title, the call's status.
func TestToolResultMetadata(t *testing.T) {
	type hit struct {
		Title string `json:"title"`
		URL   string `json:"url"`
	}
	search := tool.MustFunc("search", "Searches.", func(context.Context, struct {
		Q string `json:"q"`
	}) (tool.Result, error) {
		return tool.Result{Content: []model.Part{model.TextPart("1 hit")}, Details: []hit{{"Go", "https://go.dev"}}}, nil
	}, tool.WithTitle("Web search"))
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "search", `{"q":"go"}`)), scripted.Reply("Found it."))
	h := handler(t, m, []agent.Option{agent.WithTools(search)})
	evs := run(t, h, input("t1", "r1", userMsg("u1", "search go")))
	res := ofType(evs, "TOOL_CALL_RESULT")
	require.Len(t, res, 1)
	meta, ok := res[0]["metadata"].(map[string]any)
	require.True(t, ok, "%v", res[0])
	assert.Equal(t, "Web search", meta["title"])
	assert.Equal(t, "success", meta["status"])
	assert.Equal(t, []any{map[string]any{"title": "Go", "url": "https://go.dev"}}, meta["details"])
	assert.Equal(t, "1 hit", res[0].str("content"))
}

// With WithStateDeltas, the state's view changes after the first snapshot
// as JSON Patches: applied in order to the snapshot, they give the view
// the state ends with.
func TestStateDeltas(t *testing.T) {
	addItem := addItemTool()
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "add_item", `{"item":"pear"}`), scripted.CallWithID("c2", "add_item", `{"item":"fig"}`)),
		scripted.CallTools(scripted.CallWithID("c3", "add_item", `{"item":"plum"}`)),
		scripted.Reply("Added."),
	)
	g, err := agent.ReAct[chatWithCart](m, agent.WithTools(addItem), agent.WithExecutor(executor.Sequential(nodes.StreamToolEvents())))
	require.NoError(t, err)
	h, err := agui.NewHandler(g,
		agui.WithStateSnapshots(func(s chatWithCart) any { return map[string]any{"cart": s.Cart, "count": len(s.Cart)} }),
		agui.WithStateDeltas())
	require.NoError(t, err)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "fill the cart")))

	snaps := ofType(evs, "STATE_SNAPSHOT")
	require.Len(t, snaps, 1, "one snapshot, then deltas")
	deltas := ofType(evs, "STATE_DELTA")
	require.Len(t, deltas, 2)
	view := snaps[0]["snapshot"]
	for _, d := range deltas {
		b, err := json.Marshal(d["delta"])
		require.NoError(t, err)
		var ops []jsonpatch.Op
		require.NoError(t, json.Unmarshal(b, &ops))
		view, err = jsonpatch.Apply(view, ops)
		require.NoError(t, err)
	}
	assert.Equal(t, map[string]any{"cart": []any{"pear", "fig", "plum"}, "count": 3.0}, view)
	b, _ := json.Marshal(deltas[1]["delta"])
	assert.JSONEq(t, `[{"op":"add","path":"/cart/-","value":"plum"},{"op":"replace","path":"/count","value":3}]`, string(b))
}

// Without a checkpointer, a question of the agent is reported under its
// call's ID, and the resume entry that answers it becomes the call's
// result; abandoning it answers the call with an error.
func TestStatelessQuestion(t *testing.T) {
	var seen []string
	record := func(reply string) scripted.Step {
		return scripted.Func(func(req *model.Request) (*model.Response, error) {
			var roles []string
			for _, m := range req.Messages {
				roles = append(roles, string(m.Role)+":"+m.Text())
			}
			seen = append(seen, strings.Join(roles, " | "))
			return &model.Response{Message: model.Assistant(reply)}, nil
		})
	}
	ask := scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which day?"}`))
	m := scripted.New(ask, record("Booked for Friday."), ask, record("Fine."))
	h := handler(t, m, []agent.Option{agent.WithTools(nodes.AskUser())})

	evs := run(t, h, input("t1", "r1", userMsg("u1", "book")))
	o := outcome(t, evs)
	require.Equal(t, "interrupt", o["type"])
	id := o["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	assert.Equal(t, agui.AnswerPrefix+"q1", id)

	next := input("t1", "r2", asInput(snapshot(t, evs))...)
	next["resume"] = []map[string]any{{"interruptId": id, "status": "resolved", "payload": "Friday"}}
	evs = run(t, h, next)
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	require.Len(t, seen, 1)
	assert.Equal(t, "user:book | assistant: | tool:Friday", seen[0])

	// Asked again (the call gets a fresh ID), the user dismisses it.
	history := asInput(snapshot(t, evs))
	evs = run(t, h, input("t1", "r3", append(history, userMsg("u2", "again"))...))
	id = outcome(t, evs)["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	next = input("t1", "r4", append(asInput(snapshot(t, evs)), userMsg("u3", "never mind"))...)
	next["resume"] = []map[string]any{{"interruptId": id, "status": "cancelled"}}
	run(t, h, next)
	require.Len(t, seen, 2)
	assert.True(t, strings.HasSuffix(seen[1], "tool:The user dismissed the question. | user:never mind"), seen[1])
}

// Without a checkpointer, a run that pauses for anything else fails with
// an error that says a checkpointer is needed.
func TestStatelessInterruptNeedsCheckpointer(t *testing.T) {
	g, err := graph.New[agent.State]().
		AddNode("approve", func(ctx context.Context, s agent.State) (agent.State, error) {
			_, err := graph.Interrupt[string](ctx, "approve?")
			return s, err
		}).
		AddEdge(graph.START, "approve").AddEdge("approve", graph.END).Compile()
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "go")))
	last := evs[len(evs)-1]
	require.Equal(t, "RUN_ERROR", last.typ())
	assert.Equal(t, "needs_checkpointer", last.str("code"))
	assert.Contains(t, last.str("message"), "checkpointer")
}

// The progress a running tool reports, and the events nodes emit for the
// interface (graph.EmitCustom), reach the client as CUSTOM events.
func TestProgressAndCustomEvents(t *testing.T) {
	slow := tool.MustFunc("slow", "Works in steps.", func(ctx context.Context, _ struct{}) (string, error) {
		tool.ReportProgress(ctx, tool.Update{Message: "half way", Details: map[string]int{"done": 1, "of": 2}})
		return "finished", nil
	})
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "slow", `{}`)), scripted.Reply("Done."))
	evs := run(t, handler(t, m, []agent.Option{agent.WithTools(slow)}), input("t1", "r1", userMsg("u1", "go")))
	custom := ofType(evs, "CUSTOM")
	require.Len(t, custom, 1)
	assert.Equal(t, agui.ToolProgressEvent, custom[0].str("name"))
	assert.Equal(t, map[string]any{"toolCallId": "c1", "toolName": "slow", "message": "half way",
		"details": map[string]any{"done": 1.0, "of": 2.0}}, custom[0]["value"])

	g, err := graph.New[agent.State]().
		AddNode("announce", func(ctx context.Context, s agent.State) (agent.State, error) {
			graph.EmitCustom(ctx, "banner", map[string]string{"text": "Working on it"})
			graph.EmitCustom(ctx, "odd", func() {})
			return s, nil
		}).
		AddEdge(graph.START, "announce").AddEdge("announce", graph.END).Compile()
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)
	evs = run(t, h, input("t1", "r1", userMsg("u1", "go")))
	custom = ofType(evs, "CUSTOM")
	require.Len(t, custom, 2)
	assert.Equal(t, "banner", custom[0].str("name"))
	assert.Equal(t, map[string]any{"text": "Working on it"}, custom[0]["value"])
	assert.Equal(t, "odd", custom[1].str("name"))
	assert.IsType(t, "", custom[1]["value"], "a payload that is not JSON goes as text")
}

// Without a checkpointer, a reply's reasoning goes to the client as
// reasoning messages carrying the provider's signature, and comes back into
// the reply when the client sends the conversation again: a provider that
// requires its signed reasoning on the turn that called tools gets it.
func TestReasoningRoundTripStateless(t *testing.T) {
	var got model.Message
	thinking := model.Message{Role: model.RoleAssistant, Content: []model.Part{
		model.ReasoningPart("The user wants a date.", []byte("sig-1")),
		model.RedactedReasoningPart([]byte("ENC")),
	}, ToolCalls: []model.ToolCall{{ID: "c1", Name: "pick_date", Arguments: []byte(`{}`)}}}
	m := scripted.New(
		scripted.Respond(thinking),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			for _, msg := range req.Messages {
				if msg.Role == model.RoleAssistant {
					got = msg
				}
			}
			return &model.Response{Message: model.Assistant("Booked.")}, nil
		}),
	)
	h := handler(t, m, nil)
	in := input("t1", "r1", userMsg("u1", "book"))
	in["tools"] = []map[string]any{{"name": "pick_date", "description": "The user picks a date."}}
	evs := run(t, h, in)
	snap := snapshot(t, evs)
	require.Len(t, snap, 4)
	assert.Equal(t, "reasoning", snap[1].Role)
	assert.Equal(t, agui.ReasoningSignature+":"+base64.StdEncoding.EncodeToString([]byte("sig-1")), snap[1].EncryptedValue)
	assert.Equal(t, agui.RedactedReasoning+":"+base64.StdEncoding.EncodeToString([]byte("ENC")), snap[2].EncryptedValue)
	assert.Empty(t, snap[1].EncryptedValueType, "the kind travels inside encryptedValue")
	assert.Equal(t, snap[3].ID+":reasoning:0", snap[1].ID, "the IDs its stream had")

	next := input("t1", "r2", append(asInput(snap), map[string]any{"id": "r1", "role": "tool", "toolCallId": "c1", "content": "Friday"})...)
	next["tools"] = in["tools"]
	run(t, h, next)
	require.Len(t, got.Content, 2)
	assert.Equal(t, model.ReasoningPart("The user wants a date.", []byte("sig-1")), got.Content[0])
	assert.Equal(t, model.RedactedReasoningPart([]byte("ENC")), got.Content[1])
	require.Len(t, got.ToolCalls, 1)
}
