package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// DynamicName is the name of a dynamic agent tool unless NewDynamic is given
// another.
const DynamicName = "dynamic_agent"

// DynamicArgs are the arguments a model passes to a dynamic agent tool.
type DynamicArgs struct {
	// Request is the task, with the context the agent needs.
	Request string `json:"request"`
	// Instruction is the role, constraints or guidance for this agent.
	Instruction string `json:"instruction,omitempty"`
	// Tools names the tools the agent may use, among those the code allows:
	// nil for all of them, empty for none.
	Tools *[]string `json:"tools,omitempty"`
}

// Template builds the agent of one call of a dynamic agent tool from what the
// model chose: the instruction ("" when it gave none) and the tools, a subset
// of the tool's boundary in boundary order. It fixes everything the model
// does not choose — the model, the base system prompt, the executor and its
// middleware — and typically adds the instruction to the system prompt.
// It is called once per call and must be safe for concurrent use.
type Template[S any] func(instruction string, tools []tool.Tool) (*graph.Graph[S], error)

// NewDynamic returns a tool that runs a short-lived agent shaped by the
// model: the model gives the request, optionally an instruction and the
// names of the tools the agent may use, chosen among boundary (the schema
// enumerates them, so a name outside the boundary is rejected before
// anything runs). template builds the agent for each call; it is the
// boundary in code, which the model cannot cross: it cannot pick the model,
// the executor, or tools the code did not list.
//
// An empty name is DynamicName; an empty description is a generic one. The
// options are those of New — the agent runs like a handoff's, with the
// request as its task — and those that shape the arguments the model gives:
// WithoutInstruction, WithoutToolChoice and WithFieldDescriptions.
func NewDynamic[S any, PS State[S]](name, description string, template Template[S], boundary []tool.Tool, opts ...Option) (tool.Tool, error) {
	if name == "" {
		name = DynamicName
	}
	if description == "" {
		description = "Starts a focused helper agent for one self-contained task. Give it the request with all the context it needs, optionally an instruction (its role, constraints, the form of its answer) and the tools it may use; it returns its answer."
	}
	if template == nil {
		return nil, fmt.Errorf("%w: dynamic agent %q: the template is nil", tool.ErrInvalidTool, name)
	}
	c := newConfig(opts)
	if err := c.check(name); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(boundary))
	for i, t := range boundary {
		if t == nil {
			return nil, fmt.Errorf("%w: dynamic agent %q: boundary tool %d is nil", tool.ErrInvalidTool, name, i)
		}
		n := tool.Name(t)
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("%w: dynamic agent %q: two boundary tools are named %q", tool.ErrDuplicateTool, name, n)
		}
		names = append(names, n)
	}
	schema, err := dynamicSchema(names, c.dynamic)
	if err != nil {
		return nil, fmt.Errorf("dynamic agent %q: %w", name, err)
	}
	r := &runner[S, PS]{name: name, cfg: c}
	return tool.NewFuncWithSchema(name, description, schema, func(ctx context.Context, in DynamicArgs) (tool.Result, error) {
		if c.dynamic.noInstruction {
			in.Instruction = ""
		}
		tools := boundary
		if in.Tools != nil && !c.dynamic.noTools {
			tools = make([]tool.Tool, 0, len(*in.Tools))
			for i, n := range names {
				if slices.Contains(*in.Tools, n) {
					tools = append(tools, boundary[i])
				}
			}
		}
		g, err := template(in.Instruction, slices.Clip(tools))
		if err == nil && g == nil {
			err = errors.New("the template returned no graph")
		}
		if err != nil {
			return tool.Result{}, fmt.Errorf("dynamic agent %q: building the agent: %w", name, err)
		}
		shape := make([]string, 0, len(tools)+1)
		shape = append(shape, in.Instruction)
		for _, t := range tools {
			shape = append(shape, tool.Name(t))
		}
		return r.run(ctx, g, model.User(in.Request), strings.Join(shape, "\x00"))
	}, c.tool()...)
}

// dynamicSchema is the input schema of a dynamic agent tool whose boundary
// holds the named tools, with the fields f offers.
func dynamicSchema(names []string, f dynamicFields) (json.RawMessage, error) {
	or := func(s, def string) string {
		if s != "" {
			return s
		}
		return def
	}
	props := map[string]any{
		"request": map[string]any{
			"type": "string", "minLength": 1,
			"description": or(f.request, "The task, stated completely, with all the context the agent needs: it sees nothing else."),
		},
	}
	if !f.noInstruction {
		props["instruction"] = map[string]any{
			"type":        "string",
			"description": or(f.instruction, "Optional: the agent's role, constraints, or the form its answer should take."),
		}
	}
	if len(names) > 0 && !f.noTools {
		props["tools"] = map[string]any{
			"type":        "array",
			"items":       map[string]any{"type": "string", "enum": names},
			"uniqueItems": true,
			"description": or(f.tools, "Optional: the tools the agent may use. Leave it out to allow all of them; give an empty list to allow none."),
		}
	}
	return json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             []string{"request"},
		"additionalProperties": false,
	})
}

// Capabilities returns the tools a dynamic agent may be given in the run
// behind ctx: its boundary for that run. It may read what the context
// carries (the user, the tenant, tool.RunState) and must be safe for
// concurrent use.
type Capabilities func(ctx context.Context) ([]tool.Tool, error)

// NewDynamicToolset returns a toolset that holds one dynamic agent tool
// (see NewDynamic) whose boundary capabilities gives per run, rather than
// once: the toolset builds the tool each time a node resolves its tools
// (its schema enumerates that run's boundary). Give it to an agent or node
// in place of the tool. A run whose boundary is empty gets a tool whose
// agent has no tools.
//
// The LLM node and the ToolsNode each resolve the run's tools, so
// capabilities is called at least twice per turn and should give the same
// tools for one run: a call naming a tool that the second answer lacks is
// refused as invalid arguments, and the agent is not built.
func NewDynamicToolset[S any, PS State[S]](name, description string, template Template[S], capabilities Capabilities, opts ...Option) (tool.Toolset, error) {
	if name == "" {
		name = DynamicName
	}
	if capabilities == nil {
		return nil, fmt.Errorf("%w: dynamic agent %q: the capabilities function is nil", tool.ErrInvalidTool, name)
	}
	// Built once with no boundary, to report what is wrong with the other
	// arguments now rather than at the first run.
	if _, err := NewDynamic[S, PS](name, description, template, nil, opts...); err != nil {
		return nil, err
	}
	return &dynamicSet[S, PS]{name: name, description: description, template: template, capabilities: capabilities, opts: opts}, nil
}

// dynamicSet is the toolset of NewDynamicToolset.
type dynamicSet[S any, PS State[S]] struct {
	name, description string
	template          Template[S]
	capabilities      Capabilities
	opts              []Option
}

// Name returns the dynamic agent tool's name.
func (d *dynamicSet[S, PS]) Name() string { return d.name }

// Tools builds the dynamic agent tool with the run's boundary.
func (d *dynamicSet[S, PS]) Tools(ctx context.Context) ([]tool.Tool, error) {
	boundary, err := d.capabilities(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamic agent %q: the run's capabilities: %w", d.name, err)
	}
	t, err := NewDynamic[S, PS](d.name, d.description, d.template, boundary, d.opts...)
	if err != nil {
		return nil, err
	}
	return []tool.Tool{t}, nil
}

// Close does nothing: the tools the capabilities give belong to whoever
// made them.
func (d *dynamicSet[S, PS]) Close() error { return nil }
