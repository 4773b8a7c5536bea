package modelmw

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/trellis-go/trellis/model"
)

// Middleware wraps the rest of a chain (next) to add behaviour around each
// model call: retries, a cache, limits, logging, guardrails, ... It is
// applied once, when a chain is built; the model it returns handles every
// call, both Generate and Stream, and must be safe for concurrent use.
// State that outlives one call (a cache, a limiter) is created before the
// Middleware is returned, so that every chain built with it shares it.
//
// A middleware treats the request as read-only: one that wants the rest
// of the chain to see something else copies it (r := *req), changes the
// copy (cloning the slices it changes) and passes &r on.
type Middleware func(next model.Model) model.Model

// Chain returns m wrapped in mws. The first middleware listed is the
// outermost: Chain(m, a, b) handles a call as a(b(m)), so a sees the
// request first and the reply last. Nil middlewares are skipped; a
// middleware that returns a nil model makes Chain panic, naming its
// position.
//
// The chain describes itself as m does (model.Describer), and records the
// usage of every call m answers into the Ledger of the call's context, if
// it has one (see WithLedger): a cached reply or one a middleware made up
// spends nothing. Chaining a chain adds the new middlewares outside the
// old ones and records each call once.
func Chain(m model.Model, mws ...Middleware) model.Model {
	if m == nil {
		panic("modelmw: Chain of a nil model")
	}
	c := &chain{}
	if inner, ok := m.(*chain); ok {
		c.base, c.head = inner.base, inner.head
	} else {
		c.base = m
		c.head = &recorder{next: m}
	}
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] == nil {
			continue
		}
		if c.head = mws[i](c.head); c.head == nil {
			// Every call would fail with a nil dereference far from its
			// cause: say which middleware is broken, now.
			panic(fmt.Sprintf("modelmw: middleware %d of %d returned a nil model", i+1, len(mws)))
		}
	}
	return c
}

// chain is the model Chain returns: head is the outermost middleware,
// base the model at the end.
type chain struct {
	head model.Model
	base model.Model
}

var (
	_ model.Model     = (*chain)(nil)
	_ model.Describer = (*chain)(nil)
)

// Generate passes the call to the outermost middleware.
func (c *chain) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return c.head.Generate(ctx, req)
}

// Stream passes the call to the outermost middleware.
func (c *chain) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return c.head.Stream(ctx, req)
}

// Info describes the model at the end of the chain; it is the zero Info
// when that model does not describe itself.
func (c *chain) Info() model.Info { return Describe(c.base) }

// Unwrap returns the model at the end of the chain.
func (c *chain) Unwrap() model.Model { return c.base }

// Describe returns m's Info, or the zero Info when m does not describe
// itself.
func Describe(m model.Model) model.Info {
	if d, ok := m.(model.Describer); ok {
		return d.Info()
	}
	return model.Info{}
}

// Funcs adapts a pair of functions to a model.Model, to write middleware
// that treats the two kinds of call each its own way. A nil StreamFunc
// streams the reply of GenerateFunc as chunks (model.ResponseChunks); a
// nil GenerateFunc collects the stream of StreamFunc (model.Collect). One
// of them must be set.
type Funcs struct {
	GenerateFunc func(ctx context.Context, req *model.Request) (*model.Response, error)
	StreamFunc   func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error]
}

// Generate calls GenerateFunc, or collects StreamFunc.
func (f Funcs) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if f.GenerateFunc != nil {
		return f.GenerateFunc(ctx, req)
	}
	if f.StreamFunc != nil {
		return model.Collect(f.StreamFunc(ctx, req))
	}
	return nil, errNoFuncs
}

// Stream calls StreamFunc, or streams the reply of GenerateFunc.
func (f Funcs) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	if f.StreamFunc != nil {
		return f.StreamFunc(ctx, req)
	}
	return func(yield func(model.Chunk, error) bool) {
		resp, err := f.Generate(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		for c := range model.ResponseChunks(resp) {
			if !yield(c, nil) {
				return
			}
		}
	}
}

var errNoFuncs = errors.New("modelmw: Funcs without a function")

// fail returns a stream that fails with err at once.
func fail(err error) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, err) }
}

// replay streams resp, or fails with err.
func replay(resp *model.Response, err error) iter.Seq2[model.Chunk, error] {
	if err != nil {
		return fail(err)
	}
	if resp == nil {
		return fail(ErrNoReply)
	}
	return model.ResponseChunks(resp)
}

// ErrNoReply reports a model or a middleware that returned neither a reply
// nor an error.
var ErrNoReply = errors.New("modelmw: neither a reply nor an error")

// Before returns a Middleware that runs fn before each call. fn returns
// the request to send on (req itself, or a copy it changed), or a reply
// that ends the call without calling the rest of the chain (streamed as
// chunks when the call streams), or an error that fails the call. Streams
// pass through unbuffered.
func Before(fn func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error)) Middleware {
	if fn == nil {
		panic("modelmw: Before with a nil function")
	}
	return func(next model.Model) model.Model {
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				r, resp, err := fn(ctx, req)
				if err != nil || resp != nil {
					return resp, err
				}
				return next.Generate(ctx, orig(r, req))
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				r, resp, err := fn(ctx, req)
				if err != nil || resp != nil {
					return replay(resp, err)
				}
				return next.Stream(ctx, orig(r, req))
			},
		}
	}
}

// orig returns r, or req when r is nil.
func orig(r, req *model.Request) *model.Request {
	if r == nil {
		return req
	}
	return r
}

// After returns a Middleware that runs fn on each successful reply; fn
// returns the reply to hand back (resp itself, or another) or an error
// that fails the call. fn needs the whole reply, so a streamed call is
// collected before fn sees it and its result is then streamed as chunks;
// use OnChunk to watch a stream as it passes.
func After(fn func(ctx context.Context, req *model.Request, resp *model.Response) (*model.Response, error)) Middleware {
	if fn == nil {
		panic("modelmw: After with a nil function")
	}
	return Intercept(func(ctx context.Context, req *model.Request, next model.Model) (*model.Response, error) {
		resp, err := next.Generate(ctx, req)
		if err != nil {
			return nil, err
		}
		return fn(ctx, req, resp)
	})
}

// Intercept adapts a function that handles a whole call with the rest of
// the chain in hand into a Middleware; it panics if fn is nil. fn calls
// next.Generate (any number of times) and returns the reply. When the
// call streams, next.Generate collects the rest of the chain's stream and
// fn's reply is streamed as chunks once fn returns: such a middleware
// buffers. A middleware that must not buffer implements Stream itself
// (see Funcs).
func Intercept(fn func(ctx context.Context, req *model.Request, next model.Model) (*model.Response, error)) Middleware {
	if fn == nil {
		panic("modelmw: Intercept with a nil function")
	}
	return func(next model.Model) model.Model {
		collected := Funcs{StreamFunc: next.Stream}
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				return fn(ctx, req, next)
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					for c, err := range replay(fn(ctx, req, collected)) {
						if !yield(c, err) || err != nil {
							return
						}
					}
				}
			},
		}
	}
}

// OnChunk returns a Middleware that shows fn every chunk of a reply as it
// passes; an error from fn ends the call with that error at once (the
// stream stops there, and the rest of the chain's stream is abandoned). A
// reply that was not streamed is shown to fn as the chunks
// model.ResponseChunks makes of it, so that one function checks both
// kinds of call. Streams are not buffered.
func OnChunk(fn func(ctx context.Context, req *model.Request, c model.Chunk) error) Middleware {
	if fn == nil {
		panic("modelmw: OnChunk with a nil function")
	}
	return func(next model.Model) model.Model {
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				resp, err := next.Generate(ctx, req)
				if err != nil {
					return nil, err
				}
				for c := range model.ResponseChunks(resp) {
					if err := fn(ctx, req, c); err != nil {
						return nil, err
					}
				}
				return resp, nil
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					for c, err := range next.Stream(ctx, req) {
						if err == nil {
							err = fn(ctx, req, c)
						}
						if err != nil {
							yield(model.Chunk{}, err)
							return
						}
						if !yield(c, nil) {
							return
						}
					}
				}
			},
		}
	}
}

// agentKey is the context key of the agent a call is made for.
type agentKey struct{}

// WithAgent returns ctx naming the agent its model calls are made for;
// the LLM node sets it from its agent name. The Ledger counts usage per
// agent by it, and Log and Telemetry report it.
func WithAgent(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, agentKey{}, name)
}

// Agent returns the agent WithAgent named in ctx, or "".
func Agent(ctx context.Context) string {
	s, _ := ctx.Value(agentKey{}).(string)
	return s
}
