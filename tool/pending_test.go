package tool

import (
	"context"
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
