package nodes_test

import (
	"context"
	"iter"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
)

// agentState is the state of the graphs these tests run: a conversation.
type agentState struct {
	nodes.Chat
	Topic string
}

// user is a state holding one user message.
func user(text string) agentState {
	return agentState{Chat: nodes.Chat{Messages: []model.Message{model.User(text)}}}
}

// unnamedModel answers every request with its reply and says nothing about
// which model it is (no name, no provider), as some OpenAI-compatible
// servers behind a generic client do.
type unnamedModel struct{ reply model.Message }

func (m *unnamedModel) Generate(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Message: m.reply}, nil
}

func (m *unnamedModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		yield(model.Chunk{Text: m.reply.Text()}, nil)
	}
}
