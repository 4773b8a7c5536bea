package executor

import (
	"context"

	"github.com/trellis-go/trellis/tool"
)

// config holds the settings both executors share.
type config struct {
	middleware []Middleware
	hooks      []Hooks
	observer   Observer
	listening  func(ctx context.Context) bool
	failFast   bool
	prefix     string
	invokeOpts []tool.InvokeOption
}

// parallelConfig adds the parallel executor's settings.
type parallelConfig struct {
	config
	maxConcurrency int
	groupLimits    map[string]int
	checkSafe      bool
}

// Option configures both executors (Sequential and Parallel).
type Option interface {
	ParallelOption
	apply(*config)
}

// ParallelOption configures the parallel executor. Every Option is also a
// ParallelOption.
type ParallelOption interface {
	applyParallel(*parallelConfig)
}

type option func(*config)

func (o option) apply(c *config)                 { o(c) }
func (o option) applyParallel(c *parallelConfig) { o(&c.config) }

type parallelOption func(*parallelConfig)

func (o parallelOption) applyParallel(c *parallelConfig) { o(c) }

// WithMiddleware adds middleware around every call. Middleware given in
// one option, and in successive options, nest in the order given: the
// first is the outermost (see Chain).
func WithMiddleware(mws ...Middleware) Option {
	return option(func(c *config) { c.middleware = append(c.middleware, mws...) })
}

// WithHooks adds BeforeCall and AfterCall hooks. Hooks given in successive
// options run in the order given.
func WithHooks(h Hooks) Option {
	return option(func(c *config) { c.hooks = append(c.hooks, h) })
}

// WithObserver sets the function that receives the batches' ToolStart,
// ToolUpdate and ToolEnd events, for every batch: it replaces an observer
// set before, with WithObserverIf too. Without one, no events are built.
func WithObserver(o Observer) Option {
	return option(func(c *config) { c.observer, c.listening = o, nil })
}

// WithObserverIf sets the observer, like WithObserver, and asks listening
// before each batch whether anybody reads its events: when it says no, the
// batch runs as if there were no observer — no events are built, no clock is
// read for durations. nodes.ToolEvents with graph.Emitting is the typical
// pair: a batch emits events only when its graph run streams them.
func WithObserverIf(o Observer, listening func(ctx context.Context) bool) Option {
	return option(func(c *config) { c.observer, c.listening = o, listening })
}

// WithFailFast makes the first failing call stop the batch: the calls
// still running are cancelled, the calls not yet started are not run, all
// of them are answered with cancelled results, and Execute returns a
// *StopError that matches ErrFailFast and wraps the failed call's error. A
// call fails when the result of the middleware chain is an error result
// (before AfterCall hooks run; a result a BeforeCall hook blocks the call
// with does not count). The default is to continue: every call runs and
// failures are only results.
func WithFailFast() Option {
	return option(func(c *config) { c.failFast = true })
}

// WithErrorPrefix puts prefix (for example an agent's name) in front of the
// message of the error Execute returns and of the Err of every error result
// that has one (the results Execute returns and those of the ToolEnd
// events alike), as "prefix: message", so that logs say which executor
// failed.
// errors.Is and errors.As see through it. The content the model reads is
// not changed.
func WithErrorPrefix(prefix string) Option {
	return option(func(c *config) { c.prefix = prefix })
}

// WithJSONRepair turns JSON repair of the calls' arguments on or off
// (default off); see tool.WithJSONRepair.
func WithJSONRepair(on bool) Option {
	return option(func(c *config) { c.invokeOpts = append(c.invokeOpts, tool.WithJSONRepair(on)) })
}

// WithInvokeOptions adds options to the tool.Invoker behind the terminal
// handler, for example tool.WithPending to register the calls of
// long-running tools. Progress updates reach the observer whatever the
// options say.
func WithInvokeOptions(opts ...tool.InvokeOption) Option {
	return option(func(c *config) { c.invokeOpts = append(c.invokeOpts, opts...) })
}

// WithMaxConcurrency caps how many calls of a batch run at once; n <= 0
// means no cap (the default). Calls start in call order as capacity allows.
func WithMaxConcurrency(n int) ParallelOption {
	return parallelOption(func(c *parallelConfig) { c.maxConcurrency = max(n, 0) })
}

// WithGroupLimit caps how many calls of the tools in a concurrency group
// (tool.Metadata.ConcurrencyGroup) run at once, for example the tools that
// share one rate-limited API. The cap applies within a batch, together with
// WithMaxConcurrency. n <= 0 removes the group's cap.
func WithGroupLimit(group string, n int) ParallelOption {
	return parallelOption(func(c *parallelConfig) {
		if n <= 0 {
			delete(c.groupLimits, group)
			return
		}
		if c.groupLimits == nil {
			c.groupLimits = map[string]int{}
		}
		c.groupLimits[group] = n
	})
}

// WithConcurrencySafeCheck says whether a tool whose metadata does not set
// ConcurrencySafe forces its batch to run sequentially (default true: only
// tools that say they may run concurrently do). Turn it off when every tool
// of the run may run alongside the others; a tool whose metadata sets
// Sequential still forces its batch to run sequentially.
func WithConcurrencySafeCheck(on bool) ParallelOption {
	return parallelOption(func(c *parallelConfig) { c.checkSafe = on })
}
