package graph

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/trellis-go/trellis/store"
)

// Stepper drives a run of a graph one superstep at a time for an executor
// that runs the tasks itself, elsewhere and perhaps much later: a durable
// workflow engine that runs each task as a job of its own and replays its
// own decisions. The graph's own runs (Invoke, Stream) do not use it.
//
// A Stepper plans: Tasks lists the current superstep's tasks, the executor
// runs each with RunTask (anywhere, in any process, any number of times),
// and Advance merges their outputs at the barrier exactly as a run of the
// graph does (node order, reducers, conflicts) and evaluates edges,
// conditional edges, joins and fan-outs to plan the next superstep. It
// starts no goroutine, reads no clock and draws no random number, so an
// executor that replays its decisions gets the same plan every time,
// provided the graph's routing functions are deterministic.
//
// A Stepper does not checkpoint (the executor keeps its own history: Save
// and RestoreStepper carry a run from one Stepper to another), does not
// retry (RunTask runs one attempt; see NodeSettings) and emits no events of
// its own (RunTask hands a task's events to TaskScope.Events); it reports
// static interrupts (Before, After) and leaves pausing to the executor. It
// is not safe for concurrent use.
type Stepper[S any] struct {
	r  *run[S]
	st S
	n  int
}

// StepTask is one task of a superstep, as a Stepper plans it.
type StepTask[S any] struct {
	// Node is the name of the task's node.
	Node string `json:"node"`
	// Input is the task's own input, set for a task started by a Send; nil
	// for a task triggered by edges, which reads the superstep's state.
	Input *S `json:"input,omitempty"`
}

// TaskOutput is what one task returned.
type TaskOutput[S any] struct {
	// State is the state the node returned.
	State S `json:"state"`
	// Goto and Send are a command node's choices (see Command).
	Goto []string  `json:"goto,omitempty"`
	Send []Send[S] `json:"send,omitempty"`
}

func (o *TaskOutput[S]) command() *Command[S] {
	if len(o.Goto) == 0 && len(o.Send) == 0 {
		return nil
	}
	return &Command[S]{Goto: o.Goto, Send: o.Send}
}

// NewStepper starts a run of the graph from input: it evaluates the edges
// leaving START (ctx is what conditional edges from START receive) and
// plans the first superstep.
func (g *Graph[S]) NewStepper(ctx context.Context, input S) (*Stepper[S], error) {
	r := &run[S]{g: g, limit: g.maxSteps}
	r.tasks, r.next, r.prev = r.bufs[0][:0], r.bufs[1][:0], r.bufs[2][:0]
	r.ctx.Context = ctx
	r.ctx.meta = runMeta{graph: g.name, step: -1, task: &r.scope}
	if err := r.successors(&r.ctx, nil, &input, nil); err != nil {
		return nil, err
	}
	r.advance()
	return &Stepper[S]{r: r, st: input}, nil
}

// Tasks returns the tasks of the current superstep, in the order in which
// their outputs are merged; none when the run is over.
func (s *Stepper[S]) Tasks() []StepTask[S] {
	out := make([]StepTask[S], len(s.r.tasks))
	for i, t := range s.r.tasks {
		out[i] = StepTask[S]{Node: s.r.g.nodes[t.node].name, Input: t.in}
	}
	return out
}

// Before returns the static interrupts (InterruptBefore) that the current
// superstep's tasks hit: an executor that honours them pauses before it
// runs the superstep. Their IDs depend only on the superstep and the
// tasks' indexes.
func (s *Stepper[S]) Before() []PendingInterrupt {
	if len(s.r.g.before) == 0 {
		return nil
	}
	return s.r.staticHits(s.r.g.before, s.r.tasks, Before, "", s.n)
}

// After returns the static interrupts (InterruptAfter) that the tasks of
// the superstep Advance just ended hit: an executor that honours them
// pauses before it runs the next superstep.
func (s *Stepper[S]) After() []PendingInterrupt {
	if len(s.r.g.after) == 0 || s.n == 0 {
		return nil
	}
	return s.r.staticHits(s.r.g.after, s.r.prev, After, "", s.n-1)
}

// Done reports whether the run is over: no task is planned.
func (s *Stepper[S]) Done() bool { return len(s.r.tasks) == 0 }

// State returns the state after the last superstep (the input before the
// first).
func (s *Stepper[S]) State() S { return s.st }

// Step returns the number of the current superstep: 0 for the first.
func (s *Stepper[S]) Step() int { return s.n }

// Advance ends the current superstep with the outputs of its tasks, one
// per task of Tasks, in the same order. It merges them into the state (a
// lone task triggered by edges gives the state its output; otherwise each
// task's writes — the fields its output changed from its input — are
// merged by the fields' reducers, in task order), evaluates the routes of
// the tasks' nodes with ctx and plans the next superstep. A write conflict
// is a *state.ConflictError, a bad route a *RouteError; after either the
// run cannot go on. A run that still has work after the graph's superstep
// limit fails with a *StepLimitError.
//
// Outputs may have travelled through a serializer: a field an output holds
// equal (reflect.DeepEqual) to the task's input counts as not written.
func (s *Stepper[S]) Advance(ctx context.Context, outs []TaskOutput[S]) error {
	r := s.r
	if len(outs) != len(r.tasks) {
		return fmt.Errorf("graph %q: Advance: %d outputs for %d tasks", r.g.name, len(outs), len(r.tasks))
	}
	if len(outs) == 0 {
		return nil
	}
	saved := r.ctx.Context
	r.ctx.Context = ctx
	defer func() { r.ctx.Context = saved }()
	st := s.st
	var merged S
	if len(r.tasks) == 1 && r.tasks[0].in == nil {
		merged = outs[0].State
		r.g.fields.adoptUnchanged(&merged, &st)
	} else {
		ws := make([]write[S], 0, 2*len(outs))
		for i, t := range r.tasks {
			out := &outs[i].State
			r.g.fields.adoptUnchanged(out, taskInput(t.in, &st))
			ws = append(ws, taskWrite(r.g.nodes[t.node].name, t.in, &st, out))
		}
		var err error
		if merged, err = r.g.fields.merge(&st, ws, ws[len(outs):len(outs)]); err != nil {
			return err
		}
	}
	for i, t := range r.tasks {
		if err := r.successors(&r.ctx, r.g.nodes[t.node], &merged, outs[i].command()); err != nil {
			return err
		}
	}
	r.advance()
	s.st = merged
	s.n++
	if len(r.tasks) > 0 && s.n >= r.limit {
		return &StepLimitError{Limit: r.limit, Nodes: r.names(r.tasks)}
	}
	return nil
}

// StepperState is where a Stepper stands between two supersteps: the
// state, the number of the next superstep, its tasks, and the progress of
// the graph's joins. It is what a Stepper needs to go on from there
// (RestoreStepper): in another process, or after a workflow engine has
// started its history afresh. It travels as JSON.
type StepperState[S any] struct {
	State S             `json:"state"`
	Step  int           `json:"step"`
	Tasks []StepTask[S] `json:"tasks,omitempty"`
	Joins [][]bool      `json:"joins,omitempty"`
}

// Save returns where the Stepper stands, for RestoreStepper. Taken after
// Advance (and after the executor has honoured After), it holds all the
// run needs to go on.
func (s *Stepper[S]) Save() StepperState[S] {
	out := StepperState[S]{State: s.st, Step: s.n, Tasks: s.Tasks()}
	if s.r.joinDone != nil {
		out.Joins = make([][]bool, len(s.r.joinDone))
		for i, d := range s.r.joinDone {
			out.Joins[i] = slices.Clone(d)
		}
	}
	return out
}

// RestoreStepper returns a Stepper that goes on from st, a Stepper's
// Save: its next Advance ends the superstep st plans, as the saved
// Stepper's would have. The superstep limit counts the supersteps before
// st too. A task of a node the graph does not have, or joins that do not
// fit the graph's, fail with an error matching ErrCorruptCheckpoint (st
// was saved by another version of the graph).
func (g *Graph[S]) RestoreStepper(st StepperState[S]) (*Stepper[S], error) {
	r := &run[S]{g: g, limit: g.maxSteps}
	r.tasks, r.next, r.prev = r.bufs[0][:0], r.bufs[1][:0], r.bufs[2][:0]
	r.ctx.Context = context.Background()
	r.ctx.meta = runMeta{graph: g.name, step: -1, task: &r.scope}
	for _, t := range st.Tasks {
		i, ok := g.byName[t.Node]
		if !ok {
			return nil, fmt.Errorf("graph %q: RestoreStepper: %w: no node %q", g.name, ErrCorruptCheckpoint, t.Node)
		}
		r.tasks = append(r.tasks, task[S]{node: i, in: t.Input})
	}
	if err := g.checkJoins("", "", st.Joins); err != nil {
		return nil, err
	}
	if len(st.Joins) > 0 {
		r.joinDone = make([][]bool, len(st.Joins))
		for i, d := range st.Joins {
			r.joinDone[i] = slices.Clone(d)
		}
	}
	return &Stepper[S]{r: r, st: st.State, n: st.Step}, nil
}

// TaskScope places a task run by RunTask: the superstep and the index of
// the task in it (interrupt IDs derive from them), the run's thread, and
// the values that answer the task's interrupts, by interrupt ID.
type TaskScope struct {
	Step   int
	Index  int
	Thread string
	Resume map[string]any
	// Events, when set, receives the events of the modes in Modes that
	// the task emits while it runs: its node starting and ending
	// (ModeEvents), custom events (ModeCustom, EmitCustom), model tokens
	// (ModeMessages), and those of the subgraphs and agents it runs.
	// Interrupts (KindInterrupt) are sent whatever Modes holds. Events
	// may be called from goroutines the node starts, concurrently.
	Events func(Event)
	Modes  Mode
}

// RunTask runs the task t of the superstep scope places, once: with the
// node's timeout, a panic becoming a *NodeError, an error wrapped in a
// *NodeError naming the node, and Interrupt answered from scope.Resume
// (a task that asks for input fails with an *InterruptError whose IDs are
// the same every time the task runs in the same place). in is the
// superstep's state, read when t has no input of its own. Retries are the
// caller's: see NodeSettings.
func (g *Graph[S]) RunTask(ctx context.Context, t StepTask[S], in S, scope TaskScope) (TaskOutput[S], error) {
	i, ok := g.byName[t.Node]
	if !ok {
		return TaskOutput[S]{}, fmt.Errorf("graph %q: RunTask: no node %q", g.name, t.Node)
	}
	n := g.nodes[i]
	r := &run[S]{g: g}
	r.scope = taskScope{step: scope.Step, idx: scope.Index}
	if g.store != nil {
		ctx = store.NewContext(ctx, g.store)
	}
	r.ctx.Context = ctx
	m := &r.ctx.meta
	*m = runMeta{graph: g.name, node: n.name, step: scope.Step, task: &r.scope}
	if scope.Thread != "" {
		m.p = &persistence{thread: scope.Thread}
	}
	if len(scope.Resume) > 0 {
		m.resume = &resumeSet{}
		m.resume.add(scope.Resume)
	}
	var start time.Time
	if scope.Events != nil {
		m.emit = &emitter{modes: scope.Modes, chModes: scope.Modes, fn: scope.Events}
		if scope.Modes&ModeEvents != 0 {
			start = time.Now()
			m.emit.send(ModeEvents, Event{Kind: KindNodeStart, Graph: g.name, Step: scope.Step, Node: n.name, Time: start})
		}
	}
	arg := in
	if t.Input != nil {
		arg = *t.Input
	}
	arg = g.fields.isolated(arg, false)
	out, cmd, err := r.call(&r.ctx, n, arg)
	if err != nil {
		err = r.wrap(m, n, 1, err)
	}
	if !start.IsZero() {
		m.emit.send(ModeEvents, Event{Kind: KindNodeEnd, Graph: g.name, Step: scope.Step, Node: n.name, Duration: time.Since(start), Err: err})
	}
	if err != nil {
		return TaskOutput[S]{}, err
	}
	res := TaskOutput[S]{State: out}
	if cmd != nil {
		// Advance checks the destinations, as a run does after the barrier.
		res.Goto, res.Send = cmd.Goto, cmd.Send
	}
	return res, nil
}

// NodeSettings are the settings of a node that an executor running its
// tasks elsewhere applies itself.
type NodeSettings struct {
	// Retry is the node's retry policy, nil without one (WithRetry).
	Retry *RetryPolicy
	// Timeout bounds each attempt, 0 without one (WithTimeout). RunTask
	// applies it already.
	Timeout time.Duration
}

// NodeSettings returns the settings of the named node.
func (g *Graph[S]) NodeSettings(node string) (NodeSettings, bool) {
	i, ok := g.byName[node]
	if !ok {
		return NodeSettings{}, false
	}
	n := g.nodes[i]
	return NodeSettings{Retry: n.retry, Timeout: n.timeout}, true
}
