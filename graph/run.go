package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"
)

// runMeta is what a node's context knows about the run it belongs to.
type runMeta struct {
	graph string
	path  []string
	node  string
	step  int
	emit  *emitter
}

type metaKey struct{}

func metaFrom(ctx context.Context) *runMeta {
	m, _ := ctx.Value(metaKey{}).(*runMeta)
	return m
}

// runCtx carries a run's metadata. The nodes of sequential supersteps share
// the run's runCtx (its node and step are updated between them), so running
// a node allocates no context.
type runCtx struct {
	context.Context
	meta runMeta
}

func (c *runCtx) Value(key any) any {
	if key == (metaKey{}) {
		return &c.meta
	}
	return c.Context.Value(key)
}

// NodeName returns the name of the node running with ctx, or "".
func NodeName(ctx context.Context) string {
	if m := metaFrom(ctx); m != nil {
		return m.node
	}
	return ""
}

// Step returns the superstep of the node running with ctx, or -1.
func Step(ctx context.Context) int {
	if m := metaFrom(ctx); m != nil {
		return m.step
	}
	return -1
}

// Path returns the chain of subgraph nodes that leads from the top-level
// graph to the graph running ctx's node. The result must not be modified.
func Path(ctx context.Context) []string {
	if m := metaFrom(ctx); m != nil {
		return m.path
	}
	return nil
}

// RunOption configures one run.
type RunOption func(*runConfig)

type runConfig struct {
	modes     Mode
	stepLimit int
}

// WithModes selects the events Stream delivers (every mode but ModeDebug
// unless set). Invoke ignores it.
func WithModes(m Mode) RunOption {
	return func(c *runConfig) { c.modes = m }
}

// WithStepLimit overrides the graph's superstep limit for one run.
func WithStepLimit(n int) RunOption {
	return func(c *runConfig) { c.stepLimit = n }
}

type task[S any] struct {
	node int
	in   *S // input of a send; nil for a task triggered by an edge
}

// run is the state of one run of a graph.
type run[S any] struct {
	g        *Graph[S]
	ctx      runCtx
	limit    int
	tasks    []task[S]
	next     []task[S]
	prev     []task[S]
	sends    []task[S]
	seen     []bool // triggered nodes, for graphs of more than 64 nodes
	seenBits uint64 // triggered nodes, for graphs of up to 64 nodes
	joinDone [][]bool
	bufs     [3][8]task[S]
}

// Invoke runs the graph from input to the end and returns the final state.
// It is Stream with every event discarded.
func (g *Graph[S]) Invoke(ctx context.Context, input S, opts ...RunOption) (S, error) {
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	return g.execute(ctx, input, &cfg, nil, nil)
}

// Stream runs the graph and yields its events as they happen. The last
// element is an event of kind KindDone carrying the final state, or a
// non-nil error. Breaking out of the loop cancels the run and waits for it
// to stop.
func (g *Graph[S]) Stream(ctx context.Context, input S, opts ...RunOption) iter.Seq2[Event, error] {
	cfg := runConfig{modes: ModeAll &^ ModeDebug}
	for _, o := range opts {
		o(&cfg)
	}
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		em := &emitter{modes: cfg.modes, ch: make(chan Event, 64), stop: make(chan struct{})}
		var (
			final S
			err   error
		)
		go func() {
			defer close(em.ch)
			final, err = g.execute(ctx, input, &cfg, em, nil)
		}()
		stopped := false
		for ev := range em.ch {
			if stopped {
				continue
			}
			if !yield(ev, nil) {
				stopped = true
				close(em.stop)
				cancel()
			}
		}
		if stopped {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		yield(Event{Kind: KindDone, Graph: g.name, State: final, Time: time.Now()}, nil)
	}
}

// execute runs the graph; em is nil when no one listens.
func (g *Graph[S]) execute(parent context.Context, st S, cfg *runConfig, em *emitter, path []string) (out S, err error) {
	r := &run[S]{g: g, limit: g.maxSteps}
	r.tasks, r.next, r.prev = r.bufs[0][:0], r.bufs[1][:0], r.bufs[2][:0]
	if cfg.stepLimit > 0 {
		r.limit = cfg.stepLimit
	}
	r.ctx.Context = parent
	r.ctx.meta = runMeta{graph: g.name, path: path, emit: em, step: -1}
	defer func() {
		// Node panics are recovered where nodes run; this guards the engine.
		if p := recover(); p != nil {
			out, err = st, fmt.Errorf("graph %q: internal panic: %v\n%s", g.name, p, debug.Stack())
		}
	}()
	if err := parent.Err(); err != nil {
		return st, err
	}
	if err := r.successors(&r.ctx, nil, &st, nil); err != nil {
		return st, err
	}
	r.advance()
	for step := 0; len(r.tasks) > 0; step++ {
		if step >= r.limit {
			return st, &StepLimitError{Limit: r.limit, Nodes: r.names(r.prev)}
		}
		if err := parent.Err(); err != nil {
			return st, err
		}
		r.ctx.meta.step = step
		if em != nil && em.modes&ModeDebug != 0 {
			em.send(Event{Kind: KindStepStart, Graph: g.name, Path: path, Step: step, Nodes: r.names(r.tasks)})
		}
		if len(r.tasks) == 1 && r.tasks[0].in == nil {
			n := g.nodes[r.tasks[0].node]
			r.ctx.meta.node = n.name
			res, cmd, err := r.exec(&r.ctx, &r.ctx.meta, n, &st, false)
			r.ctx.meta.node = ""
			if err != nil {
				return st, r.fail(err)
			}
			st = res
			if err := r.successors(&r.ctx, n, &st, cmd); err != nil {
				return st, err
			}
		} else {
			var err error
			if st, err = r.parallel(st); err != nil {
				return st, r.fail(err)
			}
		}
		if em != nil {
			r.emitStepEnd(em, step, &st)
		}
		r.advance()
	}
	return st, nil
}

// fail returns the run's own cancellation in place of the errors it caused.
func (r *run[S]) fail(err error) error {
	if cerr := r.ctx.Context.Err(); cerr != nil {
		return cerr
	}
	return err
}

func (r *run[S]) emitStepEnd(em *emitter, step int, st *S) {
	if em.modes&ModeValues != 0 {
		snap := r.g.fields.isolated(*st, true)
		em.send(Event{Kind: KindValues, Graph: r.g.name, Path: r.ctx.meta.path, Step: step, State: snap})
	}
	if em.modes&ModeDebug != 0 {
		em.send(Event{Kind: KindStepEnd, Graph: r.g.name, Path: r.ctx.meta.path, Step: step, Nodes: r.names(r.tasks)})
	}
}

// advance makes the triggered tasks the next superstep's: triggered nodes
// in node order, then sends in the order they were made.
func (r *run[S]) advance() {
	if r.seen != nil {
		for _, t := range r.next {
			r.seen[t.node] = false
		}
	}
	r.seenBits = 0
	if len(r.next) > 1 {
		slices.SortFunc(r.next, func(a, b task[S]) int { return a.node - b.node })
	}
	r.next = append(r.next, r.sends...)
	clear(r.sends)
	r.sends = r.sends[:0]
	r.prev, r.tasks, r.next = r.tasks, r.next, r.prev[:0]
}

func (r *run[S]) names(ts []task[S]) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = r.g.nodes[t.node].name
	}
	return out
}

// exec runs one task of node n on in, with the node's retry policy and
// timeout, turning panics into errors. clip is set for concurrent tasks.
func (r *run[S]) exec(ctx context.Context, meta *runMeta, n *node[S], in *S, clip bool) (S, *Command[S], error) {
	em := meta.emit
	var start time.Time
	if em != nil && em.modes&ModeEvents != 0 {
		start = time.Now()
		em.send(Event{Kind: KindNodeStart, Graph: meta.graph, Path: meta.path, Step: meta.step, Node: n.name, Time: start})
	}
	attempts := n.retry.attempts()
	var (
		out S
		cmd *Command[S]
		err error
	)
	for attempt := 1; ; attempt++ {
		arg := *in
		if clip || len(r.g.fields.maps) > 0 {
			arg = r.g.fields.isolated(arg, clip)
		}
		out, cmd, err = r.call(ctx, n, arg)
		if err == nil || attempt >= attempts || !n.retry.retryable(ctx, err) {
			if err != nil {
				err = r.wrap(meta, n, attempt, err)
			}
			break
		}
		if serr := sleep(ctx, n.retry.delay(attempt)); serr != nil {
			err = r.wrap(meta, n, attempt, err)
			break
		}
	}
	if em != nil {
		if em.modes&ModeEvents != 0 {
			em.send(Event{Kind: KindNodeEnd, Graph: meta.graph, Path: meta.path, Step: meta.step, Node: n.name, Duration: time.Since(start), Err: err})
		}
		if err == nil && em.modes&ModeUpdates != 0 {
			em.send(Event{Kind: KindUpdate, Graph: meta.graph, Path: meta.path, Step: meta.step, Node: n.name, State: out, Fields: r.g.fields.written(*in, out)})
		}
	}
	return out, cmd, err
}

// call runs the node function once.
func (r *run[S]) call(ctx context.Context, n *node[S], in S) (out S, cmd *Command[S], err error) {
	if n.timeout > 0 {
		parent := ctx
		tctx, cancel := context.WithTimeoutCause(parent, n.timeout, ErrNodeTimeout)
		defer cancel()
		defer func() {
			if err != nil && errors.Is(context.Cause(tctx), ErrNodeTimeout) && parent.Err() == nil {
				err = fmt.Errorf("%w after %v: %w", ErrNodeTimeout, n.timeout, err)
			}
		}()
		ctx = tctx
	}
	defer func() {
		if p := recover(); p != nil {
			err = &NodeError{Node: n.name, Err: fmt.Errorf("panic: %v", p), Panic: p, Stack: debug.Stack()}
		}
	}()
	if n.fn != nil {
		out, err = n.fn(ctx, in)
		return out, nil, err
	}
	var c Command[S]
	out, c, err = n.cmd(ctx, in)
	return out, &c, err
}

// wrap gives a node's error the node's name, unless it already names a
// node of a nested graph or is a signal that crosses graph boundaries.
func (r *run[S]) wrap(meta *runMeta, n *node[S], attempts int, err error) error {
	if isInterrupt(err) {
		return err
	}
	var ne *NodeError
	if errors.As(err, &ne) {
		if len(ne.Path) > len(meta.path) {
			return err // from a nested graph: it already says where
		}
		if ne.Panic != nil && ne.Node == n.name && ne.Path == nil {
			ne.Path, ne.Step, ne.Attempts = meta.path, meta.step, attempts
			return ne
		}
	}
	return &NodeError{Node: n.name, Path: meta.path, Step: meta.step, Attempts: attempts, Err: err}
}

// taskCtx is the context of one concurrent task.
type taskCtx struct {
	context.Context
	meta runMeta
}

func (c *taskCtx) Value(key any) any {
	if key == (metaKey{}) {
		return &c.meta
	}
	return c.Context.Value(key)
}

// slot holds one concurrent task's context and outcome.
type slot[S any] struct {
	ctx taskCtx
	out S
	cmd *Command[S]
	err error
}

// superstep runs the tasks of one parallel superstep. Tasks are claimed from
// a shared counter by the run's goroutine and by one helper goroutine per
// other task: every task can run concurrently with the others, yet tasks
// that finish at once cost no goroutine hand-off, because the run's
// goroutine claims what the helpers have not reached yet.
type superstep[S any] struct {
	r       *run[S]
	st      *S
	slots   []slot[S]
	cancel  context.CancelFunc
	claimed atomic.Int32
	pending atomic.Int32
	done    chan struct{} // closed by the helper that finishes the last task
}

// work runs unclaimed tasks until none is left. It reports whether the
// caller finished the superstep's last task.
func (p *superstep[S]) work() (last bool) {
	n := int32(len(p.slots))
	for {
		i := p.claimed.Add(1) - 1
		if i >= n {
			return false
		}
		p.runTask(int(i))
		if p.pending.Add(-1) == 0 {
			return true
		}
	}
}

func (p *superstep[S]) help() {
	if p.work() {
		close(p.done)
	}
}

func (p *superstep[S]) runTask(i int) {
	r, t, sl := p.r, &p.r.tasks[i], &p.slots[i]
	nd := r.g.nodes[t.node]
	sl.ctx.meta.node = nd.name
	in := p.st
	if t.in != nil {
		in = t.in
	}
	sl.out, sl.cmd, sl.err = r.exec(&sl.ctx, &sl.ctx.meta, nd, in, true)
	if sl.err != nil {
		p.cancel() // the superstep fails: stop its other tasks
	}
}

// parallel runs the superstep's tasks concurrently on one snapshot and merges
// their outputs in task order.
func (r *run[S]) parallel(st S) (S, error) {
	tasks := r.tasks
	n := len(tasks)
	pctx, cancel := context.WithCancel(&r.ctx)
	defer cancel()
	p := &superstep[S]{r: r, st: &st, slots: make([]slot[S], n), cancel: cancel, done: make(chan struct{})}
	p.pending.Store(int32(n))
	for i := range p.slots {
		p.slots[i].ctx = taskCtx{Context: pctx, meta: r.ctx.meta}
	}
	for range n - 1 {
		go p.help()
	}
	if !p.work() {
		<-p.done
	}
	if err := firstError(p.slots); err != nil {
		return st, err
	}
	ws := make([]write[S], 0, 2*n)
	for i := range tasks {
		w := write[S]{node: r.g.nodes[tasks[i].node].name, in: &st, out: &p.slots[i].out}
		if tasks[i].in != nil {
			w.in, w.send = tasks[i].in, true
		}
		ws = append(ws, w)
	}
	merged, err := r.g.fields.merge(&st, ws, ws[n:n])
	if err != nil {
		return st, err
	}
	for i := range tasks {
		if err := r.successors(&r.ctx, r.g.nodes[tasks[i].node], &merged, p.slots[i].cmd); err != nil {
			return st, err
		}
	}
	return merged, nil
}

// firstError picks, in task order, the first error that is not a
// cancellation caused by another task's failure.
func firstError[S any](slots []slot[S]) error {
	var first error
	for i := range slots {
		err := slots[i].err
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return first
}

// successors records the tasks triggered after node n (nil for START).
func (r *run[S]) successors(ctx context.Context, n *node[S], st *S, cmd *Command[S]) error {
	if r.seen == nil && len(r.g.nodes) > 64 {
		r.seen = make([]bool, len(r.g.nodes))
	}
	var (
		edges  = r.g.start
		routes = r.g.startRts
		from   = START
	)
	if n != nil {
		edges, routes, from = n.edges, n.routes, n.name
	}
	for _, i := range edges {
		r.trigger(i)
	}
	for _, rt := range routes {
		if err := r.follow(ctx, rt, st); err != nil {
			return err
		}
	}
	if cmd != nil {
		for _, d := range cmd.Goto {
			i, ok := n.cmdTo[d]
			if !ok {
				return &RouteError{From: from, Dest: d, Declared: n.spec.dests}
			}
			if i >= 0 {
				r.trigger(i)
			}
		}
		for _, s := range cmd.Send {
			i, ok := n.cmdTo[s.Node]
			if !ok || i < 0 {
				return &RouteError{From: from, Dest: s.Node, Declared: n.spec.dests}
			}
			in := s.State
			r.sends = append(r.sends, task[S]{node: i, in: &in})
		}
	}
	if n != nil {
		for _, j := range n.joins {
			r.arrive(j, n.idx)
		}
	}
	return nil
}

func (r *run[S]) trigger(i int) {
	if r.seen == nil {
		if r.seenBits&(1<<i) != 0 {
			return
		}
		r.seenBits |= 1 << i
	} else {
		if r.seen[i] {
			return
		}
		r.seen[i] = true
	}
	r.next = append(r.next, task[S]{node: i})
}

// arrive records that source node src of join j has run; when all have,
// the join's target is triggered and the join starts over.
func (r *run[S]) arrive(j, src int) {
	if r.joinDone == nil {
		r.joinDone = make([][]bool, len(r.g.joins))
	}
	jn := &r.g.joins[j]
	if r.joinDone[j] == nil {
		r.joinDone[j] = make([]bool, len(jn.from))
	}
	done := r.joinDone[j]
	all := true
	for k, f := range jn.from {
		if f == src {
			done[k] = true
		}
		all = all && done[k]
	}
	if all {
		clear(done)
		r.trigger(jn.to)
	}
}

// follow evaluates a route or fan-out and records its destinations.
func (r *run[S]) follow(ctx context.Context, rt *route[S], st *S) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &RouteError{From: rt.from, Declared: rt.declare, Err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
		}
	}()
	if rt.fan != nil {
		for _, s := range rt.fan(ctx, *st) {
			i, ok := rt.to[s.Node]
			if !ok {
				return &RouteError{From: rt.from, Dest: s.Node, Declared: rt.declare}
			}
			in := s.State
			r.sends = append(r.sends, task[S]{node: i, in: &in})
		}
		return nil
	}
	for _, d := range rt.fn(ctx, *st) {
		i, ok := rt.to[d]
		if !ok {
			return &RouteError{From: rt.from, Dest: d, Declared: rt.declare}
		}
		if i >= 0 {
			r.trigger(i)
		}
	}
	return nil
}
