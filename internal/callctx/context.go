package callctx

import (
	"bytes"
	"context"
	"sync/atomic"

	"github.com/trellis-go/trellis/internal/callscope"
	"github.com/trellis-go/trellis/model"
)

// idKey is the key a call's Context answers with itself.
type idKey struct{}

// reporterKey is the key a call's Context that reports progress answers
// with itself.
type reporterKey struct{}

// Context is the context of one tool call: its parent, the call's ID and
// what package tool keeps for the call. It is kept small (it is the one
// allocation a call makes when no frame is given), and what few calls use
// lives behind pointers.
type Context struct {
	context.Context
	// ID is the call's ID.
	ID string

	// rare holds what few calls need (see rareState); made on first use.
	rare atomic.Pointer[rareState]

	// Ext is package tool's extension of the call, nil for most calls;
	// it is set before the call runs.
	Ext *Ext

	// part is room for the call's result part (see NewFrames), taken by
	// the typed tool that builds the result.
	part *model.Part
}

// Ext is what package tool adds to the context of a call that reports
// progress or has options of its own. Package tool embeds it in a struct
// of its own and points Owner at that struct, so that both come in one
// allocation.
type Ext struct {
	// Owner is package tool's struct that holds this Ext.
	Owner any
	// Reports says the call reports progress: its Context answers
	// ReporterFrom.
	Reports bool
}

// rareState is the part of a call's context that few calls use.
type rareState struct {
	// scope is the slot of this invocation that callscope.Key keys keep their
	// state in.
	scope atomic.Value
	// auth is what the call was allowed as (see Context.MarkAuthorized).
	auth atomic.Pointer[mark]
	// prepared is what the call's arguments were made final as (see
	// Context.MarkPrepared).
	prepared atomic.Pointer[mark]
}

// mark records a tool and a call's arguments (and, for a permission mark,
// its name), copied.
type mark struct {
	tool any
	name string
	args []byte
}

// New returns the context of the call with the given ID, in parent.
func New(parent context.Context, id string) *Context {
	return &Context{Context: parent, ID: id}
}

// Value answers the call's own keys and defers the rest to the parent.
func (c *Context) Value(key any) any {
	switch k := key.(type) {
	case idKey:
		return c
	case reporterKey:
		if c.Ext != nil && c.Ext.Reports {
			return c
		}
	case callscope.Key:
		return k.ScopeOfCall(c.ID, &c.rareState().scope)
	}
	return c.Context.Value(key)
}

// From returns the context of the innermost call ctx belongs to, nil
// outside a call.
func From(ctx context.Context) *Context {
	c, _ := ctx.Value(idKey{}).(*Context)
	return c
}

// ReporterFrom returns the context of the innermost call ctx belongs to that
// reports progress (see Ext), nil when there is none.
func ReporterFrom(ctx context.Context) *Context {
	c, _ := ctx.Value(reporterKey{}).(*Context)
	return c
}

// TakePart returns, and takes, the room for a result's part that the call
// behind ctx has (see NewFrames); nil when it has none, or when ctx is not
// the call's own context.
func TakePart(ctx context.Context) *model.Part {
	if c, ok := ctx.(*Context); ok && c.part != nil {
		p := c.part
		c.part = nil
		return p
	}
	return nil
}

// rareState returns c's rare state, made on first use.
func (c *Context) rareState() *rareState {
	if r := c.rare.Load(); r != nil {
		return r
	}
	c.rare.CompareAndSwap(nil, new(rareState))
	return c.rare.Load()
}

// MarkAuthorized records that call of t passed t's permission check (see
// Frame.MarkAuthorized).
func (c *Context) MarkAuthorized(t any, call model.ToolCall) {
	c.rareState().auth.Store(&mark{tool: t, name: call.Name, args: bytes.Clone(call.Arguments)})
}

// Authorized reports whether c's call was marked as allowed for t, the
// call's name and exactly its arguments.
func (c *Context) Authorized(t any, call *model.ToolCall) bool {
	r := c.rare.Load()
	if r == nil {
		return false
	}
	m := r.auth.Load()
	return m != nil && m.name == call.Name && bytes.Equal(m.args, call.Arguments) && identical(m.tool, t)
}

// MarkPrepared records that args are the final arguments of c's call of t:
// the argument pipeline made them, and its PrepareArguments step must not
// run on them again.
func (c *Context) MarkPrepared(t any, args []byte) {
	c.rareState().prepared.Store(&mark{tool: t, args: bytes.Clone(args)})
}

// Prepared reports whether args were marked final for t (see
// MarkPrepared).
func (c *Context) Prepared(t any, args []byte) bool {
	r := c.rare.Load()
	if r == nil {
		return false
	}
	m := r.prepared.Load()
	return m != nil && bytes.Equal(m.args, args) && identical(m.tool, t)
}

// inherit gives c the marks of from, which served the same call before.
func (c *Context) inherit(from *Context) {
	r := from.rare.Load()
	if r == nil {
		return
	}
	auth, prep := r.auth.Load(), r.prepared.Load()
	if auth == nil && prep == nil {
		return
	}
	mine := c.rareState()
	mine.auth.Store(auth)
	mine.prepared.Store(prep)
}

// identical reports whether a and b, two tools, are one value. Values of
// types that cannot be compared count as different: that they are one
// cannot be told.
func identical(a, b any) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}
