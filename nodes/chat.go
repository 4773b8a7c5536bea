package nodes

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/state"
)

// Chat holds a conversation. Embed it in a graph's state to use the nodes of
// this package:
//
//	type State struct {
//		nodes.Chat
//		Plan string
//	}
//
// The embedded field reads as s.Messages.
type Chat struct {
	Messages []model.Message `json:"messages"`
}

// ChatMessages returns the address of the conversation.
func (c *Chat) ChatMessages() *[]model.Message { return &c.Messages }

// HasChat is implemented by a pointer to a state that holds a conversation,
// which every state embedding Chat does.
type HasChat interface {
	// ChatMessages returns the address of the conversation. It must not
	// change the state: the nodes call it on the state their tools read,
	// while they read it.
	ChatMessages() *[]model.Message
}

// ChatState constrains the state types the nodes of this package work on: S
// whose pointer has a conversation.
type ChatState[S any] interface {
	*S
	HasChat
}

// MessagesReducer merges the conversations that parallel nodes (or Send
// tasks) return: new messages are appended in node order, changed ones
// replaced where they stand (by ID), and messages a node dropped removed.
func MessagesReducer[S any, PS ChatState[S]]() graph.Option {
	return graph.WithReducer(func(s *S) *[]model.Message { return PS(s).ChatMessages() }, state.Keyed[model.Message]())
}

// AppendReply appends a model's reply to the conversation *msgs, as the
// LLM node does. When the reply asks for tools and the conversation has to
// grow, it grows with room for the tool messages that will answer the
// calls too, so that the ToolsNode that follows writes them in place
// rather than copying the conversation. Nodes of an application's own that
// put a model's reply into the state can use it for the same effect.
func AppendReply(msgs *[]model.Message, reply model.Message) {
	if k := len(reply.ToolCalls); k > 0 && cap(*msgs)-len(*msgs) < 1+k {
		*msgs = slices.Grow(*msgs, 1+k)
	}
	*msgs = append(*msgs, reply)
}

// withRun returns ctx carrying the run's state s and its conversation for
// tools and prompt functions (as tool.WithRun does), and the node's own
// copy of s with storage x of the node's, all in one allocation. The
// state the context carries has its conversation clipped: a tool that
// appends to it gets a slice of its own rather than writing into the room
// the node appends its messages in.
// The node makes kind once (runctx.NewKind).
func withRun[S any, PS ChatState[S], X any](kind *runctx.Kind[S, PS, X], ctx context.Context, s S) (context.Context, *S, *X) {
	w := kind.New(ctx, s)
	return w.Context(), &w.Work, &w.Extra
}

// NewMessageID returns a fresh, time-ordered message ID.
func NewMessageID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
