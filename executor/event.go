package executor

import (
	"context"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// EventKind says what an Event reports.
type EventKind string

// The kinds of event an executor reports. The strings match the names the
// graph's event stream uses for tool events.
const (
	// ToolStart: a call is about to be handled. It follows the call's
	// BeforeCall hooks, so Call holds the final arguments.
	ToolStart EventKind = "tool_start"
	// ToolUpdate: a running call reported progress (tool.ReportProgress,
	// or a piece of a streaming tool); Update holds it.
	ToolUpdate EventKind = "tool_update"
	// ToolEnd: a call is answered; Result is its final result (after the
	// AfterCall hooks) and Duration how long the middleware chain took.
	ToolEnd EventKind = "tool_end"
)

// Event reports a call's lifecycle to an Observer. It is self-contained:
// it names the call (Call.ID, Call.Name) and its position (Index), so an
// observer needs nothing else to route it.
//
// Every call of a batch gets exactly one ToolStart and, later, exactly one
// ToolEnd, also calls that never ran (they end with a cancelled result) or
// were blocked by a hook. ToolStart events are emitted in call order, and
// so are ToolEnd events; in the sequential executor each call's ToolEnd
// comes before the next call's ToolStart. ToolUpdate events come while
// their call runs, between its ToolStart and its ToolEnd, and may
// interleave with the events of other calls.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Index is the call's position in its batch.
	Index int
	// Call is the call, with its final arguments.
	Call model.ToolCall
	// Title is the called tool's title (tool.TitleOf), for user
	// interfaces; "" when it has none or the tool is unknown.
	Title string
	// Result is the call's result (ToolEnd).
	Result tool.Result
	// Duration is how long the middleware chain took to answer the call
	// (ToolEnd); zero for calls that did not run.
	Duration time.Duration
	// Update is the progress reported (ToolUpdate).
	Update tool.Update
}

// Observer receives the events of the batches an executor runs (see
// WithObserver). ctx is the context Execute was given. Within one batch an
// executor never calls its observer concurrently (progress updates from
// running tools are serialized with the other events), so an observer that
// serves one batch at a time needs no locking; batches that run at once on
// one executor do call it concurrently. It is called on whichever goroutine
// has the event: ToolUpdate events come from the running tools, and the
// parallel executor emits a ToolEnd from the goroutine that answers the call
// that makes it due. A slow observer slows the batch. A panic in an observer
// is recovered and ignored.
type Observer func(ctx context.Context, ev Event)
