package nodes

import (
	"context"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/plan"
)

// PlanCondition is ToolsCondition for an agent that keeps a plan (a state
// embedding plan.Plan, plan.Write): it routes to toolsNode when the last message
// asks for tools; to nudgeNode when the model answered while items of the
// plan it wrote since the user last spoke are not completed, it declared no
// blocker for that plan (plan.DeclareBlocker), and fewer than max nudges
// were sent since the user spoke; to graph.END otherwise. A state without a
// plan is routed as ToolsCondition routes it. Declare the three
// destinations.
func PlanCondition[S any, PS ChatState[S]](toolsNode, nudgeNode string, max int) graph.Route[S] {
	tools := ToolsCondition[S, PS](toolsNode)
	toNudge := []string{nudgeNode}
	return func(ctx context.Context, s S) []string {
		next := tools(ctx, s)
		if next[0] != graph.END {
			return next
		}
		p, ok := any(PS(&s)).(plan.HasTodos)
		if !ok || !slices.ContainsFunc(*p.TodoList(), func(t plan.Todo) bool { return t.Status != plan.Completed }) {
			return next
		}
		if b, ok := p.(plan.HasBlocker); ok && *b.PlanBlocker() != "" {
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
		if msgs[i].Metadata[plan.MetaNudge] != "true" {
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
		if m.Role == model.RoleUser && m.Metadata[plan.MetaNudge] != "true" {
			return false
		}
		if m.Role == model.RoleTool && m.ToolName == plan.WriteName && !m.IsError {
			return true
		}
	}
	return false
}

// defaultNudgeText is what a nudge says after the open items unless
// WithNudgeMessage says otherwise.
const defaultNudgeText = "Go on with them, or update the plan with todo_write if it has changed. If you need the user's input to go on, ask for it."

// Nudge is what a NudgeHook is asked about: the plan of a model that
// answered with items open, before a nudge is sent.
type Nudge struct {
	// Todos is the whole plan.
	Todos []plan.Todo
	// Open are its items not completed, in order.
	Open []plan.Todo
	// Sent counts the nudges sent since the user last spoke.
	Sent int
	// Message is what the nudge will say unless the hook says otherwise:
	// the open items, then the text of WithNudgeMessage (or the default).
	Message string
}

// NudgeHook decides, before each nudge of PlanNudgeCommand, whether to send
// it (nudge) and what it says: msg replaces Nudge.Message unless it is
// empty or only white space. Declining ends the run's turn as if no nudge
// were due.
type NudgeHook func(ctx context.Context, n Nudge) (msg string, nudge bool)

// NudgeOption configures the nudges of PlanNudgeCommand (and
// agent.WithPlanNudges). A nil NudgeOption does nothing.
type NudgeOption func(*nudgeConfig)

type nudgeConfig struct {
	text string    // WithNudgeMessage
	hook NudgeHook // WithNudgeHook
}

// WithNudgeMessage sets what a nudge says after the list of open items,
// instead of telling the model to go on with them, update its plan, or ask
// the user. Blank text keeps the default.
func WithNudgeMessage(text string) NudgeOption {
	return func(c *nudgeConfig) {
		if strings.TrimSpace(text) != "" {
			c.text = text
		}
	}
}

// WithNudgeHook calls fn before each nudge, to let the application decide
// whether to send it and what it says (see NudgeHook). A later
// WithNudgeHook replaces an earlier one.
func WithNudgeHook(fn NudgeHook) NudgeOption {
	return func(c *nudgeConfig) { c.hook = fn }
}

// PlanNudge returns a node that reminds the model of the open items of its
// plan, in a user message marked plan.MetaNudge, so that an agent that
// answered with work left goes on with it or updates the plan. Route to it
// with PlanCondition, and from it back to the LLM node. PlanNudgeCommand is
// the same node with options (its message, a hook that decides).
func PlanNudge[S any, PS ChatState[S]]() graph.NodeFunc[S] {
	return func(_ context.Context, s S) (S, error) {
		p, ok := any(PS(&s)).(plan.HasTodos)
		if !ok {
			return s, nil
		}
		appendNudge(PS(&s).ChatMessages(), nudgeText(openItems(*p.TodoList()), defaultNudgeText))
		return s, nil
	}
}

// PlanNudgeCommand is PlanNudge as a command node, configured by opts:
// after appending the nudge it continues at next, the LLM node; when there
// is nothing to nudge about, or the hook of WithNudgeHook declines, it
// appends nothing and ends the branch (graph.END). Route to it with
// PlanCondition and add it with AddCommandNode, declaring next and
// graph.END.
func PlanNudgeCommand[S any, PS ChatState[S]](next string, opts ...NudgeOption) graph.CommandFunc[S] {
	cfg := nudgeConfig{text: defaultNudgeText}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return func(ctx context.Context, s S) (S, graph.Command[S], error) {
		end := graph.Command[S]{Goto: []string{graph.END}}
		p, ok := any(PS(&s)).(plan.HasTodos)
		if !ok {
			return s, end, nil
		}
		todos := *p.TodoList()
		open := openItems(todos)
		if len(open) == 0 {
			return s, end, nil
		}
		msgs := PS(&s).ChatMessages()
		text := nudgeText(open, cfg.text)
		if cfg.hook != nil {
			msg, nudge := cfg.hook(ctx, Nudge{Todos: slices.Clone(todos), Open: open, Sent: nudgesSinceUser(*msgs), Message: text})
			if !nudge {
				return s, end, nil
			}
			if strings.TrimSpace(msg) != "" {
				text = msg
			}
		}
		appendNudge(msgs, text)
		return s, graph.Command[S]{Goto: []string{next}}, nil
	}
}

// openItems returns the items of todos not completed, in a slice of their
// own.
func openItems(todos []plan.Todo) []plan.Todo {
	var open []plan.Todo
	for _, t := range todos {
		if t.Status != plan.Completed {
			open = append(open, t)
		}
	}
	return open
}

// nudgeText lists the open items, then says text.
func nudgeText(open []plan.Todo, text string) string {
	var b strings.Builder
	b.WriteString("Your plan still has open items:")
	b.WriteString(plan.FormatItems(open))
	b.WriteString("\n")
	b.WriteString(text)
	return b.String()
}

// appendNudge appends a user message saying text, marked plan.MetaNudge, to
// the conversation msgs points to.
func appendNudge(msgs *[]model.Message, text string) {
	msg := model.User(text)
	msg.ID, msg.Metadata = NewMessageID(), map[string]string{plan.MetaNudge: "true"}
	*msgs = append(slices.Clip(*msgs), msg)
}
