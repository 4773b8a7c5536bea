package executor_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type listenKey struct{}

func TestObserverIfAsksBeforeEachBatch(t *testing.T) {
	echo := tool.MustFunc("echo", "echoes", func(_ context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	var events atomic.Int32
	obs := func(context.Context, executor.Event) { events.Add(1) }
	listening := func(ctx context.Context) bool { return ctx.Value(listenKey{}) != nil }
	calls := []model.ToolCall{{ID: "a", Name: "echo", Arguments: []byte(`{"s":"x"}`)}, {ID: "b", Name: "echo", Arguments: []byte(`{"s":"y"}`)}}
	for _, e := range []executor.Executor{
		executor.Sequential(executor.WithObserverIf(obs, listening)),
		executor.Parallel(executor.WithObserverIf(obs, listening)),
	} {
		for _, n := range []int{1, 2} {
			events.Store(0)
			res, err := e.Execute(context.Background(), executor.Batch{Calls: calls[:n], Tools: executor.Tools(echo)})
			require.NoError(t, err)
			require.Len(t, res, n)
			assert.Equal(t, "x", res[0].Text())
			assert.Equal(t, int32(0), events.Load(), "nobody listens: no events")

			ctx := context.WithValue(context.Background(), listenKey{}, true)
			res, err = e.Execute(ctx, executor.Batch{Calls: calls[:n], Tools: executor.Tools(echo)})
			require.NoError(t, err)
			require.Len(t, res, n)
			assert.Equal(t, int32(2*n), events.Load(), "a start and an end per call")
		}
	}
}

// TestWithObserverReplacesObserverIf checks that WithObserver given after
// WithObserverIf sets an observer that hears every batch: the condition
// belonged to the observer it replaced.
func TestWithObserverReplacesObserverIf(t *testing.T) {
	never := func(context.Context) bool { return false }
	var events atomic.Int32
	obs := func(context.Context, executor.Event) { events.Add(1) }
	for _, e := range []executor.Executor{
		executor.Sequential(executor.WithObserverIf(obs, never), executor.WithObserver(obs)),
		executor.Parallel(executor.WithObserverIf(obs, never), executor.WithObserver(obs)),
	} {
		events.Store(0)
		res, err := e.Execute(context.Background(), executor.Batch{Calls: calls(2, "echo"), Tools: executor.Tools(echo(t, "echo"))})
		require.NoError(t, err)
		require.Len(t, res, 2)
		assert.EqualValues(t, 4, events.Load(), "a start and an end per call")
	}
}
