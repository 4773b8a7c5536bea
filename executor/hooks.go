package executor

import (
	"context"

	"github.com/trellis-go/trellis/tool"
)

// Hooks intercept calls around their execution. Both executors run hooks
// serially and in call order, on the goroutine that called Execute, never
// concurrently with each other; in the parallel executor only the tool
// bodies (the middleware chain) run concurrently. Several Hooks (several
// WithHooks options) run in the order they were given.
//
// Hooks receive the context Execute was given; a hook that replaces it
// should keep its values. A panic in a hook is recovered: in BeforeCall it
// answers the call with an error result (the call does not run), in
// AfterCall it replaces the call's result with one; the stack is in the
// result's Details.
type Hooks struct {
	// BeforeCall runs before a call's tool runs. It sees the arguments the
	// tool will run with (repaired, prepared and coerced: see
	// Request.Prepared). It may:
	//   - rewrite the call's arguments by setting req.Call.Arguments to a
	//     new slice (other changes to req are ignored: the call keeps its
	//     ID, name and tool); the new arguments go through the tool's
	//     argument pipeline before the next hook and the middleware see
	//     them;
	//   - block the call by returning a non-nil result, which answers the
	//     call instead of the tool (later BeforeCall hooks and all AfterCall
	//     hooks are skipped for it);
	//   - stop the run by returning an error: the call does not run (it is
	//     answered with the returned result if there is one, else with a
	//     cancelled result), the calls after it are answered with cancelled
	//     results, calls already running are cancelled, and Execute returns
	//     a *StopError wrapping the error.
	BeforeCall func(ctx context.Context, req *Request) (*tool.Result, error)

	// AfterCall runs after a call's tool (through the middleware chain)
	// returned, for every call the BeforeCall hooks let through, even when
	// the batch has been stopped (the result then says cancelled). It may
	// rewrite the result in place (changes to req are ignored), and stop the
	// run by returning an error:
	// the result stays, the calls that have not finished are cancelled, and
	// Execute returns a *StopError wrapping the error. Once the batch is
	// stopped, the errors of later AfterCall hooks are ignored.
	AfterCall func(ctx context.Context, req *Request, res *tool.Result) error
}
