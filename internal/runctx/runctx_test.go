package runctx_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type state struct {
	Messages []model.Message
	N        int
}

func TestContextAnswersWhatItCarries(t *testing.T) {
	msgs := []model.Message{model.User("hi")}
	both := runctx.New(context.Background(), state{N: 1}, msgs, runctx.HasState|runctx.HasConversation)
	s, ok := runctx.State[state](both)
	assert.True(t, ok)
	assert.Equal(t, 1, s.N)
	assert.Equal(t, msgs, runctx.Conversation(both))
	_, ok = runctx.State[int](both)
	assert.False(t, ok, "a state of another type")

	onlyState := runctx.New[any](context.Background(), state{N: 2}, msgs, runctx.HasState)
	assert.Nil(t, runctx.Conversation(onlyState))
	onlyConv := runctx.New[any](context.Background(), nil, msgs, runctx.HasConversation)
	_, ok = runctx.State[state](onlyConv)
	assert.False(t, ok)

	// The innermost context that carries a value answers; the others
	// defer to their parents.
	inner := runctx.New[any](both, state{N: 3}, nil, runctx.HasState)
	s, _ = runctx.State[state](inner)
	assert.Equal(t, 3, s.N)
	assert.Equal(t, msgs, runctx.Conversation(inner))
	assert.Nil(t, runctx.Conversation(context.Background()))
}

func (s *state) ChatMessages() *[]model.Message { return &s.Messages }

func TestWorkingCopyIsNotWhatTheContextCarries(t *testing.T) {
	msgs := make([]model.Message, 1, 4)
	msgs[0] = model.User("hi")
	wk := runctx.NewKind[state, *state, int]().New(context.Background(), state{Messages: msgs, N: 1})
	w := wk.Context()
	wk.Work.N = 2
	wk.Work.Messages = append(wk.Work.Messages, model.User("more"))
	assert.Same(t, &msgs[0], &wk.Work.Messages[0], "the working copy keeps the room")

	s, ok := runctx.State[state](w)
	assert.True(t, ok)
	assert.Equal(t, 1, s.N, "the working copy is the node's own")
	assert.Len(t, s.Messages, 1)
	assert.Equal(t, 1, cap(s.Messages), "the state shown is clipped")
	conv := runctx.Conversation(w)
	assert.Len(t, conv, 1)
	assert.Equal(t, 1, cap(conv))
	_, ok = runctx.State[int](w)
	assert.False(t, ok)
	assert.Nil(t, w.Value("other"), "other keys go to the parent")
	assert.Same(t, &wk.Extra, runctx.Extra[int](w), "the node's storage")
	assert.Nil(t, runctx.Extra[string](w), "storage of another type")
	assert.Nil(t, runctx.Extra[int](context.Background()))
}

func TestWorkingIsOneAllocation(t *testing.T) {
	in := state{Messages: []model.Message{model.User("hi")}}
	kind := runctx.NewKind[state, *state, [2]int]()
	var sink context.Context
	allocs := testing.AllocsPerRun(100, func() {
		sink = kind.New(context.Background(), in).Context()
	})
	assert.Equal(t, 1.0, allocs)
	assert.NotNil(t, sink)
}
