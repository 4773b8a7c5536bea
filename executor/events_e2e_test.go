package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/tool"
)

func TestEventsToolEndCarriesTheReturnedResult(t *testing.T) {
	boom := errors.New("boom")
	failing := newTool(t, "failing", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, boom
	})
	hooks := executor.Hooks{AfterCall: func(context.Context, *executor.Request, *tool.Result) error { return nil }}
	for _, k := range kinds {
		for _, withHooks := range []bool{false, true} {
			name := k.name
			if withHooks {
				name += "+hooks"
			}
			t.Run(name, func(t *testing.T) {
				var mu sync.Mutex
				ends := map[string]tool.Result{}
				opts := []executor.Option{
					executor.WithErrorPrefix("agent-x"),
					executor.WithObserver(func(_ context.Context, ev executor.Event) {
						if ev.Kind == executor.ToolEnd {
							mu.Lock()
							ends[ev.Call.ID] = ev.Result
							mu.Unlock()
						}
					}),
				}
				if withHooks {
					opts = append(opts, executor.WithHooks(hooks))
				}
				res, err := k.make(opts...).Execute(context.Background(), executor.Batch{
					Calls: calls(3, "failing"), Tools: executor.Tools(failing),
				})
				require.NoError(t, err)
				require.Len(t, res, 3)
				for i, r := range res {
					id := calls(3, "failing")[i].ID
					require.Error(t, r.Err)
					assert.ErrorIs(t, ends[id].Err, boom)
					assert.Equal(t, r.Err.Error(), ends[id].Err.Error(), "the observer sees the result Execute returns")
					assert.Equal(t, r.Status, ends[id].Status)
				}
			})
		}
	}
}
