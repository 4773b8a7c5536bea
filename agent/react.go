package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/plan"
)

// State is the state of the prebuilt agents: a conversation.
type State struct {
	nodes.Chat
}

// Ask returns a State holding one user message.
func Ask(text string) State {
	return State{Chat: nodes.Chat{Messages: []model.Message{model.User(text)}}}
}

// FinalText returns the run's answer in msgs: the text of the last
// assistant message, or, when the conversation ends with tool messages
// whose results ended the run (tool.Result.Terminate, a handoff
// WithDirectAnswer), their text, one per line. It returns "" when there is
// neither.
func FinalText(msgs []model.Message) string {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == model.RoleTool {
		i--
	}
	if tail := msgs[i:]; len(tail) > 0 && !slices.ContainsFunc(tail, func(m model.Message) bool {
		return m.Metadata[nodes.MetaTerminate] != "true"
	}) {
		texts := make([]string, len(tail))
		for k, m := range tail {
			texts[k] = m.Text()
		}
		return strings.Join(texts, "\n")
	}
	if m, ok := model.LastAssistant(msgs); ok {
		return m.Text()
	}
	return ""
}

// Option configures a prebuilt agent. A nil Option does nothing.
type Option func(*config)

type config struct {
	name       string
	llm        []nodes.LLMOption
	tools      []nodes.ToolsOption
	shared     []nodes.Option
	exec       executor.Executor
	middleware []executor.Middleware
	execOpts   []executor.Option
	parallel   []executor.ParallelOption
	maxHops    int
	saver      state.Saver
	compile    []graph.CompileOption
	structured bool // structured output: the loop answers invalid answers
	planNudges int  // WithPlanNudges
	nudgeOpts  []nodes.NudgeOption
}

func newConfig(opts []Option) *config {
	c := &config{maxHops: nodes.DefaultMaxHops}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// WithName names the agent: its graph, and the Name of its messages.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithSystemPrompt sets the agent's system prompt.
func WithSystemPrompt(text string) Option {
	return func(c *config) { c.llm = append(c.llm, nodes.WithSystemPrompt(text)) }
}

// WithTools gives the agent tools.
func WithTools(tools ...tool.Tool) Option {
	return func(c *config) { c.shared = append(c.shared, nodes.WithTools(tools...)) }
}

// WithToolsets gives the agent toolsets, resolved per run.
func WithToolsets(sets ...tool.Toolset) Option {
	return func(c *config) { c.shared = append(c.shared, nodes.WithToolsets(sets...)) }
}

// WithArgumentRepair repairs the tool-call arguments of the model's replies
// that are not valid JSON before they enter the conversation (see
// nodes.WithArgumentRepair).
func WithArgumentRepair() Option {
	return func(c *config) { c.llm = append(c.llm, nodes.WithArgumentRepair()) }
}

// WithMemory gives the agent's runs a memory store that its tools search
// with tool.SearchMemory (see nodes.WithMemory); per run, run the agent with
// a context from tool.WithMemory instead.
func WithMemory(r tool.Retriever) Option {
	return func(c *config) { c.shared = append(c.shared, nodes.WithMemory(r)) }
}

// WithPlanNudges makes an agent that keeps a plan (a state embedding
// plan.Plan by value, with plan.Write among its tools) go on while its
// plan has open items: when the model answers, after writing its plan in
// the same user turn, with items not completed, a user message lists them
// (nodes.PlanNudge) and the model runs again, up to max times per user
// turn. Each nudge starts a new count of the hop cap, and the step limit
// allows for it. A blocker the model declared for its plan
// (plan.DeclareBlocker) ends the nudges until it writes the plan
// again. opts set what a nudge says (nodes.WithNudgeMessage) and let the
// application decide before each one (nodes.WithNudgeHook); see
// nodes.PlanNudgeCommand. A later WithPlanNudges replaces an earlier one.
func WithPlanNudges(max int, opts ...nodes.NudgeOption) Option {
	return func(c *config) { c.planNudges, c.nudgeOpts = max, opts }
}

// WithResolveOptions filters and selects the agent's tools for each run
// (tool.VisibleIf, tool.ExecutableIf, tool.SelectWith): the model is
// offered what they leave, and its calls are resolved against the same
// filters (the selectors run once per turn, for the model).
func WithResolveOptions(opts ...tool.ResolveOption) Option {
	return func(c *config) { c.shared = append(c.shared, nodes.WithResolveOptions(opts...)) }
}

// WithExecutor runs the agent's tool calls through e. Without it the agent
// runs them through a parallel executor built with WithMiddleware and
// WithExecutorOptions, which configure only that executor: given with
// WithExecutor, they make building the agent fail (build e with them).
func WithExecutor(e executor.Executor) Option { return func(c *config) { c.exec = e } }

// WithMiddleware wraps every tool call of the default executor.
func WithMiddleware(mws ...executor.Middleware) Option {
	return func(c *config) { c.middleware = append(c.middleware, mws...) }
}

// WithExecutorOptions configures the default (parallel) executor.
func WithExecutorOptions(opts ...executor.ParallelOption) Option {
	return func(c *config) { c.parallel = append(c.parallel, opts...) }
}

// WithMaxHops caps the model→tool round trips of a run (nodes.DefaultMaxHops
// unless set).
func WithMaxHops(n int) Option { return func(c *config) { c.maxHops = n } }

// WithStructuredOutput makes the agent's final answer JSON of type T (read it
// with nodes.Structured[T]). On a model without native structured output the
// answer is a call of the set-model-response tool; an answer that does not
// match T's schema is answered with the validation error and the model tries
// again, within the agent's hop cap. It does so under a ReturnError policy
// for every tool too; a policy that names tool.SetModelResponseName
// (WithToolsOptions) makes an invalid answer fail the run instead.
func WithStructuredOutput[T any]() Option {
	return func(c *config) { c.shared, c.structured = append(c.shared, nodes.WithStructuredOutput[T]()), true }
}

// WithCheckpointer makes every run write checkpoints to saver; runs then
// need a thread (graph.WithThread).
func WithCheckpointer(saver state.Saver) Option { return func(c *config) { c.saver = saver } }

// WithModelMiddleware wraps the agent's model calls in mws (see
// modelmw.Chain and nodes.WithModelMiddleware): retries, fallbacks, limits,
// a cache, budgets, guardrails.
func WithModelMiddleware(mws ...modelmw.Middleware) Option {
	return func(c *config) { c.llm = append(c.llm, nodes.WithModelMiddleware(mws...)) }
}

// WithInputGuardrails checks the user's input to the agent with guards
// before (or, for Parallel ones, beside) its model call; one that trips
// stops the run with a *modelmw.TripwireError (see
// modelmw.InputGuardrails).
func WithInputGuardrails(guards ...modelmw.Guardrail) Option {
	return WithModelMiddleware(modelmw.InputGuardrails(guards...))
}

// WithOutputGuardrails checks every reply of the agent's model with
// guards; one that trips stops the run with a *modelmw.TripwireError, and
// the reply does not enter the conversation (see
// modelmw.OutputGuardrails).
func WithOutputGuardrails(guards ...modelmw.Guardrail) Option {
	return WithModelMiddleware(modelmw.OutputGuardrails(guards...))
}

// WithSummarization keeps the conversation the agent's model is sent
// within p by summarizing its older messages with m (a small model will
// do): see modelmw.Summarize. The summary is stored in the thread, so it
// is computed once and found again when the thread is resumed, in this
// process or another.
func WithSummarization(m model.Model, p modelmw.SummaryPolicy) Option {
	return WithModelMiddleware(modelmw.Summarize(m, p))
}

// WithLLMOptions passes options to the agent's LLM node.
func WithLLMOptions(opts ...nodes.LLMOption) Option {
	return func(c *config) { c.llm = append(c.llm, opts...) }
}

// WithToolsOptions passes options to the agent's ToolsNode.
func WithToolsOptions(opts ...nodes.ToolsOption) Option {
	return func(c *config) { c.tools = append(c.tools, opts...) }
}

// WithCompileOptions passes options to the graph's Compile.
func WithCompileOptions(opts ...graph.CompileOption) Option {
	return func(c *config) { c.compile = append(c.compile, opts...) }
}

func (c *config) executor() executor.Executor {
	if c.exec != nil {
		return c.exec
	}
	opts := append([]executor.ParallelOption{nodes.StreamToolEvents()}, c.parallel...)
	if len(c.middleware) > 0 {
		opts = append(opts, executor.WithMiddleware(c.middleware...))
	}
	return executor.Parallel(opts...)
}

// Node names of the ReAct graph.
const (
	// AgentNode is the LLM node.
	AgentNode = "agent"
	// ToolsNode runs the model's tool calls.
	ToolsNode = "tools"
	// PlanNudgeNode reminds the model of the open items of its plan
	// (WithPlanNudges).
	PlanNudgeNode = "plan_nudge"
)

// NewReAct returns a compiled ReAct agent over State: the model answers or
// asks for tools; the tools run (in parallel by default) and the model sees
// their results; the loop ends when the model answers without tool calls.
func NewReAct(m model.Model, opts ...Option) (*graph.Graph[State], error) {
	return ReAct[State](m, opts...)
}

// ReAct is NewReAct over any state that embeds nodes.Chat.
func ReAct[S any, PS nodes.ChatState[S]](m model.Model, opts ...Option) (*graph.Graph[S], error) {
	if m == nil {
		return nil, errors.New("agent: ReAct needs a model")
	}
	c := newConfig(opts)
	b, err := reactBuilder[S, PS](m, c)
	if err != nil {
		return nil, err
	}
	return b.Compile(c.compileOptions()...)
}

func (c *config) compileOptions() []graph.CompileOption {
	// Each hop is two supersteps (model, tools); leave room for the final
	// answer and for graphs that wrap the loop. Each plan nudge (a step of
	// its own) starts a new count of hops.
	turn := 2*c.maxHops + 2
	out := []graph.CompileOption{graph.WithDefaultStepLimit((max(c.planNudges, 0)+1)*turn + 3)}
	if c.saver != nil {
		out = append(out, graph.WithCheckpointer(c.saver))
	}
	return append(out, c.compile...)
}

// nodeOptions returns the options of the agent's LLM node and ToolsNode.
// name names the agent's messages; shared are options of both nodes, after
// the agent's own tools.
func (c *config) nodeOptions(name string, shared ...nodes.Option) ([]nodes.LLMOption, []nodes.ToolsOption) {
	llm := append([]nodes.LLMOption{nodes.WithMaxHops(c.maxHops)}, c.llm...)
	if name != "" {
		llm = append(llm, nodes.WithAgentName(name))
	}
	tools := []nodes.ToolsOption{nodes.WithExecutor(c.executor())}
	for _, o := range append(slices.Clip(c.shared), shared...) {
		llm = append(llm, o)
		tools = append(tools, o)
	}
	if c.structured {
		// An answer outside the schema goes back to the model even when
		// failing tools stop the run; naming the tool in an error policy of
		// WithToolsOptions, which comes after, overrides this.
		tools = append(tools, nodes.WithErrorPolicy(nodes.InformModel, tool.SetModelResponseName))
	}
	return llm, append(tools, c.tools...)
}

// checkExecutor refuses settings of the default executor given alongside an
// executor of the caller's, which would run without them.
func (c *config) checkExecutor() error {
	if c.exec == nil {
		return nil
	}
	var ignored []string
	if len(c.middleware) > 0 {
		ignored = append(ignored, "WithMiddleware")
	}
	if len(c.parallel) > 0 {
		ignored = append(ignored, "WithExecutorOptions")
	}
	if len(ignored) == 0 {
		return nil
	}
	return fmt.Errorf("%s configure the default executor, and WithExecutor replaces it: build the executor with them (executor.WithMiddleware and the executor's options)", strings.Join(ignored, " and "))
}

func reactBuilder[S any, PS nodes.ChatState[S]](m model.Model, c *config) (*graph.Builder[S], error) {
	if c.maxHops < 1 {
		return nil, fmt.Errorf("agent: max hops must be at least 1, got %d", c.maxHops)
	}
	if err := c.checkExecutor(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	llm, tools := c.nodeOptions(c.name)
	b := graph.New[S](graph.WithName(c.name), nodes.MessagesReducer[S, PS]()).
		AddNode(AgentNode, nodes.LLM[S, PS](m, llm...)).
		AddEdge(graph.START, AgentNode)
	// A ToolsNode even without tools of the agent's own: a run may bring
	// some (tool.AddTools), and a call of a tool the agent lacks is
	// answered as unknown rather than left unanswered.
	switch {
	case c.planNudges > 0:
		if err := plan.CheckState[S](); err != nil {
			return nil, fmt.Errorf("agent: WithPlanNudges: %w", err)
		}
		b.AddCommandNode(PlanNudgeNode, nodes.PlanNudgeCommand[S, PS](AgentNode, c.nudgeOpts...), []string{AgentNode, graph.END}).
			AddConditionalEdges(AgentNode, nodes.PlanCondition[S, PS](ToolsNode, PlanNudgeNode, c.planNudges), ToolsNode, PlanNudgeNode, graph.END)
	default:
		b.AddConditionalEdges(AgentNode, nodes.ToolsCondition[S, PS](ToolsNode), ToolsNode, graph.END)
	}
	nodes.AddTools[S, PS](b, ToolsNode, AgentNode, tools...)
	return b, nil
}

// ErrPaused is matched by the error of Continue on a thread that waits for
// a resume.
var ErrPaused = errors.New("agent: the thread is paused")

// PausedError is the error of Continue on a thread whose last run paused
// (graph.Interrupt, or tool calls left to the caller): a new turn would
// leave what it waits for unanswered. Resume the thread with
// graph.Graph.Resume instead, answering the interrupts (answer calls the
// user no longer wants with an error result that says so).
type PausedError struct {
	// Thread is the paused thread.
	Thread string
	// Interrupts are what it waits for.
	Interrupts []graph.PendingInterrupt
}

// Error returns the error's message.
func (e *PausedError) Error() string {
	return fmt.Sprintf("agent: thread %q is paused, waiting for %d interrupt(s) to be resumed (graph.Resume); a new turn cannot start", e.Thread, len(e.Interrupts))
}

// Is reports whether target is ErrPaused.
func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// Continue runs the next turn of a checkpointed conversation: it appends a
// user message to the thread's latest state (or starts the thread) and runs
// the graph from its entry with that state. A thread whose last run paused
// is not continued: Continue returns a *PausedError, and the thread must be
// resumed. Nor is one whose conversation ends with tool calls no tool
// message answers (its last run failed between them): the error matches
// ErrUnansweredCalls and names the calls.
//
// Turns on one thread take turns: a turn sent while another is in
// progress on the thread, or that another overtook between reading the
// thread and starting (in this process or, through the store, another),
// fails with an error matching graph.ErrThreadBusy and leaves the thread as
// it was, its message not added; every turn that succeeds is in the
// thread's history. Retry a refused turn, or queue turns per thread.
func Continue[S any, PS nodes.ChatState[S]](ctx context.Context, g *graph.Graph[S], thread, text string, opts ...graph.RunOption) (S, error) {
	var s S
	switch {
	case g == nil:
		return s, errors.New("agent: Continue needs a graph")
	case thread == "":
		return s, errors.New("agent: Continue needs a thread: the conversation is read from, and checkpointed to, the thread")
	}
	snap, err := g.GetState(ctx, thread)
	switch {
	case err == nil:
		if len(snap.Interrupts) > 0 {
			return snap.State, &PausedError{Thread: thread, Interrupts: snap.Interrupts}
		}
		s = snap.State
	case errors.Is(err, state.ErrNotFound):
		// snap.CheckpointID is "": the turn starts the thread, if no
		// other does first.
	default:
		return s, err
	}
	msgs := PS(&s).ChatMessages()
	if open := unansweredCalls(*msgs); len(open) > 0 {
		return s, fmt.Errorf("agent: thread %q: %w: %s; resume the thread (graph.Graph.Resume) to run them again, or answer them (graph.Graph.UpdateState)",
			thread, ErrUnansweredCalls, strings.Join(open, ", "))
	}
	*msgs = append(*msgs, model.User(text))
	// The turn continues the checkpoint it was read at, or fails: a turn
	// that another one overtook would erase it.
	return g.Invoke(ctx, s, append(slices.Clip(opts), graph.WithThread(thread), graph.IfLatest(snap.CheckpointID))...)
}

// ErrUnansweredCalls reports a thread whose conversation ends with tool
// calls that no tool message answers (its last run stopped between the
// calls and their answers): a new user turn cannot follow them.
var ErrUnansweredCalls = errors.New("the conversation ends with unanswered tool calls")

// unansweredCalls lists, as "ID (name)", the calls of the last assistant
// message that no later tool message answers.
func unansweredCalls(msgs []model.Message) []string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != model.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, m := range msgs[i+1:] {
			if m.Role == model.RoleTool {
				answered[m.ToolCallID] = true
			}
		}
		var open []string
		for _, c := range msgs[i].ToolCalls {
			if !answered[c.ID] {
				open = append(open, c.ID+" ("+c.Name+")")
			}
		}
		return open
	}
	return nil
}
