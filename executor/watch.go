package executor

import (
	"context"
	"sync"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// watch is the observed side of one batch: it delivers the batch's events
// to the observer one at a time, and routes the progress updates of the
// batch's running calls to it until each call is over for the executor
// (its handler returned, or it was abandoned).
//
// One progress sink serves the whole batch when the calls' IDs are unique:
// the tool package fills in Update.CallID, which names the call. A batch
// whose IDs repeat (some providers send empty IDs), or a call that reaches
// the terminal handler under another ID, gets a sink of its own.
type watch struct {
	ctx  context.Context
	obs  Observer
	reqs []Request // the calls as the executor runs them
	// prefix is the executor's error prefix (WithErrorPrefix): a ToolEnd
	// carries the result as Execute returns it.
	prefix string
	// ids are the calls' IDs, for routing updates: a copy, since updates
	// may come from goroutines that outlive Execute.
	ids  []string
	ids0 [linearIDs]string

	mu      sync.Mutex // serializes events; guards closed
	closed  []uint64   // one bit per call: its updates are dropped
	closed0 [1]uint64

	sink tool.InvokeOption // the batch's sink; nil when IDs repeat
	byID map[string]int    // call positions by ID, for large batches
}

// linearIDs is the batch size up to which calls are found by scanning
// their IDs rather than through a map.
const linearIDs = 16

// init readies w to watch a batch of the calls reqs run.
func (w *watch) init(ctx context.Context, obs Observer, calls []model.ToolCall, reqs []Request) {
	w.ctx, w.obs, w.reqs = ctx, obs, reqs
	if len(calls) <= linearIDs {
		w.ids = w.ids0[:len(calls)]
	} else {
		w.ids = make([]string, len(calls))
	}
	for i := range calls {
		w.ids[i] = calls[i].ID
	}
	if n := len(reqs); n <= 64 {
		w.closed = w.closed0[:]
	} else {
		w.closed = make([]uint64, (n+63)/64)
	}
	if w.uniqueIDs() {
		w.sink = tool.WithProgress(w.report)
	}
	for i := range reqs {
		reqs[i].watch = w
	}
}

// uniqueIDs reports whether no two calls share an ID, and indexes large
// batches by ID.
func (w *watch) uniqueIDs() bool {
	if len(w.ids) <= linearIDs {
		for i := 1; i < len(w.ids); i++ {
			a := w.ids[i]
			for _, b := range w.ids[:i] {
				// IDs that differ mostly differ in their last byte: look
				// there before comparing them whole.
				if len(a) == len(b) && (a == "" || a[len(a)-1] == b[len(b)-1]) && a == b {
					return false
				}
			}
		}
		return true
	}
	byID := make(map[string]int, len(w.ids))
	for i, id := range w.ids {
		if _, dup := byID[id]; dup {
			return false
		}
		byID[id] = i
	}
	w.byID = byID
	return true
}

// progressOption returns the option that routes the progress updates of
// req's call to the observer.
func (w *watch) progressOption(req *Request) tool.InvokeOption {
	i := req.slot
	if w.sink != nil && req.Call.ID == w.ids[i] {
		return w.sink
	}
	return tool.WithProgress(func(u tool.Update) { w.update(i, u) })
}

// report is the batch's progress sink.
func (w *watch) report(u tool.Update) {
	if w.byID != nil {
		if i, ok := w.byID[u.CallID]; ok {
			w.update(i, u)
		}
		return
	}
	for i, id := range w.ids {
		if id == u.CallID {
			w.update(i, u)
			return
		}
	}
}

// update emits call i's update unless the call is over.
func (w *watch) update(i int, u tool.Update) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed[i/64]&(1<<(i%64)) != 0 {
		return
	}
	req := &w.reqs[i]
	w.emitLocked(&Event{Kind: ToolUpdate, Index: i, Call: req.Call, Title: tool.TitleOf(req.Tool), Update: u})
}

// closeLocked drops call i's later updates. w.mu is held.
func (w *watch) closeLocked(i int) {
	w.closed[i/64] |= 1 << (i % 64)
}

// close drops call i's later updates; it waits for an update being
// delivered.
func (w *watch) close(i int) {
	w.mu.Lock()
	w.closeLocked(i)
	w.mu.Unlock()
}

// emitLocked calls the observer; w.mu is held. A panic in the observer is
// ignored.
func (w *watch) emitLocked(ev *Event) {
	defer func() { _ = recover() }()
	w.obs(w.ctx, *ev)
}

func (w *watch) emit(ev *Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emitLocked(ev)
}

// endEvent returns req's ToolEnd, its result's error prefixed as finish
// prefixes the results Execute returns.
func (w *watch) endEvent(req *Request, r *tool.Result, d time.Duration) *Event {
	ev := &Event{Kind: ToolEnd, Index: req.Index, Call: req.Call, Title: tool.TitleOf(req.Tool), Result: *r, Duration: d}
	if w.prefix != "" && r.IsError && r.Err != nil {
		ev.Result.Err = withPrefix(w.prefix, r.Err)
	}
	return ev
}

// end emits req's ToolEnd; a nil w emits nothing.
func (w *watch) end(req *Request, r *tool.Result, d time.Duration) {
	if w != nil {
		w.emit(w.endEvent(req, r, d))
	}
}

// startAlone is start for when no other goroutine can emit an event of the
// batch: the sequential executor emits ToolStart and ToolEnd on its own
// goroutine, and the updates of a call, the only events emitted elsewhere,
// reach the observer only between the call's ToolStart and the moment the
// executor closes the call (see close), which it does before the call's
// ToolEnd; the parallel executor emits its ToolStart events before any call
// runs.
func (w *watch) startAlone(req *Request) {
	if w != nil {
		w.emitLocked(&Event{Kind: ToolStart, Index: req.Index, Call: req.Call, Title: tool.TitleOf(req.Tool)})
	}
}

// endAlone is end for when no other goroutine can emit an event of the
// batch (see startAlone).
func (w *watch) endAlone(req *Request, r *tool.Result, d time.Duration) {
	if w != nil {
		w.emitLocked(w.endEvent(req, r, d))
	}
}

// endLocked is end with w.mu held.
func (w *watch) endLocked(req *Request, r *tool.Result, d time.Duration) {
	w.emitLocked(w.endEvent(req, r, d))
}
