package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// SupervisorName is the name of a supervisor unless WithName gives another.
const SupervisorName = "supervisor"

// Worker is an agent a supervisor delegates to.
type Worker struct {
	// Name names the worker: its handoff tool, and its events' Path.
	Name string
	// Description tells the supervisor's model what the worker does and
	// when to use it.
	Description string
	// Agent is the worker's compiled graph, for example a NewReAct agent.
	Agent *graph.Graph[State]
	// Handoff configures the worker's handoff tool: shared history, all
	// messages as the result, retries, validation, depth, events.
	Handoff []handoff.Option
	// Tool, when set, is the worker's handoff tool instead of one built from
	// Agent: a handoff to a graph over another state, or a dynamic agent
	// tool (handoff.NewDynamic). Name, Description, Agent and Handoff are
	// then left empty; the tool's definition provides the name and
	// description.
	Tool tool.Tool
}

// NewSupervisor returns a compiled supervisor over State: a ReAct agent whose
// tools are handoffs to workers. Its model reads a routing prompt generated
// from the workers' names and descriptions (see RoutingPrompt), delegates
// tasks to them, and answers the user once it has what it needs. The calls
// of one turn run in parallel (handoffs are concurrency-safe), so the
// workers of one batch work at the same time. A worker that fails becomes
// an error result the supervisor's model reads; the run goes on.
//
// opts are those of NewReAct. The supervisor is named SupervisorName unless
// WithName says otherwise; WithSystemPrompt replaces the routing prompt
// (build on RoutingPrompt to keep it); WithTools adds tools of its own beside
// the handoffs.
func NewSupervisor(m model.Model, workers []Worker, opts ...Option) (*graph.Graph[State], error) {
	return Supervisor[State](m, workers, opts...)
}

// Supervisor is NewSupervisor over any state that embeds nodes.Chat.
func Supervisor[S any, PS nodes.ChatState[S]](m model.Model, workers []Worker, opts ...Option) (*graph.Graph[S], error) {
	if m == nil {
		return nil, errors.New("agent: a supervisor needs a model")
	}
	tools, err := handoffTools(workers)
	if err != nil {
		return nil, err
	}
	base := []Option{WithName(SupervisorName), WithSystemPrompt(RoutingPrompt(workers)), WithTools(tools...)}
	return ReAct[S, PS](m, append(base, opts...)...)
}

// handoffTools builds (or takes) the workers' handoff tools, checking that
// every worker is usable and that names are unique.
func handoffTools(workers []Worker) ([]tool.Tool, error) {
	if len(workers) == 0 {
		return nil, errors.New("agent: a supervisor needs at least one worker")
	}
	var problems []string
	tools := make([]tool.Tool, 0, len(workers))
	seen := map[string]int{}
	for i, w := range workers {
		t, err := w.tool()
		if err != nil {
			problems = append(problems, fmt.Sprintf("worker %d: %v", i, err))
			continue
		}
		name := tool.Name(t)
		if j, dup := seen[name]; dup {
			problems = append(problems, fmt.Sprintf("workers %d and %d are both named %q", j, i, name))
			continue
		}
		seen[name] = i
		tools = append(tools, t)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("agent: supervisor: %s", strings.Join(problems, "; "))
	}
	return tools, nil
}

func (w Worker) tool() (tool.Tool, error) {
	if w.Tool != nil {
		if w.Agent != nil || w.Name != "" || w.Description != "" || len(w.Handoff) > 0 {
			return nil, fmt.Errorf("worker %q has a Tool: leave Name, Description, Agent and Handoff empty", tool.Name(w.Tool))
		}
		return w.Tool, nil
	}
	switch {
	case w.Name == "":
		return nil, errors.New("the worker has no name")
	case w.Agent == nil:
		return nil, fmt.Errorf("worker %q has no Agent (or Tool)", w.Name)
	case strings.TrimSpace(w.Description) == "":
		return nil, fmt.Errorf("worker %q has no description: the supervisor's model reads it to choose whom to delegate to", w.Name)
	}
	return handoff.New(w.Name, w.Description, w.Agent, w.Handoff...)
}

// RoutingPrompt returns the system prompt NewSupervisor gives its model:
// what a supervisor does, and the workers by name with their descriptions.
func RoutingPrompt(workers []Worker) string {
	var b strings.Builder
	b.WriteString("You are a supervisor. You answer the user's request by delegating work to the workers below; each is a tool you call with a task and, when it helps, context. Workers may not see this conversation: state each task completely.\n\nWorkers:\n")
	for _, w := range workers {
		name, desc := w.Name, w.Description
		if w.Tool != nil {
			def := w.Tool.Definition()
			name, desc = def.Name, def.Description
		}
		fmt.Fprintf(&b, "- %s: %s\n", name, strings.TrimSpace(desc))
	}
	b.WriteString("\nCall several workers in one turn when their tasks do not depend on each other; they work at the same time. When a worker fails, decide whether to try again, ask another worker, or answer without it. When you have what you need, answer the user yourself.")
	return b.String()
}
