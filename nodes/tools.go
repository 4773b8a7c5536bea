package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type toolsConfig struct {
	toolSource
	exec      executor.Executor
	policy    ErrorPolicy
	policies  map[string]ErrorPolicy
	pending   *tool.Pending
	transfers []string
}

// ErrorPolicy says what a ToolsNode does with a tool's error result.
type ErrorPolicy int

const (
	// InformModel hands the error to the model as the tool's result, so that
	// it can retry, rephrase or give up (the default).
	InformModel ErrorPolicy = iota
	// ReturnError fails the ToolsNode with a *ToolError: the run stops and
	// the caller gets the error.
	ReturnError
)

// WithExecutor runs the calls through e (a parallel executor unless set).
// Give e the observer ToolEvents to see tool events in the graph's stream.
func WithExecutor(e executor.Executor) ToolsOption {
	return toolsOption(func(c *toolsConfig) { c.exec = e })
}

// WithErrorPolicy sets the error policy of the named tools, or of every tool
// when no name is given.
func WithErrorPolicy(p ErrorPolicy, toolNames ...string) ToolsOption {
	return toolsOption(func(c *toolsConfig) {
		if len(toolNames) == 0 {
			c.policy = p
			return
		}
		if c.policies == nil {
			c.policies = map[string]ErrorPolicy{}
		}
		for _, n := range toolNames {
			c.policies[n] = p
		}
	})
}

// WithPendingCalls lets long-running tools complete in-process: a call
// answered with a pending result is awaited on p (see tool.Pending) before
// the ToolsNode answers it. Without it, the pending result is the call's
// answer and the final result is delivered later with CompleteToolCall.
func WithPendingCalls(p *tool.Pending) ToolsOption {
	return toolsOption(func(c *toolsConfig) { c.pending = p })
}

// WithTransfers declares the nodes tools may transfer control to
// (tool.Actions.TransferTo), for AddTools to declare as destinations.
func WithTransfers(nodes ...string) ToolsOption {
	return toolsOption(func(c *toolsConfig) { c.transfers = append(c.transfers, nodes...) })
}

// ErrToolFailed is matched by *ToolError.
var ErrToolFailed = errors.New("tool failed")

// ToolError is a tool's error result under the ReturnError policy.
type ToolError struct {
	// Call is the failed call.
	Call model.ToolCall
	// Result is its result.
	Result tool.Result
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("nodes: tool %q (call %s) failed: %s", e.Call.Name, e.Call.ID, e.Result.Text())
}

// Unwrap returns the tool's Go error, if it had one.
func (e *ToolError) Unwrap() error { return e.Result.Err }

// Is reports whether target is ErrToolFailed.
func (e *ToolError) Is(target error) bool { return target == ErrToolFailed }

// PendingToolCalls is the payload of the interrupt a ToolsNode raises for
// calls the caller executes: calls of declaration-only tools and of tools
// the run resolved as not executable. Resume the thread with a
// map[string]tool.Result that answers each call by ID.
type PendingToolCalls struct {
	Calls []model.ToolCall `json:"calls"`
}

// ToolEvents is an executor observer that forwards tool events into the
// stream of the graph run the batch belongs to (graph.ModeEvents), with the
// event kinds KindToolStart, KindToolUpdate and KindToolEnd and the
// executor.Event as payload.
func ToolEvents(ctx context.Context, ev executor.Event) {
	if !graph.Emitting(ctx, graph.ModeEvents) {
		return
	}
	graph.Emit(ctx, graph.ModeEvents, graph.Event{Kind: graph.EventKind(ev.Kind), Name: ev.Call.Name, Payload: ev, Duration: ev.Duration})
}

// Event kinds of tool calls in a graph's stream (see ToolEvents).
const (
	KindToolStart  = graph.EventKind(executor.ToolStart)
	KindToolUpdate = graph.EventKind(executor.ToolUpdate)
	KindToolEnd    = graph.EventKind(executor.ToolEnd)
)

// ToolMessageID is the ID of the tool message that answers the call callID.
// It is derived from the call so that the answer can be replaced later (see
// CompleteToolCall).
func ToolMessageID(callID string) string { return "tool:" + callID }

// AddTools adds a ToolsNode named name that returns to next, declaring its
// destinations: next, itself (it continues in a new superstep when part of a
// batch must wait for the caller), graph.END (escalation, or a batch whose
// results all terminate) and the targets of WithTransfers.
func AddTools[S any, PS ChatState[S]](b *graph.Builder[S], name, next string, opts ...ToolsOption) *graph.Builder[S] {
	var cfg toolsConfig
	for _, o := range opts {
		o.applyTools(&cfg)
	}
	dests := append([]string{next, name, graph.END}, cfg.transfers...)
	return b.AddCommandNode(name, Tools[S, PS](next, opts...), dests)
}

// Tools returns a ToolsNode: it runs the tool calls of the last assistant
// message through the executor and appends one tool message per call, in
// call order, then continues with next. Add it with AddTools, or with
// AddCommandNode declaring next, the node itself, graph.END and any
// transfer targets.
//
// Tools see the run: the state is in their context (tool.RunState), and
// their results' Actions are applied in call order — Update (a func(*S) or
// func(S) S) changes the state, TransferTo continues at another node (the
// first transfer in call order wins), Escalate ends the loop (graph.END;
// it wins over transfers). A batch whose results all set Terminate ends the
// loop too.
//
// Calls the caller executes (declaration-only tools, tools resolved as not
// executable) interrupt the run with PendingToolCalls; resume it with a
// map[string]tool.Result of their answers by call ID. Calls already answered
// are never run again: a call counts as answered once a tool message with
// its ID follows the assistant message.
func Tools[S any, PS ChatState[S]](next string, opts ...ToolsOption) graph.CommandFunc[S] {
	var cfg toolsConfig
	for _, o := range opts {
		o.applyTools(&cfg)
	}
	if cfg.exec == nil {
		cfg.exec = executor.Parallel(executor.WithObserver(ToolEvents))
	}
	toNext := graph.Command[S]{Goto: []string{next}}
	return func(ctx context.Context, s S) (S, graph.Command[S], error) {
		calls := unanswered(*PS(&s).ChatMessages())
		if len(calls) == 0 {
			return s, toNext, nil
		}
		ctx = tool.WithConversation(tool.WithRunState(ctx, s), slices.Clip(*PS(&s).ChatMessages()))
		list, err := cfg.resolveTools(ctx)
		if err != nil {
			return s, graph.Command[S]{}, err
		}
		var run, external []model.ToolCall
		for _, c := range calls {
			if t, ok := list.Lookup(c.Name); ok && (tool.IsDeclarationOnly(t) || !list.Executable(c.Name)) {
				external = append(external, c)
			} else {
				run = append(run, c)
			}
		}

		var (
			out        = make([]answer, 0, len(calls))
			interrupts []graph.PendingInterrupt
		)
		if len(run) > 0 {
			results, err := cfg.exec.Execute(ctx, executor.Batch{Calls: run, Tools: list})
			if err != nil {
				return s, graph.Command[S]{}, err
			}
			for i, r := range results {
				if r.Err != nil {
					if ins := interruptsIn(r.Err); ins != nil {
						interrupts = append(interrupts, ins...)
						continue
					}
				}
				if r.Pending && cfg.pending != nil {
					if final, err := cfg.pending.Wait(ctx, run[i].ID); err == nil {
						r = final
					} else {
						return s, graph.Command[S]{}, fmt.Errorf("nodes: waiting for long-running call %s (%s): %w", run[i].ID, run[i].Name, err)
					}
				}
				out = append(out, answer{call: run[i], result: r})
			}
		}
		if len(interrupts) > 0 || len(external) > 0 {
			if len(out) > 0 {
				// Keep what finished, then wait for the rest in a new
				// superstep, so that a resume never runs these calls again.
				if err := apply[S, PS](&cfg, &s, out); err != nil {
					return s, graph.Command[S]{}, err
				}
				return s, graph.Command[S]{Goto: []string{graph.NodeName(ctx)}}, nil
			}
			if len(interrupts) > 0 {
				return s, graph.Command[S]{}, &graph.InterruptError{Thread: graph.ThreadID(ctx), Interrupts: interrupts}
			}
			answers, err := graph.Interrupt[map[string]tool.Result](ctx, PendingToolCalls{Calls: external})
			if err != nil {
				return s, graph.Command[S]{}, err
			}
			for _, c := range external {
				r, ok := answers[c.ID]
				if !ok {
					return s, graph.Command[S]{}, fmt.Errorf("nodes: no result was supplied for call %s of tool %q (supplied: %v)", c.ID, c.Name, keys(answers))
				}
				out = append(out, answer{call: c, result: r})
			}
		}
		if len(external) > 0 {
			// Answers in call order.
			order := make(map[string]int, len(calls))
			for i, c := range calls {
				order[c.ID] = i
			}
			slices.SortFunc(out, func(a, b answer) int { return order[a.call.ID] - order[b.call.ID] })
		}
		if err := apply[S, PS](&cfg, &s, out); err != nil {
			return s, graph.Command[S]{}, err
		}
		return s, route(out, toNext), nil
	}
}

func interruptsIn(err error) []graph.PendingInterrupt {
	var ie *graph.InterruptError
	if errors.As(err, &ie) {
		return ie.Interrupts
	}
	return nil
}

type answer struct {
	call   model.ToolCall
	result tool.Result
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// apply checks the error policies, appends the tool messages and applies
// the results' state updates, in call order.
func apply[S any, PS ChatState[S]](c *toolsConfig, s *S, out []answer) error {
	for _, a := range out {
		if a.result.IsError && c.policyOf(a.call.Name) == ReturnError {
			return &ToolError{Call: a.call, Result: a.result}
		}
	}
	msgs := PS(s).ChatMessages()
	for _, a := range out {
		m := a.result.Message(a.call.ID, a.call.Name)
		m.ID = ToolMessageID(a.call.ID)
		*msgs = append(*msgs, m)
	}
	for _, a := range out {
		switch u := a.result.Actions.Update.(type) {
		case nil:
		case func(*S):
			u(s)
		case func(S) S:
			*s = u(*s)
		default:
			return fmt.Errorf("nodes: tool %q (call %s) returned a state update of type %T; a ToolsNode applies func(*%T) or func(%T) %T",
				a.call.Name, a.call.ID, u, *s, *s, *s)
		}
	}
	return nil
}

func (c *toolsConfig) policyOf(name string) ErrorPolicy {
	if p, ok := c.policies[name]; ok {
		return p
	}
	return c.policy
}

// route picks where the loop goes after a batch: END when a result escalates
// or every result terminates, else the first transfer in call order, else next.
func route[S any](out []answer, next graph.Command[S]) graph.Command[S] {
	escalate, transfer, terminate := false, "", len(out) > 0
	for _, a := range out {
		acts := a.result.Actions
		escalate = escalate || acts.Escalate
		if transfer == "" {
			transfer = acts.TransferTo
		}
		terminate = terminate && a.result.Terminate
	}
	switch {
	case escalate || terminate:
		return graph.Command[S]{Goto: []string{graph.END}}
	case transfer != "":
		return graph.Command[S]{Goto: []string{transfer}}
	}
	return next
}

// unanswered returns the calls of the last assistant message that asked for
// tools and that no tool message after it answers yet.
func unanswered(msgs []model.Message) []model.ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != model.RoleAssistant {
			continue
		}
		if !m.HasToolCalls() {
			return nil
		}
		if i == len(msgs)-1 {
			return m.ToolCalls // nothing answers them yet
		}
		answered := make(map[string]bool)
		for _, later := range msgs[i+1:] {
			if later.Role == model.RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		var out []model.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}
