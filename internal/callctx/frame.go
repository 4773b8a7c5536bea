package callctx

import (
	"sync/atomic"

	"github.com/trellis-go/trellis/model"
)

// Frame is the storage of one call's Context. The zero Frame is ready to
// use; a frame serves a single call, ever (see Serve).
type Frame struct {
	ctx  Context
	used atomic.Bool
	// shared: the call's arguments are a run state's (see ShareArguments).
	shared bool
}

// NewFrames returns the frames of a batch of n calls. With parts, each
// frame comes with room for its call's result part, all of them in one
// allocation beside the frames, so that the batch's calls of a typed tool
// whose results are one part do not allocate their parts one by one; the
// parts of the batch's results then share that storage, each with no room
// to grow.
func NewFrames(n int, parts bool) []Frame {
	fs := make([]Frame, n)
	if parts && n > 1 {
		ps := make([]model.Part, n)
		for i := range fs {
			fs[i].ctx.part = &ps[i]
		}
	}
	return fs
}

// Serve returns the frame a call given f runs in: f itself the first time,
// and a new frame when f is nil or served already — a call retried on its
// frame, whose first context may still be held by what the first attempt
// left behind. The new frame keeps the marks of f (see MarkAuthorized).
func Serve(f *Frame) *Frame {
	if f != nil && f.used.CompareAndSwap(false, true) {
		return f
	}
	n := new(Frame) // handed to no one else: it needs no mark of use
	if f != nil {
		n.ctx.inherit(&f.ctx)
		n.shared = f.shared
	}
	return n
}

// LendPart gives the call f is to serve room for its result's part, as
// NewFrames gives each frame of a batch: a typed tool whose result is one
// part writes it there. Call it before the call runs, on the goroutine
// that hands f to it.
func (f *Frame) LendPart(p *model.Part) { f.ctx.part = p }

// ShareArguments records that the arguments of the call f is to serve are
// a run state's, whose memory nothing writes in place, and reach the tool
// as they are: the values a typed tool decodes from them may share that
// memory rather than copy it (see tool/internal/arguments.FastShared).
// Call it before the call runs, on the goroutine that hands f to it.
func (f *Frame) ShareArguments() { f.shared = true }

// ArgumentsShared reports whether ShareArguments was called on f.
func (f *Frame) ArgumentsShared() bool { return f.shared }

// Context returns the context f stores.
func (f *Frame) Context() *Context { return &f.ctx }

// MarkAuthorized records that call of t, which the frame f is to serve,
// passed t's permission check already, so that package tool does not
// consult t's checker a second time for that call. The mark holds for t
// and the call's exact name and arguments only, and package tool honours
// it only for the arguments the tool runs with: mark the call that the
// argument pipeline made final (Ops.Prepare). A retry of the call on f,
// which gets a new frame from Serve, keeps the mark.
func (f *Frame) MarkAuthorized(t any, call model.ToolCall) { f.ctx.MarkAuthorized(t, call) }
