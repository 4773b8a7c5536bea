package plan_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/plan"
)

// writePlan is a model step that writes the plan items (JSON) with
// todo_write.
func writePlan(items string) scripted.Step {
	return scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":`+items+`}`))
}

// invokeTodo calls a plan tool of plannerState with args, the run's state
// being s.
func invokeTodo(t *testing.T, tl tool.Tool, s plannerState, args string) tool.Result {
	t.Helper()
	ctx := tool.WithRunState(context.Background(), s)
	return tool.Invoke(ctx, tl, model.ToolCall{ID: "c", Name: tl.Definition().Name, Arguments: json.RawMessage(args)})
}

// applyUpdate applies the state update of r to s.
func applyUpdate(t *testing.T, r tool.Result, s plannerState) plannerState {
	t.Helper()
	up, ok := r.Actions.Update.(func(*plannerState))
	require.True(t, ok, "update %T", r.Actions.Update)
	up(&s)
	return s
}

// The result of todo_write carries, for user interfaces, the plan written
// and the plan it replaced; they reach a stream's tool_end events.
func TestWriteDetailsHoldTheNewAndOldPlans(t *testing.T) {
	old := []plan.Todo{{ID: "a", Content: "read", Status: plan.InProgress}}
	r := invokeTodo(t, plan.Write[plannerState](), plannerState{Plan: plan.Plan{Todos: old}},
		`{"todos":[{"id":"a","content":"read","status":"completed"},{"id":"b","content":"fix","status":"in_progress","active_form":"Fixing"}]}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "Plan updated: 0 pending, 1 in progress, 1 completed.", r.Text(), "the model's text is unchanged")
	assert.Equal(t, plan.Update{
		Todos: []plan.Todo{
			{ID: "a", Content: "read", Status: plan.Completed},
			{ID: "b", Content: "fix", Status: plan.InProgress, ActiveForm: "Fixing"},
		},
		OldTodos: old,
	}, r.Details)

	// Through a graph streaming events: the first call had no plan
	// before it; the last one, which finished the plan, says it cleared
	// it and still shows the items.
	m := scripted.New(
		writePlan(`[{"id":"a","content":"read","status":"in_progress"}]`),
		writePlan(`[{"id":"a","content":"read","status":"completed"}]`),
		scripted.Reply("done"),
	)
	todo := plan.Write[plannerState]()
	b := graph.New[plannerState](nodes.MessagesReducer[plannerState]()).
		AddNode("llm", nodes.LLM[plannerState](m, nodes.WithTools(todo))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[plannerState]("tools"), "tools", graph.END)
	nodes.AddTools[plannerState](b, "tools", "llm", nodes.WithTools(todo), nodes.WithExecutor(executor.Parallel(nodes.StreamToolEvents())))
	g, err := b.Compile()
	require.NoError(t, err)
	evs, err := collect(g.Stream(context.Background(), plannerState{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}}, graph.WithModes(graph.ModeEvents)))
	require.NoError(t, err)
	var updates []plan.Update
	for _, ev := range toolEvents(evs) {
		if ev.Kind == executor.ToolEnd {
			u, ok := ev.Result.Details.(plan.Update)
			require.True(t, ok, "details %T", ev.Result.Details)
			updates = append(updates, u)
		}
	}
	require.Len(t, updates, 2)
	assert.Nil(t, updates[0].OldTodos)
	assert.Equal(t, []plan.Todo{{ID: "a", Content: "read", Status: plan.InProgress}}, updates[0].Todos)
	assert.False(t, updates[0].Cleared)
	assert.Equal(t, updates[0].Todos, updates[1].OldTodos)
	assert.Equal(t, []plan.Todo{{ID: "a", Content: "read", Status: plan.Completed}}, updates[1].Todos)
	assert.True(t, updates[1].Cleared)
}

// An item may say what it reads like while in progress: the schema offers
// it without requiring it, the state keeps it, and the reminder and the
// nudge show it for the item in progress.
func TestActiveForm(t *testing.T) {
	def := plan.Write[plannerState]().Definition()
	var schema struct {
		Properties map[string]struct {
			Items struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"items"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(def.InputSchema, &schema), string(def.InputSchema))
	item := schema.Properties["todos"].Items
	require.Contains(t, item.Properties, "active_form", string(def.InputSchema))
	assert.NotContains(t, item.Required, "active_form")
	assert.Contains(t, item.Required, "status")

	s := invokeAndApply(t, plannerState{},
		`{"todos":[{"id":"a","content":"Run the tests","status":"in_progress","active_form":"Running the\ntests"},{"id":"b","content":"Fix","status":"pending","active_form":"Fixing"}]}`)
	require.Len(t, s.Todos, 2)
	assert.Equal(t, "Running the\ntests", s.Todos[0].ActiveForm)
	assert.Equal(t, "Running the\ntests", s.Todos[0].Label())
	assert.Equal(t, "Fix", s.Todos[1].Label(), "an item not in progress shows what is to be done")
	assert.Equal(t, "Run", plan.Todo{Content: "Run", Status: plan.InProgress}.Label())

	got := plan.Reminder[plannerState](tool.WithRunState(context.Background(), s))
	assert.Equal(t, "Your plan (update it with todo_write):\n- [in_progress] Run the tests (a): Running the tests\n- [pending] Fix (b)", got)

	s.Messages = []model.Message{model.User("go")}
	out, err := nodes.PlanNudge[plannerState]()(context.Background(), s)
	require.NoError(t, err)
	assert.Contains(t, out.Messages[1].Text(), "- [in_progress] Run the tests (a): Running the tests\n")
}

// invokeAndApply writes a plan with todo_write on s and returns s updated.
func invokeAndApply(t *testing.T, s plannerState, args string) plannerState {
	t.Helper()
	r := invokeTodo(t, plan.Write[plannerState](), s, args)
	require.False(t, r.IsError, r.Text())
	return applyUpdate(t, r, s)
}

// Tools with WithClearOnAllDone(false) keeps a finished plan; by
// default, and with Write, it is cleared.
func TestToolsKeepAFinishedPlan(t *testing.T) {
	done := `{"todos":[{"id":"a","content":"read","status":"completed"},{"id":"b","content":"fix","status":"completed"}]}`
	before := plannerState{Plan: plan.Plan{Todos: []plan.Todo{{ID: "a", Content: "read", Status: plan.InProgress}}}}

	tools := plan.Tools[plannerState](plan.WithClearOnAllDone(false), nil)
	require.Len(t, tools, 2)
	assert.Equal(t, plan.WriteName, tools[0].Definition().Name)
	assert.Equal(t, plan.DeclareBlockerName, tools[1].Definition().Name)
	r := invokeTodo(t, tools[0], before, done)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "Plan updated: 0 pending, 0 in progress, 2 completed. Every item is completed.", r.Text())
	kept := applyUpdate(t, r, before)
	assert.Len(t, kept.Todos, 2)
	assert.False(t, r.Details.(plan.Update).Cleared)
	assert.Contains(t, plan.Reminder[plannerState](tool.WithRunState(context.Background(), kept)), "- [completed] fix (b)")
	kept.Messages = []model.Message{model.User("go"), {Role: model.RoleTool, ToolName: plan.WriteName}, model.Assistant("done")}
	route := nodes.PlanCondition[plannerState]("tools", "nudge", 3)
	assert.Equal(t, []string{graph.END}, route(context.Background(), kept), "a finished plan nudges nothing")

	for name, tl := range map[string]tool.Tool{
		"Write":                    plan.Write[plannerState](),
		"Tools":                    plan.Tools[plannerState]()[0],
		"WithClearOnAllDone(true)": plan.Tools[plannerState](plan.WithClearOnAllDone(false), plan.WithClearOnAllDone(true))[0],
	} {
		r := invokeTodo(t, tl, before, done)
		assert.Equal(t, "Every item is completed; the plan is cleared.", r.Text(), name)
		assert.Empty(t, applyUpdate(t, r, before).Todos, name)
	}

	// Tool options reach each tool.
	tools = plan.Tools[plannerState](plan.WithWriteOptions(tool.WithTitle("Plan")), plan.WithBlockerToolOptions(tool.WithTitle("Stuck")))
	assert.Equal(t, "Plan", tool.TitleOf(tools[0]))
	assert.Equal(t, "Stuck", tool.TitleOf(tools[1]))
}

// A blocker the model declares is kept in the state, shown in the
// reminder, stops the nudges, and is cleared when the plan is written
// again.
func TestDeclareBlocker(t *testing.T) {
	open := []plan.Todo{{ID: "a", Content: "deploy", Status: plan.InProgress}}
	s := plannerState{Plan: plan.Plan{Todos: open}}
	s.Messages = []model.Message{model.User("deploy it"), {Role: model.RoleTool, ToolName: plan.WriteName}, model.Assistant("I can't")}
	route := nodes.PlanCondition[plannerState]("tools", "nudge", 3)
	require.Equal(t, []string{"nudge"}, route(context.Background(), s), "an open plan is nudged")

	blocker := plan.DeclareBlocker[plannerState]()
	ip, ok := tool.As[tool.InstructionProvider](blocker)
	require.True(t, ok)
	assert.Contains(t, ip.Instruction(), plan.DeclareBlockerName)

	r := invokeTodo(t, blocker, s, `{"reason":"  no credentials for the\nserver "}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "Blocker recorded")
	assert.Equal(t, plan.BlockerDeclared{Reason: "no credentials for the\nserver", Todos: open}, r.Details)
	s = applyUpdate(t, r, s)
	assert.Equal(t, "no credentials for the\nserver", s.Blocker)
	assert.Equal(t, open, s.Todos, "the plan is left as it is")
	assert.Equal(t, []string{graph.END}, route(context.Background(), s), "a declared blocker ends the nudges")
	assert.Equal(t, "Your plan (update it with todo_write):\n- [in_progress] deploy (a)\nYou declared a blocker: no credentials for the server (writing the plan again clears it)",
		plan.Reminder[plannerState](tool.WithRunState(context.Background(), s)))

	// Checkpointed with the plan.
	raw, err := json.Marshal(s.Plan)
	require.NoError(t, err)
	assert.JSONEq(t, `{"todos":[{"id":"a","content":"deploy","status":"in_progress"}],"blocker":"no credentials for the\nserver"}`, string(raw))

	// A blocker without a plan is shown alone.
	assert.Equal(t, "You declared a blocker: x (writing the plan again clears it)",
		plan.Reminder[plannerState](tool.WithRunState(context.Background(), plannerState{Plan: plan.Plan{Blocker: "x"}})))

	// Writing the plan clears it, and the nudges resume.
	s = invokeAndApply(t, s, `{"todos":[{"id":"a","content":"deploy","status":"in_progress"}]}`)
	assert.Empty(t, s.Blocker)
	assert.Equal(t, []string{"nudge"}, route(context.Background(), s))

	// An empty reason is refused.
	r = invokeTodo(t, blocker, s, `{"reason":"  "}`)
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "the reason is empty")

	// A plan behind a pointer is refused, as todo_write refuses it.
	type shared struct {
		nodes.Chat
		*plan.Plan
	}
	r = tool.Invoke(context.Background(), plan.DeclareBlocker[shared](), model.ToolCall{ID: "c", Name: plan.DeclareBlockerName, Arguments: json.RawMessage(`{"reason":"x"}`)})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "embeds plan.Plan through a pointer")
}

// todoOnly keeps a plan of its own, without a blocker.
type todoOnly struct {
	nodes.Chat
	Items []plan.Todo
}

func (s *todoOnly) TodoList() *[]plan.Todo { return &s.Items }

// A state that keeps its items without plan.Plan keeps no blocker: the
// tool says so.
func TestDeclareBlockerNeedsAPlan(t *testing.T) {
	r := tool.Invoke(context.Background(), plan.DeclareBlocker[todoOnly](), model.ToolCall{ID: "c", Name: plan.DeclareBlockerName, Arguments: json.RawMessage(`{"reason":"x"}`)})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "todoOnly keeps no blocker; embed plan.Plan")
}

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
