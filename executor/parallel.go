package executor

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Parallel returns an executor that runs the tool bodies of a batch
// concurrently.
//
// Only the bodies (the middleware chain and the tool) run concurrently.
// The BeforeCall hooks and the ToolStart events run first, serially and in
// call order, on the goroutine that calls Execute; then the calls the hooks
// let through run concurrently; the AfterCall hooks and the ToolEnd events
// run serially in call order as the results come in, so results land in
// call order whichever call finishes first. ToolUpdate events come as the
// tools report them.
//
// A batch runs sequentially, as Sequential runs it, when it has a single
// call, or when one of its tools' metadata says Sequential or, unless
// WithConcurrencySafeCheck(false), does not say ConcurrencySafe.
// WithMaxConcurrency caps the calls running at once and WithGroupLimit the
// calls of one concurrency group (tool.Metadata.ConcurrencyGroup); calls
// wait for capacity in call order, and a call whose group is full does not
// hold back the calls of other groups.
//
// Calls are run by helper goroutines, each of which starts the next helper
// before it runs a call, as long as calls are waiting: a call that blocks
// never holds back the others, so every call can run concurrently, while
// calls that finish at once run back to back and cost no more goroutines.
// When there are neither AfterCall hooks nor an observer, the goroutine
// that calls Execute runs calls too.
//
// When the batch's context ends, or the batch is stopped (a hook's error,
// WithFailFast), Execute does not wait for calls that helpers still run:
// they are answered with cancelled results (timeout when the context's
// deadline passed) and their goroutines are left to return on their own,
// which a tool that honours its context does at once; their results are
// dropped, and so are progress updates they report afterwards. Calls that
// had not started (waiting for capacity, say) are not run; they are
// answered with cancelled results. A call that
// Execute's own goroutine runs is waited for, as in Sequential. A Timeout
// middleware (package middleware) bounds every call, whichever goroutine
// runs it.
func Parallel(opts ...ParallelOption) Executor {
	c := parallelConfig{checkSafe: true}
	for _, o := range opts {
		if o != nil {
			o.applyParallel(&c)
		}
	}
	return &parallel{
		core:      newCore(&c.config),
		max:       c.maxConcurrency,
		limits:    maps.Clone(c.groupLimits),
		checkSafe: c.checkSafe,
	}
}

type parallel struct {
	core      core
	max       int
	limits    map[string]int
	checkSafe bool
}

// Execute runs the batch, in the storage the caller lent p when it did
// (see internal/callroom).
func (p *parallel) Execute(ctx context.Context, b Batch) ([]tool.Result, error) {
	return p.execute(ctx, b, roomFor(ctx, p, b))
}

// execute runs the batch in the caller's room as far as it has some.
func (p *parallel) execute(ctx context.Context, b Batch, room batchRoom) ([]tool.Result, error) {
	c := p.core.forBatch(ctx)
	n := len(b.Calls)
	if n <= 1 {
		return c.execSequential(ctx, b, room)
	}
	if c.plain() {
		// Nothing reads the calls' Requests: the batch does without.
		tools := make([]tool.Tool, n)
		lookupTools(b, tools)
		seq, sched := p.schedule(b.Calls, func(i int) tool.Tool { return tools[i] })
		if seq {
			return c.runPlainWith(ctx, b, tools, room)
		}
		frames, results := newFrames(n, room, tools[0])
		return c.runParallel(ctx, b, nil, results, sched, &bare{calls: b.Calls, tools: tools, frames: frames, lookup: b.Tools})
	}
	reqs, results := newRequests(n, room)
	lookup(b, reqs)
	seq, sched := p.schedule(b.Calls, func(i int) tool.Tool { return reqs[i].Tool })
	if seq {
		var w *watch
		if c.observer != nil {
			w = new(watch)
			w.init(ctx, c.observer, b.Calls, reqs)
			w.prefix = c.prefix
		}
		return c.runSequential(ctx, reqs, results, w)
	}
	return c.runParallel(ctx, b, reqs, results, sched, nil)
}

// schedule reads the metadata of the batch's tools (toolOf(i) is the tool
// of calls[i], nil for an unknown one): whether the batch runs
// sequentially, and otherwise the scheduler its caps call for, nil when
// there are none.
func (p *parallel) schedule(calls []model.ToolCall, toolOf func(i int) tool.Tool) (bool, *scheduler) {
	var (
		groups []string
		group  string // the capped group of the tool of the previous call
	)
	for i := range calls {
		t := toolOf(i)
		if t == nil {
			continue
		}
		// Calls of one tool usually come together (see lookup): its
		// metadata says the same for all of them.
		if i == 0 || toolOf(i-1) == nil || calls[i].Name != calls[i-1].Name {
			m := tool.MetadataOf(t)
			if p.sequential(m) {
				return true, nil
			}
			group = ""
			if m.ConcurrencyGroup != "" && p.limits[m.ConcurrencyGroup] > 0 {
				group = m.ConcurrencyGroup
			}
		}
		if group != "" {
			if groups == nil {
				groups = make([]string, len(calls))
			}
			groups[i] = group
		}
	}
	if p.max > 0 || groups != nil {
		return false, &scheduler{max: p.max, limits: p.limits, groups: groups}
	}
	return false, nil
}

// sequential reports whether a batch with a call of a tool with metadata m
// runs sequentially.
func (p *parallel) sequential(m tool.Metadata) bool {
	return m.Sequential || (p.checkSafe && !m.ConcurrencySafe)
}

// The states of a call in a parallel batch.
const (
	stSkipped    = iota // never handed to the chain: answered cancelled
	stAnswered          // answered before the chain: blocked by a hook
	stDispatched        // handed to the chain
)

// Who answers a dispatched call: its worker, which writes the result it
// got, or the goroutine that runs Execute, which answers a call it stops
// waiting for (the batch's context ended) with a cancelled result.
// Whoever moves the call out of bodyRunning writes its result.
const (
	bodyRunning   = iota // the worker has not answered the call yet
	bodyWriting          // the worker is writing the call's result (and stopping the batch if it failed under WithFailFast)
	bodyDone             // the worker's result is in
	bodyAbandoned        // Execute answered the call; the worker's result is dropped
)

// slot is one call's share of a parallel batch. state and pos belong to
// the goroutine that runs Execute; body says who answers a dispatched call
// (see bodyRunning), and dur is written with the worker's result. todo is
// the position of the k-th dispatched call, in the slot of index k; pos is
// the reverse: the k of the call of the slot's index.
type slot struct {
	state uint8
	todo  int32
	body  atomic.Uint32
	pos   int32
	dur   time.Duration
}

// How the ends of a parallel batch's calls (AfterCall hooks, ToolEnd) are
// handled.
const (
	// endsCollected: no hooks and no observer; Execute's goroutine runs
	// calls too and collects the results when all are in.
	endsCollected = iota
	// endsByWorkers: an observer and no AfterCall hooks; whichever
	// goroutine answers the first call not yet ended emits the ToolEnd
	// events that are due, in call order, as results come in.
	endsByWorkers
	// endsStreamed: AfterCall hooks; Execute's goroutine hands the results
	// to the hooks and the observer in call order as they come in.
	endsStreamed
)

// bare is what a parallel batch of a plain core (see plain) has of its
// calls instead of Requests: the calls, their tools (nil for an unknown
// one) and their frames.
type bare struct {
	calls  []model.ToolCall
	tools  []tool.Tool
	frames []callctx.Frame
	lookup Lookup
}

// pbatch is one run of a parallel batch.
//
// Without caps, the dispatched calls are claimed from a shared counter by
// helpers (and by the goroutine that runs Execute when no results stream to
// hooks or an observer), each of which starts the next helper before it
// runs a call it claimed, unless one is already on its way. With caps, a
// scheduler admits calls in call order as capacity frees up, and each
// admitted call gets a goroutine that goes on with the queued calls its end
// makes room for.
type pbatch struct {
	c      *core
	parent context.Context
	// ctx is the batch's context, which its calls run in and Execute
	// watches to stop waiting for them: a child of the parent that stopping
	// the batch cancels, or, when nothing can stop the batch (only hooks
	// and WithFailFast do), the parent itself, with a nil cancel.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	reqs    []Request // nil for a bare batch
	bare    bare      // the calls of a batch without requests (see bare)
	slots   []slot
	results []tool.Result
	w       *watch // nil without an observer
	sched   *scheduler
	ends    int

	ndisp    int32 // how many calls were dispatched
	claimed  atomic.Int32
	starting atomic.Bool // a helper was started and has not begun
	pending  atomic.Int32
	allDone  chan struct{} // closed when the last dispatched call finishes
	wake     chan struct{} // one token per finished call (endsStreamed)
	next     int           // the first call whose ToolEnd is not out; w.mu (endsByWorkers)
	helper   func()        // pb.help, made once for all the helpers a batch starts

	mu   sync.Mutex
	stop *StopError
}

func (c *core) runParallel(parent context.Context, b Batch, reqs []Request, results []tool.Result, sched *scheduler, bare *bare) ([]tool.Result, error) {
	n := len(b.Calls)
	pb := &pbatch{
		c: c, parent: parent, ctx: parent,
		reqs: reqs, slots: make([]slot, n), results: results, sched: sched,
	}
	if reqs == nil {
		pb.bare = *bare
	}
	if c.failFast || len(c.before) > 0 || len(c.after) > 0 {
		// Something may stop the batch: its calls get a context of their
		// own, which stopping cancels. Otherwise the batch ends exactly
		// when the parent does, and its calls run in the parent's context,
		// as in Sequential.
		ctx, cancel := context.WithCancelCause(parent)
		defer cancel(nil)
		pb.ctx, pb.cancel = ctx, cancel
	}
	if sched == nil {
		pb.helper = pb.help
	}
	if c.observer != nil {
		// An allocation of its own: a ToolsNode outside a streaming run,
		// the common case, has no observer and does without.
		pb.w = new(watch)
		pb.w.init(parent, c.observer, b.Calls, reqs)
		pb.w.prefix = c.prefix
	}
	switch {
	case len(c.after) > 0:
		pb.ends = endsStreamed
		pb.wake = make(chan struct{}, n)
	case c.observer != nil:
		pb.ends = endsByWorkers
		pb.allDone = make(chan struct{})
	default:
		pb.ends = endsCollected
		pb.allDone = make(chan struct{})
	}

	// Before the bodies: hooks and ToolStart, in call order.
	if reqs == nil {
		pb.dispatchAll()
	}
	for i := range reqs {
		req, s := &reqs[i], &pb.slots[i]
		if pb.ctx.Err() != nil {
			s.state = stSkipped
			pb.w.startAlone(req)
			continue
		}
		blocked, herr := c.runBefore(parent, req)
		if herr != nil {
			pb.stopWith(&StopError{Index: i, Call: req.Call, Err: herr})
			if blocked == nil {
				r := notRun(req.Call, errBatchStopped)
				blocked = &r
			}
		}
		pb.w.startAlone(req) // no call runs yet
		if blocked != nil {
			s.state, pb.results[i] = stAnswered, *blocked
			continue
		}
		s.state, s.pos = stDispatched, pb.ndisp
		pb.slots[pb.ndisp].todo = int32(i)
		pb.ndisp++
	}

	// The bodies, concurrently.
	pb.pending.Store(pb.ndisp)
	if pb.ndisp == 0 && pb.allDone != nil {
		close(pb.allDone)
	}
	if pb.ends == endsByWorkers {
		// Calls answered before the chain may be due already.
		pb.w.mu.Lock()
		pb.advance()
		pb.w.mu.Unlock()
	}
	switch {
	case sched == nil && pb.ends == endsCollected:
		pb.work(false)
	case sched == nil:
		// This goroutine stays free to hand results over as they come in
		// while helpers run the calls.
		if pb.ndisp > 0 {
			pb.starting.Store(true)
			go pb.helper()
		}
	default:
		for k := range pb.ndisp {
			if i := int(pb.slots[k].todo); sched.admit(pb.ctx, i) {
				go pb.runAdmitted(i)
			}
		}
	}

	// After the bodies: AfterCall hooks and ToolEnd, in call order.
	switch pb.ends {
	case endsCollected:
		pb.waitAll()
		for i := range n {
			pb.settle(i)
		}
	case endsByWorkers:
		pb.waitAll()
		// Whatever is still out was abandoned: end it here.
		pb.w.mu.Lock()
		for ; pb.next < n; pb.next++ {
			i := pb.next
			pb.w.closeLocked(i)
			d := pb.settle(i)
			pb.w.endLocked(&reqs[i], &pb.results[i], d)
		}
		pb.w.mu.Unlock()
	case endsStreamed:
		for i := range reqs {
			req, res := &reqs[i], &pb.results[i]
			var d time.Duration
			if pb.slots[i].state == stDispatched {
				pb.wait(i)
				if d = pb.settle(i); pb.slots[i].body.Load() == bodyAbandoned && pb.w != nil {
					pb.w.close(i)
				}
				if err := c.runAfter(parent, req, res); err != nil {
					pb.stopWith(&StopError{Index: i, Call: req.Call, Err: err})
				}
			} else {
				pb.settle(i)
			}
			pb.w.end(req, res, d)
		}
	}
	pb.mu.Lock()
	stop := pb.stop
	pb.mu.Unlock()
	return c.finish(pb.results, stop)
}

// dispatchAll dispatches every call of a bare batch (no hook can answer or
// stop one before it runs), or, when the batch's context has ended, none.
func (pb *pbatch) dispatchAll() {
	if pb.ctx.Err() != nil {
		for i := range pb.slots {
			pb.slots[i].state = stSkipped
		}
		return
	}
	for i := range pb.slots {
		s := &pb.slots[i]
		s.state, s.pos, s.todo = stDispatched, int32(i), int32(i)
	}
	pb.ndisp = int32(len(pb.slots))
}

// call returns call i of the batch.
func (pb *pbatch) call(i int) *model.ToolCall {
	if pb.reqs == nil {
		return &pb.bare.calls[i]
	}
	return &pb.reqs[i].Call
}

// waitAll waits until every dispatched call finished or the batch's
// context ends.
func (pb *pbatch) waitAll() {
	select {
	case <-pb.allDone:
	case <-pb.ctx.Done():
	}
}

// settle makes sure call i is answered in pb.results, once this goroutine
// waits no longer: a call that never ran gets its cancelled result, and a
// call whose worker has not answered it is abandoned: answered as not run
// when no worker took it up, else as cut short (cancelled, or timeout when
// the deadline passed). It returns the duration of the call's body, zero
// when it was not answered by its worker.
func (pb *pbatch) settle(i int) time.Duration {
	s := &pb.slots[i]
	switch s.state {
	case stSkipped:
		pb.results[i] = notRun(*pb.call(i), pb.cause())
		return 0
	case stAnswered:
		return 0
	}
	if s.body.CompareAndSwap(bodyRunning, bodyAbandoned) {
		if pb.taken(i) {
			pb.results[i] = cutShort(*pb.call(i), pb.cause())
		} else {
			pb.results[i] = notRun(*pb.call(i), pb.cause())
		}
		return 0
	}
	for s.body.Load() == bodyWriting {
		runtime.Gosched() // the worker is copying its result
	}
	if s.body.Load() == bodyAbandoned {
		return 0
	}
	return s.dur
}

// taken reports whether a worker took call i up: claimed it, or was
// started for it by the scheduler. A call no worker took up never runs once
// the batch's context has ended (see runBody and release).
func (pb *pbatch) taken(i int) bool {
	if pb.sched != nil {
		return !pb.sched.queued(i)
	}
	return pb.slots[i].pos < pb.claimed.Load()
}

// answered reports whether call i's worker has answered it.
func (pb *pbatch) answered(i int) bool {
	return pb.slots[i].body.Load() == bodyDone
}

// advance emits the ToolEnd events that are due: those of the calls from
// pb.next on that are answered, up to the first that is still running.
// pb.w.mu is held.
func (pb *pbatch) advance() {
	for n := len(pb.reqs); pb.next < n; pb.next++ {
		i := pb.next
		if pb.slots[i].state == stDispatched && !pb.answered(i) {
			return
		}
		d := pb.settle(i)
		pb.w.endLocked(&pb.reqs[i], &pb.results[i], d)
	}
}

// help is a helper goroutine's body.
func (pb *pbatch) help() {
	pb.starting.Store(false)
	pb.work(true)
}

// growStack makes the stack of a helper goroutine as large as running a
// call usually needs, at once and while the stack is shallow, so that the
// call does not grow it step by step, copying its frames each time.
//
//go:noinline
func growStack(i int) byte {
	var pad [5 << 10]byte
	pad[i] = 1
	return pad[(i*7)%len(pad)]
}

// work runs unclaimed calls until none is left. Before it runs a call,
// it starts a helper if other calls are unclaimed and no helper is on its
// way, so that a call that blocks never holds back the others. A helper
// (fresh) grows its stack before its first call.
func (pb *pbatch) work(fresh bool) {
	n := pb.ndisp
	for {
		k := pb.claimed.Add(1) - 1
		if k >= n {
			return
		}
		if k+1 < n && pb.starting.CompareAndSwap(false, true) {
			go pb.helper()
		}
		if fresh {
			growStack(0)
			fresh = false
		}
		pb.runBody(int(pb.slots[k].todo))
	}
}

// runAdmitted runs call i and then the queued calls the scheduler admits
// as it frees capacity.
func (pb *pbatch) runAdmitted(i int) {
	growStack(0)
	for i >= 0 {
		pb.runBody(i)
		i = pb.sched.release(i, pb.ctx.Err() != nil)
	}
}

// runBody runs call i through the chain and answers it, unless Execute
// has abandoned it meanwhile. A call whose batch's context ended before it
// began is not run.
func (pb *pbatch) runBody(i int) {
	if pb.reqs == nil {
		b := &pb.bare
		var r tool.Result
		switch {
		case pb.ctx.Err() != nil:
			r = notRun(b.calls[i], pb.cause())
		case b.tools[i] != nil:
			// By value: r, given to a function value, would escape.
			r = frameOps.Invoke(pb.c.term.iv, pb.ctx, &b.frames[i], b.tools[i], b.calls[i])
		default:
			req := Request{Call: b.calls[i], Index: i, Tools: b.lookup, slot: i, frame: &b.frames[i]}
			r = pb.c.handleChain(pb.ctx, &req)
		}
		pb.answer(i, &r, 0)
		if pb.pending.Add(-1) == 0 {
			close(pb.allDone)
		}
		return
	}
	req := &pb.reqs[i]
	var (
		r tool.Result
		d time.Duration
	)
	if pb.ctx.Err() != nil {
		r = notRun(req.Call, pb.cause())
	} else {
		var t0 time.Duration
		if pb.w != nil {
			t0 = pb.c.clock()
		}
		r = pb.c.handle(pb.ctx, req)
		if pb.w != nil {
			d = pb.c.clock() - t0
		}
	}
	// The call's updates end before its result is handed over, so that
	// none follows its ToolEnd.
	switch pb.ends {
	case endsByWorkers:
		pb.w.mu.Lock()
		pb.w.closeLocked(i)
		pb.answer(i, &r, d)
		if i == pb.next {
			pb.advance()
		}
		pb.w.mu.Unlock()
	case endsStreamed:
		if pb.w != nil {
			pb.w.close(i)
		}
		pb.answer(i, &r, d)
		pb.wake <- struct{}{}
	default:
		pb.answer(i, &r, d)
	}
	if pb.pending.Add(-1) == 0 && pb.allDone != nil {
		close(pb.allDone)
	}
}

// answer writes the result the worker of call i got, unless Execute
// answered the call already. Under WithFailFast, a failed result stops the
// batch while the call is bodyWriting: Execute, which stops waiting for the
// calls once the batch's context ends, then waits for this result rather
// than answering the call that stopped the batch as cancelled.
func (pb *pbatch) answer(i int, r *tool.Result, d time.Duration) {
	s := &pb.slots[i]
	if s.body.CompareAndSwap(bodyRunning, bodyWriting) {
		pb.results[i], s.dur = *r, d
		if stop := pb.c.failedFast(pb.ctx, i, pb.call(i), r); stop != nil {
			pb.stopWith(stop)
		}
		s.body.Store(bodyDone)
	}
}

// wait waits until call i is answered by its worker or the batch's
// context ends.
func (pb *pbatch) wait(i int) {
	for !pb.answered(i) && pb.ctx.Err() == nil {
		select {
		case <-pb.wake:
		case <-pb.ctx.Done():
		}
	}
}

// stopWith stops the batch with e unless it is already stopped.
func (pb *pbatch) stopWith(e *StopError) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.stop == nil {
		pb.stop = e
		if pb.cancel != nil {
			pb.cancel(e)
		}
	}
}

// cause says why the batch's context ended, for the calls it cut short or
// did not run: the batch was stopped (errBatchStopped), or the context
// Execute was given ended first (see ended).
func (pb *pbatch) cause() error {
	pb.mu.Lock()
	stop := pb.stop
	pb.mu.Unlock()
	if stop != nil && context.Cause(pb.ctx) == error(stop) {
		return errBatchStopped
	}
	return ended(pb.parent)
}

// scheduler admits the calls of a batch under the concurrency caps, in
// call order among the calls that fit.
type scheduler struct {
	max    int            // cap on running calls; 0 for none
	limits map[string]int // caps of the groups
	groups []string       // each call's capped group, or ""; nil for none

	mu      sync.Mutex
	running int
	inGroup map[string]int
	queue   []int
}

func (s *scheduler) group(i int) string {
	if s.groups == nil {
		return ""
	}
	return s.groups[i]
}

// fits reports whether call i may start now. s.mu is held.
func (s *scheduler) fits(i int) bool {
	if s.max > 0 && s.running >= s.max {
		return false
	}
	g := s.group(i)
	return g == "" || s.inGroup[g] < s.limits[g]
}

// take counts call i as running. s.mu is held.
func (s *scheduler) take(i int) {
	s.running++
	if g := s.group(i); g != "" {
		if s.inGroup == nil {
			s.inGroup = map[string]int{}
		}
		s.inGroup[g]++
	}
}

// admit reports whether call i may start now, and counts it if so;
// otherwise it queues it. No queued call fits at any time (release starts
// the first that does), so a call that fits overtakes only calls that
// cannot start anyway. A call of a batch whose context has ended is queued,
// never started: it is then answered as not run. The check is made under
// s.mu, which release takes after the call that stopped the batch has
// cancelled its context, so a call cannot slip into the room that call
// leaves.
func (s *scheduler) admit(ctx context.Context, i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() == nil && s.fits(i) {
		s.take(i)
		return true
	}
	s.queue = append(s.queue, i)
	return false
}

// queued reports whether call i waits for capacity.
func (s *scheduler) queued(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.queue, i)
}

// release counts call i as finished and returns the first queued call that
// may start now (counted as running), or -1. A stopped batch starts no more
// calls.
func (s *scheduler) release(i int, stopped bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if g := s.group(i); g != "" {
		s.inGroup[g]--
	}
	if stopped {
		return -1
	}
	for k, j := range s.queue {
		if s.fits(j) {
			s.queue = append(s.queue[:k], s.queue[k+1:]...)
			s.take(j)
			return j
		}
	}
	return -1
}
