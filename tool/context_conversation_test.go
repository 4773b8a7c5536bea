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
	ctx := tool.WithConversation(context.Background(), msgs)
	assert.Equal(t, msgs, tool.Conversation(ctx))
}
