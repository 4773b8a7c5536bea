package tool

import (
	"context"
	"sync"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
)

// callExtra is package tool's extension of a call's context (see
// callctx.Ext), for a call that reports progress or has options of its
// own: one allocation for all of it.
type callExtra struct {
	callctx.Ext

	// cfg is the Invoker's configuration with the call's own options, when
	// it has some.
	cfg invokeConfig

	// The progress reporter: updates go to sink until the call returns.
	sink     func(Update)
	toolName string
	mu       sync.Mutex
	done     bool
}

// extOf returns cc's extension, made on first use; cc's call has not
// started.
func extOf(cc *callctx.Context) *callExtra {
	if cc.Ext != nil {
		return cc.Ext.Owner.(*callExtra)
	}
	x := new(callExtra)
	x.Owner = x
	cc.Ext = &x.Ext
	return x
}

// WithCallID returns a context that carries the ID of the tool call being
// run. Invoke does this for every call; tools read it with CallID.
func WithCallID(ctx context.Context, callID string) context.Context {
	return callctx.New(ctx, callID)
}

// CallID returns the ID of the tool call being run, or "" outside a call.
// Tools use it to key per-call state, to tag logs, or to tie the events of a
// sub-run to the call that started it.
func CallID(ctx context.Context) string {
	if c := callctx.From(ctx); c != nil {
		return c.ID
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
func (x *callExtra) report(callID string, u Update) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return false
	}
	u.CallID, u.ToolName = callID, x.toolName
	x.sink(u)
	return true
}

// closeProgress drops every later update. It waits for an update being
// delivered.
func (x *callExtra) closeProgress() {
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
	c := callctx.ReporterFrom(ctx)
	if c == nil {
		return false
	}
	return c.Ext.Owner.(*callExtra).report(c.ID, u)
}
