package tool

import (
	"context"
	"fmt"
	"sync"

	"github.com/trellis-go/trellis/model"
)

// Pending tracks the calls of long-running tools from their pending result
// to their completion. A long-running tool returns PendingResult and starts
// its work; whoever finishes the work (a job queue, a webhook, the tool's
// own goroutine) calls Complete with the call's ID and the final result;
// the run collects completions with Wait or Completed and answers the call
// with the final result. Invoke registers pending calls itself when given
// WithPending: the calls of a long-running tool (WithLongRunning) before
// the tool runs, so that work finishing before the tool returns can
// complete them, and withdraws them if the result is not pending; a pending
// result of any other tool after it returns.
//
// The zero Pending is ready to use and safe for concurrent use. It lives in
// memory: a durable run keeps the pending call IDs in its state.
type Pending struct {
	mu    sync.Mutex
	calls map[string]*pendingCall
	order []string
}

type pendingCall struct {
	call   model.ToolCall
	done   chan struct{}
	result Result
	closed bool
}

// Completion is a pending call and its final result.
type Completion struct {
	Call   model.ToolCall
	Result Result
}

func (p *Pending) init() {
	if p.calls == nil {
		p.calls = map[string]*pendingCall{}
	}
}

// Add registers call as pending. A call ID that is already pending is an
// error wrapping ErrAlreadyPending.
func (p *Pending) Add(call model.ToolCall) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	if _, ok := p.calls[call.ID]; ok {
		return fmt.Errorf("%w: call %q", ErrAlreadyPending, call.ID)
	}
	p.calls[call.ID] = &pendingCall{call: call, done: make(chan struct{})}
	p.order = append(p.order, call.ID)
	return nil
}

// Complete records the final result of the pending call with the given ID.
// An unknown ID, or one already completed, is an error wrapping
// ErrNotPending. An empty Status is filled in as Invoke does.
func (p *Pending) Complete(callID string, r Result) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.calls[callID]
	if !ok || pc.closed {
		return fmt.Errorf("%w: call %q", ErrNotPending, callID)
	}
	r.Pending = false
	if r.Status == StatusPending {
		r.Status = ""
	}
	r.normalize()
	pc.result, pc.closed = r, true
	close(pc.done)
	return nil
}

// Wait blocks until the call with the given ID is completed, then returns
// its result and forgets the call. It returns an error wrapping
// ErrNotPending for an ID that is not tracked, and ctx's error if ctx ends
// first (the call stays pending).
func (p *Pending) Wait(ctx context.Context, callID string) (Result, error) {
	p.mu.Lock()
	pc, ok := p.calls[callID]
	p.mu.Unlock()
	if !ok {
		return Result{}, fmt.Errorf("%w: call %q", ErrNotPending, callID)
	}
	select {
	case <-pc.done:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls[callID] != pc { // collected, and the ID perhaps reused since
		return Result{}, fmt.Errorf("%w: call %q was collected already", ErrNotPending, callID)
	}
	p.forget(callID)
	return pc.result, nil
}

// Completed returns the calls completed so far, in the order they were
// added, and forgets them.
func (p *Pending) Completed() []Completion {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Completion
	for _, id := range p.order {
		if pc := p.calls[id]; pc != nil && pc.closed {
			out = append(out, Completion{Call: pc.call, Result: pc.result})
		}
	}
	for _, c := range out {
		p.forget(c.Call.ID)
	}
	return out
}

// Calls returns the calls still waiting for completion, in the order they
// were added.
func (p *Pending) Calls() []model.ToolCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []model.ToolCall
	for _, id := range p.order {
		if pc := p.calls[id]; pc != nil && !pc.closed {
			out = append(out, pc.call)
		}
	}
	return out
}

// withdraw forgets a call registered before it ran whose result turned out
// not to be pending.
func (p *Pending) withdraw(callID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forget(callID)
}

func (p *Pending) forget(callID string) {
	delete(p.calls, callID)
	for i, id := range p.order {
		if id == callID {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
}
