package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// progressTool reports two updates and answers.
func progressTool(t *testing.T) tool.Tool {
	return newTool(t, "progress", safe, func(ctx context.Context, id string, _ json.RawMessage) (tool.Result, error) {
		tool.ReportProgress(ctx, tool.Update{Message: id + " 1/2"})
		tool.ReportProgress(ctx, tool.Update{Message: id + " 2/2"})
		return tool.Text(id), nil
	})
}

func TestEventsLifecycle(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			rec := &recorder{}
			const n = 6
			progress := progressTool(t)
			titled, err := tool.New(progress.Definition(), progress.Call, tool.WithMetadata(safe), tool.WithTitle("Progress report"))
			require.NoError(t, err)
			res, err := k.make(executor.WithObserver(rec.observe)).Execute(context.Background(), executor.Batch{
				Calls: calls(n, "progress"), Tools: executor.Tools(titled),
			})
			require.NoError(t, err)
			require.Len(t, res, n)
			assert.False(t, rec.overlap, "the observer is never called concurrently")

			evs := rec.all()
			var starts, ends []int
			pos := map[string]map[executor.EventKind][]int{}
			for p, ev := range evs {
				id := ev.Call.ID
				if pos[id] == nil {
					pos[id] = map[executor.EventKind][]int{}
				}
				pos[id][ev.Kind] = append(pos[id][ev.Kind], p)
				assert.Equal(t, fmt.Sprintf("c%d", ev.Index), id, "an event's index and call agree")
				assert.Equal(t, "progress", ev.Call.Name)
				assert.Equal(t, "Progress report", ev.Title, "every event names the tool's title")
				switch ev.Kind {
				case executor.ToolStart:
					starts = append(starts, ev.Index)
				case executor.ToolEnd:
					ends = append(ends, ev.Index)
					assert.Equal(t, id, ev.Result.Text())
					assert.Positive(t, ev.Duration)
				case executor.ToolUpdate:
					assert.Equal(t, id, ev.Update.CallID)
					assert.Equal(t, "progress", ev.Update.ToolName)
				}
			}
			assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, starts)
			assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, ends)
			for id, kinds := range pos {
				require.Len(t, kinds[executor.ToolStart], 1, id)
				require.Len(t, kinds[executor.ToolEnd], 1, id)
				require.Len(t, kinds[executor.ToolUpdate], 2, id)
				s, e := kinds[executor.ToolStart][0], kinds[executor.ToolEnd][0]
				for _, u := range kinds[executor.ToolUpdate] {
					assert.True(t, s < u && u < e, "updates of %s come between its start and end", id)
				}
				first, second := evs[kinds[executor.ToolUpdate][0]], evs[kinds[executor.ToolUpdate][1]]
				assert.Equal(t, id+" 1/2", first.Update.Message)
				assert.Equal(t, id+" 2/2", second.Update.Message)
			}
			if k.name == "sequential" {
				for i := range n - 1 { // each call ends before the next starts
					assert.Less(t, pos[fmt.Sprintf("c%d", i)][executor.ToolEnd][0], pos[fmt.Sprintf("c%d", i+1)][executor.ToolStart][0])
				}
			}
		})
	}
}

// TestUpdatesAfterEndAreDropped checks that a goroutine a tool leaves
// behind cannot emit events after its call ended.
func TestUpdatesAfterEndAreDropped(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			late := make(chan bool)
			ended := make(chan struct{})
			leaky := newTool(t, "leaky", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
				go func() {
					<-ended // the call's ToolEnd was emitted
					late <- tool.ReportProgress(ctx, tool.Update{Message: "too late"})
				}()
				return tool.Text("ok"), nil
			})
			rec := &recorder{}
			observe := func(ctx context.Context, ev executor.Event) {
				rec.observe(ctx, ev)
				if ev.Kind == executor.ToolEnd {
					close(ended)
				}
			}
			_, err := k.make(executor.WithObserver(observe)).Execute(context.Background(), executor.Batch{
				Calls: calls(1, "leaky"), Tools: executor.Tools(leaky),
			})
			require.NoError(t, err)
			assert.False(t, <-late, "the update was not delivered")
			assert.Empty(t, rec.of(executor.ToolUpdate))
		})
	}
}

func TestObserverPanicIsContained(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			res, err := k.make(executor.WithObserver(func(context.Context, executor.Event) { panic("observer bug") })).
				Execute(context.Background(), executor.Batch{Calls: calls(3, "echo"), Tools: executor.Tools(echo(t, "echo"))})
			require.NoError(t, err)
			for _, r := range res {
				assert.Equal(t, tool.StatusSuccess, r.Status)
			}
		})
	}
}

func TestMiddlewarePanicBecomesResult(t *testing.T) {
	boom := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		if req.Index == 1 {
			panic(errors.New("middleware bug"))
		}
		return next.Handle(ctx, req)
	})
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			res, err := k.make(executor.WithMiddleware(boom)).Execute(context.Background(), executor.Batch{
				Calls: calls(3, "echo"), Tools: executor.Tools(echo(t, "echo")),
			})
			require.NoError(t, err)
			assert.Equal(t, tool.StatusSuccess, res[0].Status)
			assert.Equal(t, tool.CodePanic, res[1].ErrorCode)
			assert.Contains(t, res[1].Details, "goroutine")
			assert.Equal(t, tool.StatusSuccess, res[2].Status)
		})
	}
}

func TestMiddlewareZeroResultIsNormalized(t *testing.T) {
	lazy := executor.Intercept(func(context.Context, *executor.Request, executor.Handler) tool.Result {
		return tool.Result{IsError: true}
	})
	res, err := executor.Sequential(executor.WithMiddleware(lazy)).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{call("a", "echo", "")}, Tools: executor.Tools(echo(t, "echo")),
	})
	require.NoError(t, err)
	assert.Equal(t, tool.StatusFailed, res[0].Status)
}

func TestJSONRepairOption(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			res, err := executor.Sequential(executor.WithJSONRepair(on)).Execute(context.Background(), executor.Batch{
				Calls: []model.ToolCall{call("a", "echo", `{'x': 1,}`)}, Tools: executor.Tools(echo(t, "echo")),
			})
			require.NoError(t, err)
			if on {
				assert.Equal(t, tool.StatusSuccess, res[0].Status)
				assert.Contains(t, res[0].Text(), `"x"`)
			} else {
				assert.Equal(t, tool.CodeInvalidArguments, res[0].ErrorCode)
			}
		})
	}
}

func TestInvokeOptionsReachTheInvoker(t *testing.T) {
	var pending tool.Pending
	lr := newTool(t, "report", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.PendingResult("started"), nil
	})
	res, err := executor.Sequential(executor.WithInvokeOptions(tool.WithPending(&pending))).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{call("job-1", "report", "")}, Tools: executor.Tools(lr),
	})
	require.NoError(t, err)
	assert.Equal(t, tool.StatusPending, res[0].Status)
	require.Len(t, pending.Calls(), 1)
	assert.Equal(t, "job-1", pending.Calls()[0].ID)
}
