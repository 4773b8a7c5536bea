package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// trivialTool answers at once; it measures the executor, not the tool.
func trivialTool(b testing.TB) tool.Tool {
	return newTool(b, "noop", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Text("ok"), nil
	})
}

func benchBatch(n int, tl tool.Tool) executor.Batch {
	cs := make([]model.ToolCall, n)
	for i := range cs {
		cs[i] = model.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: tool.Name(tl), Arguments: json.RawMessage(`{}`)}
	}
	return executor.Batch{Calls: cs, Tools: executor.Tools(tl)}
}

// BenchmarkExecutor runs batches of 1, 8 and 64 calls of a trivial tool
// through each executor; ns/op is per batch.
func BenchmarkExecutor(b *testing.B) {
	for _, k := range []struct {
		name string
		ex   executor.Executor
	}{{"sequential", executor.Sequential()}, {"parallel", executor.Parallel()}} {
		for _, n := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/%d", k.name, n), func(b *testing.B) {
				batch := benchBatch(n, trivialTool(b))
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					res, err := k.ex.Execute(ctx, batch)
					if err != nil || len(res) != n || res[n-1].IsError {
						b.Fatal(err, res)
					}
				}
			})
		}
	}
}

// BenchmarkChainOverhead handles one call through a chain of five
// pass-through middlewares and through none; the difference divided by
// five is the cost of one layer.
func BenchmarkChainOverhead(b *testing.B) {
	pass := executor.Middleware(func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			return next.Handle(ctx, req)
		})
	})
	for _, n := range []int{0, 5} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			mws := make([]executor.Middleware, n)
			for i := range mws {
				mws[i] = pass
			}
			tl := trivialTool(b)
			h := executor.Chain(executor.Terminal(tool.NewInvoker()), mws...)
			req := &executor.Request{Call: model.ToolCall{ID: "call_1", Name: "noop", Arguments: json.RawMessage(`{}`)}, Tool: tl}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if r := h.Handle(ctx, req); r.IsError {
					b.Fatal(r.Text())
				}
			}
		})
	}
}

// BenchmarkParallelIO100 runs 100 calls of a tool that sleeps 10 ms through
// the parallel executor; ns/op is the wall time of one batch, also reported
// as ms/batch.
func BenchmarkParallelIO100(b *testing.B) {
	sleeper := newTool(b, "sleep", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		t := time.NewTimer(10 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return tool.Text("slept"), nil
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	})
	batch := benchBatch(100, sleeper)
	ex := executor.Parallel()
	ctx := context.Background()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		res, err := ex.Execute(ctx, batch)
		if err != nil || res[99].IsError {
			b.Fatal(err, res[99].Text())
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/batch")
}

// BenchmarkGoroutineStart measures what bounds the parallel executor on
// short calls: the time from a go statement until the new goroutine runs
// while the goroutine that started it stays busy, so that it must run on
// another core. It measures the machine and the Go scheduler, not Trellis;
// ns/op is the mean delay, also reported as µs/start.
func BenchmarkGoroutineStart(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		var delay atomic.Int64
		t0 := time.Now()
		go func() { delay.Store(int64(time.Since(t0)) + 1) }()
		for delay.Load() == 0 {
			// Busy: the new goroutine cannot run on this core.
		}
		total += time.Duration(delay.Load())
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/start")
}
