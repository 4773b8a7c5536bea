package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// core is what both executors share: the handler chain, the hooks, the
// observer and the failure policy.
type core struct {
	handler Handler
	// iv is the Invoker behind the terminal handler; it prepares the
	// calls' arguments before anything but the tool sees them.
	iv *tool.Invoker
	// term is the terminal handler when the chain is nothing else (no
	// middleware): calls of known tools then go straight to the tool
	// package, which recovers their panics itself.
	term      *terminal
	before    []func(ctx context.Context, req *Request) (*tool.Result, error)
	after     []func(ctx context.Context, req *Request, res *tool.Result) error
	observer  Observer
	listening func(ctx context.Context) bool
	quiet     *core // the same core without an observer, for batches nobody watches
	failFast  bool
	prefix    string
	epoch     time.Time // durations are measured from here (see clock)
}

func newCore(c *config) core {
	iv := tool.NewInvoker(c.invokeOpts...)
	term := &terminal{iv: iv}
	k := core{
		handler:   Chain(term, c.middleware...),
		iv:        iv,
		observer:  c.observer,
		listening: c.listening,
		failFast:  c.failFast,
		prefix:    c.prefix,
		epoch:     time.Now(),
	}
	if k.handler == Handler(term) {
		k.term = term
	}
	for _, h := range c.hooks {
		if h.BeforeCall != nil {
			k.before = append(k.before, h.BeforeCall)
		}
		if h.AfterCall != nil {
			k.after = append(k.after, h.AfterCall)
		}
	}
	if k.observer != nil && k.listening != nil {
		q := k
		q.observer, q.listening = nil, nil
		k.quiet = &q
	}
	return k
}

// forBatch returns the core to run a batch with: the quiet one when the
// observer has nobody to report to.
func (c *core) forBatch(ctx context.Context) *core {
	if c.quiet != nil && !c.listening(ctx) {
		return c.quiet
	}
	return c
}

// newRequests returns the requests of a batch of n calls, each with the
// frame that will hold its call's context (see internal/callctx), and room for
// their results, taking what the caller's room has (see internal/callroom).
// Without room, a single call's are all in one allocation, and more
// calls' in three. A call whose context outlives it keeps its batch's
// frames.
func newRequests(n int, room batchRoom) ([]Request, []tool.Result) {
	var frames []callctx.Frame
	switch {
	case n == 1 && room.Results == nil && room.Frames == nil:
		return new(oneRequest).requests()
	case room.Frames != nil:
		frames = room.Frames[:n:n]
	case n == 1:
		o := new(oneRequestFrame)
		o.req[0].frame = &o.frame
		return o.req[:], resultsIn(room, 1)
	default:
		frames = make([]callctx.Frame, n)
	}
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i].frame = &frames[i]
	}
	return reqs, resultsIn(room, n)
}

// resultsIn returns the room for n results: the caller's when it gave
// some, else a new slice. Every result of a batch is written whole, so
// what the caller's room held before does not matter.
func resultsIn(room batchRoom, n int) []tool.Result {
	if room.Results == nil {
		return make([]tool.Result, n)
	}
	return room.Results[:n:n]
}

// newFrames returns the frames of a batch of n calls and room for their
// results, for a batch that needs no Requests (see core.plain), taking
// what the caller's room has; without room, a single call's come in one
// allocation. first is the tool of the batch's first call: the frames of
// several calls of a typed tool come with room for their results' parts
// (see internal/callctx.NewFrames).
//
// Nothing stands between such a batch's calls and their tools: when the
// room says the calls are a run state's, the frames let the tools share
// their arguments (see callctx.Frame.ShareArguments).
func newFrames(n int, room batchRoom, first tool.Tool) ([]callctx.Frame, []tool.Result) {
	var frames []callctx.Frame
	switch {
	case room.Frames != nil:
		frames = room.Frames[:n:n]
	case n == 1 && room.Results != nil:
		frames = []callctx.Frame{{}}
	case n == 1:
		o := new(oneFrame)
		return o.frame[:], o.res[:]
	default:
		frames = frameOps.NewFrames(n, first)
	}
	if room.Shared {
		for i := range frames {
			frames[i].ShareArguments()
		}
	}
	return frames, resultsIn(room, n)
}

// oneFrame is the storage of a single call's frame and result.
type oneFrame struct {
	frame [1]callctx.Frame
	res   [1]tool.Result
}

// oneRequest is the storage of a single call's request, its frame and its
// result.
type oneRequest struct {
	req   [1]Request
	frame callctx.Frame
	res   [1]tool.Result
}

// oneRequestFrame is the storage of a single call's request and its
// frame, for a batch whose caller gave storage for the result.
type oneRequestFrame struct {
	req   [1]Request
	frame callctx.Frame
}

// requests returns the request, its frame in place, and the room for its
// result.
func (o *oneRequest) requests() ([]Request, []tool.Result) {
	o.req[0].frame = &o.frame
	return o.req[:], o.res[:]
}

// lookup fills reqs (len(b.Calls) of them) with the batch's calls and
// their tools. Calls of one tool usually come together: a call that names
// the tool of the call before it gets that call's tool without a lookup.
func lookup(b Batch, reqs []Request) {
	var t tool.Tool
	for i, call := range b.Calls {
		t = toolAt(b, i, t)
		r := &reqs[i]
		r.Call, r.Index, r.Tools, r.slot, r.Tool = call, i, b.Tools, i, t
	}
}

// lookupTools sets tools[i] to the tool of the batch's call i, nil for an
// unknown one; calls of one tool that come together are looked up once.
func lookupTools(b Batch, tools []tool.Tool) {
	var t tool.Tool
	for i := range b.Calls {
		t = toolAt(b, i, t)
		tools[i] = t
	}
}

// toolAt returns the tool of the batch's call i, given prev, the tool of
// call i-1: calls of one tool usually come together, and are looked up
// once.
func toolAt(b Batch, i int, prev tool.Tool) tool.Tool {
	if i > 0 && b.Calls[i].Name == b.Calls[i-1].Name {
		return prev
	}
	return find(b.Tools, b.Calls[i].Name)
}

// find returns the tool of tools named name, nil when there is none (or
// tools is nil).
func find(tools Lookup, name string) tool.Tool {
	if tools == nil {
		return nil
	}
	t, _ := tools.Lookup(name)
	return t
}

// skipped answers a call that is not run because the batch was stopped
// (stop is not nil) or ctx ended.
func skipped(ctx context.Context, call model.ToolCall, stop *StopError) tool.Result {
	if stop != nil {
		return notRun(call, errBatchStopped)
	}
	return notRun(call, ended(ctx))
}

// failedFast returns the error that stops the batch when call i's result
// res failed under WithFailFast, nil when it does not stop the batch (ctx,
// the batch's context, ended first: the failure may be its doing).
func (c *core) failedFast(ctx context.Context, i int, call *model.ToolCall, res *tool.Result) *StopError {
	if !c.failFast {
		return nil // the usual case, inlined at the call site
	}
	return failFastStop(ctx, i, call, res)
}

// failFastStop is failedFast under WithFailFast.
func failFastStop(ctx context.Context, i int, call *model.ToolCall, res *tool.Result) *StopError {
	if !res.IsError || ctx.Err() != nil {
		return nil
	}
	return &StopError{Index: i, Call: *call, FailFast: true, Err: failure(*res)}
}

// clock reads the monotonic clock, as the time since c.epoch; it costs
// less than time.Now, which reads the wall clock too.
func (c *core) clock() time.Duration { return time.Since(c.epoch) }

// handle runs the chain for one call; a panic becomes an error result.
func (c *core) handle(ctx context.Context, req *Request) tool.Result {
	if c.term != nil && req.Tool != nil {
		// The tool package's invocation recovers the tool's panics and settles
		// the result as normalize does.
		return c.term.invoke(ctx, req)
	}
	return c.handleChain(ctx, req)
}

// handleChain runs the chain for one call, recovering its panics.
func (c *core) handleChain(ctx context.Context, req *Request) (res tool.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = PanicResult(req.Call.Name, p, debug.Stack())
		}
	}()
	res = c.handler.Handle(ctx, req)
	normalize(&res)
	return res
}

// runBefore makes the call's arguments those its tool will run with (see
// prepare) and runs the BeforeCall hooks. It returns the result that
// blocks the call, if any, and the error that stops the batch, if any.
// Only the arguments of req may change.
func (c *core) runBefore(ctx context.Context, req *Request) (blocked *tool.Result, stop error) {
	c.prepare(req)
	if len(c.before) == 0 {
		return nil, nil // the usual case, inlined at the call site
	}
	return c.runBeforeHooks(ctx, req)
}

// prepare sets req's arguments to those its tool will run with
// (tool.Invoker.Prepare: repaired when the executor repairs, rewritten by
// the tool's PrepareArguments hook, coerced toward its schema), so that the
// hooks, the events and the middleware see what the tool runs with.
// Arguments the pipeline refuses are left as they came: the call will be
// answered with the invalid-arguments result, and its tool will not run.
// Well-formed arguments are left as they are, in one pass over their text.
func (c *core) prepare(req *Request) {
	req.iv = c.iv
	if req.Tool == nil {
		return
	}
	if call, _, ok := frameOps.Prepare(c.iv, req.frame, req.Tool, req.Call); ok {
		req.Call.Arguments = call.Arguments
	}
}

// runBeforeHooks is runBefore with hooks to run. Arguments a hook
// rewrites are prepared again before the next hook, or the chain, sees
// them.
func (c *core) runBeforeHooks(ctx context.Context, req *Request) (blocked *tool.Result, stop error) {
	orig := *req
	defer func() {
		args := req.Call.Arguments
		*req = orig
		req.Call.Arguments = args
		if blocked != nil {
			normalize(blocked)
		}
	}()
	for _, h := range c.before {
		args := req.Call.Arguments
		r, err := callBefore(ctx, h, req)
		if err != nil || r != nil {
			return r, err
		}
		if !sameSlice(req.Call.Arguments, args) {
			c.prepare(req)
		}
	}
	return nil, nil
}

// sameSlice reports whether a and b are one slice: the same bytes in the
// same memory.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func callBefore(ctx context.Context, h func(context.Context, *Request) (*tool.Result, error), req *Request) (res *tool.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r := PanicResult(req.Call.Name, p, debug.Stack())
			res, err = &r, nil
		}
	}()
	return h(ctx, req)
}

// runAfter runs the AfterCall hooks on res and returns the first error.
func (c *core) runAfter(ctx context.Context, req *Request, res *tool.Result) error {
	if len(c.after) == 0 {
		return nil // the usual case, inlined at the call site
	}
	return c.runAfterHooks(ctx, req, res)
}

// runAfterHooks is runAfter with hooks to run. The hooks may change the
// result only: they get a copy of req (which a call the batch gave up on
// may still be reading), so that ToolEnd and a StopError name the call
// that ran.
func (c *core) runAfterHooks(ctx context.Context, req *Request, res *tool.Result) error {
	view := *req
	var first error
	for _, h := range c.after {
		if err := callAfter(ctx, h, &view, res); err != nil && first == nil {
			first = err
		}
	}
	normalize(res)
	return first
}

func callAfter(ctx context.Context, h func(context.Context, *Request, *tool.Result) error, req *Request, res *tool.Result) (err error) {
	defer func() {
		if p := recover(); p != nil {
			*res = PanicResult(req.Call.Name, p, debug.Stack())
			err = nil
		}
	}()
	return h(ctx, req, res)
}

// finish applies the error prefix to the results and the batch's error.
func (c *core) finish(results []tool.Result, stop *StopError) ([]tool.Result, error) {
	if c.prefix != "" {
		for i := range results {
			if results[i].IsError && results[i].Err != nil {
				results[i].Err = withPrefix(c.prefix, results[i].Err)
			}
		}
	}
	if stop == nil {
		return results, nil
	}
	return results, withPrefix(c.prefix, stop)
}

// failure is the error a fail-fast StopError wraps for a failed result.
func failure(r tool.Result) error {
	if r.Err != nil {
		return r.Err
	}
	return errors.New(r.Text())
}

// errBatchStopped is the cause of the cancelled results of calls a stopped
// batch did not run.
var errBatchStopped = fmt.Errorf("the batch was stopped: %w", context.Canceled)

// notRun answers a call that was never handed to the chain.
func notRun(call model.ToolCall, cause error) tool.Result {
	r := tool.ErrorResult(tool.CodeCancelled, fmt.Errorf("tool %q was not run: %w", call.Name, cause))
	r.Status = tool.StatusCancelled
	return r
}

// cutShort answers a call that was running, or was about to, when cause
// ended it: a timeout when a deadline passed, else cancelled.
func cutShort(call model.ToolCall, cause error) tool.Result {
	if errors.Is(cause, context.DeadlineExceeded) {
		r := tool.ErrorResult(tool.CodeTimeout, fmt.Errorf("tool %q timed out: %w", call.Name, cause))
		r.Status = tool.StatusTimeout
		return r
	}
	r := tool.ErrorResult(tool.CodeCancelled, fmt.Errorf("tool %q was cancelled: %w", call.Name, cause))
	r.Status = tool.StatusCancelled
	return r
}

// ended says why ctx ended: its error (context.Canceled or
// context.DeadlineExceeded), wrapped with its cause when the cause is
// another error (see context.WithCancelCause, context.WithTimeoutCause).
func ended(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return context.Canceled
	}
	switch cause := context.Cause(ctx); {
	case cause == nil || cause == err:
		return err
	case errors.Is(cause, err):
		return cause
	default:
		return fmt.Errorf("%w: %w", err, cause)
	}
}

// Settle returns r as an executor answers it: an empty Status filled in
// and IsError consistent with Status. Middleware and hooks may leave both
// unsettled; the executor settles a result once the whole chain has
// answered, so a middleware that reports on a result it receives reads it
// through Settle to report what the model will get.
func Settle(r tool.Result) tool.Result {
	normalize(&r)
	return r
}

// normalize fills in an empty Status and keeps IsError consistent with it,
// as tool.Invoke does, for results made by middleware and hooks.
func normalize(r *tool.Result) {
	switch {
	case r.Status == "" && r.Pending:
		r.Status = tool.StatusPending
	case r.Status == "" && r.IsError:
		r.Status = tool.StatusFailed
	case r.Status == "":
		r.Status = tool.StatusSuccess
	}
	switch r.Status {
	case tool.StatusFailed, tool.StatusCancelled, tool.StatusTimeout, tool.StatusDenied:
		r.IsError = true
	case tool.StatusPending:
		r.Pending = true
	}
}
