package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

var objectSchema = json.RawMessage(`{"type":"object"}`)

// safe is the metadata of a tool the parallel executor may run
// concurrently.
var safe = tool.Metadata{ConcurrencySafe: true}

// newTool builds a raw tool with a permissive object schema.
func newTool(t testing.TB, name string, meta tool.Metadata, fn tool.CallFunc) tool.Tool {
	t.Helper()
	tl, err := tool.New(model.ToolDefinition{Name: name, Description: "test tool " + name, InputSchema: objectSchema}, fn, tool.WithMetadata(meta))
	require.NoError(t, err)
	return tl
}

// echo answers with the call's ID and arguments.
func echo(t testing.TB, name string) tool.Tool {
	return newTool(t, name, safe, func(_ context.Context, id string, args json.RawMessage) (tool.Result, error) {
		return tool.Text(name + ":" + id + ":" + string(args)), nil
	})
}

func call(id, name, args string) model.ToolCall {
	if args == "" {
		args = "{}"
	}
	return model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// calls makes n calls of name with IDs c0, c1, ...
func calls(n int, name string) []model.ToolCall {
	cs := make([]model.ToolCall, n)
	for i := range cs {
		cs[i] = call(fmt.Sprintf("c%d", i), name, `{"i":`+fmt.Sprint(i)+`}`)
	}
	return cs
}

// recorder collects events and checks the observer is never called
// concurrently.
type recorder struct {
	mu      sync.Mutex
	busy    atomic.Bool
	events  []executor.Event
	overlap bool
}

func (r *recorder) observe(_ context.Context, ev executor.Event) {
	if !r.busy.CompareAndSwap(false, true) {
		r.overlap = true
	}
	defer r.busy.Store(false)
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) all() []executor.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// of returns the events of one kind, in order.
func (r *recorder) of(kind executor.EventKind) []executor.Event {
	var out []executor.Event
	for _, ev := range r.all() {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// inflight tracks how many calls run at once.
type inflight struct {
	now, peak atomic.Int64
}

func (f *inflight) enter() {
	n := f.now.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (f *inflight) leave() { f.now.Add(-1) }

// kind is an executor for table tests.
type kind struct {
	name string
	make func(opts ...executor.Option) executor.Executor
}

// kinds lists both executors for table tests.
var kinds = []kind{
	{"sequential", func(opts ...executor.Option) executor.Executor { return executor.Sequential(opts...) }},
	{"parallel", func(opts ...executor.Option) executor.Executor {
		po := make([]executor.ParallelOption, len(opts))
		for i, o := range opts {
			po[i] = o
		}
		return executor.Parallel(po...)
	}},
}
