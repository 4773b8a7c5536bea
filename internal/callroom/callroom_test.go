package callroom_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/callroom"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type chat struct{ Messages []model.Message }

func (c *chat) ChatMessages() *[]model.Message { return &c.Messages }

type owner struct{ name string }

// lending returns a context that holds a Room, as a ToolsNode's does.
func lending() (context.Context, *callroom.Room) {
	w := runctx.NewKind[chat, *chat, callroom.Room]().New(context.Background(), chat{})
	return w.Context(), &w.Extra
}

// TestTakeGivesTheLoanOnceToItsOwner checks who gets the storage: the
// owner, once.
func TestTakeGivesTheLoanOnceToItsOwner(t *testing.T) {
	a, b := &owner{"a"}, &owner{"b"}
	ctx, room := lending()

	res, frames := callroom.Take(ctx, a, 2)
	assert.Nil(t, res, "nothing is lent yet")
	assert.Nil(t, frames)

	room.Lend(a)
	res, _ = callroom.Take(ctx, b, 2)
	assert.Nil(t, res, "lent to another")
	res, frames = callroom.Take(ctx, a, 2)
	require.Len(t, res, 2)
	assert.Equal(t, 2, cap(res))
	assert.Nil(t, frames, "a frame is lent for a single call only")
	assert.Same(t, &room.Taken()[0], &res[0])
	again, _ := callroom.Take(ctx, a, 2)
	assert.Nil(t, again, "the loan is taken once")

	res, _ = callroom.Take(context.Background(), a, 2)
	assert.Nil(t, res, "a context without a Room lends nothing")
	room.Release()
	assert.Nil(t, room.Taken())
}

// TestASingleCallGetsTheRoomsFrame checks that a single call's frame is
// the one the Room holds.
func TestASingleCallGetsTheRoomsFrame(t *testing.T) {
	ctx, room := lending()
	o := &owner{}
	room.Lend(o)
	res, frames := callroom.Take(ctx, o, 1)
	require.Len(t, res, 1)
	require.Len(t, frames, 1)
	res[0] = tool.Text("x")
	room.Release()
}

// TestReleaseClearsTheResults checks that storage goes back to the pool
// empty: what a batch answered is not kept alive by the pool.
func TestReleaseClearsTheResults(t *testing.T) {
	ctx, room := lending()
	o := &owner{}
	room.Lend(o)
	res, _ := callroom.Take(ctx, o, 3)
	for i := range res {
		res[i] = tool.Text("kept?")
	}
	room.Release()
	for i := range res {
		assert.Equal(t, tool.Result{}, res[i])
	}
}
