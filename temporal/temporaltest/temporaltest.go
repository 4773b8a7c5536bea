// Package temporaltest runs a workflow in a test environment of the SDK's
// testsuite while a test acts as its caller, so that code that drives
// runs (runs.Client over package temporalruns, or a client.Client) is
// tested with the real workflow and activities and no server.
//
// Start runs the workflow on a goroutine of its own and returns a Live,
// whose Do and Query reach the environment through its main loop. Client
// is a client.Client over one environment, which runs one workflow: it
// answers starts, describes, queries, updates, signals, cancellations and
// results as a server would, and panics on other calls. Signaler lets
// temporal.SignalSink deliver task events in a test environment, whose
// activities have no usable client.
//
// The environment skips its clock whenever the workflow waits and no
// activity runs; a run started here keeps the workflow's clock within a
// thousand times the real one (a timer renewed every workflow second,
// holding the environment's loop for a millisecond), so that a workflow
// waiting for its caller does not reach its run timeout at once.
package temporaltest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Live is a workflow of a test environment running on a goroutine of its
// own. Calls reach the environment through its main loop
// (RegisterDelayedCallback with no delay posts to it from any goroutine),
// as a server would serialize them; once the run has ended they are made
// directly.
type Live struct {
	Env  *testsuite.TestWorkflowEnvironment
	done chan struct{}
}

// Start runs workflow with args in env and returns once it has started.
func Start(env *testsuite.TestWorkflowEnvironment, workflow string, args ...any) *Live {
	l := &Live{Env: env, done: make(chan struct{})}
	// A callback posted before the run starts would run before it: this
	// timer's fires after the start, which ExecuteWorkflow posts first.
	started := make(chan struct{})
	env.RegisterDelayedCallback(func() { close(started) }, time.Nanosecond)
	// The environment skips its clock to the next timer whenever the
	// workflow waits and no activity runs: a workflow waiting for its
	// caller would reach its run timeout at once. This timer, renewed
	// every workflow second and holding the main loop for a millisecond,
	// keeps the workflow's clock within a thousand times the real one.
	var pace func()
	pace = func() {
		if l.Ended() {
			return
		}
		time.Sleep(time.Millisecond)
		env.RegisterDelayedCallback(pace, time.Second)
	}
	env.RegisterDelayedCallback(pace, time.Second)
	go func() {
		defer close(l.done)
		env.ExecuteWorkflow(workflow, args...)
	}()
	select {
	case <-started:
	case <-l.done:
	}
	return l
}

// Done is closed when the run has ended.
func (l *Live) Done() <-chan struct{} { return l.done }

// Ended reports whether the run has ended.
func (l *Live) Ended() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// Do runs f on the environment's main loop, or here once the run has
// ended.
func (l *Live) Do(f func()) {
	if l.Ended() {
		f()
		return
	}
	ran := make(chan struct{})
	var once sync.Once
	run := func() { once.Do(func() { defer close(ran); f() }) }
	l.Env.RegisterDelayedCallback(run, 0)
	select {
	case <-ran:
	case <-l.done:
		run() // the run ended before the loop took f
		<-ran
	}
}

// Query runs a query on the main loop.
func (l *Live) Query(name string, args ...any) (converter.EncodedValue, error) {
	var v converter.EncodedValue
	var err error
	l.Do(func() { v, err = l.Env.QueryWorkflow(name, args...) })
	return v, err
}

// Signaler delivers signals to the environment's workflow: a
// temporal.Signaler for temporal.SignalSink in tests.
type Signaler struct {
	Env *testsuite.TestWorkflowEnvironment
}

// SignalWorkflow signals the environment's workflow.
func (s Signaler) SignalWorkflow(_ context.Context, _, _, name string, arg any) error {
	s.Env.SignalWorkflow(name, arg)
	return nil
}

// Client is a client.Client over one test environment, which runs one
// workflow: the calls a caller of runs makes (start, describe, query,
// update, signal, cancel, result) reach it; the others panic.
type Client struct {
	client.Client
	env     *testsuite.TestWorkflowEnvironment
	mu      sync.Mutex
	live    *Live
	id      string
	memo    map[string]any
	started time.Time
	name    string
}

// NewClient returns a Client over env.
func NewClient(env *testsuite.TestWorkflowEnvironment) *Client { return &Client{env: env} }

// Live returns the running workflow, nil before ExecuteWorkflow.
func (c *Client) Live() *Live {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

func (c *Client) find(id string) (*Live, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live == nil || id != c.id {
		return nil, serviceerror.NewNotFound(fmt.Sprintf("workflow %q not found", id))
	}
	return c.live, nil
}

// ExecuteWorkflow starts the environment's workflow; a second start fails
// as a server's does for a workflow ID that was used.
func (c *Client) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	c.mu.Lock()
	if c.live != nil {
		c.mu.Unlock()
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("workflow already started", "", "run-1")
	}
	name, ok := workflow.(string)
	if !ok {
		c.mu.Unlock()
		return nil, errors.New("temporaltest: start workflows by name")
	}
	c.id, c.memo, c.started, c.name = opts.ID, opts.Memo, time.Now(), name
	c.mu.Unlock()
	c.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: opts.ID, TaskQueue: opts.TaskQueue})
	l := Start(c.env, name, args...)
	c.mu.Lock()
	c.live = l
	c.mu.Unlock()
	return run{c: c, id: opts.ID}, nil
}

// GetWorkflow returns the run of the workflow.
func (c *Client) GetWorkflow(_ context.Context, id, _ string) client.WorkflowRun {
	return run{c: c, id: id}
}

// QueryWorkflow queries the workflow.
func (c *Client) QueryWorkflow(_ context.Context, id, _ string, name string, args ...any) (converter.EncodedValue, error) {
	l, err := c.find(id)
	if err != nil {
		return nil, err
	}
	return l.Query(name, args...)
}

// SignalWorkflow signals the workflow.
func (c *Client) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	if _, err := c.find(id); err != nil {
		return err
	}
	c.env.SignalWorkflow(name, arg)
	return nil
}

// CancelWorkflow cancels the workflow.
func (c *Client) CancelWorkflow(_ context.Context, id, _ string) error {
	l, err := c.find(id)
	if err != nil {
		return err
	}
	l.Do(c.env.CancelWorkflow)
	return nil
}

// UpdateWorkflow sends an update and waits for its outcome.
func (c *Client) UpdateWorkflow(_ context.Context, opts client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	l, err := c.find(opts.WorkflowID)
	if err != nil {
		return nil, err
	}
	if l.Ended() {
		return nil, serviceerror.NewNotFound("workflow execution already completed")
	}
	h := &update{done: make(chan struct{})}
	l.Do(func() {
		c.env.UpdateWorkflow(opts.UpdateName, opts.UpdateID, &testsuite.TestUpdateCallback{
			OnAccept:   func() {},
			OnReject:   func(err error) { h.finish(nil, err) },
			OnComplete: func(v any, err error) { h.finish(v, err) },
		}, opts.Args...)
	})
	return h, nil
}

// DescribeWorkflowExecution reports the workflow's status and memo.
func (c *Client) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	l, err := c.find(id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	memo, started, name := c.memo, c.started, c.name
	c.mu.Unlock()
	info := &workflowpb.WorkflowExecutionInfo{
		Execution:     &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-1"},
		Type:          &commonpb.WorkflowType{Name: name},
		Status:        enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		StartTime:     timestamppb.New(started),
		ExecutionTime: timestamppb.New(started),
		Memo:          &commonpb.Memo{Fields: map[string]*commonpb.Payload{}},
	}
	for k, v := range memo {
		p, err := converter.GetDefaultDataConverter().ToPayload(v)
		if err != nil {
			return nil, err
		}
		info.Memo.Fields[k] = p
	}
	if l.Ended() {
		info.CloseTime = timestamppb.Now()
		switch err := c.env.GetWorkflowError(); {
		case err == nil:
			info.Status = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		case temporal.IsCanceledError(err):
			info.Status = enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED
		default:
			info.Status = enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
		}
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}, nil
}

// run is the client.WorkflowRun of the environment's workflow.
type run struct {
	c  *Client
	id string
}

func (r run) GetID() string                  { return r.id }
func (r run) GetRunID() string               { return "run-1" }
func (r run) GetFirstExecutionRunID() string { return "run-1" }

func (r run) Get(ctx context.Context, valuePtr any) error {
	l, err := r.c.find(r.id)
	if err != nil {
		return err
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := r.c.env.GetWorkflowError(); err != nil {
		return err
	}
	if valuePtr == nil {
		return nil
	}
	return r.c.env.GetWorkflowResult(valuePtr)
}

func (r run) GetWithOptions(ctx context.Context, valuePtr any, _ client.WorkflowRunGetOptions) error {
	return r.Get(ctx, valuePtr)
}

// update is the handle of an update sent to the environment.
type update struct {
	once  sync.Once
	done  chan struct{}
	value any
	err   error
}

func (u *update) finish(v any, err error) {
	u.once.Do(func() {
		u.value, u.err = v, err
		close(u.done)
	})
}

func (u *update) WorkflowID() string { return "" }
func (u *update) RunID() string      { return "run-1" }
func (u *update) UpdateID() string   { return "" }

func (u *update) Get(ctx context.Context, _ any) error {
	select {
	case <-u.done:
		return u.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
