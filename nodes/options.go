package nodes

import (
	"context"
	"reflect"
	"strings"
	"sync"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/tool"
)

// LLMOption configures an LLM node.
type LLMOption interface {
	applyLLM(*llmConfig)
}

// ToolsOption configures a ToolsNode.
type ToolsOption interface {
	applyTools(*toolsConfig)
}

// Option configures both an LLM node and a ToolsNode; give the two the same
// tools so that the model is offered what the ToolsNode runs.
type Option interface {
	LLMOption
	ToolsOption
}

type llmOption func(*llmConfig)

func (o llmOption) applyLLM(c *llmConfig) { o(c) }

type toolsOption func(*toolsConfig)

func (o toolsOption) applyTools(c *toolsConfig) { o(c) }

// toolSource is the part of the configuration both nodes share.
type toolSource struct {
	toolsets []tool.Toolset
	resolve  []tool.ResolveOption
	memory   tool.Retriever // WithMemory

	once      sync.Once
	allStatic bool           // every set is static (set by once)
	static    *tool.ToolList // the resolved list, when every set is static
	serr      error
}

// resolveTools returns the run's tool list. Static toolsets without resolve
// options (the node's or the run's, tool.ResolveWith) give the same list
// every time: it is resolved once.
func (c *toolSource) resolveTools(ctx context.Context) (*tool.ToolList, error) {
	if !c.filtered(ctx) {
		return c.unfiltered(ctx)
	}
	return tool.Resolve(ctx, c.toolsets, c.resolve...)
}

// resolveCalls returns the tool list that a turn's calls are resolved
// against: the run's, without the selectors, which chose what the model was
// offered already (see tool.IgnoreSelectors).
func (c *toolSource) resolveCalls(ctx context.Context) (*tool.ToolList, error) {
	if !c.filtered(ctx) {
		return c.unfiltered(ctx)
	}
	opts := append(c.resolve[:len(c.resolve):len(c.resolve)], tool.IgnoreSelectors())
	return tool.Resolve(ctx, c.toolsets, opts...)
}

// filtered reports whether resolve options apply to the run behind ctx:
// the node's, or the run's (tool.ResolveWith).
func (c *toolSource) filtered(ctx context.Context) bool {
	return len(c.resolve) > 0 || tool.RunResolveOptions(ctx) != nil
}

// unfiltered returns the list of the toolsets when no resolve option
// applies: resolved once when every set is static.
func (c *toolSource) unfiltered(ctx context.Context) (*tool.ToolList, error) {
	c.once.Do(func() {
		if c.allStatic = tool.IsStatic(c.toolsets...); c.allStatic {
			c.static, c.serr = tool.Resolve(context.Background(), c.toolsets)
		}
	})
	if c.allStatic {
		return c.static, c.serr
	}
	return tool.Resolve(ctx, c.toolsets)
}

type sharedOption func(*toolSource)

func (o sharedOption) applyLLM(c *llmConfig)     { o(&c.toolSource) }
func (o sharedOption) applyTools(c *toolsConfig) { o(&c.toolSource) }

// WithTools offers tools to the model (LLM node) and runs them (ToolsNode).
func WithTools(tools ...tool.Tool) Option {
	return sharedOption(func(c *toolSource) {
		c.toolsets = append(c.toolsets, tool.NewStatic("tools", tools...))
	})
}

// WithToolsets is WithTools for toolsets, resolved on every call from the
// run's context.
func WithToolsets(sets ...tool.Toolset) Option {
	return sharedOption(func(c *toolSource) { c.toolsets = append(c.toolsets, sets...) })
}

// WithMemory gives the node's run a memory store: tools search it with
// tool.SearchMemory, prompt functions and toolsets with tool.Memory (see
// tool.WithMemory). A store the run's context carries already is replaced
// for the node.
func WithMemory(r tool.Retriever) Option {
	return sharedOption(func(c *toolSource) { c.memory = r })
}

// withMemory returns ctx with the node's memory store, if it has one.
func (c *toolSource) withMemory(ctx context.Context) context.Context {
	if c.memory == nil {
		return ctx
	}
	return tool.WithMemory(ctx, c.memory)
}

// WithResolveOptions filters the tools resolved per call (see tool.Resolve):
// tool.VisibleIf narrows what the model sees, tool.ExecutableIf what the
// ToolsNode runs (the rest are executed by the caller). The filters apply
// to the tools of WithTools and WithToolsets, not to the set-model-response
// tool of structured output, which is always offered and run.
func WithResolveOptions(opts ...tool.ResolveOption) Option {
	return sharedOption(func(c *toolSource) { c.resolve = append(c.resolve, opts...) })
}

// WithSystemPrompt sets the system prompt. Instructions from the tools the
// run resolves (instruction providers) are appended to it, in tool order.
func WithSystemPrompt(text string) LLMOption {
	return llmOption(func(c *llmConfig) { c.system = text })
}

// WithSystemPromptFunc computes the system prompt per call, from the run's
// context (tool.RunState reads the graph's state from it, tool.Conversation
// the node's conversation).
func WithSystemPromptFunc(fn func(ctx context.Context) string) LLMOption {
	return llmOption(func(c *llmConfig) { c.systemFunc = fn })
}

// WithAgentName sets the Name of the assistant messages the node writes.
func WithAgentName(name string) LLMOption {
	return llmOption(func(c *llmConfig) { c.name = name })
}

// WithModelName overrides the provider's model name per request.
func WithModelName(name string) LLMOption {
	return llmOption(func(c *llmConfig) { c.modelName = name })
}

// WithSettings sets the sampling settings.
func WithSettings(s model.Settings) LLMOption {
	return llmOption(func(c *llmConfig) { c.settings = s })
}

// WithToolChoice constrains the model's use of tools. A choice that the
// run's tools cannot satisfy is not sent, and the model chooses freely: any
// choice when the run resolves no tools, and a choice of a tool the run did
// not resolve (filtered out, or absent from its toolsets). A choice that
// forces a tool call (ToolChoiceRequired, ToolChoiceTool) applies to the
// first model call of a turn only; the calls after its tools answered
// choose freely, so that the model can give its answer. WithToolChoiceOnEveryCall
// forces it on every call.
func WithToolChoice(tc model.ToolChoice) LLMOption {
	return llmOption(func(c *llmConfig) { c.choice = tc })
}

// WithToolChoiceOnEveryCall applies a forcing WithToolChoice to every model
// call of a turn, not only its first: the loop then ends only through a
// tool that ends it (Terminate, escalation, structured output) or at the
// hop cap.
func WithToolChoiceOnEveryCall() LLMOption {
	return llmOption(func(c *llmConfig) { c.choiceEveryCall = true })
}

// WithMaxHops caps the model→tool round trips of a run (DefaultMaxHops
// unless set): a reply that asks for tools after that many round trips since
// the last user message fails the node with a *HopLimitError.
func WithMaxHops(n int) LLMOption {
	return llmOption(func(c *llmConfig) { c.maxHops = n })
}

// WithArgumentRepair repairs the arguments of the reply's tool calls that
// are not valid JSON (tool.RepairJSON: unquoted keys, single quotes,
// trailing commas, a truncated object, prose around it) before the reply
// enters the state. Everything after the model then sees the repaired
// arguments: events, permission checks, the tools, the conversation sent
// back to the provider and any code that reads it. Arguments repair cannot
// fix are kept as the model sent them, and the tool layer answers the call
// with the invalid-arguments result. Metadata key MetaRepairedCalls lists
// the IDs of the calls it repaired.
func WithArgumentRepair() LLMOption {
	return llmOption(func(c *llmConfig) { c.repair = true })
}

// MetaRepairedCalls is the Message.Metadata key under which an LLM node with
// WithArgumentRepair lists, comma-separated, the IDs of the reply's calls
// whose arguments it repaired.
const MetaRepairedCalls = "trellis.repaired_calls"

// WithStreaming makes the node stream the model's reply (on) or not (off).
// By default it streams when the run's stream carries graph.ModeMessages,
// and emits each chunk as a KindModelDelta event.
func WithStreaming(on bool) LLMOption {
	return llmOption(func(c *llmConfig) { c.stream = &on })
}

// WithResponseFormat asks for a final answer that is JSON matching the
// format's schema. Models that honour response formats natively get the
// format; others get a set-model-response tool whose arguments are the
// answer. Either way the final assistant message holds the JSON as text.
//
// Give the option to the ToolsNode too, as with WithTools: an answer that
// does not match the schema stays a call of the set-model-response tool,
// which the ToolsNode then answers with the validation error, so that the
// model can correct its answer. (The agent package does this.) The
// set-model-response tool comes after the other tools, and its
// instruction after theirs; the resolve options do not filter it, and a
// tool of the run with its name is a *tool.DuplicateToolError.
func WithResponseFormat(f model.ResponseFormat) Option {
	set, err := tool.NewSetModelResponseSchema(f.Schema)
	return structuredOption{format: f, set: set, err: err}
}

// structuredOption configures structured output: the LLM node asks for it,
// and the ToolsNode answers invalid answers.
type structuredOption struct {
	format model.ResponseFormat
	set    *tool.SetModelResponseTool
	err    error
}

func (o structuredOption) applyLLM(c *llmConfig) {
	f := o.format
	c.format, c.setResponse, c.structureErr = &f, o.set, o.err
}

func (o structuredOption) applyTools(c *toolsConfig) {
	c.response = o.set // nil when the option failed
}

// structuredSource names the source of the set-model-response tool in a
// run's tool list.
const structuredSource = "structured output"

// WithStructuredOutput is WithResponseFormat with the schema of T; decode the
// answer with Structured[T].
func WithStructuredOutput[T any]() Option {
	schema, err := tool.SchemaFor[T]()
	if err != nil {
		return structuredOption{err: err}
	}
	return WithResponseFormat(model.ResponseFormat{Name: formatName(reflect.TypeFor[T]()), Schema: schema, Strict: true})
}

// formatName names the response format of type t: its name without type
// arguments or characters other than letters, digits, '_' and '-' (which
// providers refuse), or "response" for an unnamed type.
func formatName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer && t.Name() == "" {
		t = t.Elem()
	}
	name, _, _ := strings.Cut(t.Name(), "[")
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return -1
	}, name)
	if name == "" {
		return "response"
	}
	return name
}

// WithSetModelResponseTool makes the node use the set-model-response tool for
// structured output even when the model supports response formats.
func WithSetModelResponseTool() LLMOption {
	return llmOption(func(c *llmConfig) { c.forceTool = true })
}

// WithModelMiddleware wraps the node's model calls in mws (see
// modelmw.Chain): the first listed sees each request first and its reply
// last. The node's model span and events surround the whole chain, so a
// retried call is one model call in the run's events.
func WithModelMiddleware(mws ...modelmw.Middleware) LLMOption {
	return llmOption(func(c *llmConfig) { c.modelMW = append(c.modelMW, mws...) })
}
