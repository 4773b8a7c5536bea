package executor

import (
	"context"
	"time"

	"github.com/trellis-go/trellis/tool"
)

// Sequential returns an executor that runs a batch's calls one at a time,
// in call order, on the goroutine that calls Execute. For each call it runs
// the BeforeCall hooks, emits ToolStart, runs the middleware chain and the
// tool, runs the AfterCall hooks and emits ToolEnd, and only then moves on
// to the next call.
//
// A tool that ignores its context keeps Execute waiting until it returns;
// a Timeout middleware (package middleware) bounds every call.
func Sequential(opts ...Option) Executor {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return &sequential{core: newCore(&c)}
}

type sequential struct{ core core }

func (s *sequential) Execute(ctx context.Context, b Batch) ([]tool.Result, error) {
	return s.core.runSequential(ctx, requests(b))
}

// runSequential runs reqs one after the other on this goroutine.
func (c *core) runSequential(ctx context.Context, reqs []Request) ([]tool.Result, error) {
	results := make([]tool.Result, len(reqs))
	var (
		em    *emitter
		progs []progress
	)
	if c.observer != nil {
		em = &emitter{ctx: ctx, obs: c.observer}
		progs = make([]progress, len(reqs))
	}
	var stop *StopError
	for i := range reqs {
		req := &reqs[i]
		if stop != nil || ctx.Err() != nil {
			cause := errBatchStopped
			if stop == nil {
				cause = context.Cause(ctx)
			}
			results[i] = notRun(req.Call, cause)
			em.start(req)
			em.end(req, results[i], 0)
			continue
		}
		blocked, herr := c.runBefore(ctx, req)
		if herr != nil {
			stop = &StopError{Index: i, Call: req.Call, Err: herr}
			if blocked == nil {
				r := notRun(req.Call, errBatchStopped)
				blocked = &r
			}
		}
		if progs != nil {
			progs[i].attach(em, req)
		}
		em.start(req)
		if blocked != nil {
			results[i] = *blocked
			em.end(req, results[i], 0)
			continue
		}
		var t0 time.Time
		if em != nil {
			t0 = time.Now()
		}
		r := c.handle(ctx, req)
		var d time.Duration
		if em != nil {
			d = time.Since(t0)
			progs[i].close()
		}
		if c.failFast && r.IsError && ctx.Err() == nil {
			stop = &StopError{Index: i, Call: req.Call, FailFast: true, Err: failure(r)}
		}
		if err := c.runAfter(ctx, req, &r); err != nil && stop == nil {
			stop = &StopError{Index: i, Call: req.Call, Err: err}
		}
		results[i] = r
		em.end(req, r, d)
	}
	return c.finish(results, stop)
}
