package runctx

import (
	"context"
	"slices"
	"unsafe"

	"github.com/trellis-go/trellis/model"
)

type stateKey struct{}

type conversationKey struct{}

// What a Context carries.
const (
	HasState = 1 << iota
	HasConversation
)

// Context carries a run's state, its conversation or both (what says
// which). It holds the state as its own type and the conversation as a
// slice, so that setting both costs one allocation; the state is boxed
// only when a tool asks for it.
type Context[S any] struct {
	context.Context
	state S
	msgs  []model.Message
	what  uint8
}

// New returns a context that carries what of state and msgs.
func New[S any](parent context.Context, state S, msgs []model.Message, what uint8) *Context[S] {
	return &Context[S]{Context: parent, state: state, msgs: msgs, what: what}
}

// conversationOf is a Context of any state type, as the conversation key's
// value.
type conversationOf interface{ conversation() []model.Message }

func (c *Context[S]) conversation() []model.Message { return c.msgs }

// Value answers the keys of what c carries and defers the rest to the
// parent.
func (c *Context[S]) Value(key any) any {
	switch key.(type) {
	case stateKey:
		if c.what&HasState != 0 {
			return c.state
		}
	case conversationKey:
		if c.what&HasConversation != 0 {
			return conversationOf(c)
		}
	}
	return c.Context.Value(key)
}

// State returns the run state ctx carries as an S, and whether there was
// one of that type.
func State[S any](ctx context.Context) (S, bool) {
	s, ok := ctx.Value(stateKey{}).(S)
	return s, ok
}

// Conversation returns the conversation ctx carries, nil if none.
func Conversation(ctx context.Context) []model.Message {
	if c, ok := ctx.Value(conversationKey{}).(conversationOf); ok {
		return c.conversation()
	}
	return nil
}

// Chat is the constraint on the state types of a Working: S whose pointer
// has a conversation.
type Chat[S any] interface {
	*S
	ChatMessages() *[]model.Message
}

// Working is a context that carries a run's state and, as its
// conversation, the state's own, and beside them a copy of the state that
// the context does not carry: the working copy of the node that made it,
// which may change it while tools read the state the context carries.
// Extra is more storage of the node's, an X, made along. All of it comes
// in one allocation.
//
// The context is Ctx, a type that is not generic: every lookup that
// passes through a node's context on its way to the run's (tool filters,
// the graph's run, a call's own keys) is answered by its method, not by a
// generic type's method wrapper, which would add a dictionary's loads to
// each of them.
type Working[S any, PS Chat[S], X any] struct {
	ctx   Ctx // first: own finds the Working from it
	state S
	// Work is the node's copy of the state; tools never see it.
	Work S
	// Extra is the node's own storage.
	Extra X
}

// Ctx is the context of a Working (see Working.Context).
type Ctx struct {
	context.Context
	// own answers the keys of the Working that holds the Ctx; it is the
	// Working's type's ownValue.
	own func(c *Ctx, key any) any
}

// Kind makes the Workings of one type. Their contexts answer their own
// keys through a function of the type's that a Kind makes once: made for
// each Working, it would be an allocation more.
type Kind[S any, PS Chat[S], X any] struct {
	own func(c *Ctx, key any) any
}

// NewKind returns the Kind of Working[S, PS, X]. Make it once, with the
// node that makes the Workings.
func NewKind[S any, PS Chat[S], X any]() *Kind[S, PS, X] {
	return &Kind[S, PS, X]{own: ownValue[S, PS, X]}
}

// New returns a Working whose context carries state, with its
// conversation clipped (an append to it allocates), and whose Work is a
// copy of state as it is.
func (k *Kind[S, PS, X]) New(parent context.Context, state S) *Working[S, PS, X] {
	w := &Working[S, PS, X]{ctx: Ctx{Context: parent, own: k.own}, state: state, Work: state}
	msgs := PS(&w.state).ChatMessages()
	*msgs = slices.Clip(*msgs)
	return w
}

// Context returns the context of w: its parent's, with the state and
// conversation keys answered.
func (w *Working[S, PS, X]) Context() context.Context { return &w.ctx }

// conversation returns the conversation of the state shown. Tools may
// ask for it concurrently: ChatMessages only reads (see nodes.HasChat).
func (w *Working[S, PS, X]) conversation() []model.Message {
	return *PS(&w.state).ChatMessages()
}

// Value answers the state, conversation and extra keys and defers the
// rest to the parent.
func (c *Ctx) Value(key any) any {
	switch key.(type) {
	case stateKey, conversationKey, extraKey:
		return c.own(c, key)
	}
	return c.Context.Value(key)
}

// ownValue answers key, one of the keys of a Working's own, for the
// Working whose context c is.
func ownValue[S any, PS Chat[S], X any](c *Ctx, key any) any {
	w := (*Working[S, PS, X])(unsafe.Pointer(c)) // c is w's first field
	switch key.(type) {
	case stateKey:
		return w.state
	case conversationKey:
		return conversationOf(w)
	}
	return &w.Extra
}

type extraKey struct{}

// Extra returns the node's own storage that the Working behind ctx holds
// (its Extra), or nil when ctx has no Working whose Extra is an X. It is
// how a node lends storage to what it calls with the context (see
// internal/callroom) without a parameter for it.
func Extra[X any](ctx context.Context) *X {
	x, _ := ctx.Value(extraKey{}).(*X)
	return x
}
