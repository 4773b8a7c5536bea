package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trellis-go/trellis/graph"
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

// New returns a Runner of g whose workflow is registered as name and whose
// task activity as name + ".task".
func New[S any](name string, g *graph.Graph[S], opts ...Option) *Runner[S] {
	r := &Runner[S]{g: g, name: name, cfg: config{taskTimeout: 10 * time.Minute}}
	for _, o := range opts {
		o(&r.cfg)
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

// Workflow runs the graph from input. Each superstep's tasks run as
// activities, concurrently, and their outputs are merged at the barrier as
// a run of the graph merges them. A task that asks for input makes the
// workflow wait for answers (SignalResume, UpdateResume) to every pending
// interrupt; the
// tasks that asked run again with the answers, the others keep their
// outputs. QueryState reads the run's Status. Cancelling the workflow
// asks the running tasks to stop and ends the run once they have.
//
// The graph's routing functions (conditional edges, fan-outs) run in the
// workflow and must be deterministic; they receive a context that carries
// nothing.
func (r *Runner[S]) Workflow(ctx workflow.Context, input S) (S, error) {
	st, err := r.g.NewStepper(context.Background(), input)
	if err != nil {
		return input, temporal.NewNonRetryableApplicationError(err.Error(), ErrorTypeNode, err)
	}
	var pending []graph.PendingInterrupt
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (Status[S], error) {
		s := Status[S]{Step: st.Step(), State: st.State(), Interrupts: pending, Done: st.Done()}
		for _, t := range st.Tasks() {
			s.Running = append(s.Running, t.Node)
		}
		return s, nil
	}); err != nil {
		return input, err
	}
	resume := map[string]any{}
	// target names the pending interrupt a Resume answers.
	target := func(in Resume) (string, error) {
		if in.ID == "" {
			if len(pending) != 1 {
				return "", fmt.Errorf("%w: %d are pending and the answer names none", ErrNotPending, len(pending))
			}
			return pending[0].ID, nil
		}
		for _, p := range pending {
			if p.ID == in.ID {
				return in.ID, nil
			}
		}
		return "", fmt.Errorf("%w: %s", ErrNotPending, in.ID)
	}
	accept := func(in Resume) error {
		id, err := target(in)
		if err == nil {
			resume[id] = in.Value
		}
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateResume, func(_ workflow.Context, in Resume) error {
		return accept(in)
	}, workflow.UpdateHandlerOptions{Validator: func(in Resume) error {
		_, err := target(in)
		return err
	}}); err != nil {
		return input, err
	}
	signals := workflow.GetSignalChannel(ctx, SignalResume)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var in Resume
			if !signals.Receive(ctx, &in) {
				return
			}
			if err := accept(in); err != nil {
				workflow.GetLogger(ctx).Warn("resume signal ignored", "error", err)
			}
		}
	})
	thread := workflow.GetInfo(ctx).WorkflowExecution.ID
	pause := func(hits []graph.PendingInterrupt) error {
		if len(hits) == 0 {
			return nil
		}
		pending = hits
		if err := await(ctx, pending, resume); err != nil {
			return err
		}
		pending = nil
		return nil
	}
	for !st.Done() {
		if err := pause(st.Before()); err != nil {
			return st.State(), err
		}
		tasks := st.Tasks()
		outs := make([]graph.TaskOutput[S], len(tasks))
		done := make([]bool, len(tasks))
		for {
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
				in := TaskInput[S]{Task: t, Step: st.Step(), Index: i, Thread: thread, Resume: resume}
				if t.Input == nil {
					in.State = st.State()
				}
				running++
				sel.AddFuture(workflow.ExecuteActivity(r.activityContext(sctx, t.Node), r.ActivityName(), in), func(f workflow.Future) {
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
			pending = nil
			if err := firstError(errs); err != nil {
				return st.State(), err
			}
			for _, err := range errs {
				if ins, ok := interruptsOf(err); ok {
					pending = append(pending, ins...)
				}
			}
			if len(pending) == 0 {
				break
			}
			if err := await(ctx, pending, resume); err != nil {
				return st.State(), err
			}
		}
		if err := st.Advance(context.Background(), outs); err != nil {
			return st.State(), temporal.NewNonRetryableApplicationError(err.Error(), ErrorTypeNode, err)
		}
		if err := pause(st.After()); err != nil {
			return st.State(), err
		}
	}
	return st.State(), nil
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

// RetryPolicy maps a node's retry policy onto Temporal's: attempts,
// intervals and backoff carry over (Jitter has no counterpart), and
// RetryOn is applied by the task activity, which marks the errors it
// refuses non-retryable. A nil policy is one attempt.
func RetryPolicy(p *graph.RetryPolicy) *temporal.RetryPolicy {
	if p == nil {
		return &temporal.RetryPolicy{MaximumAttempts: 1}
	}
	d := p.WithDefaults()
	return &temporal.RetryPolicy{
		InitialInterval:    d.InitialInterval,
		BackoffCoefficient: d.BackoffFactor,
		MaximumInterval:    d.MaxInterval,
		MaximumAttempts:    int32(d.MaxAttempts),
	}
}

// Task is the task activity: it runs one task of a superstep once
// (Temporal retries it) and returns its output.
func (r *Runner[S]) Task(ctx context.Context, in TaskInput[S]) (graph.TaskOutput[S], error) {
	out, err := r.g.RunTask(ctx, in.Task, in.State, graph.TaskScope{Step: in.Step, Index: in.Index, Thread: in.Thread, Resume: in.Resume})
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
