package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// fakeClock advances only when slept on or told to: tests check delays
// without waiting.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	sleeps  []time.Duration
	onSleep func(d time.Duration) // called before a sleep returns, if set
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
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

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// counted is a tool whose body is fn and which counts its runs.
type counted struct {
	tool.Tool
	runs atomic.Int64
}

func newCounted(t testing.TB, name string, meta tool.Metadata, fn tool.CallFunc) *counted {
	t.Helper()
	c := &counted{}
	tl, err := tool.New(model.ToolDefinition{Name: name, Description: "test tool " + name, InputSchema: objectSchema},
		func(ctx context.Context, id string, args json.RawMessage) (tool.Result, error) {
			c.runs.Add(1)
			return fn(ctx, id, args)
		}, tool.WithMetadata(meta))
	require.NoError(t, err)
	c.Tool = tl
	return c
}

func (c *counted) Runs() int64 { return c.runs.Load() }

// Unwrap lets the tool package see the wrapped tool's metadata, schema and
// permission checker.
func (c *counted) Unwrap() tool.Tool { return c.Tool }

func ok(text string) tool.CallFunc {
	return func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Text(text), nil }
}

func failWith(err error) tool.CallFunc {
	return func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Result{}, err }
}

// blockUntilDone waits for ctx, as a slow tool that honours cancellation.
func blockUntilDone(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
	<-ctx.Done()
	return tool.Result{}, ctx.Err()
}

func req(t tool.Tool, id, args string) *executor.Request {
	if args == "" {
		args = "{}"
	}
	name := "unknown"
	if t != nil {
		name = tool.Name(t)
	}
	return &executor.Request{Call: model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}, Tool: t}
}

// handler chains mws over the terminal handler.
func handler(mws ...executor.Middleware) executor.Handler {
	return executor.Chain(executor.Terminal(tool.NewInvoker()), mws...)
}

var readOnly = tool.Metadata{ReadOnly: true, ConcurrencySafe: true}

// failTimes fails n times with err, then succeeds.
func failTimes(n int64, err error) tool.CallFunc {
	var calls atomic.Int64
	return func(context.Context, string, json.RawMessage) (tool.Result, error) {
		if calls.Add(1) <= n {
			return tool.Result{}, err
		}
		return tool.Text("recovered"), nil
	}
}

var errFlaky = middleware.Transient(errors.New("connection dropped"))
