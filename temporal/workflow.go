package temporal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/jsonvalue"
)

// Names of the signal and query a graph's workflow answers.
const (
	// SignalResume answers a pending interrupt; its value is a Resume.
	SignalResume = "trellis.resume"
	// UpdateResume answers a pending interrupt as SignalResume does, but
	// as an update: the caller learns whether the answer was taken (an
	// answer to no pending interrupt is rejected with ErrNotPending).
	UpdateResume = "trellis.answer"
	// QueryState returns the run's Status.
	QueryState = "trellis.state"
)

// ErrNotPending rejects an UpdateResume whose interrupt is not pending (or,
// without an ID, when not exactly one is).
var ErrNotPending = errors.New("temporal: no such pending interrupt")

// Error types of the application errors the task activity returns.
const (
	// ErrorTypeInterrupt marks a task that asked for input (graph.Interrupt);
	// its details are the []graph.PendingInterrupt. It is never retried.
	ErrorTypeInterrupt = "trellis.Interrupt"
	// ErrorTypeNode marks a node's failure that its retry policy does not
	// retry (a panic, an error RetryOn refuses, a node without a policy).
	ErrorTypeNode = "trellis.NodeError"
)

// Resume is the value of SignalResume.
type Resume struct {
	// ID is the interrupt answered; empty answers the single pending one.
	ID string `json:"id,omitempty"`
	// Value is what the node's graph.Interrupt call returns (converted
	// through JSON into the type the node asks for).
	Value any `json:"value"`
}

// Status is the answer to QueryState.
type Status[S any] struct {
	// Step is the number of the superstep under way (or, when Done, of
	// supersteps run).
	Step int `json:"step"`
	// State is the state after the last finished superstep.
	State S `json:"state"`
	// Running lists the nodes of the superstep under way.
	Running []string `json:"running,omitempty"`
	// Interrupts are the interrupts the run waits for.
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	// Done reports that the run has ended.
	Done bool `json:"done"`
}

// TaskInput is the input of the task activity: one task of a superstep.
type TaskInput[S any] struct {
	Task   graph.StepTask[S] `json:"task"`
	State  S                 `json:"state"`
	Step   int               `json:"step"`
	Index  int               `json:"index"`
	Thread string            `json:"thread"`
	Resume map[string]any    `json:"resume,omitempty"`
}

// Runner runs one compiled graph as a Temporal workflow. Register it with
// a worker; start runs with a client under its name. A Runner is safe for
// concurrent use.
type Runner[S any] struct {
	g    *graph.Graph[S]
	name string
	cfg  config
}

type config struct {
	taskTimeout time.Duration
	heartbeat   time.Duration
	taskQueue   string
	sink        Sink
	modes       graph.Mode
	interval    time.Duration
	canAfter    int
}

// Option configures a Runner.
type Option func(*config)

// WithTaskTimeout bounds each attempt of a task of a node that has no
// timeout of its own (graph.WithTimeout); 10 minutes unless set.
func WithTaskTimeout(d time.Duration) Option { return func(c *config) { c.taskTimeout = d } }

// WithHeartbeatTimeout makes a task attempt fail when its node has not
// called Heartbeat for d, so that a task on a worker that died is retried
// before its task timeout. Without it, heartbeats are not required.
func WithHeartbeatTimeout(d time.Duration) Option { return func(c *config) { c.heartbeat = d } }

// WithTaskQueue runs the task activities on the named task queue instead
// of the workflow's.
func WithTaskQueue(q string) Option { return func(c *config) { c.taskQueue = q } }

// WithStreamModes chooses the events the run's stream holds
// (DefaultStreamModes unless set): graph.ModeValues and ModeUpdates are
// recorded by the workflow, at no cost in history; ModeCustom,
// ModeMessages (model tokens) and ModeEvents (nodes starting and ending)
// are published by the tasks through the Sink while they run.
// Interrupts and the run's end are always recorded.
func WithStreamModes(m graph.Mode) Option { return func(c *config) { c.modes = m } }

// WithSink makes tasks publish their events through s instead of
// SignalSink(nil).
func WithSink(s Sink) Option { return func(c *config) { c.sink = s } }

// WithEventInterval sets how long a task gathers its events into a batch
// before it publishes them (100 ms unless set; the first event of a batch
// leaves at once). Longer intervals mean fewer signals in the workflow's
// history when nodes stream tokens.
func WithEventInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithContinueAsNew makes the workflow continue as new after every n
// supersteps, carrying the run's state and next tasks, so that a long run's
// history stays short. Whatever n, the workflow continues as new between
// two supersteps when Temporal suggests it (the history has grown past the
// server's limits). The run's result is the same either way.
func WithContinueAsNew(n int) Option { return func(c *config) { c.canAfter = n } }

// New returns a Runner of g whose workflow is registered as name and whose
// task activity as name + ".task".
func New[S any](name string, g *graph.Graph[S], opts ...Option) *Runner[S] {
	r := &Runner[S]{g: g, name: name, cfg: config{taskTimeout: 10 * time.Minute, modes: DefaultStreamModes, interval: 100 * time.Millisecond}}
	for _, o := range opts {
		o(&r.cfg)
	}
	if r.cfg.sink == nil {
		r.cfg.sink = SignalSink(nil)
	}
	return r
}

// Name returns the name of the Runner's workflow.
func (r *Runner[S]) Name() string { return r.name }

// ActivityName returns the name of the Runner's task activity.
func (r *Runner[S]) ActivityName() string { return r.name + ".task" }

// Registry is what Register needs of a worker (worker.Worker, the
// testsuite's environments and worker.WorkflowReplayer have it).
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// WorkflowRegistry is what RegisterWorkflow needs (worker.WorkflowReplayer).
type WorkflowRegistry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers the workflow and the task activity with w.
func (r *Runner[S]) Register(w Registry) {
	r.RegisterWorkflow(w)
	w.RegisterActivityWithOptions(r.Task, activity.RegisterOptions{Name: r.ActivityName()})
}

// RegisterWorkflow registers the workflow alone (for a replayer).
func (r *Runner[S]) RegisterWorkflow(w WorkflowRegistry) {
	w.RegisterWorkflowWithOptions(r.Workflow, workflow.RegisterOptions{Name: r.name})
}

// versionContinueAsNew is the change ID (workflow.GetVersion) of
// continue-as-new: a run recorded before it never continues as new.
const versionContinueAsNew = "trellis.continue-as-new"

// versionNodeActivityIDs is the change ID of activity IDs that name their
// node (taskActivityID): runs recorded before keep the SDK's numbered IDs.
const versionNodeActivityIDs = "trellis.node-activity-ids"

// taskActivityID is the activity ID of a superstep's task: its node, step,
// index and round (a superstep runs its unfinished tasks again after an
// interrupt is answered). Temporal compares the IDs of the activities a
// replay schedules with those of the history, so a worker whose graph
// schedules other nodes than a run's history holds fails that run's
// workflow task with a nondeterminism error, and leaves it for a worker
// with the graph it began with, instead of handing one node's recorded
// result to another.
func taskActivityID(node string, step, index, round int) string {
	return node + "@" + strconv.Itoa(step) + "." + strconv.Itoa(index) + "." + strconv.Itoa(round)
}

// Continuation is what a run carries into the run it continues as new
// (WithContinueAsNew): where its superstep loop stands, and the Seq of its
// last event, so that the stream's numbering goes on.
type Continuation[S any] struct {
	Stepper graph.StepperState[S] `json:"stepper"`
	Seq     int64                 `json:"seq"`
	// Fork names the checkpoint a run started by Fork goes on from; nil
	// for a run continued as new.
	Fork *ForkOrigin `json:"fork,omitempty"`
	// Update is the state a fork writes as node Fork.AsNode after its
	// first checkpoint (ForkOptions.AsNode).
	Update *S `json:"update,omitempty"`
}

// Workflow runs the graph from input. Each superstep's tasks run as
// activities, concurrently, and their outputs are merged at the barrier as
// a run of the graph merges them. A task that asks for input makes the
// workflow wait for answers (SignalResume, UpdateResume) to every pending
// interrupt; the tasks that asked run again with the answers, the others
// keep their outputs. QueryState reads the run's Status, QueryEvents its
// events, QueryHistory its checkpoints (one per superstep, held in
// memory). Cancelling the workflow asks the running tasks to stop and ends
// the run once they have.
//
// cont is nil when a run starts; a run continued as new
// (WithContinueAsNew) gets the Continuation of the run before it, a run
// started by Fork that of its checkpoint, and its input is then the state
// the run goes on from.
//
// The graph's routing functions (conditional edges, fan-outs) run in the
// workflow and must be deterministic; they receive a context that carries
// nothing.
func (r *Runner[S]) Workflow(ctx workflow.Context, input S, cont *Continuation[S]) (S, error) {
	var st *graph.Stepper[S]
	var err error
	events := &eventLog{modes: r.cfg.modes, previous: workflow.GetInfo(ctx).ContinuedExecutionRunID}
	if cont != nil {
		st, err = r.g.RestoreStepper(cont.Stepper)
		events.base = cont.Seq
	} else {
		st, err = r.g.NewStepper(context.Background(), input)
	}
	if err != nil {
		return input, temporal.NewNonRetryableApplicationError(err.Error(), ErrorTypeNode, err)
	}
	w := &wfRun[S]{r: r, st: st, events: events, resume: map[string]any{}}
	switch {
	case cont == nil:
		w.checkpoint(ctx, SourceInput)
	case cont.Fork != nil:
		w.checkpoint(ctx, SourceFork)
		if cont.Fork.AsNode != "" {
			if err := w.writeAs(ctx, cont.Fork.AsNode, cont.Update); err != nil {
				return input, temporal.NewNonRetryableApplicationError(err.Error(), ErrorTypeNode, err)
			}
			st = w.st
		}
	default:
		// The run before holds this checkpoint too; History lists it once.
		w.checkpoint(ctx, SourceLoop)
	}
	if err := w.handlers(ctx); err != nil {
		return input, err
	}
	err = w.loop(ctx)
	w.events.receive(ctx, w.published, true)
	var can *workflow.ContinueAsNewError
	end := Event{Kind: KindRunEnd, Step: st.Step()}
	switch {
	case errors.As(err, &can):
		w.events.done = true
		return st.State(), err
	case err == nil:
		end.Status, end.State = StatusSuccess, jsonvalue.Encode(st.State())
	case temporal.IsCanceledError(err):
		end.Status, end.Error = StatusCancelled, err.Error()
	default:
		end.Status, end.Error = StatusError, err.Error()
	}
	w.events.add(ctx, end)
	w.events.done = true
	return st.State(), err
}

// wfRun is one workflow run's superstep loop and what its handlers share.
type wfRun[S any] struct {
	r         *Runner[S]
	st        *graph.Stepper[S]
	events    *eventLog
	cps       []Checkpoint[S] // one per superstep of this run, oldest first
	pending   []graph.PendingInterrupt
	resume    map[string]any
	resumes   workflow.ReceiveChannel
	published workflow.ReceiveChannel
}

// handlers sets the run's query, update and signal handlers.
func (w *wfRun[S]) handlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (Status[S], error) {
		s := Status[S]{Step: w.st.Step(), State: w.st.State(), Interrupts: w.pending, Done: w.st.Done()}
		for _, t := range w.st.Tasks() {
			s.Running = append(s.Running, t.Node)
		}
		return s, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func(after int64) (EventPage, error) {
		return w.events.page(after), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryHistory, w.history); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateResume, func(_ workflow.Context, in Resume) error {
		return w.accept(in)
	}, workflow.UpdateHandlerOptions{Validator: func(in Resume) error {
		_, err := w.target(in)
		return err
	}}); err != nil {
		return err
	}
	w.resumes = workflow.GetSignalChannel(ctx, SignalResume)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var in Resume
			if !w.resumes.Receive(ctx, &in) {
				return
			}
			w.take(ctx, in)
		}
	})
	w.published = workflow.GetSignalChannel(ctx, SignalEvents)
	workflow.Go(ctx, func(ctx workflow.Context) { w.events.receive(ctx, w.published, false) })
	return nil
}

// target names the pending interrupt a Resume answers.
func (w *wfRun[S]) target(in Resume) (string, error) {
	if in.ID == "" {
		if len(w.pending) != 1 {
			return "", fmt.Errorf("%w: %d are pending and the answer names none", ErrNotPending, len(w.pending))
		}
		return w.pending[0].ID, nil
	}
	for _, p := range w.pending {
		if p.ID == in.ID {
			return in.ID, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNotPending, in.ID)
}

func (w *wfRun[S]) accept(in Resume) error {
	id, err := w.target(in)
	if err == nil {
		w.resume[id] = in.Value
	}
	return err
}

// take accepts a resume signal, or logs why it drops it.
func (w *wfRun[S]) take(ctx workflow.Context, in Resume) {
	if err := w.accept(in); err != nil {
		workflow.GetLogger(ctx).Warn("resume signal ignored", "error", err)
	}
}

// wait records the interrupts hits and waits for their answers.
func (w *wfRun[S]) wait(ctx workflow.Context, hits []graph.PendingInterrupt) error {
	w.pending = hits
	last := &w.cps[len(w.cps)-1]
	last.Interrupts = append(last.Interrupts, hits...)
	w.events.add(ctx, Event{Kind: graph.KindInterrupt, Step: w.st.Step(), Interrupts: hits})
	if err := await(ctx, w.pending, w.resume); err != nil {
		return err
	}
	w.pending = nil
	return nil
}

// loop runs supersteps until the graph ends, fails, or the run continues
// as new.
func (w *wfRun[S]) loop(ctx workflow.Context) error {
	r, st := w.r, w.st
	thread := workflow.GetInfo(ctx).WorkflowExecution.ID
	pause := func(hits []graph.PendingInterrupt) error {
		if len(hits) == 0 {
			return nil
		}
		return w.wait(ctx, hits)
	}
	named := workflow.GetVersion(ctx, versionNodeActivityIDs, workflow.DefaultVersion, 1) == 1
	steps := 0
	for !st.Done() {
		if steps > 0 && (r.cfg.canAfter > 0 && steps >= r.cfg.canAfter || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) &&
			// Runs whose history was recorded before workflows continued
			// as new go on without (their replay has no marker here).
			workflow.GetVersion(ctx, versionContinueAsNew, workflow.DefaultVersion, 1) == 1 {
			return w.continueAsNew(ctx)
		}
		steps++
		if err := pause(st.Before()); err != nil {
			return err
		}
		tasks := st.Tasks()
		if w.events.modes&graph.ModeDebug != 0 {
			w.events.add(ctx, Event{Kind: graph.KindStepStart, Step: st.Step(), Nodes: nodesOf(tasks)})
		}
		outs := make([]graph.TaskOutput[S], len(tasks))
		done := make([]bool, len(tasks))
		for round := 0; ; round++ {
			// A task that fails stops its superstep: the other tasks are
			// cancelled, as a run of the graph cancels them.
			sctx, cancel := workflow.WithCancel(ctx)
			sel := workflow.NewSelector(ctx)
			errs := make([]error, len(tasks))
			running := 0
			for i, t := range tasks {
				if done[i] {
					continue
				}
				in := TaskInput[S]{Task: t, Step: st.Step(), Index: i, Thread: thread, Resume: w.resume}
				if t.Input == nil {
					in.State = st.State()
				}
				running++
				actx := r.activityContext(sctx, t.Node)
				if named {
					ao := workflow.GetActivityOptions(actx)
					ao.ActivityID = taskActivityID(t.Node, st.Step(), i, round)
					actx = workflow.WithActivityOptions(actx, ao)
				}
				sel.AddFuture(workflow.ExecuteActivity(actx, r.ActivityName(), in), func(f workflow.Future) {
					errs[i] = f.Get(ctx, &outs[i])
					if errs[i] == nil {
						done[i] = true
					} else if _, ok := interruptsOf(errs[i]); !ok {
						cancel()
					}
				})
			}
			for range running {
				sel.Select(ctx)
			}
			cancel()
			// What the tasks published before they ended comes before
			// what the superstep recorded.
			w.events.receive(ctx, w.published, true)
			if err := firstError(errs); err != nil {
				return err
			}
			var hits []graph.PendingInterrupt
			for _, err := range errs {
				if ins, ok := interruptsOf(err); ok {
					hits = append(hits, ins...)
				}
			}
			if len(hits) == 0 {
				break
			}
			if err := w.wait(ctx, hits); err != nil {
				return err
			}
		}
		step := st.Step()
		if w.events.modes&graph.ModeUpdates != 0 {
			for i, t := range tasks {
				w.events.add(ctx, Event{Kind: graph.KindUpdate, Step: step, Node: t.Node, State: jsonvalue.Encode(outs[i].State)})
			}
		}
		if err := st.Advance(context.Background(), outs); err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), ErrorTypeNode, err)
		}
		w.checkpoint(ctx, SourceLoop)
		w.events.record(ctx, graph.ModeValues, Event{Kind: graph.KindValues, Step: step, State: jsonvalue.Encode(st.State())})
		if w.events.modes&graph.ModeDebug != 0 {
			w.events.add(ctx, Event{Kind: graph.KindStepEnd, Step: step, Nodes: nodesOf(tasks)})
		}
		if err := pause(st.After()); err != nil {
			return err
		}
	}
	return nil
}

// continueAsNew ends the run with a continue-as-new carrying where it
// stands, once its handlers are done and the signals it got are taken.
func (w *wfRun[S]) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	w.events.receive(ctx, w.published, true)
	for {
		var in Resume
		if !w.resumes.ReceiveAsync(&in) {
			break
		}
		w.take(ctx, in)
	}
	cont := &Continuation[S]{Stepper: w.st.Save(), Seq: w.events.base + int64(len(w.events.events))}
	return workflow.NewContinueAsNewError(ctx, w.r.name, w.st.State(), cont)
}

func nodesOf[S any](tasks []graph.StepTask[S]) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.Node
	}
	return out
}

// firstError picks, in task order, the first error that is neither an
// interrupt nor a cancellation (which another task's failure causes); a
// cancellation if there is nothing else.
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if _, ok := interruptsOf(err); ok {
			continue
		}
		if !temporal.IsCanceledError(err) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// await blocks until every pending interrupt has an answer in resume, or
// ctx is cancelled.
func await(ctx workflow.Context, pending []graph.PendingInterrupt, resume map[string]any) error {
	return workflow.Await(ctx, func() bool {
		for _, p := range pending {
			if _, ok := resume[p.ID]; !ok {
				return false
			}
		}
		return true
	})
}

// activityContext gives a task of node its timeouts and retry policy: the
// node's graph.RetryPolicy mapped onto Temporal's (no retry without one).
func (r *Runner[S]) activityContext(ctx workflow.Context, node string) workflow.Context {
	set, _ := r.g.NodeSettings(node)
	ao := workflow.ActivityOptions{
		StartToCloseTimeout: r.cfg.taskTimeout,
		HeartbeatTimeout:    r.cfg.heartbeat,
		TaskQueue:           r.cfg.taskQueue,
		RetryPolicy:         RetryPolicy(set.Retry),
		// A cancelled run ends once its tasks have stopped, so that no
		// node goes on working for a run that is over. A task learns of
		// the cancellation when it heartbeats (see Heartbeat).
		WaitForCancellation: true,
	}
	if set.Timeout > 0 {
		// The node's own timeout ends the attempt inside the activity; the
		// margin lets the attempt report it.
		ao.StartToCloseTimeout = set.Timeout + 30*time.Second
	}
	return workflow.WithActivityOptions(ctx, ao)
}

// lostTaskAttempts is how many attempts a task of a node without a retry
// policy has. Its node's errors are non-retryable (see Task), so the later
// attempts serve only a task whose worker died or that timed out.
const lostTaskAttempts = 3

// RetryPolicy maps a node's retry policy onto Temporal's: attempts,
// intervals and backoff carry over (Jitter has no counterpart), and
// RetryOn is applied by the task activity, which marks the errors it
// refuses non-retryable. A nil policy retries no error of the node's, but
// gives a task whose worker died (or that timed out) two more attempts.
func RetryPolicy(p *graph.RetryPolicy) *temporal.RetryPolicy {
	if p == nil {
		return &temporal.RetryPolicy{MaximumAttempts: lostTaskAttempts}
	}
	d := p.WithDefaults()
	return &temporal.RetryPolicy{
		InitialInterval:    d.InitialInterval,
		BackoffCoefficient: d.BackoffFactor,
		MaximumInterval:    d.MaxInterval,
		MaximumAttempts:    int32(d.MaxAttempts),
	}
}

// taskModes are the modes of the events tasks publish.
const taskModes = graph.ModeCustom | graph.ModeMessages | graph.ModeEvents

// Task is the task activity: it runs one task of a superstep once
// (Temporal retries it) and returns its output.
func (r *Runner[S]) Task(ctx context.Context, in TaskInput[S]) (graph.TaskOutput[S], error) {
	scope := graph.TaskScope{Step: in.Step, Index: in.Index, Thread: in.Thread, Resume: in.Resume}
	if m := r.cfg.modes & taskModes; m != 0 && activity.IsActivity(ctx) {
		p := startPublisher(ctx, r.cfg.sink, r.cfg.interval)
		// The task's events reach the workflow before its result does.
		defer p.close()
		scope.Events, scope.Modes = p.add, m
	}
	out, err := r.g.RunTask(ctx, in.Task, in.State, scope)
	if err == nil {
		return out, nil
	}
	var ie *graph.InterruptError
	if errors.As(err, &ie) {
		return out, temporal.NewNonRetryableApplicationError(ie.Error(), ErrorTypeInterrupt, nil, ie.Interrupts)
	}
	if cerr := ctx.Err(); cerr != nil {
		return out, fmt.Errorf("%w (%w)", err, cerr)
	}
	set, _ := r.g.NodeSettings(in.Task.Node)
	if set.Retry == nil || !set.Retry.Retries(err) {
		return out, temporal.NewNonRetryableApplicationError(err.Error(), ErrorTypeNode, err)
	}
	return out, err
}

// interruptsOf returns the interrupts an activity error carries.
func interruptsOf(err error) ([]graph.PendingInterrupt, bool) {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrorTypeInterrupt {
		return nil, false
	}
	var ins []graph.PendingInterrupt
	if derr := ae.Details(&ins); derr != nil {
		return nil, false
	}
	return ins, true
}

// Heartbeat reports a node's progress from within a task activity, so that
// long tool calls keep their attempt alive under WithHeartbeatTimeout and
// learn of the workflow's cancellation (through ctx). Outside an activity
// it does nothing.
func Heartbeat(ctx context.Context, details ...any) {
	if !activity.IsActivity(ctx) {
		return
	}
	activity.RecordHeartbeat(ctx, details...)
}
