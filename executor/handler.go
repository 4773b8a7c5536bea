package executor

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Request is one call of a batch as a Handler sees it.
//
// Handlers and middleware treat a Request as read-only: a middleware that
// wants the rest of the chain to see something else (other arguments, say)
// copies it (r := *req), changes the copy and passes &r on. The call's ID
// never changes; results are paired with calls by position, and the
// executor reports every result under the ID of the call it answers.
type Request struct {
	// Call is the model's call, with its final arguments: after the
	// BeforeCall hooks, and as the tool will run with them — repaired when
	// the executor repairs, rewritten by the tool's PrepareArguments hook,
	// coerced toward its schema (see Prepared). Arguments the tool's
	// pipeline refuses stay as the model sent them; such a call does not
	// run its tool.
	Call model.ToolCall
	// Tool is the tool the call names, or nil when the batch's tools have
	// no tool of that name. The terminal handler answers a nil Tool with
	// the "did you mean" result of the tool package.
	Tool tool.Tool
	// Index is the call's position in its batch.
	Index int
	// Tools are the batch's tools; the terminal handler lists their names
	// when a call names an unknown tool. It may be nil.
	Tools Lookup

	// watch forwards the progress updates of the call at position slot to
	// the executor's observer; nil when nobody observes.
	watch *watch
	slot  int
	// frame stores the call's context (see internal/callctx); the frames of a
	// batch's calls come in one allocation.
	frame *callctx.Frame
	// iv is the Invoker behind the executor's terminal handler, which
	// Prepared prepares the arguments with; nil for a request made
	// outside an executor.
	iv *tool.Invoker
}

// frameOps are the tool package's operations on the frames that hold the
// calls' contexts (see internal/callctx): invoking a call in its frame, and
// preparing its arguments in it.
var frameOps = callctx.OpsOf[*tool.Invoker, tool.Tool, tool.Result, tool.InvokeOption]()

// defaultInvoker prepares the arguments of requests made outside an
// executor: without JSON repair, as Terminal(nil) runs them.
var defaultInvoker = tool.NewInvoker()

// Prepared returns the request with the arguments its tool will run with:
// those the model sent, run through the tool package's argument pipeline
// (JSON repair when the executor repairs, the tool's PrepareArguments
// hook, coercion toward its schema) and validated — see
// tool.Invoker.Prepare. The executor prepares every call so before its
// BeforeCall hooks and its middleware see it; a middleware that decides on
// the arguments (a permission check) and may sit behind a middleware or
// hook that rewrites them calls Prepared, decides on what it returns and
// hands that on, so that what it judged is what the tool runs with.
//
// When the arguments are final already, req itself is returned; otherwise
// a copy with the final arguments. When the pipeline refuses them, ok is
// false and res is the result the call is answered with (ErrorCode
// tool.CodeInvalidArguments): the tool must not run. A request without a
// tool (an unknown name) is returned as it is.
func (r *Request) Prepared() (prepared *Request, res tool.Result, ok bool) {
	if r.Tool == nil {
		return r, tool.Result{}, true
	}
	iv := r.iv
	if iv == nil {
		iv = defaultInvoker
	}
	f := r.frame
	if f == nil {
		// The mark of prepared arguments needs a frame to live in.
		f = new(callctx.Frame)
	}
	call, res, ok := frameOps.Prepare(iv, f, r.Tool, r.Call)
	if !ok {
		return r, res, false
	}
	if f == r.frame && sameSlice(call.Arguments, r.Call.Arguments) {
		return r, tool.Result{}, true
	}
	c := *r
	c.Call.Arguments, c.frame = call.Arguments, f
	return &c, tool.Result{}, true
}

// ToolName returns the name the call uses.
func (r *Request) ToolName() string { return r.Call.Name }

// MarkAuthorized records that the call passed its tool's own permission
// check (tool.Authorize, as middleware.Permission runs it), so that the
// terminal handler does not consult the tool's checker a second time for
// this tool and these arguments (a copy of the request handed on with
// another tool or other arguments is checked again); the mark goes with
// copies of the request, and is safe to set while other attempts of the
// call run. Without it, the tool package consults the
// checker before the tool runs (see tool.Invoker.Invoke). A request made
// outside an executor has nowhere to keep the mark, and its checker is
// consulted again.
func (r *Request) MarkAuthorized() {
	if r.frame != nil && r.Tool != nil {
		r.frame.MarkAuthorized(r.Tool, r.Call)
	}
}

// Handler handles one call and returns its result. A Handler never returns
// an error: failures are error results (IsError set, a Status and an
// ErrorCode saying what went wrong, the Go error in Err).
//
// Handlers must be safe for concurrent use: the parallel executor calls
// one Handler from many goroutines at once.
type Handler interface {
	Handle(ctx context.Context, req *Request) tool.Result
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) tool.Result

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *Request) tool.Result { return f(ctx, req) }

// Middleware wraps a Handler to add behaviour around each call: caching,
// timeouts, retries, logging, ... A Middleware is applied once, when a
// chain is built; the Handler it returns handles every call. State that
// outlives one call (a cache, the breakers) is created before the
// Middleware is returned, so that every chain built with it shares it.
type Middleware func(next Handler) Handler

// Chain returns h wrapped in mws. The first middleware listed is the
// outermost: Chain(h, a, b) handles a call as a(b(h)), so a sees the call
// first and the result last. Nil middlewares are skipped; a middleware
// that returns a nil Handler makes Chain panic, naming its position.
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			if h = mws[i](h); h == nil {
				// Every call would fail with a nil dereference far from
				// its cause: say which middleware is broken, now.
				panic(fmt.Sprintf("executor: middleware %d of %d returned a nil Handler", i+1, len(mws)))
			}
		}
	}
	return h
}

// Intercept adapts a function that handles a call with the rest of the
// chain in hand into a Middleware; it panics if fn is nil. It is the
// shortest way to write a middleware that keeps no state:
//
//	audit := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
//		res := next.Handle(ctx, req)
//		log.Printf("%s -> %s", req.Call.Name, res.Status)
//		return res
//	})
func Intercept(fn func(ctx context.Context, req *Request, next Handler) tool.Result) Middleware {
	if fn == nil {
		panic("executor: Intercept with a nil function")
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, req *Request) tool.Result {
			return fn(ctx, req, next)
		})
	}
}

// Recover is a Middleware that turns a panic in the rest of the chain into
// an error result: ErrorCode tool.CodePanic, a *tool.PanicError in Err and
// the stack in Details. The executors recover panics themselves; Recover is
// for middleware that calls the next handler from a goroutine of its own,
// where a panic could not be recovered by the executor.
func Recover(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, req *Request) (res tool.Result) {
		defer func() {
			if p := recover(); p != nil {
				res = PanicResult(req.Call.Name, p, debug.Stack())
			}
		}()
		return next.Handle(ctx, req)
	})
}

// PanicResult returns the result that answers a call whose tool, hook or
// middleware panicked with value: ErrorCode tool.CodePanic, a
// *tool.PanicError in Err, and the stack in Details.
func PanicResult(toolName string, value any, stack []byte) tool.Result {
	perr := &tool.PanicError{Tool: toolName, Value: value, Stack: string(stack)}
	r := tool.ErrorResult(tool.CodePanic, perr)
	r.Details = perr.Stack
	return r
}

// Terminal returns the handler at the end of every chain: it runs
// req.Tool through iv, the tool package's per-call pipeline (JSON repair
// when iv was built with it, argument preparation, coercion, validation,
// the call, error and panic conversion), and answers a call of an unknown
// tool (a nil req.Tool) with the tool package's result that suggests the
// nearest names. A nil iv stands for tool.NewInvoker().
//
// The executors build their terminal handler from one Invoker each, so that
// the schemas of tools that do not carry a compiled one are compiled once.
func Terminal(iv *tool.Invoker) Handler {
	if iv == nil {
		iv = tool.NewInvoker()
	}
	return &terminal{iv: iv}
}

type terminal struct{ iv *tool.Invoker }

func (t *terminal) Handle(ctx context.Context, req *Request) tool.Result {
	if req.Tool == nil {
		return unknownTool(req)
	}
	return t.invoke(ctx, req)
}

// invoke runs the call of a known tool (req.Tool is not nil).
func (t *terminal) invoke(ctx context.Context, req *Request) tool.Result {
	if w := req.watch; w != nil {
		return frameOps.Invoke(t.iv, ctx, req.frame, req.Tool, req.Call, w.progressOption(req))
	}
	return frameOps.Invoke(t.iv, ctx, req.frame, req.Tool, req.Call)
}

// unknownTool answers a call of a name the batch does not have.
func unknownTool(req *Request) tool.Result {
	if req.Tools == nil {
		return tool.UnknownTool(req.Call.Name, nil)
	}
	if u, ok := req.Tools.(interface{ Unknown(string) tool.Result }); ok {
		return u.Unknown(req.Call.Name)
	}
	return tool.UnknownTool(req.Call.Name, req.Tools.Names())
}
