package executor

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/trellis-go/trellis/tool"
)

// Parallel returns an executor that runs the tool bodies of a batch
// concurrently.
//
// Only the bodies (the middleware chain and the tool) run concurrently.
// The BeforeCall hooks and the ToolStart events run first, serially and in
// call order, on the goroutine that calls Execute, and each call is handed
// to a goroutine as soon as its hooks let it through; the AfterCall hooks
// and the ToolEnd events then run serially in call order as the results
// come in, so results land in call order whichever call finishes first.
// ToolUpdate events come as the tools report them.
//
// A batch runs sequentially, as Sequential runs it, when it has a single
// call, or when one of its tools' metadata says Sequential or, unless
// WithConcurrencySafeCheck(false), does not say ConcurrencySafe.
// WithMaxConcurrency caps the calls running at once and WithGroupLimit the
// calls of one concurrency group (tool.Metadata.ConcurrencyGroup); calls
// wait for capacity in call order, and a call whose group is full does not
// hold back the calls of other groups.
//
// When the batch's context ends, or the batch is stopped (a hook's error,
// WithFailFast), Execute does not wait for calls still running: they are
// answered with cancelled results (timeout when the context's deadline
// passed) and their goroutines are left to return on their own, which a
// tool that honours its context does at once. Their results are dropped,
// and so are progress updates they report afterwards.
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

// slot is one call's share of a parallel batch. state and res of a call
// that is not dispatched belong to the goroutine that runs Execute; res and
// dur of a dispatched call belong to its worker until it reports done.
type slot struct {
	state uint8
	res   tool.Result
	dur   time.Duration
}

// pbatch is one run of a parallel batch.
type pbatch struct {
	c         *core
	parent    context.Context
	ctx       context.Context // the batch's context, cancelled when it stops
	cancel    context.CancelCauseFunc
	reqs      []Request
	slots     []slot
	done      chan int // indices of finished calls; buffered for all
	completed []bool
	em        *emitter
	progs     []progress
	sched     *scheduler

	mu   sync.Mutex
	stop *StopError
}

func (c *core) runParallel(parent context.Context, reqs []Request, sched *scheduler) ([]tool.Result, error) {
	n := len(reqs)
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	pb := &pbatch{
		c: c, parent: parent, ctx: ctx, cancel: cancel,
		reqs: reqs, slots: make([]slot, n), done: make(chan int, n), completed: make([]bool, n),
		sched: sched,
	}
	if c.observer != nil {
		pb.em = &emitter{ctx: parent, obs: c.observer}
		pb.progs = make([]progress, n)
	}

	// Before the bodies: hooks and ToolStart in call order; each call goes
	// to a worker as soon as its hooks let it through.
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
		if sched == nil || sched.admit(i) {
			go pb.work(i)
		}
	}

	// After the bodies: AfterCall hooks and ToolEnd in call order.
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

// work runs call i and then, with a scheduler, the queued calls it frees
// capacity for.
func (pb *pbatch) work(i int) {
	for i >= 0 {
		pb.runBody(i)
		pb.done <- i
		if pb.sched == nil {
			return
		}
		i = pb.sched.release(i, pb.ctx.Err() != nil)
	}
}

func (pb *pbatch) runBody(i int) {
	req, s := &pb.reqs[i], &pb.slots[i]
	if err := pb.ctx.Err(); err != nil {
		s.res = abandoned(pb.ctx, req.Call)
		return
	}
	var t0 time.Time
	if pb.em != nil {
		t0 = time.Now()
	}
	r := pb.c.handle(pb.ctx, req)
	if pb.em != nil {
		s.dur = time.Since(t0)
		pb.progs[i].close()
	}
	s.res = r
	if pb.c.failFast && r.IsError && pb.ctx.Err() == nil {
		pb.stopWith(&StopError{Index: i, Call: req.Call, FailFast: true, Err: failure(r)})
	}
}

// wait waits for call i to finish and reports whether it did; it returns
// false when the batch's context ended first.
func (pb *pbatch) wait(i int) bool {
	for !pb.completed[i] {
		select {
		case j := <-pb.done:
			pb.completed[j] = true
		case <-pb.ctx.Done():
			for {
				select {
				case j := <-pb.done:
					pb.completed[j] = true
				default:
					return pb.completed[i]
				}
			}
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
