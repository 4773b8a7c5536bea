// Package executor runs batches of tool calls: the calls a model made in
// one turn, against the tools of the run.
//
// # Executors
//
// An Executor takes a Batch (the calls and a Lookup of the tools) and
// returns one tool.Result per call, in call order, always: calls that
// fail, panic, time out or are cancelled, and calls that never ran, are
// answered with error results, so the transcript stays valid for every
// model provider. Sequential runs the calls one at a time; Parallel runs
// the tool bodies concurrently, under an optional cap (WithMaxConcurrency)
// and caps per concurrency group (WithGroupLimit), and falls back to
// sequential execution for a batch that holds a tool marked Sequential or
// not ConcurrencySafe. Both share their other options: middleware, hooks,
// an observer of lifecycle events, fail-fast, an error prefix and JSON
// repair.
//
// # Handlers and middleware
//
// Each call is handled by a Handler, in the net/http style: a one-method
// interface (Handle(ctx, *Request) tool.Result), a function adapter
// (HandlerFunc), Middleware as func(Handler) Handler, and Chain, where the
// first middleware listed is the outermost (nil middlewares are skipped; one
// that returns a nil Handler makes Chain, and so the executor's constructor,
// panic). Intercept adapts a function that receives the next handler into
// a Middleware. The handler at the end
// of every chain (Terminal) runs the tool through the tool package's
// pipeline (tool.Invoker): argument repair, preparation, coercion and
// validation, the call, and the conversion of errors and panics into
// results. The executor runs a call's arguments through the first four
// steps (tool.Invoker.Prepare) before its hooks, events and middleware see
// them, so that what they see — a permission policy above all — is what
// the tool runs with (see Request.Prepared). Concerns of a whole batch are written as a Decorator of an
// Executor instead; ExecutorFunc adapts a function.
//
// The middleware package holds the standard middleware: cache, timeout,
// circuit breaker, retry, rate limit, permission, logging and
// OpenTelemetry.
//
// # Hooks and events
//
// Hooks (BeforeCall, AfterCall) block a call, rewrite its arguments or its
// result, or stop the run; they run serially in call order in both
// executors. An Observer receives ToolStart and ToolEnd events, also
// serially in call order, and ToolUpdate events as running tools report
// progress (tool.ReportProgress). Panics in tools, middleware and hooks
// become error results with the stack in Details; the process never
// crashes.
//
// See docs/executors.md for a guide.
package executor
