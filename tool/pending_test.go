package tool

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func TestPendingLifecycle(t *testing.T) {
	var p Pending
	require.NoError(t, p.Add(model.ToolCall{ID: "a", Name: "job"}))
	require.NoError(t, p.Add(model.ToolCall{ID: "b", Name: "job"}))
	require.NoError(t, p.Add(model.ToolCall{ID: "c", Name: "job"}))
	assert.ErrorIs(t, p.Add(model.ToolCall{ID: "a"}), ErrAlreadyPending)

	assert.ErrorIs(t, p.Complete("zzz", Text("x")), ErrNotPending)
	require.NoError(t, p.Complete("c", Result{Status: StatusPending, Pending: true, Content: Text("third").Content}))
	require.NoError(t, p.Complete("a", Errorf("failed")))
	assert.ErrorIs(t, p.Complete("a", Text("again")), ErrNotPending, "a call completes once")

	assert.Equal(t, []model.ToolCall{{ID: "b", Name: "job"}}, p.Calls())
	done := p.Completed()
	require.Len(t, done, 2)
	assert.Equal(t, "a", done[0].Call.ID, "in the order added")
	assert.Equal(t, StatusFailed, done[0].Result.Status)
	assert.Equal(t, "c", done[1].Call.ID)
	assert.Equal(t, StatusSuccess, done[1].Result.Status, "a completion is not pending any more")
	assert.False(t, done[1].Result.Pending)
	assert.Empty(t, p.Completed(), "collected completions are forgotten")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := p.Wait(ctx, "b")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, p.Calls(), 1, "the call stays pending after a Wait gives up")

	_, err = p.Wait(context.Background(), "unknown")
	assert.ErrorIs(t, err, ErrNotPending)
}

// A long-running tool's own worker may finish before Invoke returns; Invoke
// registers the call in Pending only after the tool returned, so the
// worker's Complete fails with ErrNotPending, the result is lost, and the
// call then stays pending forever (a Wait on it never returns).
func TestPendingCompletionBeforeTheToolReturnsIsKept(t *testing.T) {
	var pending Pending
	var completeErr error
	ft := MustFunc("report", "", func(ctx context.Context, _ searchArgs) (Result, error) {
		id := CallID(ctx)
		done := make(chan struct{})
		go func() { // the tool's worker, which happens to finish at once
			defer close(done)
			completeErr = pending.Complete(id, Text("report ready"))
		}()
		<-done // the interleaving where the work ends before Invoke registers the call
		return PendingResult("report started"), nil
	}, WithLongRunning())
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "job_1", Name: "report", Arguments: json.RawMessage(`{"query":"q"}`)}, WithPending(&pending))
	require.True(t, r.Pending)

	assert.NoError(t, completeErr, "the worker's completion is refused")
	done := pending.Completed()
	require.Len(t, done, 1, "the completion is lost; still pending: %v", pending.Calls())
	assert.Equal(t, "report ready", done[0].Result.Text())
}

func TestLongRunningCallWithAFinalResultIsNotTracked(t *testing.T) {
	var pending Pending
	quick := MustFunc("quick", "", func(context.Context, searchArgs) (string, error) {
		return "done at once", nil
	}, WithLongRunning())
	r := Invoke(context.Background(), quick, model.ToolCall{ID: "q1", Name: "quick", Arguments: json.RawMessage(`{"query":"q"}`)}, WithPending(&pending))
	assert.Equal(t, "done at once", r.Text())
	assert.Empty(t, pending.Calls(), "registered before the call, withdrawn after it")
	assert.Empty(t, pending.Completed())

	require.NoError(t, pending.Add(model.ToolCall{ID: "dup", Name: "quick"}))
	var ran bool
	slow := MustFunc("slow", "", func(context.Context, searchArgs) (Result, error) {
		ran = true
		return PendingResult("started"), nil
	}, WithLongRunning())
	r = Invoke(context.Background(), slow, model.ToolCall{ID: "dup", Name: "slow", Arguments: json.RawMessage(`{"query":"q"}`)}, WithPending(&pending))
	assert.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, ErrAlreadyPending)
	assert.False(t, ran, "a call whose ID is pending already does not start its work twice")
}

// A long-running tool that panics is registered before it runs; its call
// must not stay pending, since no result will ever complete it.
func TestLongRunningCallThatPanicsIsNotTracked(t *testing.T) {
	var pending Pending
	boom := MustFunc("boom", "", func(context.Context, searchArgs) (Result, error) {
		panic("worker exploded")
	}, WithLongRunning())
	r := Invoke(context.Background(), boom, model.ToolCall{ID: "b1", Name: "boom", Arguments: json.RawMessage(`{"query":"q"}`)}, WithPending(&pending))
	assert.Equal(t, CodePanic, r.ErrorCode)
	assert.Empty(t, pending.Calls(), "the call of a tool that panicked is left pending")
	assert.NoError(t, pending.Add(model.ToolCall{ID: "b1", Name: "boom"}), "the ID is free again")
}

// hookContext runs a function the first time Done is called: Wait calls it
// after it has looked the call up and before it waits.
type hookContext struct {
	context.Context
	hook func()
}

func (c *hookContext) Done() <-chan struct{} {
	if h := c.hook; h != nil {
		c.hook = nil
		h()
	}
	return c.Context.Done()
}

// A Wait that wakes up after its call was collected must not take the
// result of a new call that reuses the ID, nor forget that call.
func TestPendingWaitDoesNotTakeAReusedID(t *testing.T) {
	var p Pending
	require.NoError(t, p.Add(model.ToolCall{ID: "x", Name: "first"}))
	ctx := &hookContext{Context: context.Background(), hook: func() {
		require.NoError(t, p.Complete("x", Text("first result")))
		require.Len(t, p.Completed(), 1)
		require.NoError(t, p.Add(model.ToolCall{ID: "x", Name: "second"}))
	}}
	r, err := p.Wait(ctx, "x")
	assert.ErrorIs(t, err, ErrNotPending, "got %q", r.Text())
	assert.Equal(t, []model.ToolCall{{ID: "x", Name: "second"}}, p.Calls(), "the second call must stay pending")
}
