package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/internal/runkey"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/store"
)

// runMeta is what a node's context knows about the run it belongs to.
type runMeta struct {
	graph string
	path  []string
	node  string // with live, read on the run's goroutine only
	step  int    // with live, read on the run's goroutine only
	// live is where the run's own context, whose node and step change as
	// the run goes on, publishes them to goroutines its nodes left behind
	// (Emit, NodeName, Step, Detach); nil for the contexts whose node and
	// step never change once a node has them.
	live   *livePlace
	emit   *emitter
	tel    *telemetry
	task   *taskScope
	resume *resumeSet
	p      *persistence // nil when the run is not checkpointed
}

// persistence is how and where a run checkpoints; nested runs inherit it
// with a namespace of their own.
type persistence struct {
	saver      state.Saver
	ser        state.Serializer
	durability Durability
	thread     string
	ns         string
	// branch is the ID of the fork checkpoint that began the branch of the
	// thread a top-level run continues ("" for the thread's first), which
	// keyed nested runs are scoped to (see nestedNamespace).
	branch string
}

func (m *runMeta) thread() string {
	if m.p == nil {
		return ""
	}
	return m.p.thread
}

// Thread returns the run's thread: a runMeta is what a run's context
// answers the key of internal/runkey with, for the packages below graph.
func (m *runMeta) Thread() string { return m.thread() }

// A runMeta is also what the nodes of this module read of the run they
// run in, with one lookup.
var _ runkey.Node = (*runMeta)(nil)

func (m *runMeta) ns() string {
	if m.p == nil {
		return ""
	}
	return m.p.ns
}

// metaKey is the key a run's context answers with its *runMeta; it is
// runkey's, so that tools read the thread without importing graph.
type metaKey = runkey.Key

func metaFrom(ctx context.Context) *runMeta {
	m, _ := ctx.Value(metaKey{}).(*runMeta)
	return m
}

// taskScope identifies the task a node runs in, for interrupts.
type taskScope struct {
	mu        sync.Mutex
	id        string // the checkpointed task's ID, or empty
	step, idx int
	calls     int // interrupts raised outside tool calls
}

// taskID returns the task's ID: its checkpointed ID, or one made of the
// superstep and the task's index (built only when asked for).
func (t *taskScope) taskID() string {
	if t.id != "" {
		return t.id
	}
	return localTaskID(t.step, t.idx)
}

// resumeSet holds the values a resumed run answers interrupts with.
type resumeSet struct {
	mu     sync.RWMutex
	values map[string]any
}

func (r *resumeSet) get(id string) (any, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.values[id]
	return v, ok
}

func (r *resumeSet) add(values map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.values == nil {
		r.values = make(map[string]any, len(values))
	}
	for k, v := range values {
		r.values[k] = v
	}
}

func (r *resumeSet) snapshot() map[string]any {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.values) == 0 {
		return nil
	}
	out := make(map[string]any, len(r.values))
	for k, v := range r.values {
		out[k] = v
	}
	return out
}

// runCtx carries a run's metadata. The nodes of sequential supersteps share
// the run's runCtx (its node and step are updated between them), so running
// a node allocates no context.
type runCtx struct {
	context.Context
	meta runMeta
	live livePlace // meta.live
}

func (c *runCtx) Value(key any) any {
	if key == (metaKey{}) {
		return &c.meta
	}
	return c.Context.Value(key)
}

// livePlace is the node and superstep of a run's own context, for any
// goroutine to read. An atomic word, not a lock: the run writes it at every
// sequential node, the hot path, and readers are rare.
type livePlace struct {
	at    atomic.Uint64 // the superstep + 1 (high half), the node's index + 1 (low half; 0: none)
	names []string      // the graph's node names, by index; set before any node runs
}

// place returns the node and step of m: from live, when m is a run's own
// context, which any goroutine may read.
func (m *runMeta) place() (node string, step int) {
	l := m.live
	if l == nil {
		return m.node, m.step
	}
	at := l.at.Load()
	if i := uint32(at); i > 0 && int(i) <= len(l.names) {
		node = l.names[i-1]
	}
	return node, int(int32(uint32(at>>32))) - 1
}

// publish makes the node (index i, or -1 for none) and the step of m,
// the run's own context, visible to other goroutines.
func (m *runMeta) publish(i int) {
	if l := m.live; l != nil {
		l.at.Store(uint64(uint32(int32(m.step+1)))<<32 | uint64(uint32(i+1)))
	}
}

// setNode sets the node of m, the run's own context: the node name, of
// index i, or none ("", -1).
func (m *runMeta) setNode(name string, i int) {
	m.node = name
	m.publish(i)
}

// setStep sets the superstep of m, the run's own context, between nodes.
func (m *runMeta) setStep(step int) {
	m.step = step
	m.publish(-1)
}

// NodeName returns the name of the node running with ctx, or "".
func NodeName(ctx context.Context) string {
	if m := metaFrom(ctx); m != nil {
		node, _ := m.place()
		return node
	}
	return ""
}

// Step returns the superstep of the node running with ctx, or -1.
func Step(ctx context.Context) int {
	if m := metaFrom(ctx); m != nil {
		_, step := m.place()
		return step
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

// ThreadID returns the thread of the run behind ctx, or "".
func ThreadID(ctx context.Context) string {
	if m := metaFrom(ctx); m != nil {
		return m.thread()
	}
	return ""
}

// RunOption configures one run.
type RunOption func(*runConfig)

type runConfig struct {
	modes      Mode
	stepLimit  int
	thread     string
	from       string
	resume     map[string]any
	resumeOne  any
	hasOne     bool
	durability *Durability
	logger     *slog.Logger
	callID     string
	gate       func(context.Context) error
	// ifLatest is the checkpoint IfLatest names, when hasIfLatest.
	ifLatest    string
	hasIfLatest bool
}

// WithStepGate asks gate, before each superstep of a run (the first
// included), whether the run may go on. When gate returns an error, the
// run stops there, with its last superstep checkpointed, and returns that
// error (wrapped, with the state of the last superstep): Resume continues
// the thread from that checkpoint, and no superstep runs twice. Workers
// that hand a run to another process at a superstep boundary (the runs
// layer, when it shuts down) use it. Nested runs do not ask it: their
// parent's boundary is the one that counts.
func WithStepGate(gate func(context.Context) error) RunOption {
	return func(c *runConfig) { c.gate = gate }
}

// IfLatest makes a run, or an UpdateState, go ahead only if the thread's
// latest checkpoint is still id: the one the caller read the thread at to
// make the run's input (Snapshot.CheckpointID of its GetState), or "" for a
// thread that had none (GetState failed with state.ErrNotFound).
//
// A new turn made from a state read earlier would otherwise replace
// whatever another turn added to the thread since: it would be lost
// without an error. With IfLatest the run checks the thread's latest
// checkpoint before any node runs, and stores its first checkpoint only on
// the same condition, checked and stored at once (state.ConditionalSaver;
// every store of this module is one). When another writer got there first,
// the run fails with an error matching ErrThreadBusy and state.ErrNotLatest,
// and has run no node and stored nothing: the caller may read the thread
// again and retry. agent.Continue and the AG-UI handler pass it.
//
// With Resume (without FromCheckpoint) it makes the resume values answer
// the interrupts of checkpoint id only. A graph without a checkpointer
// ignores it.
func IfLatest(id string) RunOption {
	return func(c *runConfig) { c.ifLatest, c.hasIfLatest = id, true }
}

// WithCallID gives the events of a nested run (Graph.Nested) the ID of the
// tool call that started it, in Event.CallID; the handoff tools pass their
// call's ID. Other runs ignore it.
func WithCallID(id string) RunOption {
	return func(c *runConfig) { c.callID = id }
}

// WithLogger logs the run's lifecycle to l with log/slog: nodes starting
// (Debug) and ending (Info, Error on failure), the lifecycle events of tools
// and models the nodes run, custom events, interrupts and the run's end.
// Works with Invoke, Stream and Resume alike.
func WithLogger(l *slog.Logger) RunOption {
	return func(c *runConfig) { c.logger = l }
}

// LogModes are the modes of the events WithLogger logs.
const LogModes = ModeEvents | ModeCustom

// WithModes selects the events Stream delivers (every mode but ModeDebug
// unless set). Invoke ignores it.
func WithModes(m Mode) RunOption {
	return func(c *runConfig) { c.modes = m }
}

// WithStepLimit overrides the graph's superstep limit for one run; n of
// zero or less keeps the graph's limit.
func WithStepLimit(n int) RunOption {
	return func(c *runConfig) { c.stepLimit = n }
}

// WithThread names the thread a run belongs to. With a checkpointer, the run
// writes its checkpoints to the thread, and Resume, GetState and History
// read them back.
func WithThread(id string) RunOption {
	return func(c *runConfig) { c.thread = id }
}

// WithResume answers the interrupt with the given ID when resuming. Give it
// once per interrupt to answer several at once.
func WithResume(interruptID string, value any) RunOption {
	return func(c *runConfig) {
		if c.resume == nil {
			c.resume = map[string]any{}
		}
		c.resume[interruptID] = value
	}
}

// WithResumeValue answers the single pending interrupt of a thread. Resume
// fails if more than one is pending (use WithResume then), and, with an
// error that matches ErrNothingPending, if none that takes a value is: the
// interrupt was answered already, the run ended, or it is paused at a
// static interrupt, which Resume continues without a value.
func WithResumeValue(value any) RunOption {
	return func(c *runConfig) { c.resumeOne, c.hasOne = value, true }
}

// FromCheckpoint makes Resume or GetState start from the given checkpoint
// instead of the thread's latest. Resuming from an earlier checkpoint
// replays the run from there (its tasks run again) on a new branch of the
// thread's history, which starts with a copy of the checkpoint (Source
// "fork") and becomes the thread's latest. Naming the latest checkpoint
// resumes as without the option.
func FromCheckpoint(id string) RunOption {
	return func(c *runConfig) { c.from = id }
}

// WithDurability overrides the graph's durability mode for one run.
func WithDurability(d Durability) RunOption {
	return func(c *runConfig) { c.durability = &d }
}

type task[S any] struct {
	node int
	in   *S             // input of a send; nil for a task triggered by an edge
	done *taskRecord[S] // output saved before a resume
}

// lastID returns the ID of the latest checkpoint, "" without checkpoints.
func (r *run[S]) lastID() string {
	if r.cp == nil {
		return ""
	}
	return r.cp.last
}

// taskID returns the ID of task i of the current superstep: the ID of the
// checkpoint that precedes the superstep and the task's index.
func (r *run[S]) taskID(i int) string {
	if r.cp == nil {
		return ""
	}
	return checkpointTaskID(r.cp.last, i)
}

// checkpointTaskID is the ID of task i of the superstep that follows the
// checkpoint cpID.
func checkpointTaskID(cpID string, i int) string {
	return cpID + "/" + strconv.Itoa(i)
}

// run is the state of one run of a graph.
type run[S any] struct {
	g          *Graph[S]
	ctx        runCtx
	limit      int
	cp         *checkpointer[S]
	gate       func(context.Context) error // WithStepGate's, top level only
	scope      taskScope                   // the task scope of sequential supersteps
	skipBefore bool
	nested     bool // the run is part of another run
	tel        *telemetry
	tasks      []task[S]
	next       []task[S]
	prev       []task[S]
	sends      []task[S]
	seen       []bool // triggered nodes, for graphs of more than 64 nodes
	seenBits   uint64 // triggered nodes, for graphs of up to 64 nodes
	joinDone   [][]bool
	bufs       [3][2]task[S]
}

// Invoke runs the graph from input to the end and returns the final state.
// It is Stream with every event discarded.
//
// When the run is interrupted, Invoke returns the state of the last
// completed superstep and an *InterruptError listing what it waits for.
func (g *Graph[S]) Invoke(ctx context.Context, input S, opts ...RunOption) (S, error) {
	if len(opts) == 0 {
		return g.execute(ctx, &input, &noOptions, nil, nil)
	}
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	var em *emitter
	if cfg.logger != nil {
		em = &emitter{modes: LogModes, log: cfg.logger, logModes: LogModes}
	}
	return g.execute(ctx, &input, &cfg, em, nil)
}

// growStack makes the stack of the goroutine that runs a streamed run as
// large as a run usually needs, at once and while the stack is shallow:
// grown step by step, every growth copies every frame on it.
//
//go:noinline
func growStack(i int) byte {
	var pad [8 << 10]byte
	pad[i] = 1
	return pad[(i*7)%len(pad)]
}

// noOptions is the configuration of runs given no options. execute never
// writes to its configuration, so runs share it.
var noOptions runConfig

// Stream runs the graph and yields its events as they happen. The last
// element is an event of kind KindDone carrying the final state, or a
// non-nil error (an *InterruptError if the run paused). Breaking out of the
// loop, or leaving it by a panic or runtime.Goexit, cancels the run and waits
// for it to stop.
func (g *Graph[S]) Stream(ctx context.Context, input S, opts ...RunOption) iter.Seq2[Event, error] {
	return g.stream(ctx, &input, opts)
}

// Resume continues a checkpointed thread from its latest checkpoint (or the
// one FromCheckpoint names): tasks whose output was saved are not run again,
// and interrupts are answered with the values given by WithResume or
// WithResumeValue.
func (g *Graph[S]) Resume(ctx context.Context, thread string, opts ...RunOption) (S, error) {
	cfg := runConfig{thread: thread}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.thread = thread
	var em *emitter
	if cfg.logger != nil {
		em = &emitter{modes: LogModes, log: cfg.logger, logModes: LogModes}
	}
	return g.execute(ctx, nil, &cfg, em, nil)
}

// ResumeStream is Resume with the events of Stream.
func (g *Graph[S]) ResumeStream(ctx context.Context, thread string, opts ...RunOption) iter.Seq2[Event, error] {
	return g.stream(ctx, nil, append(slices.Clip(opts), WithThread(thread)))
}

func (g *Graph[S]) stream(ctx context.Context, input *S, opts []RunOption) iter.Seq2[Event, error] {
	cfg := runConfig{modes: ModeAll &^ ModeDebug}
	for _, o := range opts {
		o(&cfg)
	}
	return func(yield func(Event, error) bool) {
		ctx, cancelCause := context.WithCancelCause(ctx)
		cancel := func() { cancelCause(errStreamLeft) }
		defer cancel()
		se := &struct {
			emitter
			gate emitGate
		}{emitter: emitter{modes: cfg.modes, chModes: cfg.modes, ch: make(chan Event, 64), stop: make(chan struct{})}}
		em := &se.emitter
		em.gate = &se.gate // one allocation for both
		if cfg.logger != nil {
			em.log, em.logModes = cfg.logger, LogModes
			em.modes |= LogModes
		}
		var (
			final S
			err   error
		)
		go func() {
			defer em.end()
			growStack(0)
			final, err = g.execute(ctx, input, &cfg, em, nil)
		}()
		stopped, drained := false, false
		defer func() {
			// The loop's body panicked or called runtime.Goexit: stop the
			// run as a break would, and wait for it.
			if !drained {
				if !stopped {
					close(em.stop)
				}
				cancel()
				for range em.ch {
				}
			}
		}()
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
		drained = true
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

// execute runs the graph: from input when it is not nil, else from a
// checkpoint. em is nil when no one listens; nest says where a nested run
// sits in the run that contains it, nil at the top level.
func (g *Graph[S]) execute(ctx context.Context, input *S, cfg *runConfig, em *emitter, nest *nesting) (out S, err error) {
	r := &run[S]{g: g, limit: g.maxSteps}
	if nest == nil {
		r.gate = cfg.gate
	}
	r.tasks, r.next, r.prev = r.bufs[0][:0], r.bufs[1][:0], r.bufs[2][:0]
	if cfg.stepLimit > 0 {
		r.limit = cfg.stepLimit
	}
	if g.store != nil {
		ctx = store.NewContext(ctx, g.store)
	}
	r.ctx.Context = ctx
	m := &r.ctx.meta
	*m = runMeta{graph: g.name, emit: em, step: -1, task: &r.scope, live: &r.ctx.live}
	r.ctx.live.names = g.names
	switch {
	case nest != nil:
		r.nested = true
		parent := nest.parent
		m.path = nest.path
		m.resume = parent.resume
		m.p = nest.persistence()
	case g.saver != nil:
		m.p = &persistence{saver: g.saver, ser: g.ser, durability: g.durability, thread: cfg.thread}
		if m.p.ser == nil {
			m.p.ser = state.JSON()
		}
	case cfg.thread != "":
		m.p = &persistence{thread: cfg.thread} // named, not checkpointed
	}
	if cfg.durability != nil && m.p != nil {
		m.p.durability = *cfg.durability
	}
	var st S
	if input != nil {
		st = *input
	}
	defer func() {
		// Node panics are recovered where nodes run; this guards the engine.
		if p := recover(); p != nil {
			out, err = st, fmt.Errorf("graph %q: internal panic: %v\n%s", g.name, p, debug.Stack())
		}
	}()
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if em != nil && em.log != nil && nest == nil {
		start := time.Now()
		defer func() {
			logErr := err
			if err != nil && errors.Is(context.Cause(ctx), errStreamLeft) {
				logErr = errStreamLeft
			}
			logRunEnd(em.log, g.name, cfg.thread, time.Since(start), logErr)
		}()
	}
	r.tel = g.newTelemetry()
	if r.tel == nil && nest != nil {
		r.tel = nest.parent.tel // nested runs report where their parent does
	}
	m.tel = r.tel
	if r.tel != nil {
		start := time.Now()
		var span trace.Span
		r.ctx.Context, span = r.tel.startRun(ctx, m)
		defer func() { r.tel.endRun(ctx, m, span, start, err) }()
	}
	if p := m.p; p != nil && p.saver != nil {
		if p.thread == "" {
			return st, fmt.Errorf("graph %q: %w", g.name, ErrNoThread)
		}
		if nest == nil {
			// One run at a time per thread: two would both continue from
			// the same checkpoint, and the later would hide the other's work.
			if _, busy := g.running.LoadOrStore(p.thread, struct{}{}); busy {
				return st, fmt.Errorf("graph %q: thread %q: %w", g.name, p.thread, ErrThreadBusy)
			}
			defer g.running.Delete(p.thread)
		}
		r.cp = &checkpointer[S]{saver: p.saver, ser: p.ser, thread: p.thread, ns: p.ns, durability: p.durability}
		if r.cp.durability == DurabilityAsync {
			r.cp.startAsync()
		}
		defer func() {
			if ferr := r.cp.flush(ctx); ferr != nil && (err == nil || isInterrupt(err)) {
				err = ferr
			}
		}()
	} else if input == nil {
		return st, fmt.Errorf("graph %q: cannot resume thread %q: %w", g.name, cfg.thread, ErrNoCheckpointer)
	}
	if m.resume == nil && (len(cfg.resume) > 0 || cfg.hasOne) {
		m.resume = &resumeSet{}
	}

	switch {
	case input == nil:
		st, err = r.restore(cfg, false)
	case nest != nil && r.cp != nil:
		// A subgraph run resumes where a previous attempt of its task stopped.
		var resumed bool
		if st, resumed, err = r.restoreNested(); err == nil && !resumed {
			st, err = r.begin(*input)
		}
	default:
		if r.cp != nil {
			// A new turn on a thread follows its latest checkpoint: the
			// input's checkpoint names it as its parent, so that History
			// reads as one chain across turns.
			branch, err := r.cp.followLatest(r.ctx.Context)
			if err != nil {
				return st, err
			}
			if cfg.hasIfLatest {
				if err := r.cp.checkLatest(r.ctx.Context, cfg.ifLatest); err != nil {
					return st, err
				}
			}
			m.p.branch = branch // a new turn continues the latest checkpoint's branch
		}
		st, err = r.begin(*input)
	}
	if err != nil {
		return st, err
	}
	return r.loop(st)
}

// errStreamLeft is the cause of the cancellation of a streamed run whose
// consumer stopped reading: the run stops, and that is not a failure.
var errStreamLeft = errors.New("the stream's consumer stopped reading")

// nesting places a run inside the run of its parent node.
type nesting struct {
	parent *runMeta
	path   []string
	ns     string
}

// Errors about how a run was asked for.
var (
	// ErrNoThread reports a run of a checkpointed graph without WithThread.
	ErrNoThread = errors.New("the graph has a checkpointer: give the run a thread with WithThread")
	// ErrNoCheckpointer reports a call that needs checkpoints on a graph without a checkpointer.
	ErrNoCheckpointer = errors.New("the graph has no checkpointer")
	// ErrThreadBusy reports a run, or an UpdateState, on a thread that has a
	// run (or an UpdateState) of the same graph in progress. It also
	// matches, along with state.ErrNotLatest, the error of a run whose
	// checkpoint its store refused because another writer (a run in
	// another process, say) stored one on the thread after this run read
	// it: see state.ConditionalSaver.
	ErrThreadBusy = errors.New("a run on this thread is in progress")
	// ErrUnknownInterrupt reports a resume value for an interrupt that is not pending.
	ErrUnknownInterrupt = errors.New("no such pending interrupt")
	// ErrNothingPending reports a resume value for a thread on which no
	// interrupt that takes a value is pending: the interrupt was answered
	// already, the run ended, or the run is paused at a static interrupt
	// (which is resumed without a value). A value for an interrupt ID on a
	// thread with nothing pending matches ErrUnknownInterrupt too.
	ErrNothingPending = errors.New("no interrupt is pending")
)

// begin triggers the entry nodes and, when checkpointing, records the input.
func (r *run[S]) begin(st S) (S, error) {
	if err := r.successors(&r.ctx, nil, &st, nil); err != nil {
		return st, err
	}
	r.advance()
	if r.cp != nil {
		// A top-level run's input is its first write: stored at once, even
		// with async writes, so that a run the store refuses (another run
		// moved the thread on) runs none of its nodes.
		r.cp.syncNext = !r.nested
		if err := r.checkpoint(-1, "input", &st, nil); err != nil {
			return st, err
		}
	}
	return st, nil
}

// restoreNested resumes a subgraph run from its namespace's latest
// checkpoint, if a previous attempt of the parent's task left one.
func (r *run[S]) restoreNested() (S, bool, error) {
	var zero S
	started, err := hasCheckpoint(r.ctx.Context, r.cp.saver, r.cp.thread, r.cp.ns)
	if err != nil || !started {
		if err == nil {
			r.cp.sawHead("")
		}
		return zero, false, err
	}
	st, err := r.restore(&runConfig{}, true)
	return st, true, err
}

// restore loads a checkpoint and prepares the run to continue from it.
func (r *run[S]) restore(cfg *runConfig, nested bool) (S, error) {
	var zero S
	tup, snap, recs, err := r.cp.load(r.ctx.Context, cfg.from)
	if err != nil {
		return zero, err
	}
	replay := r.cp.replays(r.ctx.Context, cfg.from, tup.Checkpoint.ID)
	if cfg.hasIfLatest && !nested {
		if err := r.cp.checkLatest(r.ctx.Context, cfg.ifLatest); err != nil {
			return zero, err
		}
	}
	pending := pendingInterrupts(snap, recs)
	if !nested {
		if err := r.acceptResume(cfg, pending); err != nil {
			return zero, err
		}
	}
	r.cp.last = tup.Checkpoint.ID
	if p := r.ctx.meta.p; p != nil && !nested {
		p.branch = snap.Branch
	}
	if replay {
		// A replay continues from a copy of the checkpoint, the thread's
		// latest: its tasks get IDs (and their subgraphs namespaces) of
		// their own, and what it writes leaves the original branch as it was.
		id := newID()
		fork := *snap
		fork.Branch = id
		if p := r.ctx.meta.p; p != nil && !nested {
			p.branch = id
		}
		fork.Tasks = make([]taskRef[S], len(snap.Tasks))
		for i, t := range snap.Tasks {
			t.ID = checkpointTaskID(id, i)
			fork.Tasks[i] = t
		}
		r.cp.syncNext = !nested // the run's first write, as begin's input
		if err := r.cp.put(r.ctx.Context, id, tup.Checkpoint.Step, "fork", &fork); err != nil {
			return zero, err
		}
	}
	r.ctx.meta.setStep(tup.Checkpoint.Step)
	for _, ref := range snap.Tasks {
		i, err := r.nodeOf(tup.Checkpoint.ID, ref)
		if err != nil {
			return zero, err
		}
		t := task[S]{node: i, in: ref.Input}
		if rec := recs[ref.ID]; rec != nil && !replay {
			switch {
			case len(rec.Interrupts) > 0:
				if len(rec.Resume) > 0 {
					vals := make(map[string]any, len(rec.Resume))
					for k, v := range rec.Resume {
						vals[k] = v // decoded by the node's Interrupt call, into its own type
					}
					r.resumeSet().add(vals)
				}
			case rec.finished():
				r.g.fields.adoptUnchanged(rec.Output, taskInput(t.in, &snap.State))
				t.done = rec
			}
		}
		r.tasks = append(r.tasks, t)
	}
	if err := r.g.checkJoins(r.cp.thread, tup.Checkpoint.ID, snap.Joins); err != nil {
		return zero, err
	}
	if len(snap.Joins) > 0 {
		r.joinDone = snap.Joins
	}
	for _, in := range snap.Interrupts {
		if in.When == Before {
			r.skipBefore = true
		}
	}
	return snap.State, nil
}

// checkJoins reports the join progress a checkpoint records that does not
// fit the graph's joins: a checkpoint written by another version of the graph.
func (g *Graph[S]) checkJoins(thread, id string, joins [][]bool) error {
	if len(joins) == 0 {
		return nil
	}
	if len(joins) != len(g.joins) {
		return fmt.Errorf("graph: thread %q: checkpoint %q: %w: it records %d joins, graph %q has %d", thread, id, ErrCorruptCheckpoint, len(joins), g.name, len(g.joins))
	}
	for j, done := range joins {
		if done != nil && len(done) != len(g.joins[j].from) {
			return fmt.Errorf("graph: thread %q: checkpoint %q: %w: it records %d sources for join %d, graph %q has %d", thread, id, ErrCorruptCheckpoint, len(done), j, g.name, len(g.joins[j].from))
		}
	}
	return nil
}

func (r *run[S]) resumeSet() *resumeSet {
	if r.ctx.meta.resume == nil {
		r.ctx.meta.resume = &resumeSet{}
	}
	return r.ctx.meta.resume
}

// acceptResume checks the caller's resume values against what is pending,
// before anything runs or is written.
func (r *run[S]) acceptResume(cfg *runConfig, pending []PendingInterrupt) error {
	ids := make(map[string]bool, len(pending))
	var dynamic []string
	for _, in := range pending {
		ids[in.ID] = true
		if in.When == During {
			dynamic = append(dynamic, in.ID)
		}
	}
	for id := range cfg.resume {
		if !ids[id] {
			if len(ids) == 0 {
				return fmt.Errorf("graph: thread %q: resume value for interrupt %q: %w (%w: it was answered already, or the run ended; run the graph with new input instead of resuming)", r.cp.thread, id, ErrUnknownInterrupt, ErrNothingPending)
			}
			return fmt.Errorf("graph: thread %q: resume value for interrupt %q: %w (pending: %v)", r.cp.thread, id, ErrUnknownInterrupt, keysOf(ids))
		}
	}
	values := cfg.resume
	if cfg.hasOne {
		switch {
		case len(dynamic) == 1:
		case len(ids) == 0:
			return fmt.Errorf("graph: thread %q: WithResumeValue: %w: the interrupt was answered already, or the run ended; run the graph with new input instead of resuming", r.cp.thread, ErrNothingPending)
		case len(dynamic) == 0:
			return fmt.Errorf("graph: thread %q: WithResumeValue: %w that takes a value: the run is paused at a static interrupt (%v), which Resume continues without a value", r.cp.thread, ErrNothingPending, keysOf(ids))
		default:
			return fmt.Errorf("graph: thread %q: WithResumeValue needs exactly one pending interrupt, %d are pending (%v): answer them by ID with WithResume", r.cp.thread, len(dynamic), dynamic)
		}
		values = map[string]any{dynamic[0]: cfg.resumeOne}
		for k, v := range cfg.resume {
			values[k] = v
		}
	}
	if len(values) > 0 {
		r.resumeSet().add(values)
	}
	return nil
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func pendingInterrupts[S any](snap *snapshot[S], recs map[string]*taskRecord[S]) []PendingInterrupt {
	out := slices.Clone(snap.Interrupts)
	for _, t := range snap.Tasks {
		if rec := recs[t.ID]; rec != nil {
			out = append(out, rec.Interrupts...)
		}
	}
	return out
}

// loop runs supersteps until no task is left.
func (r *run[S]) loop(st S) (out S, err error) {
	defer func() {
		// Node panics are recovered where nodes run; a panic of the engine
		// (a saver, a serializer, a log handler) fails the run with the
		// state of the last superstep, as a failing superstep does.
		if p := recover(); p != nil {
			out, err = st, fmt.Errorf("graph %q: internal panic: %v\n%s", r.g.name, p, debug.Stack())
		}
	}()
	em := r.ctx.meta.emit
	for n := 0; len(r.tasks) > 0; n++ {
		if n >= r.limit {
			return st, &StepLimitError{Limit: r.limit, Nodes: r.names(r.prev)}
		}
		if err := r.ctx.Context.Err(); err != nil {
			return st, err
		}
		if r.gate != nil {
			if err := r.gate(r.ctx.Context); err != nil {
				return st, fmt.Errorf("graph %q: stopped before superstep %d: %w", r.g.name, r.ctx.meta.step+1, err)
			}
		}
		if len(r.g.before) > 0 && !r.skipBefore {
			if hits := r.staticHits(r.g.before, r.tasks, Before, r.lastID(), r.ctx.meta.step+1); len(hits) > 0 {
				return st, r.interrupted(hits)
			}
		}
		r.skipBefore = false
		step := r.ctx.meta.step + 1
		r.ctx.meta.setStep(step)
		if em != nil && em.modes&ModeDebug != 0 {
			em.send(ModeDebug, Event{Kind: KindStepStart, Graph: r.g.name, Path: r.ctx.meta.path, Step: step, Nodes: r.names(r.tasks)})
		}
		var err error
		if st, err = r.superstep(st); err != nil {
			return st, r.fail(err)
		}
		if em != nil {
			r.emitStepEnd(em, step, &st)
		}
		r.advance()
		base := r.lastID()
		if r.cp != nil {
			if err := r.checkpoint(step, "loop", &st, r.prev); err != nil {
				return st, err
			}
		}
		if len(r.g.after) > 0 {
			if hits := r.staticHits(r.g.after, r.prev, After, base, step); len(hits) > 0 {
				return st, r.interrupted(hits)
			}
		}
	}
	return st, nil
}

// superstep runs the current tasks, in a span of its own when tracing.
func (r *run[S]) superstep(st S) (out S, err error) {
	if r.tel != nil && r.tel.tracer != nil {
		parent := r.ctx.Context
		var span trace.Span
		r.ctx.Context, span = r.tel.startStep(parent, &r.ctx.meta, r.names(r.tasks))
		defer func() {
			r.ctx.Context = parent
			endSpan(span, err)
		}()
	}
	if len(r.tasks) == 1 && r.tasks[0].in == nil {
		return r.single(st)
	}
	return r.parallel(st)
}

// traced runs exec within a node span, swapping the span's context into
// *holder (the embedded context of the node's runCtx or taskCtx) meanwhile.
func (r *run[S]) traced(holder *context.Context, ctx context.Context, meta *runMeta, n *node[S], in *S, clip bool) (S, *Command[S], error) {
	parent := *holder
	start := time.Now()
	sctx, span := r.tel.startNode(parent, meta, n.name)
	*holder = sctx
	out, cmd, err := r.exec(ctx, meta, n, in, clip)
	*holder = parent
	r.tel.endNode(parent, meta, n.name, span, start, err)
	return out, cmd, err
}

// single runs a superstep of one task on the run's goroutine.
func (r *run[S]) single(st S) (S, error) {
	t := &r.tasks[0]
	n := r.g.nodes[t.node]
	var (
		res S
		cmd *Command[S]
		err error
	)
	if t.done != nil {
		res, cmd = *t.done.Output, t.done.command()
	} else {
		m := &r.ctx.meta
		m.setNode(n.name, t.node)
		r.scope.id, r.scope.step, r.scope.idx, r.scope.calls = r.taskID(0), m.step, 0, 0
		if r.tel != nil {
			res, cmd, err = r.traced(&r.ctx.Context, &r.ctx, m, n, &st, false)
		} else {
			res, cmd, err = r.exec(&r.ctx, m, n, &st, false)
		}
		m.setNode("", -1)
		// A lone task's output is not saved as a pending write: the
		// checkpoint that ends its superstep follows at once and holds it,
		// so a superstep costs one write. A crash in between runs the task
		// again, as a crash during it would. Its interrupts are saved: the
		// run stops there.
		if r.cp != nil && isInterrupt(err) {
			if werr := r.record(0, n, res, cmd, err); werr != nil {
				return st, werr
			}
		}
		if err != nil {
			if isInterrupt(err) {
				return st, r.interrupted(interruptsOf(err))
			}
			return st, err
		}
	}
	if err := r.successors(&r.ctx, n, &res, cmd); err != nil {
		return st, err
	}
	return res, nil
}

func localTaskID(step, idx int) string {
	return "s" + strconv.Itoa(step) + "/" + strconv.Itoa(idx)
}

// record saves a finished task's output, or its interrupts, as a pending
// write against the checkpoint that started the superstep.
func (r *run[S]) record(i int, n *node[S], out S, cmd *Command[S], err error) error {
	rec := &taskRecord[S]{Node: n.name}
	if err != nil {
		rec.Interrupts = interruptsOf(err)
		for k, v := range r.ctx.meta.resume.snapshot() {
			raw, merr := json.Marshal(v)
			if merr != nil {
				return fmt.Errorf("graph: node %q: saving the resume value of interrupt %s: %w", n.name, k, merr)
			}
			if rec.Resume == nil {
				rec.Resume = map[string]json.RawMessage{}
			}
			rec.Resume[k] = raw
		}
	} else {
		rec.Output = &out
		if cmd != nil {
			rec.Goto = cmd.Goto
			for _, s := range cmd.Send {
				in := s.State
				rec.Sends = append(rec.Sends, taskRef[S]{Node: s.Node, Input: &in})
			}
		}
	}
	return r.cp.write(r.ctx.Context, r.cp.last, r.taskID(i), rec)
}

func (rec *taskRecord[S]) command() *Command[S] {
	if len(rec.Goto) == 0 && len(rec.Sends) == 0 {
		return nil
	}
	c := &Command[S]{Goto: rec.Goto}
	for _, s := range rec.Sends {
		var in S
		if s.Input != nil {
			in = *s.Input
		}
		c.Send = append(c.Send, Send[S]{Node: s.Node, State: in})
	}
	return c
}

// interrupted ends the run for the given interrupts.
func (r *run[S]) interrupted(ins []PendingInterrupt) error {
	if em := r.ctx.meta.emit; em != nil && !r.nested {
		em.sendAlways(Event{Kind: KindInterrupt, Graph: r.g.name, Path: r.ctx.meta.path, Step: r.ctx.meta.step, Payload: ins})
	}
	return &InterruptError{Thread: r.ctx.meta.thread(), Interrupts: ins}
}

// staticHits lists the tasks whose node is in set, as interrupts. base is
// the ID of the checkpoint that precedes the tasks' superstep ("" without
// checkpoints); step is that superstep.
func (r *run[S]) staticHits(set map[int]bool, tasks []task[S], when When, base string, step int) []PendingInterrupt {
	var hits []PendingInterrupt
	for i, t := range tasks {
		if set[t.node] {
			id := localTaskID(step, i)
			if base != "" {
				id = checkpointTaskID(base, i)
			}
			hits = append(hits, PendingInterrupt{ID: staticInterruptID(r.ctx.meta.ns(), id, when), When: when, Node: r.g.nodes[t.node].name, Path: r.ctx.meta.path})
		}
	}
	return hits
}

// checkpoint writes the state after a superstep with the next tasks.
func (r *run[S]) checkpoint(step int, source string, st *S, ran []task[S]) error {
	id := newID()
	snap := &snapshot[S]{State: *st, Joins: r.joinDone}
	if p := r.ctx.meta.p; p != nil {
		snap.Branch = p.branch
	}
	for i := range r.tasks {
		t := &r.tasks[i]
		snap.Tasks = append(snap.Tasks, taskRef[S]{ID: checkpointTaskID(id, i), Node: r.g.nodes[t.node].name, Input: t.in})
	}
	if len(r.g.before) > 0 {
		snap.Interrupts = append(snap.Interrupts, r.staticHits(r.g.before, r.tasks, Before, id, step+1)...)
	}
	if len(r.g.after) > 0 && len(ran) > 0 {
		snap.Interrupts = append(snap.Interrupts, r.staticHits(r.g.after, ran, After, r.cp.last, step)...)
	}
	if err := r.cp.put(r.ctx.Context, id, step, source, snap); err != nil {
		return err
	}
	if em := r.ctx.meta.emit; em != nil && em.modes&ModeDebug != 0 {
		em.send(ModeDebug, Event{Kind: KindCheckpoint, Graph: r.g.name, Path: r.ctx.meta.path, Step: step, Name: id, Nodes: r.names(r.tasks)})
	}
	return nil
}

// fail returns the run's own cancellation in place of the errors it caused.
func (r *run[S]) fail(err error) error {
	if cerr := r.ctx.Context.Err(); cerr != nil && !isInterrupt(err) {
		return cerr
	}
	return err
}

func (r *run[S]) emitStepEnd(em *emitter, step int, st *S) {
	if em.modes&ModeValues != 0 {
		snap := r.g.fields.isolated(*st, true)
		em.send(ModeValues, Event{Kind: KindValues, Graph: r.g.name, Path: r.ctx.meta.path, Step: step, State: snap})
	}
	if em.modes&ModeDebug != 0 {
		em.send(ModeDebug, Event{Kind: KindStepEnd, Graph: r.g.name, Path: r.ctx.meta.path, Step: step, Nodes: r.names(r.tasks)})
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
		em.send(ModeEvents, Event{Kind: KindNodeStart, Graph: meta.graph, Path: meta.path, Step: meta.step, Node: n.name, Time: start})
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
		retry := err != nil && attempt < attempts
		if retry {
			retry, err = n.retry.retryable(err)
		}
		if !retry {
			if err != nil {
				err = r.wrap(meta, n, attempt, err)
			}
			break
		}
		serr := ctx.Err()
		if serr == nil {
			serr = pause.Sleep(ctx, n.retry.delay(attempt))
		}
		if serr != nil {
			// The run, or its superstep, stopped before the retry: the error
			// is not why the node failed, and matches the cancellation so
			// that another task's failure is reported in its place.
			if !errors.Is(err, serr) {
				err = fmt.Errorf("%w (not retried: %w)", err, serr)
			}
			err = r.wrap(meta, n, attempt, err)
			break
		}
		meta.task.mu.Lock()
		meta.task.calls = 0
		meta.task.mu.Unlock()
	}
	if em != nil {
		if em.modes&ModeEvents != 0 {
			em.send(ModeEvents, Event{Kind: KindNodeEnd, Graph: meta.graph, Path: meta.path, Step: meta.step, Node: n.name, Duration: time.Since(start), Err: err})
		}
		if err == nil && em.modes&ModeUpdates != 0 {
			em.send(ModeUpdates, Event{Kind: KindUpdate, Graph: meta.graph, Path: meta.path, Step: meta.step, Node: n.name, State: out, Fields: r.g.fields.written(*in, out)})
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
				err = &timeoutError{after: n.timeout, err: err}
			}
		}()
		ctx = tctx
	}
	defer func() {
		if p := recover(); p != nil {
			err = &NodeError{Node: n.name, Err: panicError(p, nil), Panic: p, Stack: debug.Stack()}
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
	ctx   taskCtx
	scope taskScope
	out   S
	cmd   *Command[S]
	err   error
}

// superstep runs the tasks of one parallel superstep. Tasks are claimed from
// a shared counter by the run's goroutine and by helper goroutines. Before a
// goroutine runs a task it makes sure a helper is on its way to claim the
// tasks after it, so every task can run concurrently with the others and a
// task that blocks never holds up the rest; yet tasks that finish at once
// cost no goroutine hand-off, because the run's goroutine claims them before
// the one pending helper is even scheduled.
type superstep[S any] struct {
	r       *run[S]
	st      *S
	slots   []slot[S]
	cancel  context.CancelFunc
	claimed atomic.Int32
	pending atomic.Int32  // tasks not finished
	helpers atomic.Int32  // helper goroutines started
	idle    atomic.Int32  // helpers started that have not begun claiming
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
		if i+1 < n {
			p.ensureHelper()
		}
		p.runTask(int(i))
		if p.pending.Add(-1) == 0 {
			return true
		}
	}
}

// ensureHelper starts a helper unless one is already on its way; there are
// never more helpers than tasks besides the first.
func (p *superstep[S]) ensureHelper() {
	if p.idle.Load() > 0 {
		return
	}
	if p.helpers.Add(1) > int32(len(p.slots)-1) {
		p.helpers.Add(-1)
		return
	}
	p.idle.Add(1)
	go p.help()
}

func (p *superstep[S]) help() {
	p.idle.Add(-1)
	if p.work() {
		close(p.done)
	}
}

func (p *superstep[S]) runTask(i int) {
	r, t, sl := p.r, &p.r.tasks[i], &p.slots[i]
	nd := r.g.nodes[t.node]
	defer func() {
		// Node panics are recovered where nodes run; this guards the engine
		// code a task runs besides (events, logging, recording its output),
		// which on a helper goroutine would otherwise end the process.
		if v := recover(); v != nil {
			sl.err = fmt.Errorf("graph %q: internal panic in the task of node %q: %v\n%s", r.g.name, nd.name, v, debug.Stack())
			p.cancel()
		}
	}()
	if t.done != nil {
		sl.out, sl.cmd = *t.done.Output, t.done.command()
		return
	}
	sl.ctx.meta.node = nd.name
	sl.scope.id, sl.scope.step, sl.scope.idx = r.taskID(i), r.ctx.meta.step, i
	sl.ctx.meta.task = &sl.scope
	in := p.st
	if t.in != nil {
		in = t.in
	}
	if r.tel != nil {
		sl.out, sl.cmd, sl.err = r.traced(&sl.ctx.Context, &sl.ctx, &sl.ctx.meta, nd, in, true)
	} else {
		sl.out, sl.cmd, sl.err = r.exec(&sl.ctx, &sl.ctx.meta, nd, in, true)
	}
	if r.cp != nil && (sl.err == nil || isInterrupt(sl.err)) {
		if err := r.record(i, nd, sl.out, sl.cmd, sl.err); err != nil {
			sl.err = err
		}
	}
	if sl.err != nil && !isInterrupt(sl.err) {
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
		p.slots[i].ctx.meta.live = nil // a task's context is its own
	}
	if !p.work() {
		<-p.done
	}
	if err := firstError(p.slots); err != nil {
		return st, err
	}
	var ins []PendingInterrupt
	for i := range p.slots {
		ins = append(ins, interruptsOf(p.slots[i].err)...)
	}
	if len(ins) > 0 {
		return st, r.interrupted(ins)
	}
	ws := make([]write[S], 0, 2*n)
	for i := range tasks {
		ws = append(ws, taskWrite(r.g.nodes[tasks[i].node].name, tasks[i].in, &st, &p.slots[i].out))
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

// firstError picks, in task order, the first error that is not an
// interrupt nor a cancellation caused by another task's failure.
func firstError[S any](slots []slot[S]) error {
	var first error
	for i := range slots {
		err := slots[i].err
		if err == nil || isInterrupt(err) {
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

// panicError describes a recovered panic and, when given, its stack; a
// panic with an error keeps it reachable with errors.Is and errors.As.
func panicError(p any, stack []byte) error {
	format := "panic: %v"
	if _, ok := p.(error); ok {
		format = "panic: %w"
	}
	if stack != nil {
		return fmt.Errorf(format+"\n%s", p, stack)
	}
	return fmt.Errorf(format, p)
}

// follow evaluates a route or fan-out and records its destinations.
func (r *run[S]) follow(ctx context.Context, rt *route[S], st *S) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &RouteError{From: rt.from, Declared: rt.declare, Err: panicError(p, debug.Stack())}
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

// Detach returns a context for work that a node starts and that may
// outlive it, such as tool calls a ToolsNode hands to an executor, which
// middleware can give up on while they go on. Through it, such work keeps
// seeing the node that started it (NodeName, Step, Path; its interrupts and
// nested runs are placed there) even after the engine has moved on to
// later nodes, which reuse the run's own context. Outside a node it
// returns ctx.
func Detach(ctx context.Context) context.Context {
	m := metaFrom(ctx)
	if m == nil {
		return ctx
	}
	return m.Detach(ctx)
}

// Detach is Detach of ctx, a context of m's run (see runMeta.Resuming).
func (m *runMeta) Detach(ctx context.Context) context.Context {
	// Field by field: the node and step of a run's own context are read
	// from where the run publishes them (place), never from its fields.
	d := &detachedCtx{Context: ctx, meta: runMeta{graph: m.graph, path: m.path, emit: m.emit, tel: m.tel, task: m.task, resume: m.resume, p: m.p}}
	d.meta.node, d.meta.step = m.place()
	if t := m.task; t != nil {
		t.mu.Lock()
		d.task = taskScope{id: t.taskID(), step: t.step, idx: t.idx, calls: t.calls}
		t.mu.Unlock()
		d.meta.task = &d.task
	}
	return d
}

// detachedCtx carries a copy of a node's runMeta and task scope (see
// Detach).
type detachedCtx struct {
	context.Context
	meta runMeta
	task taskScope
}

func (c *detachedCtx) Value(key any) any {
	if key == (metaKey{}) {
		return &c.meta
	}
	return c.Context.Value(key)
}
