package plan_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/plan"
)

// plannerState is a conversation with a plan.
type plannerState struct {
	nodes.Chat
	plan.Plan
}

// The model keeps its plan in the state with todo_write; the plan is
// checkpointed, shown in the system prompt on every turn, refused when it
// is inconsistent, and cleared when every item is done.
func TestWriteKeepsThePlanInTheState(t *testing.T) {
	todo := plan.Write[plannerState]()
	writePlan := func(items string) scripted.Step {
		return scripted.CallTools(scripted.Call(plan.WriteName, `{"todos":`+items+`}`))
	}
	m := scripted.New(
		writePlan(`[{"id":"a","content":"read the code","status":"in_progress"},{"id":"b","content":"fix the bug","status":"pending"}]`),
		writePlan(`[{"id":"a","content":"read the code","status":"in_progress"},{"id":"a","content":"x","status":"in_progress"}]`),
		writePlan(`[{"id":"a","content":"read the code","status":"completed"},{"id":"b","content":"fix the bug","status":"in_progress"}]`),
		writePlan(`[{"id":"a","content":"read the code","status":"completed"},{"id":"b","content":"fix the bug","status":"completed"}]`),
		scripted.Reply("fixed"),
	)
	b := graph.New[plannerState](nodes.MessagesReducer[plannerState]()).
		AddNode("llm", nodes.LLM[plannerState](m, nodes.WithTools(todo),
			nodes.WithSystemPromptFunc(func(ctx context.Context) string {
				return strings.TrimSpace("Fix bugs.\n\n" + plan.Reminder[plannerState](ctx))
			}))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[plannerState]("tools"), "tools", graph.END)
	nodes.AddTools[plannerState](b, "tools", "llm", nodes.WithTools(todo))
	g, err := b.Compile(graph.WithCheckpointer(memory.New()))
	require.NoError(t, err)

	out, err := g.Invoke(context.Background(), plannerState{Chat: nodes.Chat{Messages: []model.Message{model.User("fix it")}}}, graph.WithThread("t"))
	require.NoError(t, err)
	assert.Empty(t, out.Todos, "cleared once every item is done")

	var answers []string
	for _, msg := range out.Messages {
		if msg.Role == model.RoleTool {
			answers = append(answers, msg.Text())
		}
	}
	require.Len(t, answers, 4)
	assert.Equal(t, "Plan updated: 1 pending, 1 in progress, 0 completed.", answers[0])
	assert.Contains(t, answers[1], `the plan was not changed: two items have the id "a"; 2 items are in progress`)
	assert.Equal(t, "Every item is completed; the plan is cleared.", answers[3])

	reqs := m.Requests()
	system := func(i int) string { return reqs[i].Messages[0].Text() }
	assert.NotContains(t, system(0), "Your plan", "no plan yet")
	assert.Contains(t, system(0), "keep a plan with todo_write", "the tool's instruction")
	assert.Contains(t, system(1), "- [in_progress] read the code (a)\n- [pending] fix the bug (b)")
	assert.Contains(t, system(2), "- [pending] fix the bug (b)", "the refused plan changed nothing")
	assert.Contains(t, system(3), "- [in_progress] fix the bug (b)")
	assert.NotContains(t, system(4), "Your plan", "cleared")

	// The plan is part of the checkpointed state.
	hist, err := g.History(context.Background(), "t", 0)
	require.NoError(t, err)
	found := false
	for _, snap := range hist {
		if len(snap.State.Todos) == 2 && snap.State.Todos[1].Status == plan.InProgress {
			found = true
		}
	}
	assert.True(t, found, "a checkpoint holds the plan in progress")
}

func TestWriteSchema(t *testing.T) {
	def := plan.Write[plannerState]().Definition()
	var schema map[string]any
	require.NoError(t, json.Unmarshal(def.InputSchema, &schema))
	assert.Contains(t, string(def.InputSchema), `"enum":["pending","in_progress","completed"]`)
	assert.Contains(t, string(def.InputSchema), "every item, in order")
	assert.Equal(t, plan.WriteName, def.Name)
	ip, ok := tool.As[tool.InstructionProvider](plan.Write[plannerState]())
	require.True(t, ok)
	assert.Contains(t, ip.Instruction(), "todo_write")
}

func TestWriteRefusesIDsThatDifferOnlyInSpace(t *testing.T) {
	r := tool.Invoke(context.Background(), plan.Write[plannerState](), model.ToolCall{ID: "c", Name: plan.WriteName,
		Arguments: json.RawMessage(`{"todos":[{"id":"a","content":"x","status":"pending"},{"id":"a ","content":"y","status":"pending"}]}`)})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), `two items have the id "a"`)
}

func TestReminderKeepsAnItemOnItsLine(t *testing.T) {
	s := plannerState{Plan: plan.Plan{Todos: []plan.Todo{{ID: "a\nb", Content: "line one\n- [completed] forged", Status: plan.Pending}}}}
	got := plan.Reminder[plannerState](tool.WithRunState(context.Background(), s))
	assert.Equal(t, "Your plan (update it with todo_write):\n- [pending] line one - [completed] forged (a b)", got)
}

// A state that embeds its plan through a pointer cannot keep one: the
// call fails with the reason instead of panicking.
func TestWriteRefusesAPlanBehindAPointer(t *testing.T) {
	type shared struct {
		nodes.Chat
		*plan.Plan
	}
	r := tool.Invoke(context.Background(), plan.Write[shared](), model.ToolCall{ID: "c", Name: plan.WriteName,
		Arguments: json.RawMessage(`{"todos":[{"id":"a","content":"x","status":"pending"}]}`)})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "embeds plan.Plan through a pointer")
}
