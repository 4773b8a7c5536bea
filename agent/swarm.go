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
	// the transfer tool that hands control to it.
	Name string
	// Description tells the other agents what this one does, in the
	// description of the tool that transfers to it.
	Description string
	// Model is the agent's model.
	Model model.Model
	// Options configure the agent as they configure NewReAct: system
	// prompt, tools, executor and middleware, LLM and ToolsNode options, max
	// hops. WithName, WithCheckpointer and WithCompileOptions belong to the
	// swarm and are ignored here.
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
// Of opts, the swarm uses WithName (the graph's name, SwarmName unless set),
// WithCheckpointer, WithCompileOptions and WithMaxHops (for the superstep
// limit); the agents' own settings go in their Options.
func NewSwarm(agents []SwarmAgent, opts ...Option) (*graph.Graph[SwarmState], error) {
	return Swarm[SwarmState](agents, opts...)
}

// Swarm is NewSwarm over any state that embeds SwarmState.
func Swarm[S any, PS SwarmChat[S]](agents []SwarmAgent, opts ...Option) (*graph.Graph[S], error) {
	c := newConfig(append([]Option{WithName(SwarmName)}, opts...))
	if err := checkSwarm(agents); err != nil {
		return nil, err
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	b := graph.New[S](graph.WithName(c.name), nodes.MessagesReducer[S, PS]())
	for _, a := range agents {
		if err := addSwarmAgent[S, PS](b, a, agents); err != nil {
			return nil, err
		}
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

// checkSwarm reports every problem with the agents at once.
func checkSwarm(agents []SwarmAgent) error {
	if len(agents) == 0 {
		return errors.New("agent: a swarm needs at least one agent")
	}
	var problems []string
	seen := map[string]bool{}
	for i, a := range agents {
		switch {
		case a.Name == "":
			problems = append(problems, fmt.Sprintf("agent %d has no name", i))
		case seen[a.Name]:
			problems = append(problems, fmt.Sprintf("two agents are named %q", a.Name))
		}
		seen[a.Name] = true
		if a.Model == nil {
			problems = append(problems, fmt.Sprintf("agent %q has no model", a.Name))
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
// node.
func addSwarmAgent[S any, PS SwarmChat[S]](b *graph.Builder[S], a SwarmAgent, all []SwarmAgent) error {
	c := newConfig(a.Options)
	if c.maxHops < 1 {
		return fmt.Errorf("agent: swarm agent %q: max hops must be at least 1, got %d", a.Name, c.maxHops)
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

	llm := append([]nodes.LLMOption{nodes.WithMaxHops(c.maxHops)}, c.llm...)
	llm = append(llm, nodes.WithAgentName(a.Name))
	tools := []nodes.ToolsOption{nodes.WithExecutor(c.executor())}
	shared := c.shared
	if len(transfers) > 0 {
		shared = append(slices.Clip(shared), nodes.WithTools(transfers...))
	}
	for _, o := range shared {
		llm = append(llm, o)
		tools = append(tools, o)
	}
	tools = append(tools, c.tools...)
	tools = append(tools, nodes.WithTransfers(targets...))

	b.AddNode(a.Name, activate[S, PS](a.Name, nodes.LLM[S, PS](a.Model, llm...)))
	if len(shared) == 0 {
		b.AddEdge(a.Name, graph.END)
		return nil
	}
	toolsNode := SwarmToolsNode(a.Name)
	b.AddConditionalEdges(a.Name, nodes.ToolsCondition[S, PS](toolsNode), toolsNode, graph.END)
	nodes.AddTools[S, PS](b, toolsNode, a.Name, tools...)
	return nil
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
