package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/graph"
)

// inflight is a tool call in flight on a toolset. A request the server sends
// while serving it (elicitation, sampling, a log message) is handled with
// the call's context values, so that a handler can reach the run the call
// belongs to: pause it with graph.Interrupt, or emit events into its stream.
type inflight struct {
	tool   string          // the tool called
	token  string          // names the call to the server (relatedCallMeta)
	ctx    context.Context // the caller's context
	cancel context.CancelFunc

	mu    sync.Mutex
	pause error // the *graph.InterruptError a handler raised, if any
	ended bool  // the call returned
}

// emit sends a custom event into the stream of the run the call belongs
// to, while the call is in flight; once it returned, the event is dropped
// (the node that made the call may have finished).
func (c *inflight) emit(name string, payload any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		graph.EmitCustom(c.ctx, name, payload)
	}
}

// paused records err, an interrupt raised while handling a server request
// of c, and ends the call: it returns err instead of the server's answer.
func (c *inflight) paused(err error) {
	c.mu.Lock()
	if c.pause == nil {
		c.pause = err
	}
	c.mu.Unlock()
	c.cancel()
}

// pausedErr returns the interrupt recorded by paused, if any.
func (c *inflight) pausedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pause
}

type callKey struct{}

// relatedCallMeta is the _meta key that relates a server's request to the
// tool call it serves. The toolset sends each call with a token of its own
// under this key; a server that relates the requests it sends while
// serving the call (Trellis's own, NewServer) echoes the token under the
// same key. The protocol before 2026-07-28 has no such relation: a request
// of the server arrives apart from the call it serves.
const relatedCallMeta = "trellis/call"

// maxCallToken bounds the token a server may echo; a longer one relates to
// no call.
const maxCallToken = 64

// startCall registers a call in flight with ctx and returns it with the
// context to send it with (which carries the call, and which the call's
// end cancels). done unregisters it.
func (ts *Toolset) startCall(ctx context.Context, name string) (c *inflight, cctx context.Context, done func()) {
	cctx, cancel := context.WithCancel(ctx)
	c = &inflight{tool: name, token: rand.Text(), ctx: ctx, cancel: cancel}
	cctx = context.WithValue(cctx, callKey{}, c)
	ts.mu.Lock()
	if ts.calls == nil {
		ts.calls = map[string]*inflight{}
	}
	ts.calls[c.token] = c
	ts.mu.Unlock()
	return c, cctx, func() {
		ts.mu.Lock()
		delete(ts.calls, c.token)
		ts.mu.Unlock()
		c.mu.Lock()
		c.ended = true
		c.mu.Unlock()
		cancel()
	}
}

// callOf returns the call a server request handled with ctx, with meta as
// its _meta, provably belongs to: the one ctx carries (the go-sdk handles
// the input requests of a multi round-trip call with the call's context),
// else the call in flight whose token meta echoes (relatedCallMeta). A
// request that proves no relation belongs to no call, however many are in
// flight: on a toolset that serves several users, guessing would hand one
// user's request to another user's run. Only WithSingleUser, for a toolset
// that serves one user, gives a request with no token to the only call in
// flight.
func (ts *Toolset) callOf(ctx context.Context, meta sdk.Meta) *inflight {
	if c, ok := ctx.Value(callKey{}).(*inflight); ok {
		return c
	}
	token, _ := meta[relatedCallMeta].(string)
	if token != "" {
		if len(token) > maxCallToken {
			return nil
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.calls[token]
	}
	if !ts.o.singleUser {
		return nil
	}
	// WithSingleUser: every call is the one user's, so a request with no
	// token may go to the only call in flight; with several, none is
	// guessed.
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.calls) != 1 {
		return nil
	}
	for _, c := range ts.calls {
		return c
	}
	return nil
}

// requestContext returns the context a handler of a server request runs
// with: the values of the call it belongs to (a run's, a user's; see
// callOf), the cancellation and deadline of ctx, and the server's name
// (ServerName). A request that belongs to no call gets the values of ctx
// only, which are the toolset's, no user's.
func (ts *Toolset) requestContext(ctx context.Context, meta sdk.Meta) (context.Context, *inflight) {
	c := ts.callOf(ctx, meta)
	if c == nil || ctx.Value(callKey{}) == c {
		return withServer(ctx, ts.name), c
	}
	merged := mergedContext{values: c.ctx, Context: ctx}
	return withServer(context.WithValue(merged, callKey{}, c), ts.name), c
}

// mergedContext takes its values from values, first, then from Context,
// and its cancellation and deadline from Context.
type mergedContext struct {
	context.Context
	values context.Context
}

// Value returns the value for key from values, else from the embedded
// context.
func (m mergedContext) Value(key any) any {
	if v := m.values.Value(key); v != nil {
		return v
	}
	return m.Context.Value(key)
}

// handled records the interrupt err carries, if any, on the call c, and
// reports whether it did: a handler that paused the run (graph.Interrupt)
// ends the call, which then returns the interrupt instead of the server's
// answer.
func handled(c *inflight, err error) bool {
	if c == nil || err == nil {
		return false
	}
	if _, ok := errors.AsType[*graph.InterruptError](err); !ok {
		return false
	}
	c.paused(err)
	return true
}

type serverKey struct{}

func withServer(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, serverKey{}, name)
}

// ServerName returns the name of the MCP server whose request (elicitation,
// sampling) a handler is answering with ctx, or "" outside such a handler.
func ServerName(ctx context.Context) string {
	s, _ := ctx.Value(serverKey{}).(string)
	return s
}
