package mwtest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// FakeClock is a middleware.Clock that advances only when slept on or told
// to: tests check delays without waiting.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	sleeps  []time.Duration
	onSleep func(d time.Duration) // called before a sleep returns, if set
}

var _ middleware.Clock = (*FakeClock)(nil)

// NewFakeClock returns a clock at noon, 1 January 2030, UTC.
func NewFakeClock() *FakeClock {
	return &FakeClock{now: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d, advances the clock by d, calls the OnSleep function if
// one is set, and returns ctx's error.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	hook := c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook(d)
	}
	return ctx.Err()
}

// OnSleep sets a function each Sleep calls before it returns.
func (c *FakeClock) OnSleep(f func(d time.Duration)) {
	c.mu.Lock()
	c.onSleep = f
	c.mu.Unlock()
}

// Advance moves the clock on by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Sleeps returns the durations slept, in order.
func (c *FakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// ObjectSchema is the input schema of the tools NewCounted makes.
const ObjectSchema = `{"type":"object"}`

// Counted is a tool that counts its runs.
type Counted struct {
	tool.Tool
	runs atomic.Int64
}

// NewCounted returns a tool named name, with metadata meta, whose body is
// fn, and which counts its runs.
func NewCounted(tb testing.TB, name string, meta tool.Metadata, fn tool.CallFunc) *Counted {
	tb.Helper()
	c := &Counted{}
	tl, err := tool.New(model.ToolDefinition{Name: name, Description: "test tool " + name, InputSchema: json.RawMessage(ObjectSchema)},
		func(ctx context.Context, id string, args json.RawMessage) (tool.Result, error) {
			c.Ran()
			return fn(ctx, id, args)
		}, tool.WithMetadata(meta))
	if err != nil {
		tb.Fatalf("mwtest: tool %s: %v", name, err)
	}
	c.Tool = tl
	return c
}

// Ran counts a run, for a Counted whose Tool a test made itself.
func (c *Counted) Ran() { c.runs.Add(1) }

// Runs returns the runs counted.
func (c *Counted) Runs() int64 { return c.runs.Load() }

// Unwrap lets the tool package see the wrapped tool's metadata, schema and
// permission checker.
func (c *Counted) Unwrap() tool.Tool { return c.Tool }

// OK is a tool body that answers text.
func OK(text string) tool.CallFunc {
	return func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Text(text), nil }
}

// FailWith is a tool body that fails with err.
func FailWith(err error) tool.CallFunc {
	return func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Result{}, err }
}

// FailTimes is a tool body that fails n times with err, then answers
// "recovered".
func FailTimes(n int64, err error) tool.CallFunc {
	var calls atomic.Int64
	return func(context.Context, string, json.RawMessage) (tool.Result, error) {
		if calls.Add(1) <= n {
			return tool.Result{}, err
		}
		return tool.Text("recovered"), nil
	}
}

// ErrFlaky is a transient failure (middleware.Transient).
var ErrFlaky = middleware.Transient(errors.New("connection dropped"))

// BlockUntilDone is a tool body that waits for ctx, as a slow tool that
// honours cancellation.
func BlockUntilDone(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
	<-ctx.Done()
	return tool.Result{}, ctx.Err()
}

// Req is a request to call t (nil: a tool named "unknown") with the ID id
// and the arguments args ("" for {}).
func Req(t tool.Tool, id, args string) *executor.Request {
	if args == "" {
		args = "{}"
	}
	name := "unknown"
	if t != nil {
		name = tool.Name(t)
	}
	return &executor.Request{Call: model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}, Tool: t}
}

// Handler chains mws over the terminal handler.
func Handler(mws ...executor.Middleware) executor.Handler {
	return executor.Chain(executor.Terminal(tool.NewInvoker()), mws...)
}

// ReadOnly returns the metadata of a read-only tool safe to call
// concurrently.
func ReadOnly() tool.Metadata { return tool.Metadata{ReadOnly: true, ConcurrencySafe: true} }
