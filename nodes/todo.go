package nodes

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// TodoWriteName is the name of the tool TodoWrite returns.
const TodoWriteName = "todo_write"

// TodoStatus is the state of an item of a plan.
type TodoStatus string

// The states of an item.
const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
)

// Todo is one item of an agent's plan.
type Todo struct {
	// ID identifies the item across updates of the plan.
	ID string `json:"id" jsonschema:"description=A short identifier that stays the same while the item exists,minLength=1,maxLength=64"`
	// Content says what is to be done.
	Content string `json:"content" jsonschema:"description=What is to be done,minLength=1"`
	// Status is where the item stands.
	Status TodoStatus `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed"`
}

// Plan is the plan an agent keeps with TodoWrite. Embed it in a state
// (next to Chat), by value, to give the agent a plan; its items are the
// state's Todos. (Embedded by pointer, it would be shared by every copy of
// the state; CheckPlanState refuses that.)
type Plan struct {
	Todos []Todo `json:"todos,omitempty"`
}

// TodoList returns the address of the plan's items.
func (p *Plan) TodoList() *[]Todo { return &p.Todos }

// HasTodos is implemented by a pointer to a state that keeps a plan, which
// every state embedding Plan does.
type HasTodos interface {
	TodoList() *[]Todo
}

// TodoState constrains the state types TodoWrite works on: S whose pointer
// keeps a plan.
type TodoState[S any] interface {
	*S
	HasTodos
}

// CheckPlanState reports whether S keeps a plan the nodes of this package
// can use: its pointer has TodoList (it embeds Plan), and no pointer stands
// between S and the plan, which every copy of a state would share.
func CheckPlanState[S any, PS ChatState[S]]() error {
	var s S
	if _, ok := any(PS(&s)).(HasTodos); !ok {
		return fmt.Errorf("%T keeps no plan: embed nodes.Plan", s)
	}
	if !planByValue(reflect.TypeFor[S](), 0) {
		return fmt.Errorf("%T embeds its plan through a pointer: embed nodes.Plan by value", s)
	}
	return nil
}

// planByValue reports whether t reaches the Plan its TodoList belongs to
// through embedded values alone.
func planByValue(t reflect.Type, depth int) bool {
	if t == reflect.TypeFor[Plan]() {
		return true
	}
	if t.Kind() != reflect.Struct || depth > 8 {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && planByValue(f.Type, depth+1) {
			return true
		}
	}
	return false
}

// todoArgs are the arguments of todo_write.
type todoArgs struct {
	Todos []Todo `json:"todos" jsonschema:"description=The whole plan as it now stands: every item\\, in order"`
}

// TodoWrite returns the todo_write tool, with which a model keeps a plan
// for a task of several steps in the run's state (S's Plan): each call
// replaces the whole plan. A plan is refused, with what is wrong, when two
// items share an ID, more than one is in progress, or an item is empty;
// once every item is completed the plan is cleared, and the tool says so.
// The ToolsNode applies the plan as a state update, in call order with the
// batch's other updates (of two todo_write calls in one batch, the last
// wins), so it is checkpointed with the conversation.
// TodoReminder renders the plan for a system prompt.
func TodoWrite[S any, PS TodoState[S]](opts ...tool.Option) tool.Tool {
	byValue := planByValue(reflect.TypeFor[S](), 0)
	base := []tool.Option{tool.WithInstruction("For a task of several steps, keep a plan with todo_write: write it before you start, keep exactly one item in progress, mark items completed as soon as they are done, and send the whole plan each time.")}
	return tool.MustFunc(TodoWriteName,
		"Replaces your plan for the current task with the list given: every item, with its status (pending, in_progress, completed).",
		func(_ context.Context, in todoArgs) (tool.Result, error) {
			if !byValue {
				return tool.Result{}, fmt.Errorf("the plan cannot be kept: %T embeds nodes.Plan through a pointer; embed it by value", *new(S))
			}
			if err := checkTodos(in.Todos); err != nil {
				return tool.Result{}, err
			}
			plan := in.Todos // decoded for this call alone
			done := len(plan) > 0 && !slices.ContainsFunc(plan, func(t Todo) bool { return t.Status != TodoCompleted })
			msg := fmt.Sprintf("Plan updated: %s.", summarize(plan))
			if done {
				plan, msg = nil, "Every item is completed; the plan is cleared."
			}
			r := tool.Text(msg)
			r.Actions.Update = func(s *S) { *PS(s).TodoList() = plan }
			return r, nil
		}, append(base, opts...)...)
}

// checkTodos refuses a plan no agent should keep.
func checkTodos(plan []Todo) error {
	var problems []string
	seen := make(map[string]bool, len(plan))
	inProgress := 0
	for i, t := range plan {
		id := strings.TrimSpace(t.ID)
		switch {
		case id == "":
			problems = append(problems, fmt.Sprintf("item %d has no id", i))
		case seen[id]:
			problems = append(problems, fmt.Sprintf("two items have the id %q", id))
		}
		seen[id] = true
		if strings.TrimSpace(t.Content) == "" {
			problems = append(problems, fmt.Sprintf("item %q says nothing to do", t.ID))
		}
		if t.Status == TodoInProgress {
			inProgress++
		}
	}
	if inProgress > 1 {
		problems = append(problems, fmt.Sprintf("%d items are in progress; keep one at a time", inProgress))
	}
	if len(problems) > 0 {
		return errors.New("the plan was not changed: " + strings.Join(problems, "; "))
	}
	return nil
}

// summarize counts a plan's items by status.
func summarize(plan []Todo) string {
	var pending, doing, done int
	for _, t := range plan {
		switch t.Status {
		case TodoPending:
			pending++
		case TodoInProgress:
			doing++
		case TodoCompleted:
			done++
		}
	}
	return fmt.Sprintf("%d pending, %d in progress, %d completed", pending, doing, done)
}

// TodoReminder renders the plan of the run's state (tool.RunState) for a
// system prompt, "" when there is none: give it to WithSystemPromptFunc,
// after the prompt of your own, so that the model sees where its plan
// stands on every turn.
func TodoReminder[S any, PS TodoState[S]](ctx context.Context) string {
	s, ok := tool.RunState[S](ctx)
	if !ok {
		return ""
	}
	plan := *PS(&s).TodoList()
	if len(plan) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Your plan (update it with todo_write):")
	for _, t := range plan {
		writeItem(&b, t)
	}
	return b.String()
}

// writeItem writes an item of a plan on a line of its own.
func writeItem(b *strings.Builder, t Todo) {
	fmt.Fprintf(b, "\n- [%s] %s (%s)", t.Status, oneLine(t.Content), oneLine(t.ID))
}

// oneLine returns s with its runs of white space, line breaks included,
// made single spaces, so that an item stays on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// MetaPlanNudge marks, in Message.Metadata, the user messages PlanNudge
// appends.
const MetaPlanNudge = "trellis.plan_nudge"

// PlanCondition is ToolsCondition for an agent that keeps a plan (a state
// embedding Plan, TodoWrite): it routes to toolsNode when the last message
// asks for tools; to nudgeNode when the model answered while items of the
// plan it wrote since the user last spoke are not completed, and fewer
// than max nudges were sent since then; to graph.END otherwise. A state without a plan is
// routed as ToolsCondition routes it. Declare the three destinations.
func PlanCondition[S any, PS ChatState[S]](toolsNode, nudgeNode string, max int) graph.Route[S] {
	tools := ToolsCondition[S, PS](toolsNode)
	toNudge := []string{nudgeNode}
	return func(ctx context.Context, s S) []string {
		next := tools(ctx, s)
		if next[0] != graph.END {
			return next
		}
		plan, ok := any(PS(&s)).(HasTodos)
		if !ok || !slices.ContainsFunc(*plan.TodoList(), func(t Todo) bool { return t.Status != TodoCompleted }) {
			return next
		}
		msgs := *PS(&s).ChatMessages()
		if nudgesSinceUser(msgs) >= max || !plannedSinceUser(msgs) {
			return next
		}
		return toNudge
	}
}

// nudgesSinceUser counts the nudges after the user's last message.
func nudgesSinceUser(msgs []model.Message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != model.RoleUser {
			continue
		}
		if msgs[i].Metadata[MetaPlanNudge] != "true" {
			break
		}
		n++
	}
	return n
}

// plannedSinceUser reports whether the model wrote its plan (todo_write)
// since the user last spoke: a plan left from an earlier turn does not
// keep a new one going.
func plannedSinceUser(msgs []model.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role == model.RoleUser && m.Metadata[MetaPlanNudge] != "true" {
			return false
		}
		if m.Role == model.RoleTool && m.ToolName == TodoWriteName && !m.IsError {
			return true
		}
	}
	return false
}

// PlanNudge returns a node that reminds the model of the open items of its
// plan, in a user message marked MetaPlanNudge, so that an agent that
// answered with work left goes on with it or updates the plan. Route to it
// with PlanCondition, and from it back to the LLM node.
func PlanNudge[S any, PS ChatState[S]]() graph.NodeFunc[S] {
	return func(_ context.Context, s S) (S, error) {
		plan, ok := any(PS(&s)).(HasTodos)
		if !ok {
			return s, nil
		}
		var b strings.Builder
		b.WriteString("Your plan still has open items:")
		for _, t := range *plan.TodoList() {
			if t.Status != TodoCompleted {
				writeItem(&b, t)
			}
		}
		b.WriteString("\nGo on with them, or update the plan with todo_write if it has changed. If you need the user's input to go on, ask for it.")
		msg := model.User(b.String())
		msg.ID, msg.Metadata = NewMessageID(), map[string]string{MetaPlanNudge: "true"}
		msgs := PS(&s).ChatMessages()
		*msgs = append(slices.Clip(*msgs), msg)
		return s, nil
	}
}
