package tool

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/trellis-go/trellis/internal/callscope"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
)

type callIDKey struct{}

type reporterKey struct{}

// callContext carries a call's ID and, when the call reports progress or
// has options of its own, its progress reporter and configuration, in one
// context value, so that Invoke allocates once per call for all of them
// (twice for a call with a reporter).
type callContext struct {
	context.Context
	id string

	// rare holds what few calls need: the slot callscope.Key keys keep their
	// state in, and the mark of a call that passed its permission check;
	// made on first use.
	rare atomic.Pointer[rareState]

	// ext holds the call's progress reporter and its own configuration;
	// nil for a call with neither. It is set before the call runs.
	ext *callExtra

	// part is room for the call's result part (see NewFrames), taken by
	// the typed tool that builds the result.
	part *model.Part
}

// rareState is the part of a call's frame that few calls use (see
// callContext.rare).
type rareState struct {
	// scope is the slot of this invocation that callscope.Key keys keep their
	// state in.
	scope atomic.Value
	// auth is what the call was allowed as (see Frame.MarkAuthorized).
	auth atomic.Pointer[authMark]
	// prepared is what Invoker.Prepare made of the call's arguments, for a
	// tool with a PrepareArguments hook (see preparedMark).
	prepared atomic.Pointer[preparedMark]
}

// rareState returns c's rare state, made on first use.
func (c *callContext) rareState() *rareState {
	if r := c.rare.Load(); r != nil {
		return r
	}
	c.rare.CompareAndSwap(nil, new(rareState))
	return c.rare.Load()
}

// authMark returns what the call was allowed as, nil when nothing.
func (c *callContext) authMark() *authMark {
	if r := c.rare.Load(); r != nil {
		return r.auth.Load()
	}
	return nil
}

// preparedMark returns what Invoker.Prepare made of the call's
// arguments, nil when nothing.
func (c *callContext) preparedMark() *preparedMark {
	if r := c.rare.Load(); r != nil {
		return r.prepared.Load()
	}
	return nil
}

// callExtra is the part of a call's context that most calls do without.
type callExtra struct {
	// cfg is the Invoker's configuration with the call's own options, when
	// it has some.
	cfg invokeConfig

	// The progress reporter: updates go to sink until the call returns.
	sink     func(Update)
	toolName string
	mu       sync.Mutex
	done     bool
}

// Value answers the call's own keys and defers the rest to the parent.
func (c *callContext) Value(key any) any {
	switch k := key.(type) {
	case callIDKey:
		return c
	case reporterKey:
		if c.ext != nil && c.ext.sink != nil {
			return c
		}
	case callscope.Key:
		return k.ScopeOfCall(c.id, &c.rareState().scope)
	}
	return c.Context.Value(key)
}

// WithCallID returns a context that carries the ID of the tool call being
// run. Invoke does this for every call; tools read it with CallID.
func WithCallID(ctx context.Context, callID string) context.Context {
	return &callContext{Context: ctx, id: callID}
}

// CallID returns the ID of the tool call being run, or "" outside a call.
// Tools use it to key per-call state, to tag logs, or to tie the events of a
// sub-run to the call that started it.
func CallID(ctx context.Context) string {
	if c, ok := ctx.Value(callIDKey{}).(*callContext); ok {
		return c.id
	}
	return ""
}

// WithRunState returns a context that carries the current state of the run
// that calls the tools; the LLM node puts the graph's state there before it
// resolves the tools, and the ToolsNode (with WithRun) before it runs a
// batch. Tools read it with RunState.
func WithRunState(ctx context.Context, state any) context.Context {
	return runctx.New(ctx, state, nil, runctx.HasState)
}

// RunState returns the run state carried by ctx as an S, and whether there
// was one of that type.
func RunState[S any](ctx context.Context) (S, bool) { return runctx.State[S](ctx) }

// WithConversation returns a context that carries the conversation of the
// run that makes the calls. The slice must not be modified afterwards.
func WithConversation(ctx context.Context, msgs []model.Message) context.Context {
	return runctx.New[any](ctx, nil, msgs, runctx.HasConversation)
}

// WithRun returns a context that carries both the run's state (see
// WithRunState) and its conversation (see WithConversation), in one
// allocation; the ToolsNode sets both before it runs a batch.
func WithRun[S any](ctx context.Context, state S, msgs []model.Message) context.Context {
	return runctx.New(ctx, state, msgs, runctx.HasState|runctx.HasConversation)
}

// Conversation returns the conversation carried by ctx (see
// WithConversation), nil if there is none. Tools such as handoffs read it
// to share the caller's history; they must not modify it.
func Conversation(ctx context.Context) []model.Message { return runctx.Conversation(ctx) }

// Update is progress reported by a running call. The executor turns updates
// into ToolUpdate events; the model never sees them.
type Update struct {
	// CallID and ToolName identify the call; ReportProgress fills them in.
	CallID   string `json:"call_id"`
	ToolName string `json:"tool_name"`
	// Message is a short human-readable status, for example "3 of 10 pages".
	Message string `json:"message,omitempty"`
	// Content is partial output, for example a streamed chunk.
	Content []model.Part `json:"content,omitempty"`
	// Details is structured progress data for a user interface.
	Details any `json:"details,omitempty"`
	// Progress and Total measure the work: Progress so far, of Total when
	// Total is positive (for example 50 of 100). An MCP client is sent
	// them as they are; without a Total it is sent a count of updates.
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
}

// report delivers an update to the call's sink, unless the call returned.
func (c *callContext) report(u Update) bool {
	x := c.ext
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return false
	}
	u.CallID, u.ToolName = c.id, x.toolName
	x.sink(u)
	return true
}

// closeProgress drops every later update. It waits for an update being
// delivered.
func (c *callContext) closeProgress() {
	x := c.ext
	x.mu.Lock()
	x.done = true
	x.mu.Unlock()
}

// ReportProgress sends an update for the call that ctx belongs to and
// reports whether it was delivered. Updates are valid only while the call
// runs: one sent after the call returned (from a goroutine the tool left
// behind, say) is dropped, and so is one sent when nothing listens.
// Updates from one call are delivered one at a time, in the order sent.
func ReportProgress(ctx context.Context, u Update) bool {
	r, ok := ctx.Value(reporterKey{}).(*callContext)
	if !ok {
		return false
	}
	return r.report(u)
}
