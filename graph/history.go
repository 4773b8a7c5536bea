package graph

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/trellis-go/trellis/state"
)

// Snapshot is a thread's state at one checkpoint.
type Snapshot[S any] struct {
	// State is the state after the checkpoint's superstep.
	State S
	// Next lists the nodes the next superstep will run; empty when the
	// run ended.
	Next []string
	// Interrupts lists what the thread waits for at this checkpoint.
	Interrupts []PendingInterrupt
	// Thread is the thread's ID.
	Thread string
	// CheckpointID identifies the checkpoint; ParentID the one before it.
	CheckpointID, ParentID string
	// Step is the superstep after which the checkpoint was taken (-1 for
	// the run's input).
	Step int
	// Source says what wrote it: "input", "loop", "update", or "fork" (a
	// run from an earlier checkpoint, FromCheckpoint).
	Source string
	// CreatedAt is when it was written.
	CreatedAt time.Time
}

func (g *Graph[S]) checkpointer(thread string) (*checkpointer[S], error) {
	if g.saver == nil {
		return nil, fmt.Errorf("graph %q: %w", g.name, ErrNoCheckpointer)
	}
	if thread == "" {
		return nil, fmt.Errorf("graph %q: %w", g.name, ErrNoThread)
	}
	ser := g.ser
	if ser == nil {
		ser = state.JSON()
	}
	return &checkpointer[S]{saver: g.saver, ser: ser, thread: thread, durability: DurabilitySync}, nil
}

func (g *Graph[S]) toSnapshot(cp *state.Checkpoint, snap *snapshot[S], recs map[string]*taskRecord[S]) Snapshot[S] {
	out := Snapshot[S]{
		State: snap.State, Interrupts: pendingInterrupts(snap, recs), Thread: cp.ThreadID,
		CheckpointID: cp.ID, ParentID: cp.ParentID, Step: cp.Step, Source: cp.Source, CreatedAt: cp.CreatedAt,
	}
	for _, t := range snap.Tasks {
		out.Next = append(out.Next, t.Node)
	}
	return out
}

// GetState returns a checkpointed thread's latest state (or the state at
// the checkpoint FromCheckpoint names): the state, the nodes due next, and
// the pending interrupts.
func (g *Graph[S]) GetState(ctx context.Context, thread string, opts ...RunOption) (Snapshot[S], error) {
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	c, err := g.checkpointer(thread)
	if err != nil {
		return Snapshot[S]{}, err
	}
	tup, snap, recs, err := c.load(ctx, cfg.from)
	if err != nil {
		return Snapshot[S]{}, err
	}
	return g.toSnapshot(&tup.Checkpoint, snap, recs), nil
}

// History returns a thread's checkpoints, newest first, at most limit of
// them (all if limit is zero). The newest shows the interrupts the thread
// waits for, as GetState does; older ones show the static interrupts
// (InterruptBefore, InterruptAfter) recorded with them.
func (g *Graph[S]) History(ctx context.Context, thread string, limit int) ([]Snapshot[S], error) {
	c, err := g.checkpointer(thread)
	if err != nil {
		return nil, err
	}
	cps, err := c.saver.List(ctx, thread, "", state.ListOptions{Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("graph: thread %q: listing checkpoints: %w", thread, err)
	}
	out := make([]Snapshot[S], 0, len(cps))
	for i := range cps {
		tup := state.Tuple{Checkpoint: cps[i]}
		if i == 0 {
			// The thread's latest checkpoint, with its pending writes, so
			// that it shows the interrupts the thread waits for, as
			// GetState does.
			if tup, err = c.saver.Get(ctx, thread, "", cps[0].ID); err != nil {
				return nil, fmt.Errorf("graph: thread %q: checkpoint %q: %w", thread, cps[0].ID, err)
			}
		}
		snap, recs, err := decodeTuple[S](c.ser, &tup)
		if err != nil {
			return nil, fmt.Errorf("graph: thread %q: %w", thread, err)
		}
		out = append(out, g.toSnapshot(&cps[i], snap, recs))
	}
	return out, nil
}

// UpdateState forks a thread: it writes a new checkpoint whose state is
// update applied to the latest state (or to the state at FromCheckpoint), as
// if node asNode had returned it. The nodes due next are those that follow
// asNode (its edges and routes, evaluated on the new state); with START they
// are the graph's entry nodes, with END nothing is due. Resume continues
// from the new checkpoint. UpdateState returns its ID. Like a run, it fails
// with ErrThreadBusy while a run of g on the thread is in progress.
//
// On the thread's latest checkpoint, paused in the middle of a superstep
// (some of its nodes finished, others were interrupted), the update
// completes that superstep instead: update gets the checkpoint's state and
// its result counts as the write of one of asNode's unfinished tasks (or as
// one more write of asNode); the finished nodes' writes are kept, merged
// with it at the barrier by the state's reducers in task order (two writes
// of a field without a reducer fail with a *state.ConflictError and write
// nothing); the nodes that follow the finished ones and asNode are due, and
// so are the superstep's other unfinished nodes, which run again. As START
// or END, the update replaces the rest of that superstep: the finished
// nodes' writes are merged first, in task order, update gets the result,
// and the nodes due are START's or none, as above.
func (g *Graph[S]) UpdateState(ctx context.Context, thread, asNode string, update func(S) S, opts ...RunOption) (string, error) {
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	c, err := g.checkpointer(thread)
	if err != nil {
		return "", err
	}
	var n *node[S]
	switch asNode {
	case START, END:
	default:
		i, ok := g.byName[asNode]
		if !ok {
			return "", fmt.Errorf("graph %q: UpdateState as node %q: unknown node%s", g.name, asNode, suggest(asNode, g.Nodes()))
		}
		n = g.nodes[i]
	}
	// Like a run, an update takes the thread: written while a run goes on,
	// it would fork the thread from under the run.
	if _, busy := g.running.LoadOrStore(thread, struct{}{}); busy {
		return "", fmt.Errorf("graph %q: thread %q: %w", g.name, thread, ErrThreadBusy)
	}
	defer g.running.Delete(thread)
	tup, snap, recs, err := c.load(ctx, cfg.from)
	if err != nil {
		return "", err
	}
	if c.replays(ctx, cfg.from, tup.Checkpoint.ID) {
		recs = nil // a fork from an earlier checkpoint starts from its state alone
	}
	if cfg.hasIfLatest {
		if err := c.checkLatest(ctx, cfg.ifLatest); err != nil {
			return "", err
		}
	}
	if err := g.checkJoins(thread, tup.Checkpoint.ID, snap.Joins); err != nil {
		return "", err
	}
	r := &run[S]{g: g, cp: c}
	r.tasks, r.next, r.prev = r.bufs[0][:0], r.bufs[1][:0], r.bufs[2][:0]
	r.ctx.Context = ctx
	r.ctx.meta = runMeta{graph: g.name, step: tup.Checkpoint.Step, p: &persistence{saver: c.saver, ser: c.ser, thread: thread, branch: snap.Branch}}
	r.joinDone = snap.Joins
	c.last = tup.Checkpoint.ID
	var st S
	switch {
	case len(recs) > 0 && n != nil:
		// The checkpoint's superstep was under way: the update completes it.
		if st, err = r.completeSuperstep(tup.Checkpoint.ID, snap, recs, n, update); err != nil {
			return "", err
		}
		r.advance()
	default:
		st = snap.State
		if len(recs) > 0 {
			// As START or END on a superstep under way: what its finished
			// nodes wrote is kept, and the update applies to it.
			if st, err = r.finishedState(tup.Checkpoint.ID, snap, recs, asNode); err != nil {
				return "", err
			}
		}
		if update != nil {
			st = update(st)
		}
		if asNode != END {
			if err := r.successors(&r.ctx, n, &st, nil); err != nil {
				return "", err
			}
			r.advance()
		}
	}
	if err := r.checkpoint(tup.Checkpoint.Step+1, "update", &st, nil); err != nil {
		return "", err
	}
	return c.last, c.flush(ctx)
}

// finishedState returns the state of a checkpoint whose superstep was under
// way (recs holds what its tasks recorded) with the writes of the tasks that
// finished merged in task order, for an update as asNode (START or END)
// that replaces the rest of the superstep.
func (r *run[S]) finishedState(id string, snap *snapshot[S], recs map[string]*taskRecord[S], asNode string) (S, error) {
	g := r.g
	var ws []write[S]
	for _, ref := range snap.Tasks {
		if _, err := r.nodeOf(id, ref); err != nil {
			return snap.State, err
		}
		if rec := recs[ref.ID]; rec.finished() {
			ws = append(ws, g.finishedWrite(snap, ref, rec))
		}
	}
	if len(ws) == 0 {
		return snap.State, nil
	}
	st, err := g.fields.merge(&snap.State, ws, make([]write[S], 0, len(ws)))
	if err != nil {
		return snap.State, fmt.Errorf("graph %q: UpdateState as %s: %w", g.name, asNode, err)
	}
	return st, nil
}

// nodeOf returns the index of the node of a task of checkpoint id's
// superstep, or an error when the graph has no such node.
func (r *run[S]) nodeOf(id string, ref taskRef[S]) (int, error) {
	i, ok := r.g.byName[ref.Node]
	if !ok {
		return 0, fmt.Errorf("graph: thread %q: checkpoint %q: %w: node %q is not in graph %q", r.cp.thread, id, ErrCorruptCheckpoint, ref.Node, r.g.name)
	}
	return i, nil
}

// finishedWrite returns the write that a task of a checkpoint's superstep
// recorded when it finished (rec.finished()).
func (g *Graph[S]) finishedWrite(snap *snapshot[S], ref taskRef[S], rec *taskRecord[S]) write[S] {
	g.fields.adoptUnchanged(rec.Output, taskInput(ref.Input, &snap.State))
	return taskWrite(ref.Node, ref.Input, &snap.State, rec.Output)
}

// completeSuperstep finishes the superstep of a checkpoint some of whose
// tasks finished before others paused (recs holds what they recorded), with
// update as the write of node n: the finished tasks' writes and n's meet at
// the barrier in task order (n's in place of the first of n's tasks that did
// not finish, last when there is none), the nodes that follow them are
// triggered, and the other tasks that did not finish are due again. It
// returns the merged state.
func (r *run[S]) completeSuperstep(id string, snap *snapshot[S], recs map[string]*taskRecord[S], n *node[S], update func(S) S) (S, error) {
	g := r.g
	type ran struct {
		n   *node[S]
		cmd *Command[S]
	}
	var (
		ws    []write[S]
		after []ran
		again []task[S]
	)
	out := snap.State
	if update != nil {
		out = update(out)
	}
	mine := write[S]{node: n.name, in: &snap.State, out: &out}
	// The update answers for the first of n's tasks that did not finish;
	// without one, it is one more write of n.
	at := slices.IndexFunc(snap.Tasks, func(ref taskRef[S]) bool { return ref.Node == n.name && !recs[ref.ID].finished() })
	for k, ref := range snap.Tasks {
		i, err := r.nodeOf(id, ref)
		if err != nil {
			return snap.State, err
		}
		switch rec := recs[ref.ID]; {
		case k == at:
			ws = append(ws, mine)
			after = append(after, ran{n: n})
		case rec.finished():
			ws = append(ws, g.finishedWrite(snap, ref, rec))
			after = append(after, ran{n: g.nodes[i], cmd: rec.command()})
		default:
			again = append(again, task[S]{node: i, in: ref.Input})
		}
	}
	if at < 0 {
		ws = append(ws, mine)
		after = append(after, ran{n: n})
	}
	st, err := g.fields.merge(&snap.State, ws, make([]write[S], 0, len(ws)))
	if err != nil {
		return snap.State, fmt.Errorf("graph %q: UpdateState as node %q: %w", g.name, n.name, err)
	}
	for _, a := range after {
		if err := r.successors(&r.ctx, a.n, &st, a.cmd); err != nil {
			return snap.State, err
		}
	}
	for _, t := range again {
		if t.in != nil {
			r.sends = append(r.sends, t)
		} else {
			r.trigger(t.node)
		}
	}
	return st, nil
}
