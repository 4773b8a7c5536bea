package callctx

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/model"
)

// Ops are package tool's operations on frames. Their types are package
// tool's (I its Invoker, T its Tool, R its Result, O its InvokeOption),
// which this package, below tool, cannot name: tool registers them with
// its own types when it is initialized (Register), and a package above
// tool asks for them with the same types (OpsOf).
type Ops[I, T, R, O any] struct {
	// Invoke runs call of t with iv in the frame f (nil for a new one),
	// as package tool's Invoke does.
	Invoke func(iv I, ctx context.Context, f *Frame, t T, call model.ToolCall, opts ...O) R
	// InvokeInto is Invoke without options, with the call read through
	// call (it is not changed) and the result written into res: for
	// executors that keep calls and results in a batch's storage, a copy
	// of each the less.
	InvokeInto func(iv I, ctx context.Context, f *Frame, t T, call *model.ToolCall, res *R)
	// Prepare returns call with the arguments t runs with when iv invokes
	// it, and marks them final in f (when f is not nil), so that Invoke in
	// f does not run t's PrepareArguments hook on them again. ok is false,
	// and res is the call's answer, when the pipeline refuses them.
	Prepare func(iv I, f *Frame, t T, call model.ToolCall) (prepared model.ToolCall, res R, ok bool)
	// NewFrames returns the frames of a batch of n calls whose first call
	// is of t (see NewFrames): with room for the results' parts when t is
	// a typed tool whose results are one part.
	NewFrames func(n int, t T) []Frame
}

// registered holds the Ops package tool registered: set once, while
// package tool is initialized, before any package that imports tool is,
// and read only after. It is the one way for package tool to hand
// functions of its own types to the packages above it without exporting
// them.
var registered any

// Register records package tool's operations. It is called once, by
// package tool's initialization; a second call panics.
func Register[I, T, R, O any](ops *Ops[I, T, R, O]) {
	if registered != nil {
		panic("callctx: operations registered twice")
	}
	registered = ops
}

// OpsOf returns the operations package tool registered, with its types. It
// panics when they were registered with other types, or not at all.
func OpsOf[I, T, R, O any]() *Ops[I, T, R, O] {
	ops, ok := registered.(*Ops[I, T, R, O])
	if !ok {
		panic(fmt.Sprintf("callctx: no operations registered for %T (registered: %T)", ops, registered))
	}
	return ops
}
