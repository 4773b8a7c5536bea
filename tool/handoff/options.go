package handoff

import (
	"context"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// DefaultMaxDepth is how many handoffs may run inside one another unless
// WithMaxDepth says otherwise.
const DefaultMaxDepth = 3

// Option configures a handoff tool.
type Option func(*config)

type config struct {
	shared   bool
	persist  func(ctx context.Context, task model.Message) string // WithPersistentHistory's key
	all      bool
	direct   bool
	dynamic  dynamicFields // NewDynamic's argument schema
	dynSet   bool          // a dynamic option was given
	retries  int
	backoff  time.Duration
	retryIf  func(error) bool
	validate func(ctx context.Context, out Output) error
	maxDepth int
	modes    graph.Mode
	toolOpts []tool.Option
	problems []string
	hasMeta  bool
	metadata tool.Metadata
	maxWait  time.Duration
	filter   InputFilter
}

func newConfig(opts []Option) config {
	c := config{maxDepth: DefaultMaxDepth, modes: graph.ModeAll, maxWait: 30 * time.Second}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.shared && c.persist != nil {
		c.problems = append(c.problems, "WithSharedHistory and WithPersistentHistory exclude each other: an agent sees either the caller's conversation or its own")
	}
	if c.filter != nil && (c.shared || c.persist != nil) {
		c.problems = append(c.problems, "WithInputFilter decides the agent's whole input: it excludes WithSharedHistory and WithPersistentHistory")
	}
	return c
}

// WithSharedHistory gives the agent the caller's conversation before the
// task, instead of the task alone: the messages the ToolsNode put in the
// call's context (tool.Conversation), without the assistant message that
// made the call and the answers to its calls. The agent still sees its own
// system prompt, not the caller's.
func WithSharedHistory() Option { return func(c *config) { c.shared = true } }

// InputFilter decides what an agent is given when it is handed a task:
// history is the caller's conversation (tool.Conversation) without the
// assistant message that made the call and the answers to its calls, and
// task is the task message the handoff made of the call's arguments. It
// returns the agent's input, which should end with the task. It must not
// modify history's messages in place.
type InputFilter func(ctx context.Context, history []model.Message, task model.Message) ([]model.Message, error)

// WithInputFilter lets f decide what the agent sees of the caller's
// conversation, beyond the task alone (the default) and the whole
// conversation (WithSharedHistory): the last turns, the messages without
// tool traffic (WithoutTools), a summary, redacted text. An error from f
// fails the call. It excludes WithSharedHistory and WithPersistentHistory.
func WithInputFilter(f InputFilter) Option {
	return func(c *config) {
		if f == nil {
			c.problems = append(c.problems, "WithInputFilter with a nil filter")
			return
		}
		c.filter = f
	}
}

// WithoutTools is an InputFilter that gives the agent the caller's
// conversation without tool traffic: tool messages are dropped, and
// assistant messages lose their tool calls (and are dropped when nothing
// else is left of them), then the task.
func WithoutTools(_ context.Context, history []model.Message, task model.Message) ([]model.Message, error) {
	out := make([]model.Message, 0, len(history)+1)
	for _, m := range history {
		switch {
		case m.Role == model.RoleTool:
			continue
		case m.HasToolCalls():
			m.ToolCalls = nil
			if len(m.Content) == 0 {
				continue
			}
		}
		out = append(out, m)
	}
	return append(out, task), nil
}

// LastMessages returns an InputFilter that gives the agent the last n
// messages of the caller's conversation, then the task. The cut never
// starts with tool messages, whose calls would be missing.
func LastMessages(n int) InputFilter {
	return func(_ context.Context, history []model.Message, task model.Message) ([]model.Message, error) {
		from := max(len(history)-n, 0)
		for from < len(history) && history[from].Role == model.RoleTool {
			from++
		}
		out := make([]model.Message, 0, len(history)-from+1)
		out = append(out, history[from:]...)
		return append(out, task), nil
	}
}

// WithPersistentHistory lets the agent continue its own conversation from
// one call to the next in the caller's thread: each call gives it the tasks
// of the earlier successful calls and the messages it added for them, then
// the new task. The agent still sees nothing of the caller's conversation.
//
// The history travels with the caller's conversation: each answer's tool
// message records the task and what the agent added, in its metadata under
// MetaHistory (never sent to a model), and the next call collects these
// records from the conversation in its context (tool.Conversation), in
// order, from the answers to calls of the name the model called it by (a
// renamed handoff, with tool.Rename or tool.WithPrefix, keeps a history
// under its new name). So it is checkpointed with the caller's state, and a fork or a
// replay of the caller's thread sees the history as it was at that point;
// a call that failed adds nothing, and records dropped from the caller's
// conversation are forgotten. Calls of one batch each continue the history
// as it was before the batch; a later call sees all of them, in call order.
//
// key picks the history a call continues: calls with different keys keep
// separate histories, for example one per customer, or one per topic of
// the task; a call whose key is "" runs afresh and is not recorded. A nil
// key gives every call of the tool one history. key must give a call the
// same answer when it runs again after an interrupt, or the agent starts
// over instead of resuming. Only the conversation persists: the agent's
// other state fields start empty on every call.
func WithPersistentHistory(key func(ctx context.Context, task model.Message) string) Option {
	return func(c *config) {
		if key == nil {
			key = func(context.Context, model.Message) string { return "default" }
		}
		c.persist = key
	}
}

// WithAllMessages makes the tool's result every message the agent added
// (assistant messages, tool calls and tool results), as a JSON array of
// model.Message, instead of the text of its last assistant message.
func WithAllMessages() Option { return func(c *config) { c.all = true } }

// WithDirectAnswer makes the agent's answer the caller's final answer: a
// successful result sets Terminate, so a batch of such calls ends the
// caller's loop without another model call to restate the answer (the
// tool messages end the conversation, and agent.FinalText returns their
// text; with WithAllMessages, that text is the messages' JSON). A batch
// that also holds other calls continues as usual; a failed call goes back
// to the caller's model.
func WithDirectAnswer() Option { return func(c *config) { c.direct = true } }

// dynamicFields is what a dynamic agent tool's arguments offer the model.
type dynamicFields struct {
	noInstruction, noTools bool
	request, instruction   string // descriptions; "" for the default
	tools                  string
}

// WithoutInstruction leaves the instruction out of a dynamic agent tool's
// arguments (NewDynamic): the template always gets "", and the model shapes
// the agent by the request (and the tools) alone.
func WithoutInstruction() Option {
	return func(c *config) { c.dynamic.noInstruction, c.dynSet = true, true }
}

// WithoutToolChoice leaves the tools out of a dynamic agent tool's
// arguments (NewDynamic): every agent gets the whole boundary.
func WithoutToolChoice() Option {
	return func(c *config) { c.dynamic.noTools, c.dynSet = true, true }
}

// WithFieldDescriptions replaces the descriptions of a dynamic agent tool's
// arguments (NewDynamic) that are not empty: the request, the instruction
// and the tools, as the model reads them in the tool's schema.
func WithFieldDescriptions(request, instruction, tools string) Option {
	return func(c *config) {
		c.dynamic.request, c.dynamic.instruction, c.dynamic.tools = request, instruction, tools
		c.dynSet = true
	}
}

// WithRetries runs the agent up to n more times when a run fails or its
// answer is rejected (see WithValidator), waiting backoff before the first
// retry and twice as long before each next one (at most 30s). Every attempt
// starts the agent afresh. Interrupts, cancellation of the caller's run and
// errors that WithRetryIf rejects are not retried; a run resumed after an
// interrupt resumes the attempt the interrupt stopped.
func WithRetries(n int, backoff time.Duration) Option {
	return func(c *config) {
		if n < 0 {
			c.problems = append(c.problems, "WithRetries: negative number of retries")
		}
		if backoff < 0 {
			c.problems = append(c.problems, "WithRetries: negative backoff")
		}
		c.retries, c.backoff = n, backoff
	}
}

// WithRetryIf sets which failures are retried (all of them unless set,
// within the limits WithRetries gives). A rejected answer arrives as an
// error matching ErrInvalidResult.
func WithRetryIf(retry func(err error) bool) Option {
	return func(c *config) { c.retryIf = retry }
}

// WithValidator checks every answer of the agent before it becomes the
// tool's result. An error rejects the answer: the attempt counts as failed
// (it is retried under WithRetries), and when no attempt is left the tool
// fails with an error matching ErrInvalidResult that carries the validator's
// message.
func WithValidator(validate func(ctx context.Context, out Output) error) Option {
	return func(c *config) { c.validate = validate }
}

// WithMaxDepth sets how many handoffs may be running, one inside the other,
// when this tool is called: with the default (DefaultMaxDepth, 3), a
// supervisor's worker may hand off to a sub-worker, which may hand off once
// more, and a handoff below that fails with a *DepthError. n must be at
// least 1.
func WithMaxDepth(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxDepth: the depth limit must be at least 1")
		}
		c.maxDepth = n
	}
}

// WithEvents selects which of the agent's events reach the caller's stream
// (every mode the caller streams, unless set). The events carry the tool's
// name appended to their Path. WithEvents(0) keeps them all out.
func WithEvents(modes graph.Mode) Option { return func(c *config) { c.modes = modes } }

// WithMetadata replaces the tool's metadata. A handoff is ConcurrencySafe by
// default, so that a parallel executor runs several handoffs of one batch at
// once; set Sequential to prevent that.
func WithMetadata(m tool.Metadata) Option {
	return func(c *config) { c.metadata, c.hasMeta = m, true }
}

// WithToolOptions passes options to the underlying tool (an instruction
// for the system prompt, a permission checker, ...).
func WithToolOptions(opts ...tool.Option) Option {
	return func(c *config) { c.toolOpts = append(c.toolOpts, opts...) }
}

func (c *config) tool() []tool.Option {
	meta := tool.Metadata{ConcurrencySafe: true}
	if c.hasMeta {
		meta = c.metadata
	}
	return append([]tool.Option{tool.WithMetadata(meta)}, c.toolOpts...)
}

// wait returns the pause before retry number n (from 1).
func (c *config) wait(n int) time.Duration {
	d := c.backoff
	for i := 1; i < n && d < c.maxWait; i++ {
		d *= 2
	}
	return min(d, c.maxWait)
}
