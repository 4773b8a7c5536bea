package executor

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

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
// dropped, and so are progress updates they report afterwards. A call that
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

func (p *parallel) Execute(ctx context.Context, b Batch) ([]tool.Result, error) {
	reqs := requests(b)
	if len(reqs) <= 1 {
		return p.core.runSequential(ctx, reqs)
	}
	var groups []string
	for i := range reqs {
		if reqs[i].Tool == nil {
			continue
		}
		m := tool.MetadataOf(reqs[i].Tool)
		if m.Sequential || (p.checkSafe && !m.ConcurrencySafe) {
			return p.core.runSequential(ctx, reqs)
		}
		if m.ConcurrencyGroup != "" && p.limits[m.ConcurrencyGroup] > 0 {
			if groups == nil {
				groups = make([]string, len(reqs))
			}
			groups[i] = m.ConcurrencyGroup
		}
	}
	var sched *scheduler
	if p.max > 0 || groups != nil {
		sched = &scheduler{max: p.max, limits: p.limits, groups: groups}
	}
	return p.core.runParallel(ctx, reqs, sched)
}

// The states of a call in a parallel batch.
const (
	stSkipped    = iota // never handed to the chain: answered cancelled
	stAnswered          // answered before the chain: blocked by a hook
	stDispatched        // handed to the chain
)

// slot is one call's share of a parallel batch. state belongs to the
// goroutine that runs Execute, and so does res of a call that is not
// dispatched; res and dur of a dispatched call belong to its worker until
// it sets finished.
type slot struct {
	state    uint8
	finished atomic.Bool
	res      tool.Result
	dur      time.Duration
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
	ctx    context.Context // the batch's context, cancelled when it stops
	cancel context.CancelCauseFunc
	reqs   []Request
	slots  []slot
	em     *emitter
	progs  []progress
	sched  *scheduler

	todo     []int // the dispatched calls, in call order
	claimed  atomic.Int32
	starting atomic.Bool // a helper was started and has not begun
	pending  atomic.Int32
	allDone  chan struct{} // closed when the last dispatched call finishes
	wake     chan struct{} // one token per finished call, when results stream

	mu   sync.Mutex
	stop *StopError
}

func (c *core) runParallel(parent context.Context, reqs []Request, sched *scheduler) ([]tool.Result, error) {
	n := len(reqs)
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	pb := &pbatch{
		c: c, parent: parent, ctx: ctx, cancel: cancel,
		reqs: reqs, slots: make([]slot, n), sched: sched,
		todo: make([]int, 0, n), allDone: make(chan struct{}),
	}
	if c.observer != nil {
		pb.em = &emitter{ctx: parent, obs: c.observer}
		pb.progs = make([]progress, n)
	}
	if c.observer != nil || len(c.after) > 0 {
		// Results are handed to the hooks and the observer as they come in.
		pb.wake = make(chan struct{}, n)
	}

	// Before the bodies: hooks and ToolStart, in call order.
	for i := range reqs {
		req, s := &reqs[i], &pb.slots[i]
		if ctx.Err() != nil {
			s.state = stSkipped
			pb.em.start(req)
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
		if pb.progs != nil {
			pb.progs[i].attach(pb.em, req)
		}
		pb.em.start(req)
		if blocked != nil {
			s.state, s.res = stAnswered, *blocked
			continue
		}
		s.state = stDispatched
		pb.todo = append(pb.todo, i)
	}

	// The bodies, concurrently.
	pb.pending.Store(int32(len(pb.todo)))
	if len(pb.todo) == 0 {
		close(pb.allDone)
	}
	switch {
	case sched == nil && pb.wake == nil:
		pb.work()
	case sched == nil:
		// Results stream to hooks and the observer: this goroutine stays
		// free to hand them over in call order while helpers run the calls.
		if len(pb.todo) > 0 {
			pb.starting.Store(true)
			go pb.help()
		}
	default:
		for _, i := range pb.todo {
			if sched.admit(i) {
				go pb.runAdmitted(i)
			}
		}
	}

	// After the bodies: AfterCall hooks and ToolEnd, in call order.
	if pb.wake == nil {
		select {
		case <-pb.allDone:
		case <-ctx.Done():
		}
	}
	results := make([]tool.Result, n)
	for i := range reqs {
		req, s := &reqs[i], &pb.slots[i]
		var d time.Duration
		switch s.state {
		case stSkipped:
			results[i] = notRun(req.Call, pb.skipCause())
		case stAnswered:
			results[i] = s.res
		case stDispatched:
			var r tool.Result
			if pb.wait(i) {
				r, d = s.res, s.dur
			} else {
				if pb.progs != nil {
					pb.progs[i].close()
				}
				r = abandoned(ctx, req.Call)
			}
			if err := c.runAfter(parent, req, &r); err != nil {
				pb.stopWith(&StopError{Index: i, Call: req.Call, Err: err})
			}
			results[i] = r
		}
		pb.em.end(req, results[i], d)
	}
	pb.mu.Lock()
	stop := pb.stop
	pb.mu.Unlock()
	return c.finish(results, stop)
}

// help is a helper goroutine's body.
func (pb *pbatch) help() {
	pb.starting.Store(false)
	pb.work()
}

// work runs unclaimed calls until none is left. Before it runs a call,
// it starts a helper if other calls are unclaimed and no helper is on its
// way, so that a call that blocks never holds back the others.
func (pb *pbatch) work() {
	n := int32(len(pb.todo))
	for {
		k := pb.claimed.Add(1) - 1
		if k >= n {
			return
		}
		if k+1 < n && pb.starting.CompareAndSwap(false, true) {
			go pb.help()
		}
		pb.runBody(pb.todo[k])
	}
}

// runAdmitted runs call i and then the queued calls the scheduler admits
// as it frees capacity.
func (pb *pbatch) runAdmitted(i int) {
	for i >= 0 {
		pb.runBody(i)
		i = pb.sched.release(i, pb.ctx.Err() != nil)
	}
}

// runBody runs call i through the chain and reports it finished.
func (pb *pbatch) runBody(i int) {
	req, s := &pb.reqs[i], &pb.slots[i]
	if pb.ctx.Err() != nil {
		s.res = abandoned(pb.ctx, req.Call)
	} else {
		var t0 time.Time
		if pb.em != nil {
			t0 = time.Now()
		}
		s.res = pb.c.handle(pb.ctx, req)
		if pb.em != nil {
			s.dur = time.Since(t0)
			pb.progs[i].close()
		}
		if pb.c.failFast && s.res.IsError && pb.ctx.Err() == nil {
			pb.stopWith(&StopError{Index: i, Call: req.Call, FailFast: true, Err: failure(s.res)})
		}
	}
	s.finished.Store(true)
	if pb.wake != nil {
		pb.wake <- struct{}{}
	}
	if pb.pending.Add(-1) == 0 {
		close(pb.allDone)
	}
}

// wait reports whether call i has finished, waiting for it while the
// batch's context lasts.
func (pb *pbatch) wait(i int) bool {
	s := &pb.slots[i]
	for !s.finished.Load() {
		if pb.wake == nil || pb.ctx.Err() != nil {
			return s.finished.Load()
		}
		select {
		case <-pb.wake:
		case <-pb.ctx.Done():
		}
	}
	return true
}

// stopWith stops the batch with e unless it is already stopped.
func (pb *pbatch) stopWith(e *StopError) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.stop == nil {
		pb.stop = e
		pb.cancel(e)
	}
}

// skipCause says why a call was not run.
func (pb *pbatch) skipCause() error {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.stop != nil {
		return errBatchStopped
	}
	return context.Cause(pb.parent)
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
// cannot start anyway.
func (s *scheduler) admit(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fits(i) {
		s.take(i)
		return true
	}
	s.queue = append(s.queue, i)
	return false
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
