package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"sync"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/internal/deadline"
	"github.com/trellis-go/trellis/model"
)

// parsedCaller is implemented by this package's typed tools: Invoke hands
// them the arguments it already parsed and validated, so the pipeline runs
// once per call.
type parsedCaller interface {
	callParsed(ctx context.Context, callID string, args any, received json.RawMessage) (Result, error)
	parsedSelf
}

// parsedSelf names the tool whose methods a parsed or fast path runs. A type
// that embeds one of this package's tools is promoted those methods, and may
// override Call or Stream: Invoke takes the shortcut only for the tool
// itself (self() == t), so an override is never skipped.
type parsedSelf interface {
	self() Tool
}

// parsedStreamer is the streaming counterpart of parsedCaller.
type parsedStreamer interface {
	streamParsed(ctx context.Context, callID string, args any, received json.RawMessage) iter.Seq2[Result, error]
	parsedSelf
}

// fastCaller is implemented by the typed tools of this package: callFast
// decodes the arguments in one pass against the tool's fast plan (see
// fastDecode) and, when the plan accepts them, runs the tool with ctx,
// which carries the call's ID (with shared, the decoded values may share
// args, see FastShared); ok is false, and nothing ran, when the plan
// declined. fastSchema is the schema the plan checks.
type fastCaller interface {
	callFast(ctx context.Context, args json.RawMessage, shared bool) (r Result, ok bool, err error)
	fastSchema() *Schema
}

// textCaller is implemented by the typed tools of this package; textOut
// reports whether their output is a string, and then callText is
// callFast returning the string: a result, 144 bytes, would be copied on
// its way out of the generic method (and once more through its wrapper),
// where a string travels in registers.
type textCaller interface {
	callText(ctx context.Context, args json.RawMessage, shared bool) (text string, ok bool, err error)
	textOut() bool
}

// fastStreamer is the streaming counterpart of fastCaller.
type fastStreamer interface {
	streamFast(ctx context.Context, callID string, args json.RawMessage) (iter.Seq2[Result, error], bool)
	fastSchema() *Schema
}

// innerTool returns the tool a rename wraps, or nil.
func innerTool(t Tool) Tool {
	switch r := t.(type) {
	case *renamed:
		return r.inner
	case *renamedStreamer:
		return r.inner
	}
	return nil
}

// parsedCallerOf finds the parsed caller behind t and the renames that
// wrap it. Other wrappers are not looked through: their Call may add
// behaviour.
func parsedCallerOf(t Tool) (parsedCaller, bool) {
	for ; t != nil; t = innerTool(t) {
		if pc, ok := t.(parsedCaller); ok && pc.self() == t {
			return pc, true
		}
	}
	return nil, false
}

// parsedStreamerOf is parsedCallerOf for streaming tools.
func parsedStreamerOf(t Tool) (parsedStreamer, bool) {
	for ; t != nil; t = innerTool(t) {
		if ps, ok := t.(parsedStreamer); ok && ps.self() == t {
			return ps, true
		}
	}
	return nil, false
}

type invokeConfig struct {
	repair  bool
	sink    func(Update)
	pending *Pending
	policy  Policy
}

// InvokeOption configures Invoke and Invoker. A nil InvokeOption does
// nothing.
type InvokeOption func(*invokeConfig)

// WithJSONRepair turns JSON repair of the arguments on or off (default
// off). When on, arguments that are not valid JSON go through RepairJSON
// before anything else.
func WithJSONRepair(on bool) InvokeOption {
	return func(c *invokeConfig) { c.repair = on }
}

// WithProgress sets the function that receives the progress updates of
// calls: those a tool reports with ReportProgress and the pieces of a
// streaming tool. Updates of one call arrive one at a time, in order, and
// only while the call runs; the sink must not block for long.
func WithProgress(sink func(Update)) InvokeOption {
	return func(c *invokeConfig) { c.sink = sink }
}

// WithPolicy makes Invoke consult policy, after the tool's own permission
// checker, before the tool runs. The policy judges the call's final
// arguments (after repair, PrepareArguments and coercion), the very
// arguments the tool then runs with, so a policy cannot be passed by
// arguments that change on the way to the tool. A call the policy does not
// allow is answered with the structured denied result Authorize gives. A
// call an executor's permission middleware checked already is checked
// again against policy. Inside an executor, prefer middleware.Permission.
func WithPolicy(policy Policy) InvokeOption {
	return func(c *invokeConfig) { c.policy = policy }
}

// WithPending registers the calls that return a pending result in p, so
// that they can be completed later by call ID.
func WithPending(p *Pending) InvokeOption {
	return func(c *invokeConfig) { c.pending = p }
}

// Invoker runs calls through the per-call pipeline. It remembers the
// compiled schemas of tools that do not carry their own (tools that are not
// SchemaProviders), compiling each distinct schema once. An Invoker is safe
// for concurrent use; executors keep one.
type Invoker struct {
	cfg     invokeConfig
	mu      sync.RWMutex
	schemas map[string]compiled
}

// maxCachedSchemas bounds an Invoker's schema cache.
const maxCachedSchemas = 4096

type compiled struct {
	schema *Schema
	err    error
}

// NewInvoker returns an Invoker whose calls use opts; options passed to
// Invoke add to them.
func NewInvoker(opts ...InvokeOption) *Invoker {
	iv := &Invoker{schemas: map[string]compiled{}}
	for _, o := range opts {
		if o != nil {
			o(&iv.cfg)
		}
	}
	return iv
}

// Invoke runs one call of t with a one-off Invoker. Tools built by this
// package carry their compiled schema; for other tools prefer an Invoker,
// which compiles each schema once rather than on every call.
func Invoke(ctx context.Context, t Tool, call model.ToolCall, opts ...InvokeOption) Result {
	var iv Invoker
	return iv.Invoke(ctx, t, call, opts...)
}

// Invoke runs one call of t and returns its result; it never returns an
// error and never lets a panic escape. In order, it:
//
//  1. puts the call's ID in the context (CallID) and, when a progress sink
//     is set, installs the call's progress reporter until it returns;
//  2. runs the arguments through JSON repair (opt-in), the tool's
//     PrepareArguments hook, coercion toward the input schema and
//     validation against it: a failure at any step is an error result
//     (ErrorCode CodeInvalidArguments) that lists every bad field by JSON
//     path and the arguments received, and the tool's body does not run.
//     Arguments that need no repair and no coercion and that the schema
//     accepts are usually checked (and, for a typed tool, decoded) in one
//     pass over their text; the outcome is the pipeline's. When an
//     executor prepared the call's arguments already (see Prepare), they
//     skip the repair and PrepareArguments steps;
//  3. consults the tool's own permission checker (WithPermission, or a
//     tool that implements PermissionChecker) and the policy of WithPolicy,
//     unless the call passed the checker
//     already (an executor's permission middleware, or an MCP server's
//     policy, checked it and recorded so): the checker sees the arguments of
//     step 2, the very arguments the tool then runs with; a call it does
//     not allow is answered with the structured denied result Authorize
//     gives, and does not run;
//  4. calls the tool (a Streamer's pieces become progress updates and are
//     merged into the result);
//  5. turns an error into an error result: status timeout when the deadline
//     passed, cancelled when the context was cancelled, failed otherwise;
//     and a panic into an error result with ErrorCode CodePanic whose
//     Details hold the stack;
//  6. fills in an empty Status and truncates content beyond the tool's
//     Metadata.MaxResultSize.
//
// A declaration-only tool is not run: its calls belong to the caller, and
// Invoke returns an error result with ErrorCode CodeDeclarationOnly. A nil
// tool gives the unknown-tool result. The result does not carry the call's
// ID; the caller pairs it with the call (Result.Message).
func (iv *Invoker) Invoke(ctx context.Context, t Tool, call model.ToolCall, opts ...InvokeOption) Result {
	return iv.invokeFrame(ctx, nil, t, call, opts...)
}

// The frames of calls (see internal/callctx) are the executors' and the
// MCP server's business: package tool hands them its operations on frames
// without exporting them.
func init() {
	callctx.Register(&callctx.Ops[*Invoker, Tool, Result, InvokeOption]{
		Invoke:     (*Invoker).invokeFrame,
		InvokeInto: (*Invoker).invokeInto,
		Prepare:    (*Invoker).prepare,
		NewFrames:  newFrames,
	})
}

// newFrames returns the frames of a batch of n calls whose first call is
// of t: with room for the results' parts when t is a typed tool of this
// package whose results are one part (a text or a JSON part), so that the
// batch's calls of such tools do not allocate their parts one by one.
func newFrames(n int, t Tool) []callctx.Frame {
	if n < 2 {
		return callctx.NewFrames(n, false)
	}
	if p := ownProfile(t); p != nil {
		return callctx.NewFrames(n, p.onePart)
	}
	return callctx.NewFrames(n, resultsOnePart(t))
}

// onePartTool is implemented by the typed tools of this package.
type onePartTool interface {
	resultsOnePart() bool
}

// resultsOnePart reports whether t, or the tool its renames wrap, is a
// typed tool of this package whose results are one part: one whose calls
// take the typed tools' own path (see parsedCallerOf).
func resultsOnePart(t Tool) bool {
	pc, ok := parsedCallerOf(t)
	if !ok {
		return false
	}
	o, ok := pc.(onePartTool)
	return ok && o.resultsOnePart()
}

// Prepare returns call with the arguments t runs with when iv invokes the
// call: the arguments as received, run through the argument pipeline —
// JSON repair when iv repairs, t's PrepareArguments hook, coercion toward
// t's input schema — validated, and written as JSON again when a step
// changed them. Arguments that need none of it come back as they are (the
// same slice).
//
// Code that decides on a call before it runs — a permission policy, a hook,
// a cache key — reads the arguments Prepare returns, and hands the call on
// with them: then what it judged is exactly what the tool runs with.
// Invoking the prepared call runs a PrepareArguments hook on the prepared
// arguments again; the executors, which prepare every call before their
// hooks and middleware see it, keep the hook from running twice.
//
// When the arguments cannot be repaired, parsed or validated, ok is false
// and res is the result Invoke answers the call with (ErrorCode
// CodeInvalidArguments, Err an *ArgumentError): the tool must not run. A
// panic in the hook is recovered into an error result likewise. A nil t,
// and a declaration-only tool, give the call back as it is.
func (iv *Invoker) Prepare(t Tool, call model.ToolCall) (prepared model.ToolCall, res Result, ok bool) {
	return iv.prepare(nil, t, call)
}

// prepare is Prepare with the call's frame f (nil for none): it records
// in f that the prepared arguments are final for t, so that invoking the
// call in f does not run t's PrepareArguments hook, which need not give
// the same result twice, on them again.
func (iv *Invoker) prepare(f *callctx.Frame, t Tool, call model.ToolCall) (prepared model.ToolCall, res Result, ok bool) {
	if t == nil {
		return call, Result{}, true
	}
	p := ownProfile(t)
	if p == nil {
		p = new(profile)
		iv.profileOf(t, p)
	}
	if p.declOnly {
		return call, Result{}, true
	}
	name := call.Name
	if name == "" {
		name = t.Definition().Name
	}
	if p.prepare != nil && f != nil && f.Context().Prepared(t, call.Arguments) {
		return call, Result{}, true
	}
	defer func() {
		if v := recover(); v != nil {
			prepared, res, ok = call, panicResult(name, v), false
			res.normalize()
		}
	}()
	args, aerr := runArguments(name, call.Arguments, p.schema, p.prepare, iv.cfg.repair, false)
	if aerr != nil {
		r := argumentResult(aerr)
		r.normalize()
		return call, r, false
	}
	call.Arguments = args.Raw
	if p.prepare != nil && f != nil {
		f.Context().MarkPrepared(t, args.Raw)
	}
	return call, Result{}, true
}

// invokeFrame is Invoke with the call's context stored in f (see
// internal/callctx); a nil f stands for a new frame.
func (iv *Invoker) invokeFrame(ctx context.Context, f *callctx.Frame, t Tool, call model.ToolCall, opts ...InvokeOption) (res Result) {
	if t == nil {
		return UnknownTool(call.Name, nil)
	}
	in := invocation{name: call.Name}
	defer func() {
		if v := recover(); v != nil {
			res = panicResult(in.name, v)
			if in.registered != nil {
				in.registered.withdraw(call.ID)
			}
		}
	}()
	if p := ownProfile(t); p != nil {
		iv.invoke(ctx, f, t, p, &call, opts, &in, &res)
	} else {
		iv.invokeForeign(ctx, f, t, &call, opts, &in, &res)
	}
	return res
}

// invokeInto is invokeFrame with the call read where it is and the result
// written into res, for executors that keep both in a batch's storage: a
// call and a result are copied once each less. The call is not changed.
func (iv *Invoker) invokeInto(ctx context.Context, f *callctx.Frame, t Tool, call *model.ToolCall, res *Result) {
	if t == nil {
		*res = UnknownTool(call.Name, nil)
		return
	}
	in := invocation{name: call.Name}
	defer func() {
		if v := recover(); v != nil {
			*res = panicResult(in.name, v)
			if in.registered != nil {
				in.registered.withdraw(call.ID)
			}
		}
	}()
	c := *call // invoke may replace the arguments
	if p := ownProfile(t); p != nil {
		iv.invoke(ctx, f, t, p, &c, nil, &in, res)
	} else {
		iv.invokeForeign(ctx, f, t, &c, nil, &in, res)
	}
}

// invocation is what invokeFrame needs to answer a call whose tool
// panicked: the tool's name, and the Pending the call is registered in
// while its tool runs, which a panic must not leave it in.
type invocation struct {
	name       string
	registered *Pending
}

// invokeForeign runs a call of a tool of another package, whose profile
// is found for every call, since nothing says the answers of its optional
// interfaces stay the same (see profile).
func (iv *Invoker) invokeForeign(ctx context.Context, f *callctx.Frame, t Tool, call *model.ToolCall, opts []InvokeOption, in *invocation, res *Result) {
	var p profile
	iv.profileOf(t, &p)
	iv.invoke(ctx, f, t, &p, call, opts, in, res)
}

// invoke runs a call of t, whose profile is p, and stores its result in
// res. invokeFrame recovers its panics.
func (iv *Invoker) invoke(ctx context.Context, f *callctx.Frame, t Tool, p *profile, call *model.ToolCall, opts []InvokeOption, in *invocation, res *Result) {
	if in.name == "" {
		in.name = t.Definition().Name
	}
	name := in.name
	// The call's context holds its ID in the frame, and its progress
	// reporter and its own options, when it has them, next to it.
	given := f // the caller's frame, which records the call's permission
	// Arguments that are a run state's reach a tool without a hook that
	// rewrites them as they are: its decoded values may share them.
	shared := f != nil && f.ArgumentsShared() && p.prepare == nil
	// A frame that served already (the call is retried) is replaced by a
	// new one, which keeps what it knows of the call's permission and
	// arguments.
	f = callctx.Serve(f)
	cc := f.Context()
	cc.Context, cc.ID = ctx, call.ID
	cfg := &iv.cfg
	if len(opts) > 0 {
		x := extOf(cc)
		x.cfg = iv.cfg
		for _, o := range opts {
			if o != nil {
				o(&x.cfg)
			}
		}
		cfg = &x.cfg
	}
	if cfg.sink != nil {
		x := extOf(cc)
		x.sink, x.toolName, x.Reports = cfg.sink, name, true
		defer x.closeProgress()
	}
	// A long-running tool's call is registered before it runs, so that
	// work that ends before the tool returns (its own goroutine, say) can
	// complete it; it is withdrawn if the result is not pending.
	early := cfg.pending != nil && IsLongRunning(t)
	if early {
		if err := cfg.pending.Add(model.ToolCall{ID: call.ID, Name: name, Arguments: call.Arguments}); err != nil {
			*res = ErrorResult(CodeToolError, fmt.Errorf("tool %q: %w", name, err))
			res.normalize()
			return
		}
		in.registered = cfg.pending
	}
	// Arguments Prepare made for this tool are not prepared again: the
	// PrepareArguments hook need not give the same result twice.
	prepared := p.prepare != nil && cc.Prepared(t, call.Arguments)
	if p.checker != nil || cfg.policy != nil {
		// The checker (and a policy given to Invoke) judges the arguments
		// the tool runs with: they are made final first, once, and the tool
		// runs with exactly those. A mark of an earlier check holds only
		// for those final arguments, and never stands in for the policy.
		ok := true
		if !prepared && !p.declOnly {
			args, aerr := runArguments(name, call.Arguments, p.schema, p.prepare, cfg.repair, false)
			if aerr != nil {
				*res, ok = argumentResult(aerr), false
			} else {
				call.Arguments, prepared = args.Raw, true
			}
		}
		if ok && (cfg.policy != nil || !cc.Authorized(t, call)) {
			var r Result
			if r, ok = authorize(cc, t, p.checker, p.meta, *call, cfg.policy); !ok {
				*res = r
			} else if given != nil {
				given.MarkAuthorized(t, *call) // a retry of the call is not checked again
			}
		}
		if ok {
			run(cc, t, p, name, call, cfg, prepared, shared, res)
		}
	} else {
		run(cc, t, p, name, call, cfg, prepared, shared, res)
	}
	in.registered = nil
	res.normalize()
	switch {
	case early && !res.Pending:
		cfg.pending.withdraw(call.ID)
	case res.Pending && cfg.pending != nil && !early:
		if err := cfg.pending.Add(model.ToolCall{ID: call.ID, Name: name, Arguments: call.Arguments}); err != nil {
			*res = ErrorResult(CodeToolError, fmt.Errorf("tool %q: %w", name, err))
			res.normalize()
		}
	}
	if limit := p.meta.MaxResultSize; limit > 0 {
		*res = Truncate(*res, limit)
	}
}

// run runs the call in ctx, the call's context, and stores its result in
// res. prepared says the call's arguments are final already (see
// Invoker.Prepare): they are not repaired or prepared again. shared says
// their memory is a run state's, which the decoded values may share (see
// callctx.Frame.ShareArguments).
func run(ctx context.Context, t Tool, p *profile, name string, call *model.ToolCall, cfg *invokeConfig, prepared, shared bool, res *Result) {
	if p.declOnly {
		*res = ErrorResult(CodeDeclarationOnly, fmt.Errorf("%w: tool %q", ErrDeclarationOnly, name))
		return
	}
	if err := ctx.Err(); err != nil {
		*res = callErrorResult(ctx, name, err)
		return
	}
	if p.schemaErr != nil {
		*res = schemaErrorResult(name, p.schemaErr)
		return
	}
	// The fast path, when the tool has one for the schema in force and no
	// hook rewrites the arguments. Arguments it accepts are valid JSON, so
	// repair would leave them as they are.
	if p.prepare == nil || prepared {
		switch {
		case p.fs != nil:
			if seq, ok := p.fs.streamFast(ctx, call.ID, call.Arguments); ok {
				*res = drain(ctx, name, seq)
				return
			}
		case p.tc != nil:
			if text, accepted, cerr := p.tc.callText(ctx, call.Arguments, shared); accepted {
				// As toResult makes a string's result, with the part in
				// the frame's room when it has some; a string output
				// returned with an error leaves no result of its own.
				if cerr != nil {
					*res = callOutcome(ctx, name, &Result{}, cerr)
				} else {
					*res = Result{Content: onePart(callctx.TakePart(ctx), model.TextPart(text)), Status: StatusSuccess}
				}
				return
			}
		case p.fc != nil:
			// The result comes back by value, straight into res: res,
			// given to a method of an interface, would escape, and with it
			// the storage of every caller's result. A declined call's
			// result is written by runSlow.
			var (
				accepted bool
				cerr     error
			)
			if *res, accepted, cerr = p.fc.callFast(ctx, call.Arguments, shared); accepted {
				if cerr != nil {
					*res = callOutcome(ctx, name, res, cerr)
				}
				return
			}
		}
	}
	runSlow(ctx, t, p, name, call, cfg, prepared, res)
}

// runSlow runs the call through the full argument pipeline and stores its
// result in res; prepared arguments skip its repair and PrepareArguments
// steps, which made them.
func runSlow(ctx context.Context, t Tool, p *profile, name string, call *model.ToolCall, cfg *invokeConfig, prepared bool, res *Result) {
	prepare, repair := p.prepare, cfg.repair
	if prepared {
		prepare, repair = nil, false
	}
	args, aerr := runArguments(name, call.Arguments, p.schema, prepare, repair, p.ps != nil || p.pc != nil)
	if aerr != nil {
		*res = argumentResult(aerr)
		return
	}
	var cerr error
	switch {
	case p.ps != nil:
		*res = drain(ctx, name, p.ps.streamParsed(ctx, call.ID, args.Value, call.Arguments))
		return
	case p.pc != nil:
		*res, cerr = p.pc.callParsed(ctx, call.ID, args.Value, call.Arguments)
	case p.st != nil:
		*res = drain(ctx, name, p.st.Stream(ctx, call.ID, args.Raw))
		return
	default:
		*res, cerr = t.Call(ctx, call.ID, args.Raw)
	}
	if cerr != nil {
		*res = callOutcome(ctx, name, res, cerr)
	}
}

// callOutcome is the result of a call that returned r and the error err:
// an error result that keeps r's Details and Metadata.
func callOutcome(ctx context.Context, name string, r *Result, err error) Result {
	er := callErrorResult(ctx, name, err)
	er.Details, er.Metadata = r.Details, r.Metadata
	return er
}

// schemaOf returns t's compiled input schema, or nil when it has none.
func (iv *Invoker) schemaOf(t Tool) (*Schema, error) {
	if sp, ok := As[SchemaProvider](t); ok {
		if s := sp.CompiledSchema(); s != nil {
			return s, nil
		}
	}
	raw := t.Definition().InputSchema
	if len(raw) == 0 {
		return nil, nil
	}
	if iv.schemas == nil {
		return CompileSchema(raw)
	}
	iv.mu.RLock()
	c, ok := iv.schemas[string(raw)]
	iv.mu.RUnlock()
	if ok {
		return c.schema, c.err
	}
	s, err := CompileSchema(raw)
	iv.mu.Lock()
	if len(iv.schemas) >= maxCachedSchemas {
		clear(iv.schemas) // tool lists that keep changing must not grow it forever
	}
	iv.schemas[string(raw)] = compiled{schema: s, err: err}
	iv.mu.Unlock()
	return s, err
}

// drain runs a stream to its end, reporting each piece as progress and
// merging the pieces into one result.
func drain(ctx context.Context, name string, seq iter.Seq2[Result, error]) Result {
	var acc Result
	for piece, err := range seq {
		if err != nil {
			acc.merge(piece) // what came with the error
			er := callErrorResult(ctx, name, err)
			er.Content = append(acc.Content, er.Content...)
			if er.Details == nil {
				er.Details = acc.Details
			}
			er.Metadata = acc.Metadata
			return er
		}
		if len(piece.Content) > 0 || piece.Details != nil {
			ReportProgress(ctx, Update{Content: piece.Content, Details: piece.Details})
		}
		acc.merge(piece)
	}
	return acc
}

// callErrorResult turns the error a tool returned into a result.
func callErrorResult(ctx context.Context, name string, err error) Result {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || deadline.Passed(ctx):
		r := ErrorResult(CodeTimeout, fmt.Errorf("tool %q timed out: %w", name, err))
		r.Status = StatusTimeout
		return r
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		r := ErrorResult(CodeCancelled, fmt.Errorf("tool %q was cancelled: %w", name, err))
		r.Status = StatusCancelled
		return r
	}
	return ErrorResult(CodeToolError, fmt.Errorf("tool %q failed: %w", name, err))
}

func panicResult(name string, p any) Result {
	perr := &PanicError{Tool: name, Value: p, Stack: string(debug.Stack())}
	r := ErrorResult(CodePanic, perr)
	r.Details = perr.Stack
	return r
}
