package tool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestConversationTravelsInTheContext(t *testing.T) {
	assert.Nil(t, tool.Conversation(context.Background()))
	msgs := []model.Message{model.User("hi")}
	ctx := tool.WithConversation(tool.WithRunState(context.Background(), "state"), msgs)
	assert.Equal(t, msgs, tool.Conversation(ctx))
	s, ok := tool.RunState[string](ctx)
	assert.True(t, ok, "other values pass through")
	assert.Equal(t, "state", s)

	inner := []model.Message{model.User("sub-task")}
	sub := tool.WithCallID(tool.WithConversation(ctx, inner), "c1")
	assert.Equal(t, inner, tool.Conversation(sub), "the nearest conversation wins")
	assert.Equal(t, msgs, tool.Conversation(ctx))
}

func TestWithRunCarriesStateAndConversation(t *testing.T) {
	type state struct{ N int }
	msgs := []model.Message{model.User("hi")}
	ctx := tool.WithRun(context.Background(), state{N: 1}, msgs)
	s, ok := tool.RunState[state](ctx)
	assert.True(t, ok)
	assert.Equal(t, 1, s.N)
	assert.Equal(t, msgs, tool.Conversation(ctx))

	// A layer that sets one of the two leaves the other to its parent.
	newer := tool.WithRunState(ctx, state{N: 2})
	s, _ = tool.RunState[state](newer)
	assert.Equal(t, 2, s.N)
	assert.Equal(t, msgs, tool.Conversation(newer), "the conversation passes through")
	inner := []model.Message{model.User("sub-task")}
	sub := tool.WithConversation(ctx, inner)
	s, _ = tool.RunState[state](sub)
	assert.Equal(t, 1, s.N, "the state passes through")
	assert.Equal(t, inner, tool.Conversation(sub))

	_, ok = tool.RunState[state](tool.WithConversation(context.Background(), msgs))
	assert.False(t, ok, "a conversation alone carries no state")
}
