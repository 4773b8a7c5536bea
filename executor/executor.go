package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/internal/callroom"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Lookup finds a batch's tools by name. *tool.ToolList satisfies it; Tools
// builds one from a list of tools.
type Lookup interface {
	// Lookup returns the tool with the given name.
	Lookup(name string) (tool.Tool, bool)
	// Names returns the names of all the tools, for the "did you mean"
	// result of a call of an unknown tool.
	Names() []string
}

// Batch is what an Executor runs: the calls of one model turn and the tools
// of the run.
type Batch struct {
	// Calls are the calls to run, in the order the model made them. They
	// belong to the caller (a ToolsNode hands over the calls of the
	// conversation's assistant message): an Executor reads them and never
	// modifies them. The executors of this package give each call's
	// Request a copy, which hooks may change.
	Calls []model.ToolCall
	// Tools resolves the calls' names. A nil Tools makes every call a call
	// of an unknown tool.
	Tools Lookup
}

// Executor runs a batch of calls.
//
// Execute returns exactly one result per call, in call order, whatever
// happens: calls that fail, panic, time out or are cancelled are answered
// with error results, and calls that never ran (the context was cancelled,
// the batch was stopped) are answered with cancelled results. A result is
// paired with its call by position; it does not carry the call's ID.
//
// The error is non-nil only when the batch must stop the run: a hook
// stopped it, or a call failed under WithFailFast. It is then a *StopError
// (possibly wrapped by an error prefix), and the results are still
// complete. A cancelled context is not an error: its calls are answered
// with cancelled results.
//
// Executors are safe for concurrent use: one executor serves any number of
// batches at once.
type Executor interface {
	Execute(ctx context.Context, batch Batch) ([]tool.Result, error)
}

// batchRoom is the storage a batch runs in: what the caller lent the
// executor (see internal/callroom), or nothing, and the executor
// allocates. Each part is used when it has room for every call of the
// batch, and ignored otherwise.
type batchRoom struct {
	// Results receives the results; it is the lender's again once
	// Execute returns.
	Results []tool.Result
	// Frames hold the calls' contexts (see internal/callctx). They are zero,
	// and never used again.
	Frames []callctx.Frame
	// Shared says the batch's calls are the lender's run state's, whose
	// memory nothing writes in place (see internal/callroom): a call whose
	// arguments reach its tool unchanged lets the tool share them (see
	// callctx.Frame.ShareArguments).
	Shared bool
}

// roomFor returns the storage the caller behind ctx lent owner, the
// executor that runs b, if any.
func roomFor(ctx context.Context, owner Executor, b Batch) batchRoom {
	results, frames := callroom.Take(ctx, owner, len(b.Calls))
	return batchRoom{Results: results, Frames: frames, Shared: results != nil}
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, batch Batch) ([]tool.Result, error)

// Execute calls f(ctx, batch).
func (f ExecutorFunc) Execute(ctx context.Context, batch Batch) ([]tool.Result, error) {
	return f(ctx, batch)
}

// Decorator wraps a whole Executor, for concerns that belong to a batch
// rather than to one call: a deadline for the whole batch, a log line per
// batch, a limit on the calls a turn may make. Per-call concerns belong in
// a Middleware.
type Decorator func(Executor) Executor

// Decorate returns e wrapped in ds; the first decorator listed is the
// outermost, as with Chain. Nil decorators are skipped.
func Decorate(e Executor, ds ...Decorator) Executor {
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i] != nil {
			e = ds[i](e)
		}
	}
	return e
}

// Guard returns an Executor that enforces e's contract, for executors
// written outside this package: a panic in e answers every call with an
// error result holding the stack, a missing result answers its call with
// an error result (ErrorCode CodeMissingResult), and surplus results are
// dropped, so the caller always gets len(batch.Calls) results.
func Guard(e Executor) Executor {
	return ExecutorFunc(func(ctx context.Context, b Batch) (res []tool.Result, err error) {
		n := len(b.Calls)
		defer func() {
			if p := recover(); p != nil {
				stack := debug.Stack()
				res = make([]tool.Result, n)
				for i, c := range b.Calls {
					res[i] = PanicResult(c.Name, p, stack)
				}
				err = nil
			}
		}()
		res, err = e.Execute(ctx, b)
		switch {
		case len(res) > n:
			res = res[:n:n]
		case len(res) < n:
			res = slices.Grow(res, n-len(res))
			for i := len(res); i < n; i++ {
				call := b.Calls[i]
				res = append(res, tool.ErrorResult(CodeMissingResult,
					fmt.Errorf("%w: call %q of tool %q", ErrMissingResult, call.ID, call.Name)))
			}
		}
		return res, err
	})
}

// CodeMissingResult is the ErrorCode of the result Guard supplies for a
// call its executor did not answer.
const CodeMissingResult = "missing_result"

// ErrMissingResult is behind the results Guard supplies for calls its
// executor did not answer.
var ErrMissingResult = errors.New("executor: no result for call")

// Tools returns a Lookup over ts, for batches whose tools are not a
// *tool.ToolList (tests, small programs). Names should be unique; when two
// tools share a name, the first is used. Nil tools are skipped.
func Tools(ts ...tool.Tool) Lookup {
	m := toolMap{byName: make(map[string]tool.Tool, len(ts))}
	for _, t := range ts {
		if t == nil {
			continue
		}
		name := tool.Name(t)
		if _, dup := m.byName[name]; dup {
			continue
		}
		m.byName[name] = t
		m.names = append(m.names, name)
	}
	return m
}

type toolMap struct {
	byName map[string]tool.Tool
	names  []string
}

func (m toolMap) Lookup(name string) (tool.Tool, bool) {
	t, ok := m.byName[name]
	return t, ok
}

func (m toolMap) Names() []string { return slices.Clone(m.names) }
