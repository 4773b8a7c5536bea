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

// Execute runs the batch, in the storage the caller lent s when it did
// (see internal/callroom).
func (s *sequential) Execute(ctx context.Context, b Batch) ([]tool.Result, error) {
	return s.core.forBatch(ctx).execSequential(ctx, b, roomFor(ctx, s, b))
}

// seqWatch is the observed side of a sequential batch with room for the
// request of a single call, its frame and its result, so that such a batch
// allocates them along.
type seqWatch struct {
	watch
	one oneRequest
}

// execSequential looks the batch's calls up and runs them one after the
// other on this goroutine, in the caller's room as far as it has some.
func (c *core) execSequential(ctx context.Context, b Batch, room batchRoom) ([]tool.Result, error) {
	n := len(b.Calls)
	if c.plain() {
		return c.runPlainWith(ctx, b, nil, room)
	}
	if c.observer == nil {
		reqs, results := newRequests(n, room)
		lookup(b, reqs)
		return c.runSequential(ctx, reqs, results, nil)
	}
	sw := &seqWatch{}
	var (
		reqs    []Request
		results []tool.Result
	)
	if n == 1 {
		reqs, results = sw.one.requests()
		if room.Frames != nil {
			reqs[0].frame = &room.Frames[0]
		}
		if room.Results != nil {
			results = resultsIn(room, 1)
		}
	} else {
		reqs, results = newRequests(n, room)
	}
	lookup(b, reqs)
	sw.init(ctx, c.observer, b.Calls, reqs)
	sw.prefix = c.prefix
	return c.runSequential(ctx, reqs, results, &sw.watch)
}

// runSequential runs reqs one after the other on this goroutine, answering
// them in results (one per request); w, when not nil, watches them.
func (c *core) runSequential(ctx context.Context, reqs []Request, results []tool.Result, w *watch) ([]tool.Result, error) {
	var stop *StopError
	for i := range reqs {
		req, res := &reqs[i], &results[i]
		if stop != nil || ctx.Err() != nil {
			*res = skipped(ctx, req.Call, stop)
			w.startAlone(req)
			w.endAlone(req, res, 0)
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
		w.startAlone(req)
		if blocked != nil {
			*res = *blocked
			w.endAlone(req, res, 0)
			continue
		}
		var t0, d time.Duration
		if w != nil {
			t0 = c.clock()
		}
		*res = c.handle(ctx, req)
		if w != nil {
			d = c.clock() - t0
			w.close(i)
		}
		stop = c.failedFast(ctx, i, &req.Call, res) // nil so far: a stopped batch runs nothing
		if err := c.runAfter(ctx, req, res); err != nil && stop == nil {
			stop = &StopError{Index: i, Call: req.Call, Err: err}
		}
		w.endAlone(req, res, d)
	}
	return c.finish(results, stop)
}

// plain reports whether nothing stands between the executor and the tools:
// no middleware, no hooks and nobody observing. Nothing then sees a call's
// Request, and runPlain does without them.
func (c *core) plain() bool {
	return c.term != nil && c.observer == nil && len(c.before) == 0 && len(c.after) == 0
}

// runPlainWith is runSequential for a plain core (see plain): it hands each
// call of a known tool to the tool package with its frame, and builds a
// Request only for a call of an unknown tool, which the terminal handler
// answers. The calls' tools are looked up already (tools[i] is the tool of
// call i, nil for an unknown one), or, with tools nil, not; the results go
// into the caller's room as far as it has some.
func (c *core) runPlainWith(ctx context.Context, b Batch, tools []tool.Tool, room batchRoom) ([]tool.Result, error) {
	var first tool.Tool
	switch {
	case len(b.Calls) < 2 || room.Frames != nil:
	case tools != nil:
		first = tools[0]
	default:
		first = find(b.Tools, b.Calls[0].Name)
	}
	frames, results := newFrames(len(b.Calls), room, first)
	var (
		stop *StopError
		t    tool.Tool
	)
	for i := range b.Calls {
		call, res := &b.Calls[i], &results[i]
		if stop != nil || ctx.Err() != nil {
			*res = skipped(ctx, *call, stop)
			continue
		}
		switch {
		case tools != nil:
			t = tools[i]
		case i == 0 && first != nil:
			t = first // looked up for the frames
		default:
			t = toolAt(b, i, t)
		}
		if t != nil {
			frameOps.InvokeInto(c.term.iv, ctx, &frames[i], t, call, res)
		} else {
			req := Request{Call: *call, Index: i, Tools: b.Tools, slot: i, frame: &frames[i]}
			*res = c.handleChain(ctx, &req)
		}
		stop = c.failedFast(ctx, i, call, res)
	}
	return c.finish(results, stop)
}
