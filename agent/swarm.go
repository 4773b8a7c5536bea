package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

// SwarmName is the name of a swarm unless WithName gives another.
const SwarmName = "swarm"

// SwarmState is the state of a swarm: the conversation, and the agent that
// has control.
type SwarmState struct {
	nodes.Chat
	// Active names the agent that has control: the one that spoke last, or
	// the one the last transfer went to. It is checkpointed with the
	// conversation, so that the next user turn goes to it. Empty means the
	// swarm's first agent.
	Active string `json:"active,omitempty"`
}

// ActiveAgent returns the address of Active.
func (s *SwarmState) ActiveAgent() *string { return &s.Active }

// SwarmChat constrains the state types of a swarm: S whose pointer has a
// conversation and an active agent, as every state embedding SwarmState
// does.
type SwarmChat[S any] interface {
	*S
	nodes.HasChat
	ActiveAgent() *string
}

// SwarmAgent is one agent of a swarm.
type SwarmAgent struct {
	// Name names the agent: its node, its messages (model.Message.Name), and
	// the transfer tool that hands control to it. It must not be graph.START,
	// graph.END, or the name of another agent's tools node (SwarmToolsNode).
	Name string
	// Description tells the other agents what this one does, in the
	// description of the tool that transfers to it.
	Description string
	// Model is the agent's model.
	Model model.Model
	// Options configure the agent as they configure NewReAct: system
	// prompt, tools, executor and middleware, LLM and ToolsNode options, max
	// hops. WithName, WithCheckpointer and WithCompileOptions belong to the
	// swarm and are ignored here. The agent's ToolsNode continues at the
	// agent, at a transfer's target, or nowhere (graph.END): tools that
	// transfer elsewhere (tool.Actions.TransferTo) fail the run.
	Options []Option
	// TransfersTo names the agents this one may transfer control to; nil
	// means every other agent.
	TransfersTo []string
}

// TransferToolName returns the name of the tool that transfers control to
// the named agent: "transfer_to_" followed by the name.
func TransferToolName(agent string) string { return "transfer_to_" + agent }

// SwarmToolsNode returns the name of the node that runs the named agent's
// tool calls. The agent's model runs in the node named after the agent.
func SwarmToolsNode(agent string) string { return agent + "_tools" }

// NewSwarm returns a compiled swarm over SwarmState: agents that pass control
// to each other. Each agent is a model that calls tools in a loop, as in a
// ReAct agent, and has a transfer tool (TransferToolName) for each agent it
// may hand control to. Calling one ends the agent's turn: the run continues
// at the target, which sees the whole conversation, and the state's Active
// field names it. A run starts at the active agent — the swarm's first agent
// on a fresh conversation — so that with a checkpointer, each user turn of
// a thread (see Continue) resumes with the agent that had control.
//
// When one turn calls several transfer tools, the first in call order wins.
// A transfer holds when its turn also has calls that pause the run (calls
// left to the caller, an interrupt): the resumed run continues at the
// target.
//
// Of opts, the swarm uses WithName (the graph's name, SwarmName unless set),
// WithCheckpointer, WithCompileOptions and WithMaxHops (for the superstep
// limit, which leaves room for that many round trips, or for the largest
// hop cap of the agents when that is greater); the agents' own settings go
// in their Options.
func NewSwarm(agents []SwarmAgent, opts ...Option) (*graph.Graph[SwarmState], error) {
	return Swarm[SwarmState](agents, opts...)
}

// Swarm is NewSwarm over any state that embeds SwarmState.
func Swarm[S any, PS SwarmChat[S]](agents []SwarmAgent, opts ...Option) (*graph.Graph[S], error) {
	c := newConfig(append([]Option{WithName(SwarmName)}, opts...))
	if err := checkSwarm(agents, c.maxHops); err != nil {
		return nil, err
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	b := graph.New[S](graph.WithName(c.name), nodes.MessagesReducer[S, PS]())
	for _, a := range agents {
		ac := newConfig(a.Options)
		if err := addSwarmAgent[S, PS](b, a, ac, agents); err != nil {
			return nil, err
		}
		// The round trips of a run count those of every agent, each agent
		// checking them against its own cap: the superstep limit leaves
		// room for the largest.
		c.maxHops = max(c.maxHops, ac.maxHops)
	}
	first := names[0]
	b.AddConditionalEdges(graph.START, func(_ context.Context, s S) []string {
		if active := *PS(&s).ActiveAgent(); active != "" {
			return []string{active}
		}
		return []string{first}
	}, names...)
	return b.Compile(c.compileOptions()...)
}

// checkSwarm reports every problem with the agents, and with the swarm's
// hop cap, at once.
func checkSwarm(agents []SwarmAgent, maxHops int) error {
	if len(agents) == 0 {
		return errors.New("agent: a swarm needs at least one agent")
	}
	var problems []string
	if maxHops < 1 {
		problems = append(problems, fmt.Sprintf("max hops must be at least 1, got %d", maxHops))
	}
	seen := map[string]bool{}
	for i, a := range agents {
		switch {
		case a.Name == "":
			problems = append(problems, fmt.Sprintf("agent %d has no name", i))
		case a.Name == graph.START || a.Name == graph.END:
			problems = append(problems, fmt.Sprintf("agent %d is named %q, which is reserved", i, a.Name))
		case seen[a.Name]:
			problems = append(problems, fmt.Sprintf("two agents are named %q", a.Name))
		}
		seen[a.Name] = true
		if a.Model == nil {
			problems = append(problems, fmt.Sprintf("agent %q has no model", a.Name))
		}
	}
	for _, a := range agents {
		if a.Name != "" && seen[SwarmToolsNode(a.Name)] {
			problems = append(problems, fmt.Sprintf("agent %q has the name of agent %q's tools node", SwarmToolsNode(a.Name), a.Name))
		}
	}
	for _, a := range agents {
		for _, to := range a.TransfersTo {
			switch {
			case to == a.Name:
				problems = append(problems, fmt.Sprintf("agent %q cannot transfer to itself", a.Name))
			case !seen[to]:
				problems = append(problems, fmt.Sprintf("agent %q transfers to %q, which is not an agent of the swarm", a.Name, to))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("agent: swarm: %s", strings.Join(problems, "; "))
	}
	return nil
}

// addSwarmAgent adds an agent's model node and, if it has tools, its tools
// node; c is the agent's configuration.
func addSwarmAgent[S any, PS SwarmChat[S]](b *graph.Builder[S], a SwarmAgent, c *config, all []SwarmAgent) error {
	if c.maxHops < 1 {
		return fmt.Errorf("agent: swarm agent %q: max hops must be at least 1, got %d", a.Name, c.maxHops)
	}
	if err := c.checkExecutor(); err != nil {
		return fmt.Errorf("agent: swarm agent %q: %w", a.Name, err)
	}
	var transfers []tool.Tool
	var targets []string
	for _, to := range all {
		if to.Name == a.Name || (a.TransfersTo != nil && !slices.Contains(a.TransfersTo, to.Name)) {
			continue
		}
		t, err := transferTool[S, PS](a.Name, to)
		if err != nil {
			return fmt.Errorf("agent: swarm agent %q: %w", a.Name, err)
		}
		transfers, targets = append(transfers, t), append(targets, to.Name)
	}

	var shared []nodes.Option
	if len(transfers) > 0 {
		// The swarm's own tools: the agent's filters (WithResolveOptions),
		// written for its tools, must not hide them.
		shared = append(shared, nodes.WithToolsets(tool.Fixed(tool.NewStatic("swarm", transfers...))))
	}
	llm, tools := c.nodeOptions(a.Name, shared...)
	b.AddNode(a.Name, activate[S, PS](a.Name, nodes.LLM[S, PS](a.Model, llm...)))
	if len(c.shared) == 0 && len(shared) == 0 {
		b.AddEdge(a.Name, graph.END)
		return nil
	}
	toolsNode := SwarmToolsNode(a.Name)
	b.AddConditionalEdges(a.Name, nodes.ToolsCondition[S, PS](toolsNode), toolsNode, graph.END)
	// The ToolsNode's destinations, as nodes.AddTools declares them.
	dests := append([]string{a.Name, toolsNode, graph.END}, targets...)
	b.AddCommandNode(toolsNode, handOver[S, PS](a.Name, targets, nodes.Tools[S, PS](a.Name, tools...)), dests)
	return nil
}

// handOver makes the ToolsNode of agent name continue at the agent that has
// control. A batch that pauses (calls left to the caller, an interrupt) is
// answered in parts; a transfer in an earlier part moves Active, and the
// part that completes the batch routes back to the agent: it goes to the
// transfer's target instead.
func handOver[S any, PS SwarmChat[S]](name string, targets []string, run graph.CommandFunc[S]) graph.CommandFunc[S] {
	return func(ctx context.Context, s S) (S, graph.Command[S], error) {
		s, cmd, err := run(ctx, s)
		if err != nil || len(cmd.Goto) != 1 || cmd.Goto[0] != name {
			return s, cmd, err
		}
		if active := *PS(&s).ActiveAgent(); active != name && slices.Contains(targets, active) {
			cmd.Goto = []string{active}
		}
		return s, cmd, nil
	}
}

// activate makes the agent's model node record that the agent has control.
func activate[S any, PS SwarmChat[S]](name string, llm graph.NodeFunc[S]) graph.NodeFunc[S] {
	return func(ctx context.Context, s S) (S, error) {
		*PS(&s).ActiveAgent() = name
		return llm(ctx, s)
	}
}

// transferTool returns the tool with which agent from hands control to to.
func transferTool[S any, PS SwarmChat[S]](from string, to SwarmAgent) (tool.Tool, error) {
	desc := "Transfer the conversation to " + to.Name + "."
	if d := strings.TrimSpace(to.Description); d != "" {
		desc += " " + to.Name + ": " + d
	}
	target := to.Name
	return tool.NewFunc(TransferToolName(target), desc, func(context.Context, struct{}) (tool.Result, error) {
		r := tool.Text("Transferred to " + target + ".")
		r.Actions = tool.Actions{
			TransferTo: target,
			// Only the first transfer of a batch moves control: the
			// ToolsNode routes to the first in call order.
			Update: func(s *S) {
				if active := PS(s).ActiveAgent(); *active == from {
					*active = target
				}
			},
		}
		return r, nil
	}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}
