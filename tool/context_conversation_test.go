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
