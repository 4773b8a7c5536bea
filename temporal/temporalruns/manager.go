package temporalruns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/temporal"
)

// Memo keys under which Start keeps a request's metadata and modes.
const (
	memoMetadata = "trellis.metadata"
	memoModes    = "trellis.modes"
)

// UnsupportedError reports a call, or a part of a request, that the runs
// layer supports and a Temporal run cannot do as it does. It matches
// errors.ErrUnsupported.
type UnsupportedError struct {
	// Op is the Client method; What says what it cannot do.
	Op, What string
}

// Error says what is not supported.
func (e *UnsupportedError) Error() string {
	return "temporalruns: " + e.Op + ": not supported over Temporal: " + e.What
}

// Is makes the error match errors.ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

func unsupported(op, what string) error { return &UnsupportedError{Op: op, What: what} }

// Manager drives graph runs that execute as Temporal workflows, through
// the runs layer's Client interface. It is safe for concurrent use.
type Manager struct {
	c     client.Client
	queue string
	poll  time.Duration
}

var _ runs.Client = (*Manager)(nil)

// Option configures a Manager.
type Option func(*Manager)

// WithPollInterval sets how often Wait and Stream ask the workflow for
// news (200 ms unless set). Queries add nothing to the workflow's history.
func WithPollInterval(d time.Duration) Option { return func(m *Manager) { m.poll = d } }

// New returns a Manager that starts runs on the task queue queue through c.
func New(c client.Client, queue string, opts ...Option) *Manager {
	m := &Manager{c: c, queue: queue, poll: 200 * time.Millisecond}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Start starts a run of req.Graph, the workflow a temporal.Runner
// registered under that name, with req.Input as its input state, on the
// thread req.Thread (a new one when empty), which is the workflow's ID.
// With req.Resume it answers the interrupts the thread's run waits for
// instead, and returns that run, which goes on. See the package
// documentation for what is not supported.
func (m *Manager) Start(ctx context.Context, req runs.Request) (runs.Run, error) {
	switch req.Strategy {
	case "", runs.StrategyReject:
	default:
		return runs.Run{}, unsupported("Start", fmt.Sprintf("strategy %q (a busy thread refuses a new run)", req.Strategy))
	}
	if req.IfNotExists == runs.IfNotExistsReject {
		return runs.Run{}, unsupported("Start", "if_not_exists reject (each run starts its own thread)")
	}
	if req.StepLimit > 0 {
		return runs.Run{}, unsupported("Start", "a step limit per run (the graph's own applies)")
	}
	if req.Resume != nil {
		return m.resume(ctx, req)
	}
	if req.Graph == "" {
		return runs.Run{}, fmt.Errorf("temporalruns: %w: the request names no graph", runs.ErrInvalid)
	}
	input := json.RawMessage(strings.TrimSpace(string(req.Input)))
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	if input[0] != '{' || !json.Valid(input) {
		return runs.Run{}, fmt.Errorf("temporalruns: %w: the input must be a JSON object of state fields", runs.ErrInvalid)
	}
	thread := req.Thread
	if thread == "" {
		thread = uuid.NewString()
	}
	opts := client.StartWorkflowOptions{
		ID:        thread,
		TaskQueue: m.queue,
		// A thread holds one run: its next would start from the input,
		// not from the thread's state as a Manager's does.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		StartDelay:               req.After,
		Memo:                     map[string]any{memoModes: uint16(req.Modes)},
	}
	if len(req.Metadata) > 0 {
		opts.Memo[memoMetadata] = req.Metadata
	}
	run, err := m.c.ExecuteWorkflow(ctx, opts, req.Graph, input)
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if !errors.As(err, &started) {
			return runs.Run{}, fmt.Errorf("temporalruns: start a run of %q: %w", req.Graph, err)
		}
		prev, gerr := m.Get(ctx, thread)
		if gerr == nil && prev.Status.Final() && prev.Status != runs.StatusInterrupted {
			return runs.Run{}, unsupported("Start", fmt.Sprintf("a second run on thread %q (its state does not carry over)", thread))
		}
		return runs.Run{}, fmt.Errorf("temporalruns: thread %q: %w", thread, runs.ErrThreadBusy)
	}
	now := time.Now().UTC()
	return runs.Run{
		ID: run.GetID(), Thread: run.GetID(), Graph: req.Graph, Status: runs.StatusPending,
		Strategy: runs.StrategyReject, Metadata: req.Metadata, Input: input, Modes: req.Modes,
		CreatedAt: now, StartAt: now.Add(req.After), UpdatedAt: now,
	}, nil
}

// resume answers the interrupts of the run on req.Thread.
func (m *Manager) resume(ctx context.Context, req runs.Request) (runs.Run, error) {
	if req.Thread == "" {
		return runs.Run{}, fmt.Errorf("temporalruns: %w: a resume names the thread it answers", runs.ErrInvalid)
	}
	if in := strings.TrimSpace(string(req.Input)); in != "" && in != "null" {
		return runs.Run{}, fmt.Errorf("temporalruns: %w: a run either resumes a thread or gives it input, not both", runs.ErrInvalid)
	}
	r := req.Resume
	var answers []temporal.Resume
	if r.HasValue {
		answers = append(answers, temporal.Resume{Value: orNull(r.Value)})
	}
	for id, v := range r.ByID {
		answers = append(answers, temporal.Resume{ID: id, Value: orNull(v)})
	}
	if len(answers) == 0 && r.Continue {
		// Static interrupts take any answer: Continue gives each its own.
		st, err := m.status(ctx, req.Thread)
		if err != nil {
			return runs.Run{}, err
		}
		for _, p := range st.Interrupts {
			if p.When != graph.During {
				answers = append(answers, temporal.Resume{ID: p.ID, Value: json.RawMessage("null")})
			}
		}
	}
	if len(answers) == 0 {
		return runs.Run{}, fmt.Errorf("temporalruns: %w: the resume answers nothing that is pending", runs.ErrInvalid)
	}
	for _, a := range answers {
		h, err := m.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: req.Thread, UpdateName: temporal.UpdateResume, Args: []any{a},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			return runs.Run{}, m.resumeError(req.Thread, err)
		}
	}
	return m.Get(ctx, req.Thread)
}

func (m *Manager) resumeError(thread string, err error) error {
	if strings.Contains(err.Error(), temporal.ErrNotPending.Error()) {
		return fmt.Errorf("temporalruns: resume thread %q: %w: %w (%w)", thread, runs.ErrInvalid, temporal.ErrNotPending, err)
	}
	return fmt.Errorf("temporalruns: resume thread %q: %w", thread, notFound(err))
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// notFound makes a server's NotFound match runs.ErrNotFound.
func notFound(err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%w (%w)", runs.ErrNotFound, err)
	}
	return err
}

// notReady reports a query the workflow could not answer yet: a server's
// WorkflowNotReady (its first task has not run), or, in the SDK's test
// environment, a query that found no handler while the run started or
// completed. The next poll asks again.
func notReady(err error) bool {
	var nr *serviceerror.WorkflowNotReady
	return errors.As(err, &nr) || strings.Contains(err.Error(), "unknown queryType")
}

// status queries the run's temporal.Status, with its state as JSON.
func (m *Manager) status(ctx context.Context, id string) (temporal.Status[json.RawMessage], error) {
	var st temporal.Status[json.RawMessage]
	v, err := m.c.QueryWorkflow(ctx, id, "", temporal.QueryState)
	if err != nil {
		return st, fmt.Errorf("temporalruns: state of %q: %w", id, notFound(err))
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("temporalruns: state of %q: %w", id, err)
	}
	return st, nil
}

// Get returns the run: its status from the workflow's (a running workflow
// that waits for answers is StatusInterrupted, one whose first task has
// not run yet StatusPending), its metadata and modes from the workflow's
// memo.
func (m *Manager) Get(ctx context.Context, id string) (runs.Run, error) {
	d, err := m.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return runs.Run{}, fmt.Errorf("temporalruns: run %q: %w", id, notFound(err))
	}
	info := d.GetWorkflowExecutionInfo()
	r := runs.Run{ID: id, Thread: id, Graph: info.GetType().GetName(), Strategy: runs.StrategyReject, Attempts: 1}
	r.CreatedAt = info.GetStartTime().AsTime()
	r.StartAt = info.GetExecutionTime().AsTime()
	r.UpdatedAt = r.CreatedAt
	if info.GetCloseTime() != nil {
		r.EndedAt = info.GetCloseTime().AsTime()
		r.UpdatedAt = r.EndedAt
	}
	readMemo(info.GetMemo(), &r)
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		r.Status = runs.StatusRunning
		st, err := m.status(ctx, id)
		if err != nil && notReady(err) {
			r.Status = runs.StatusPending
			break
		}
		if err != nil {
			return runs.Run{}, err
		}
		if len(st.Interrupts) > 0 {
			r.Status, r.Interrupts = runs.StatusInterrupted, st.Interrupts
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		r.Status = runs.StatusSuccess
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		r.Status, r.Error = runs.StatusCancelled, "cancelled"
	default: // failed, terminated, timed out
		r.Status = runs.StatusError
		if err := m.c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			r.Error = err.Error()
		} else {
			r.Error = strings.ToLower(info.GetStatus().String())
		}
	}
	return r, nil
}

func readMemo(memo *commonpb.Memo, r *runs.Run) {
	dc := converter.GetDefaultDataConverter()
	if p, ok := memo.GetFields()[memoModes]; ok {
		var modes uint16
		if dc.FromPayload(p, &modes) == nil {
			r.Modes = graph.Mode(modes)
		}
	}
	if p, ok := memo.GetFields()[memoMetadata]; ok {
		_ = dc.FromPayload(p, &r.Metadata)
	}
}

// Wait waits until the run has ended or waits for answers, and returns it.
func (m *Manager) Wait(ctx context.Context, id string) (runs.Run, error) {
	t := time.NewTicker(m.poll)
	defer t.Stop()
	for {
		r, err := m.Get(ctx, id)
		if err != nil || r.Status.Final() {
			return r, err
		}
		select {
		case <-ctx.Done():
			return runs.Run{}, ctx.Err()
		case <-t.C:
		}
	}
}

// Output returns the final state of a run that succeeded, as JSON: the
// workflow's result.
func (m *Manager) Output(ctx context.Context, id string) (json.RawMessage, error) {
	r, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status != runs.StatusSuccess {
		return nil, fmt.Errorf("temporalruns: output of run %q (%s): %w", id, r.Status, runs.ErrNoOutput)
	}
	var out json.RawMessage
	if err := m.c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
		return nil, fmt.Errorf("temporalruns: output of run %q: %w", id, err)
	}
	return out, nil
}

// Cancel cancels the run's workflow (CancelInterrupt): its running tasks
// are asked to stop and the run ends once they have. Nothing is rolled
// back: CancelRollback fails with an *UnsupportedError. A run that waits
// for answers has ended when Cancel returns; cancelling a run that has
// ended does nothing.
func (m *Manager) Cancel(ctx context.Context, id string, action runs.CancelAction) error {
	switch action {
	case "", runs.CancelInterrupt:
	case runs.CancelRollback:
		return unsupported("Cancel", "rollback (a workflow's history is not rolled back)")
	default:
		return fmt.Errorf("temporalruns: %w: unknown cancel action %q", runs.ErrInvalid, action)
	}
	r, err := m.Get(ctx, id)
	if err != nil {
		return err
	}
	if r.Status.Final() && r.Status != runs.StatusInterrupted {
		return nil
	}
	if err := m.c.CancelWorkflow(ctx, id, ""); err != nil {
		return fmt.Errorf("temporalruns: cancel run %q: %w", id, notFound(err))
	}
	if r.Status != runs.StatusInterrupted {
		return nil
	}
	// A run that waits for answers runs no task: it ends at once. Wait
	// for it, so that a Wait after Cancel sees the end rather than the
	// interrupt, as with a Manager.
	t := time.NewTicker(m.poll)
	defer t.Stop()
	for {
		r, err := m.Get(ctx, id)
		if err != nil || r.Status != runs.StatusInterrupted {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Stream yields the run's events after the one numbered after, read from
// the workflow with the query temporal.QueryEvents (and from the runs it
// continued, for a cursor before theirs), until the run's end. The
// workflow holds the events of the modes its Runner streams
// (temporal.WithStreamModes); the request's Modes, when set, narrow them.
// A run that waits for answers ends its stream with a KindRunEnd event of
// status interrupted, which is not recorded: resuming the stream after it
// goes on with the run's next events.
func (m *Manager) Stream(ctx context.Context, id string, after int64) iter.Seq2[runs.Event, error] {
	return func(yield func(runs.Event, error) bool) {
		r, err := m.Get(ctx, id)
		if err != nil {
			yield(runs.Event{}, err)
			return
		}
		t := time.NewTicker(m.poll)
		defer t.Stop()
		settled := false
		for {
			page, err := m.page(ctx, id, "", after)
			if err != nil {
				yield(runs.Event{}, err)
				return
			}
			for _, ev := range page.Events {
				after = ev.Seq
				if !keep(r.Modes, ev.Kind) {
					continue
				}
				if !yield(convert(id, ev), nil) || ev.Kind == temporal.KindRunEnd {
					return
				}
			}
			if page.More {
				continue
			}
			if len(page.Events) == 0 {
				// Nothing new: a run that waits for answers, or that ended
				// without recording its end (terminated), ends the stream.
				cur, err := m.Get(ctx, id)
				if err != nil {
					yield(runs.Event{}, err)
					return
				}
				if cur.Status.Final() && !settled {
					// The run may have moved on between the page and
					// Get: read what it recorded before it paused.
					settled = true
					continue
				}
				if cur.Status.Final() {
					yield(runs.Event{Seq: after, Run: id, Kind: runs.KindRunEnd, Status: cur.Status, Error: cur.Error,
						Interrupts: cur.Interrupts, Time: time.Now().UTC(), Attempt: 1}, nil)
					return
				}
			}
			select {
			case <-ctx.Done():
				yield(runs.Event{}, ctx.Err())
				return
			case <-t.C:
			}
		}
	}
}

// page reads the events after the cursor from the workflow run runID (the
// latest when empty), reaching back to the runs it continued when the
// cursor is before the events it holds.
func (m *Manager) page(ctx context.Context, id, runID string, after int64) (temporal.EventPage, error) {
	v, err := m.c.QueryWorkflow(ctx, id, runID, temporal.QueryEvents, after)
	if err != nil && notReady(err) {
		return temporal.EventPage{First: after + 1}, nil // no event yet
	}
	if err != nil {
		return temporal.EventPage{}, fmt.Errorf("temporalruns: events of run %q: %w", id, notFound(err))
	}
	var p temporal.EventPage
	if err := v.Get(&p); err != nil {
		return p, fmt.Errorf("temporalruns: events of run %q: %w", id, err)
	}
	if after < p.First-1 && p.Previous != "" {
		older, err := m.page(ctx, id, p.Previous, after)
		if err != nil {
			return p, err
		}
		if len(older.Events) > 0 {
			older.More = true // the later runs' events follow
			return older, nil
		}
	}
	return p, nil
}

// keep reports whether a stream of modes carries events of kind.
func keep(modes graph.Mode, kind graph.EventKind) bool {
	if modes == 0 {
		return true
	}
	var m graph.Mode
	switch kind {
	case graph.KindValues:
		m = graph.ModeValues
	case graph.KindUpdate:
		m = graph.ModeUpdates
	case graph.KindCustom:
		m = graph.ModeCustom
	case graph.KindNodeStart, graph.KindNodeEnd:
		m = graph.ModeEvents
	case graph.KindStepStart, graph.KindStepEnd:
		m = graph.ModeDebug
	default:
		return true // interrupts, the end, and the kinds of models and tools
	}
	return modes&m != 0
}

func convert(id string, ev temporal.Event) runs.Event {
	return runs.Event{
		Seq: ev.Seq, Run: id, Attempt: 1, Kind: ev.Kind, Graph: ev.Graph, Path: ev.Path, Step: ev.Step,
		Node: ev.Node, Nodes: ev.Nodes, Name: ev.Name, CallID: ev.CallID, Time: ev.Time,
		State: ev.State, Payload: ev.Payload, DurationMS: ev.DurationMS, Error: ev.Error,
		Status: runs.Status(ev.Status), Interrupts: ev.Interrupts,
	}
}
