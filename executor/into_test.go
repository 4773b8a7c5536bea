package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// TestExecuteIntoWritesTheCallersStorage runs batches of one and of
// several calls through each executor, with and without middleware and an
// observer (each takes its own path), and checks that the results are
// those Execute gives and that they land in the storage given.
func TestExecuteIntoWritesTheCallersStorage(t *testing.T) {
	tools := executor.Tools(echo(t, "echo"))
	pass := func(next executor.Handler) executor.Handler { return next }
	configs := []struct {
		name string
		opts []executor.Option
	}{
		{"plain", nil},
		{"middleware", []executor.Option{executor.WithMiddleware(pass)}},
		{"observer", []executor.Option{executor.WithObserver(func(context.Context, executor.Event) {})}},
	}
	for _, k := range kinds {
		for _, cfg := range configs {
			for _, n := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%s/%d", k.name, cfg.name, n), func(t *testing.T) {
					e := k.make(cfg.opts...)
					b := executor.Batch{Calls: calls(n, "echo"), Tools: tools}
					want, err := e.Execute(context.Background(), b)
					require.NoError(t, err)

					dst := make([]tool.Result, n+2)
					for i := range dst {
						dst[i] = tool.Text("stale") // overwritten, whatever it held
					}
					got, err := executor.ExecuteInto(context.Background(), e, b, executor.Room{Results: dst})
					require.NoError(t, err)
					require.Len(t, got, n)
					assert.Same(t, &dst[0], &got[0], "the results are in the storage given")
					assert.Equal(t, n, cap(got), "the results are clipped to the batch")
					for i := range n {
						assert.Equal(t, want[i].Text(), got[i].Text())
						assert.Equal(t, tool.StatusSuccess, got[i].Status)
					}
					assert.Equal(t, "stale", dst[n].Text(), "nothing past the batch is touched")
				})
			}
		}
	}
}

// TestExecuteIntoWithTooLittleStorage gives storage with room for fewer
// results than calls: the executor answers in storage of its own.
func TestExecuteIntoWithTooLittleStorage(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			dst := make([]tool.Result, 1)
			b := executor.Batch{Calls: calls(3, "echo"), Tools: executor.Tools(echo(t, "echo"))}
			got, err := executor.ExecuteInto(context.Background(), k.make(), b, executor.Room{Results: dst})
			require.NoError(t, err)
			require.Len(t, got, 3)
			assert.NotSame(t, &dst[0], &got[0])
			assert.Equal(t, tool.Result{}, dst[0], "the storage that was too small is left alone")
			assert.Equal(t, `echo:c2:{"i":2}`, got[2].Text())
		})
	}
}

// TestExecuteIntoFallsBackToExecute checks that executors that cannot
// take storage (a Guard, a function) are run through Execute.
func TestExecuteIntoFallsBackToExecute(t *testing.T) {
	inner := executor.Sequential()
	_, ok := inner.(executor.IntoExecutor)
	require.True(t, ok, "the package's executors take storage")
	guarded := executor.Guard(inner)
	_, ok = guarded.(executor.IntoExecutor)
	require.False(t, ok)

	dst := make([]tool.Result, 2)
	b := executor.Batch{Calls: calls(2, "echo"), Tools: executor.Tools(echo(t, "echo"))}
	got, err := executor.ExecuteInto(context.Background(), guarded, b, executor.Room{Results: dst})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.NotSame(t, &dst[0], &got[0])
	assert.Equal(t, `echo:c1:{"i":1}`, got[1].Text())
}

// TestExecuteIntoLeavesStorageAloneAfterReturning cancels a parallel batch
// whose tool ignores its context: ExecuteInto answers the call as
// cancelled and returns, and the tool's late result, once it comes, is not
// written into the storage, which the caller may be using again by then
// (the race detector watches the storage too).
func TestExecuteIntoLeavesStorageAloneAfterReturning(t *testing.T) {
	release := make(chan struct{})
	finished := make(chan struct{})
	started := make(chan struct{}, 2)
	polite := newTool(t, "polite", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	stubborn := newTool(t, "stubborn", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		defer close(finished)
		started <- struct{}{}
		<-release
		return tool.Text("too late"), nil
	})
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; <-started; cancel() }()
	dst := make([]tool.Result, 2)
	got, err := executor.ExecuteInto(ctx, executor.Parallel(), executor.Batch{
		Calls: []model.ToolCall{call("a", "polite", ""), call("b", "stubborn", "")},
		Tools: executor.Tools(polite, stubborn),
	}, executor.Room{Results: dst, Frames: make([]tool.Frame, 2)})
	require.NoError(t, err)
	require.Same(t, &dst[0], &got[0])
	assert.Equal(t, tool.StatusCancelled, got[1].Status)

	dst[1] = tool.Text("the caller's again") // written while the tool still runs
	close(release)
	<-finished
	// The worker goroutine hands its result over after the tool returns:
	// wait until it has ended.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the batch's goroutines did not end")
	}
	assert.Equal(t, "the caller's again", dst[1].Text(), "the late result is dropped")
}

// TestExecuteIntoUsesTheCallersFrames runs a single call of a tool that
// allocates nothing, with room for its result and its frame: the batch
// allocates nothing either. Without the frame, it allocates one.
func TestExecuteIntoUsesTheCallersFrames(t *testing.T) {
	quiet := newTool(t, "quiet", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, nil
	})
	b := executor.Batch{Calls: []model.ToolCall{call("a", "quiet", `{}`)}, Tools: executor.Tools(quiet)}
	results := make([]tool.Result, 1)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			e := k.make()
			// Fresh frames for every run, made before the measured calls:
			// a frame serves one call only.
			frames := make([]tool.Frame, 100)
			next := 0
			with := testing.AllocsPerRun(50, func() {
				res, err := executor.ExecuteInto(context.Background(), e, b, executor.Room{Results: results, Frames: frames[next : next+1]})
				next++
				if err != nil || res[0].Status != tool.StatusSuccess {
					t.Fatalf("%v %+v", err, res)
				}
			})
			without := testing.AllocsPerRun(50, func() {
				if _, err := executor.ExecuteInto(context.Background(), e, b, executor.Room{Results: results}); err != nil {
					t.Fatal(err)
				}
			})
			assert.Equal(t, 0.0, with, "the frame given is the call's")
			assert.Equal(t, 1.0, without, "the call's frame")
		})
	}
}
