package plan_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/plan"
)

// State is an agent's state with a plan.
type State struct {
	nodes.Chat
	plan.Plan
}

// A call of todo_write replaces the plan; its result applies the plan to
// the run's state (the ToolsNode does this in a graph), and Reminder
// renders it for the system prompt.
func ExampleWrite() {
	write := plan.Write[State]()
	var s State
	r := tool.Invoke(tool.WithRunState(context.Background(), s), write, model.ToolCall{ID: "c1", Name: plan.WriteName,
		Arguments: json.RawMessage(`{"todos":[{"id":"a","content":"Run the tests","status":"in_progress","active_form":"Running the tests"},{"id":"b","content":"Fix the bug","status":"pending"}]}`)})
	fmt.Println(r.Text())
	r.Actions.Update.(func(*State))(&s)
	fmt.Println(plan.Reminder[State](tool.WithRunState(context.Background(), s)))
	// Output:
	// Plan updated: 1 pending, 1 in progress, 0 completed.
	// Your plan (update it with todo_write):
	// - [in_progress] Run the tests (a): Running the tests
	// - [pending] Fix the bug (b)
}
