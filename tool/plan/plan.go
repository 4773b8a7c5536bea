package plan

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/tool"
)

// WriteName is the name of the tool Write returns.
const WriteName = "todo_write"

// DeclareBlockerName is the name of the tool DeclareBlocker
// returns.
const DeclareBlockerName = "todo_declare_blocker"

// Status is the state of an item of a plan.
type Status string

// The states of an item.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
)

// Todo is one item of an agent's plan.
type Todo struct {
	// ID identifies the item across updates of the plan.
	ID string `json:"id" jsonschema:"description=A short identifier that stays the same while the item exists,minLength=1,maxLength=64"`
	// Content says what is to be done.
	Content string `json:"content" jsonschema:"description=What is to be done,minLength=1"`
	// Status is where the item stands.
	Status Status `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed"`
	// ActiveForm is how the item reads while it is in progress, in the
	// present continuous ("Running the tests" for "Run the tests"), for a
	// user interface to show what the agent is doing. Optional.
	ActiveForm string `json:"active_form,omitempty" jsonschema:"description=The item in the present continuous\\, shown while it is in progress (Running the tests for Run the tests)"`
}

// Label returns how a user interface shows the item: its ActiveForm while
// it is in progress and has one, its Content otherwise.
func (t Todo) Label() string {
	if t.Status == InProgress && strings.TrimSpace(t.ActiveForm) != "" {
		return t.ActiveForm
	}
	return t.Content
}

// Plan is the plan an agent keeps with Write. Embed it in a state
// (next to Chat), by value, to give the agent a plan; its items are the
// state's Todos. (Embedded by pointer, it would be shared by every copy of
// the state; CheckState refuses that.)
type Plan struct {
	// Todos are the plan's items, in order.
	Todos []Todo `json:"todos,omitempty"`
	// Blocker is why the agent cannot finish the plan, as it declared with
	// todo_declare_blocker; "" when it declared none. Writing the plan
	// again (todo_write) clears it. A declared blocker stops the plan's
	// nudges (PlanCondition).
	Blocker string `json:"blocker,omitempty"`
}

// TodoList returns the address of the plan's items.
func (p *Plan) TodoList() *[]Todo { return &p.Todos }

// PlanBlocker returns the address of the plan's blocker.
func (p *Plan) PlanBlocker() *string { return &p.Blocker }

// HasBlocker is implemented by a pointer to a state that keeps a plan's
// blocker, which every state embedding Plan does.
type HasBlocker interface {
	PlanBlocker() *string
}

// HasTodos is implemented by a pointer to a state that keeps a plan, which
// every state embedding Plan does.
type HasTodos interface {
	TodoList() *[]Todo
}

// State constrains the state types Write works on: S whose pointer
// keeps a plan.
type State[S any] interface {
	*S
	HasTodos
}

// CheckState reports whether S keeps a plan the tools of this package (and
// the plan nudges of nodes and agent) can use: its pointer has TodoList
// (it embeds Plan), and no pointer stands between S and the plan, which
// every copy of a state would share.
func CheckState[S any]() error {
	var s S
	if _, ok := any(&s).(HasTodos); !ok {
		return fmt.Errorf("%T keeps no plan: embed plan.Plan", s)
	}
	if !planByValue(reflect.TypeFor[S](), 0) {
		return fmt.Errorf("%T embeds its plan through a pointer: embed plan.Plan by value", s)
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

// Update is the Details of a todo_write result (tool.Result.Details,
// which user interfaces receive with the call's end event, KindToolEnd,
// and the model never sees): the plan as the call wrote it and the plan it
// replaced, so that an interface can show the change.
type Update struct {
	// Todos is the plan as written, every item completed included, even
	// when the state no longer keeps it (Cleared).
	Todos []Todo `json:"todos"`
	// OldTodos is the plan of the state the call's batch started from;
	// nil when there was none. (Of two todo_write calls in one batch, both
	// report the plan from before the batch.)
	OldTodos []Todo `json:"old_todos,omitempty"`
	// Cleared reports that every item was completed and the state's plan
	// was cleared (see WithClearOnAllDone).
	Cleared bool `json:"cleared,omitempty"`
}

// BlockerDeclared is the Details of a todo_declare_blocker result: the
// reason the model gave and the plan it could not finish, as the call's
// batch found it.
type BlockerDeclared struct {
	// Reason is why the model cannot finish its plan.
	Reason string `json:"reason"`
	// Todos is the plan the blocker holds up.
	Todos []Todo `json:"todos,omitempty"`
}

// Option configures the plan tools Tools returns. A nil Option
// does nothing.
type Option func(*todoConfig)

type todoConfig struct {
	keepDone    bool          // WithClearOnAllDone(false)
	writeOpts   []tool.Option // WithWriteOptions
	blockerOpts []tool.Option // WithBlockerToolOptions
}

// WithClearOnAllDone says what todo_write does with a plan whose items are
// all completed: clear it from the state (true, the default, and what
// Write always does) or keep it, so that the finished plan stays in the
// state, its checkpoints and Reminder until the model writes the next
// one. A finished plan nudges nothing either way.
func WithClearOnAllDone(clear bool) Option {
	return func(c *todoConfig) { c.keepDone = !clear }
}

// WithWriteOptions passes tool options (an instruction, a title,
// metadata) to the todo_write tool of Tools; they add to or replace
// what it has, as they do for Write.
func WithWriteOptions(opts ...tool.Option) Option {
	return func(c *todoConfig) { c.writeOpts = append(c.writeOpts, opts...) }
}

// WithBlockerToolOptions passes tool options to the todo_declare_blocker
// tool of Tools.
func WithBlockerToolOptions(opts ...tool.Option) Option {
	return func(c *todoConfig) { c.blockerOpts = append(c.blockerOpts, opts...) }
}

// Tools returns the plan tools, configured by opts: todo_write (as
// Write returns it) and todo_declare_blocker (DeclareBlocker). Give
// both to an agent whose state embeds Plan:
//
//	agent.WithTools(plan.Tools[State](plan.WithClearOnAllDone(false))...)
func Tools[S any, PS State[S]](opts ...Option) []tool.Tool {
	var c todoConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return []tool.Tool{todoWrite[S, PS](c.keepDone, c.writeOpts), DeclareBlocker[S, PS](c.blockerOpts...)}
}

// Write returns the todo_write tool, with which a model keeps a plan
// for a task of several steps in the run's state (S's Plan): each call
// replaces the whole plan. A plan is refused, with what is wrong, when two
// items share an ID, more than one is in progress, or an item is empty;
// once every item is completed the plan is cleared, and the tool says so
// (Tools with WithClearOnAllDone(false) keeps it instead). Writing the
// plan clears a blocker the model declared (DeclareBlocker). The
// result's Details are a Update, the new plan and the old, for user
// interfaces.
// The ToolsNode applies the plan as a state update, in call order with the
// batch's other updates (of two todo_write calls in one batch, the last
// wins), so it is checkpointed with the conversation.
// Reminder renders the plan for a system prompt.
func Write[S any, PS State[S]](opts ...tool.Option) tool.Tool {
	return todoWrite[S, PS](false, opts)
}

// todoWrite is Write, keeping a finished plan when keepDone is set.
func todoWrite[S any, PS State[S]](keepDone bool, opts []tool.Option) tool.Tool {
	byValue := planByValue(reflect.TypeFor[S](), 0)
	base := []tool.Option{tool.WithInstruction("For a task of several steps, keep a plan with todo_write: write it before you start, keep exactly one item in progress, mark items completed as soon as they are done, and send the whole plan each time. Give the item in progress an active_form, what you are doing in the present continuous (\"Running the tests\").")}
	return tool.MustFunc(WriteName,
		"Replaces your plan for the current task with the list given: every item, with its status (pending, in_progress, completed).",
		func(ctx context.Context, in todoArgs) (tool.Result, error) {
			if !byValue {
				return tool.Result{}, fmt.Errorf("the plan cannot be kept: %T embeds plan.Plan through a pointer; embed it by value", *new(S))
			}
			if err := checkTodos(in.Todos); err != nil {
				return tool.Result{}, err
			}
			plan := in.Todos // decoded for this call alone
			done := len(plan) > 0 && !slices.ContainsFunc(plan, func(t Todo) bool { return t.Status != Completed })
			details := Update{Todos: slices.Clone(plan), OldTodos: slices.Clone(runPlan[S, PS](ctx))}
			msg := fmt.Sprintf("Plan updated: %s.", summarize(plan))
			switch {
			case done && keepDone:
				msg += " Every item is completed."
			case done:
				plan, msg, details.Cleared = nil, "Every item is completed; the plan is cleared.", true
			}
			r := tool.Text(msg)
			r.Details = details
			r.Actions.Update = func(s *S) {
				ps := PS(s)
				*ps.TodoList() = plan
				if b, ok := any(ps).(HasBlocker); ok {
					*b.PlanBlocker() = ""
				}
			}
			return r, nil
		}, append(base, opts...)...)
}

// runPlan returns the plan of the run's state (tool.RunState), nil when
// ctx carries no state of type S.
func runPlan[S any, PS State[S]](ctx context.Context) []Todo {
	s, ok := tool.RunState[S](ctx)
	if !ok {
		return nil
	}
	return *PS(&s).TodoList()
}

// blockerArgs are the arguments of todo_declare_blocker.
type blockerArgs struct {
	Reason string `json:"reason" jsonschema:"description=Why you cannot finish the plan: what stands in the way and what would unblock it,minLength=1"`
}

// DeclareBlocker returns the todo_declare_blocker tool, with which a
// model that cannot finish its plan says why: the reason goes into the
// state (Plan.Blocker, applied as a state update in call order like
// todo_write's), Reminder shows it, and PlanCondition sends no more
// nudges for the plan. The plan itself is left as it is; writing it again
// (todo_write) clears the blocker. The result's Details are a
// BlockerDeclared. Give it with Write, or take both from Tools.
func DeclareBlocker[S any, PS State[S]](opts ...tool.Option) tool.Tool {
	byValue := planByValue(reflect.TypeFor[S](), 0)
	_, hasBlocker := any(PS(new(S))).(HasBlocker)
	base := []tool.Option{tool.WithInstruction("If something you cannot resolve yourself keeps you from finishing your plan, record it with todo_declare_blocker, then tell the user what stands in the way and what you need.")}
	return tool.MustFunc(DeclareBlockerName,
		"Records that you cannot finish your plan, and why. The plan stays as it is; writing it again with todo_write clears the blocker.",
		func(ctx context.Context, in blockerArgs) (tool.Result, error) {
			switch {
			case !hasBlocker:
				return tool.Result{}, fmt.Errorf("the blocker cannot be kept: %T keeps no blocker; embed plan.Plan", *new(S))
			case !byValue:
				return tool.Result{}, fmt.Errorf("the blocker cannot be kept: %T embeds plan.Plan through a pointer; embed it by value", *new(S))
			}
			reason := strings.TrimSpace(in.Reason)
			if reason == "" {
				return tool.Result{}, errors.New("the blocker was not recorded: the reason is empty; say what keeps you from finishing the plan")
			}
			r := tool.Text("Blocker recorded; the plan is left as it is. Tell the user what stands in the way and what you need. Writing the plan again with todo_write clears the blocker.")
			r.Details = BlockerDeclared{Reason: reason, Todos: slices.Clone(runPlan[S, PS](ctx))}
			r.Actions.Update = func(s *S) {
				if b, ok := any(PS(s)).(HasBlocker); ok {
					*b.PlanBlocker() = reason
				}
			}
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
		if t.Status == InProgress {
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
		case Pending:
			pending++
		case InProgress:
			doing++
		case Completed:
			done++
		}
	}
	return fmt.Sprintf("%d pending, %d in progress, %d completed", pending, doing, done)
}

// Reminder renders the plan of the run's state (tool.RunState) for a
// system prompt, "" when there is none: give it to WithSystemPromptFunc,
// after the prompt of your own, so that the model sees where its plan
// stands on every turn.
func Reminder[S any, PS State[S]](ctx context.Context) string {
	s, ok := tool.RunState[S](ctx)
	if !ok {
		return ""
	}
	ps := PS(&s)
	plan, blocker := *ps.TodoList(), blockerOf(ps)
	if len(plan) == 0 && blocker == "" {
		return ""
	}
	var b strings.Builder
	if len(plan) > 0 {
		b.WriteString("Your plan (update it with todo_write):")
		for _, t := range plan {
			writeItem(&b, t)
		}
	}
	if blocker != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "You declared a blocker: %s (writing the plan again clears it)", oneLine(blocker))
	}
	return b.String()
}

// blockerOf returns the blocker of the plan p keeps, "" when it keeps none.
func blockerOf(p any) string {
	if b, ok := p.(HasBlocker); ok {
		return *b.PlanBlocker()
	}
	return ""
}

// FormatItems returns the items, each on a line of its own (a line break
// before each), with what the item in progress is doing (its ActiveForm)
// after it, as Reminder and the plan nudges of nodes list them.
func FormatItems(todos []Todo) string {
	var b strings.Builder
	for _, t := range todos {
		writeItem(&b, t)
	}
	return b.String()
}

// writeItem writes an item of a plan on a line of its own, with what the
// item in progress is doing (its ActiveForm) after it.
func writeItem(b *strings.Builder, t Todo) {
	fmt.Fprintf(b, "\n- [%s] %s (%s)", t.Status, oneLine(t.Content), oneLine(t.ID))
	if active := oneLine(t.ActiveForm); active != "" && t.Status == InProgress {
		fmt.Fprintf(b, ": %s", active)
	}
}

// oneLine returns s with its runs of white space, line breaks included,
// made single spaces, so that an item stays on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// MetaNudge marks, in Message.Metadata, the user messages that remind a
// model of the open items of its plan (nodes.PlanNudge appends them).
const MetaNudge = "trellis.plan_nudge"
