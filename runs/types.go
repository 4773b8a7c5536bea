package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-go/trellis/graph"
)

// Status is where a run stands.
type Status string

// The statuses of a run. Pending and running runs are active; the others
// are final.
const (
	// StatusPending: accepted and waiting for a worker, or for its turn on
	// a busy thread (StrategyEnqueue).
	StatusPending Status = "pending"
	// StatusRunning: a worker holds the run's lease and executes it.
	StatusRunning Status = "running"
	// StatusSuccess: the graph ran to its end.
	StatusSuccess Status = "success"
	// StatusError: the graph failed; Run.Error says why.
	StatusError Status = "error"
	// StatusInterrupted: the graph paused for input (graph.Interrupt, or a
	// static interrupt); Run.Interrupts lists what it waits for, and a run
	// with Request.Resume answers it.
	StatusInterrupted Status = "interrupted"
	// StatusCancelled: the run was cancelled (Manager.Cancel) or displaced
	// by a newer run on its thread (StrategyInterrupt, StrategyRollback).
	StatusCancelled Status = "cancelled"
)

// Final reports whether a run with status s has ended.
func (s Status) Final() bool {
	switch s {
	case StatusSuccess, StatusError, StatusInterrupted, StatusCancelled:
		return true
	}
	return false
}

// ThreadStatus is where a thread stands.
type ThreadStatus string

// The statuses of a thread.
const (
	// ThreadIdle: no run is active and the last one did not pause or fail.
	ThreadIdle ThreadStatus = "idle"
	// ThreadBusy: a run is pending or running.
	ThreadBusy ThreadStatus = "busy"
	// ThreadInterrupted: the last run paused for input.
	ThreadInterrupted ThreadStatus = "interrupted"
	// ThreadError: the last run failed.
	ThreadError ThreadStatus = "error"
)

// Strategy says what a new run does when its thread already has an active
// run.
type Strategy string

// The strategies for a busy thread. None of them loses a turn: a run is
// either refused with an error and leaves no trace, or it runs.
const (
	// StrategyReject refuses the new run with an error matching
	// ErrThreadBusy. It is the default.
	StrategyReject Strategy = "reject"
	// StrategyEnqueue queues the new run behind the active ones: the runs
	// of a thread execute one at a time, in the order they were accepted.
	StrategyEnqueue Strategy = "enqueue"
	// StrategyInterrupt cancels the active run, keeping what it has
	// checkpointed, and then runs the new one on the thread's latest state.
	StrategyInterrupt Strategy = "interrupt"
	// StrategyRollback cancels the active run, returns the thread to the
	// state it had before that run began (a fork of the earlier checkpoint:
	// nothing is deleted), and then runs the new one.
	StrategyRollback Strategy = "rollback"
)

func (s Strategy) valid() bool {
	switch s {
	case "", StrategyReject, StrategyEnqueue, StrategyInterrupt, StrategyRollback:
		return true
	}
	return false
}

// CancelAction says what cancelling a run does to its thread.
type CancelAction string

// The ways to cancel a run.
const (
	// CancelInterrupt stops the run and keeps what it checkpointed: the
	// thread continues from there.
	CancelInterrupt CancelAction = "interrupt"
	// CancelRollback stops the run and returns its thread to the state it
	// had before the run began.
	CancelRollback CancelAction = "rollback"
)

// Request asks for a run.
type Request struct {
	// Graph names a graph registered with WithGraph.
	Graph string
	// Thread names the thread to run on. An empty Thread starts a new one,
	// whose ID the returned Run carries.
	Thread string
	// IfNotExists says what to do when Thread names a thread that does not
	// exist: create it (the default) or refuse with ErrNotFound.
	IfNotExists IfNotExists
	// Input is the run's input, as JSON: an object whose properties are
	// fields of the graph's state (by their JSON names). They are written
	// to the thread's latest state as a write of graph.START, through the
	// fields' reducers: a field with state.Append or state.Keyed gets the
	// input's elements added, other fields are replaced. Properties that
	// are absent leave their fields alone. A null or empty Input starts
	// the graph on the latest state as it is.
	Input json.RawMessage
	// Resume answers the interrupts the thread waits for instead of
	// starting the graph anew. See Resume.
	Resume *Resume
	// Strategy says what happens when the thread has an active run
	// (StrategyReject unless set).
	Strategy Strategy
	// Metadata is stored with the run and merged into the thread's
	// metadata when the thread is created by this run.
	Metadata map[string]any
	// Modes selects the events recorded for Manager.Stream
	// (DefaultModes when zero). Interrupts and the run's end are always
	// recorded.
	Modes graph.Mode
	// After delays the run: it starts no sooner than this long after it
	// was accepted.
	After time.Duration
	// StepLimit overrides the graph's superstep limit when positive.
	StepLimit int
}

// IfNotExists says what a run on an unknown thread does.
type IfNotExists string

// What a run on an unknown thread does.
const (
	// IfNotExistsCreate creates the thread (the default).
	IfNotExistsCreate IfNotExists = "create"
	// IfNotExistsReject refuses the run with an error matching ErrNotFound.
	IfNotExistsReject IfNotExists = "reject"
)

// Resume answers the interrupts a thread waits for: Value answers the only
// one, ByID answers each by its ID (graph.PendingInterrupt.ID). With
// Continue and no answers, the run continues the thread from its latest
// checkpoint, running the nodes due there (after a static interrupt, or on
// a fork), as graph.Graph.Resume does.
type Resume struct {
	// Value answers the thread's single pending interrupt when HasValue is
	// set (a JSON null is a valid answer).
	Value json.RawMessage `json:"value,omitempty"`
	// HasValue says Value is an answer.
	HasValue bool `json:"has_value,omitempty"`
	// ByID answers interrupts by ID.
	ByID map[string]json.RawMessage `json:"by_id,omitempty"`
	// Continue, without answers, continues the thread where it stopped.
	Continue bool `json:"continue,omitempty"`
}

// DefaultModes are the events a run records when its Request names none:
// the state after each superstep, each node's writes, and custom events.
const DefaultModes = graph.ModeValues | graph.ModeUpdates | graph.ModeCustom

// Run is a run as the runs layer records it.
type Run struct {
	// ID identifies the run.
	ID string `json:"run_id"`
	// Thread is the thread it runs on.
	Thread string `json:"thread_id"`
	// Graph is the name of the graph it runs.
	Graph string `json:"graph"`
	// Status is where it stands.
	Status Status `json:"status"`
	// Strategy is the strategy it was started with.
	Strategy Strategy `json:"multitask_strategy"`
	// Metadata is what the request carried.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Input and Resume are what the request carried.
	Input  json.RawMessage `json:"input,omitempty"`
	Resume *Resume         `json:"resume,omitempty"`
	// Modes are the event modes it records.
	Modes graph.Mode `json:"modes"`
	// Error is the failure of a run with StatusError (its message only),
	// or why a run was cancelled.
	Error string `json:"error,omitempty"`
	// Interrupts are what a run with StatusInterrupted waits for.
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	// Attempts counts the workers that took the run: more than one after
	// a worker stopped or died while holding it.
	Attempts int `json:"attempts"`
	// Worker names the worker that holds the run, or that ended it (see
	// WithWorkerID); empty while it waits.
	Worker string `json:"worker,omitempty"`
	// CreatedAt is when the run was accepted; StartAt is the earliest it
	// may start (later than CreatedAt for a delayed run); UpdatedAt is when
	// its record last changed; EndedAt is when it ended (zero until then).
	CreatedAt time.Time `json:"created_at"`
	StartAt   time.Time `json:"start_at"`
	UpdatedAt time.Time `json:"updated_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`

	job   *runJob // a run Start may begin in this process at once
	jobID int64
	claim *claimed // a run Start claimed for this process's worker
}

// Thread is a thread as the runs layer records it, beside its checkpoints.
type Thread struct {
	// ID identifies the thread; it is the thread of its checkpoints.
	ID string `json:"thread_id"`
	// Status is where it stands.
	Status ThreadStatus `json:"status"`
	// Graph is the graph of the thread's latest run.
	Graph string `json:"graph,omitempty"`
	// Metadata is free-form, searchable metadata.
	Metadata map[string]any `json:"metadata,omitempty"`
	// ActiveRun is the run that holds the thread (pending or running),
	// empty when none does.
	ActiveRun string `json:"active_run,omitempty"`
	// CreatedAt and UpdatedAt are when the thread was created and when
	// its record last changed.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ThreadQuery narrows a thread search.
type ThreadQuery struct {
	// Metadata, when not empty, keeps threads whose metadata holds every
	// one of these keys with an equal value.
	Metadata map[string]any
	// Status, when not empty, keeps threads with this status.
	Status ThreadStatus
	// Limit caps the result (DefaultLimit when zero, at most MaxLimit);
	// Offset skips that many of the newest-updated first.
	Limit, Offset int
}

// RunQuery narrows a listing of a thread's runs.
type RunQuery struct {
	// Status, when not empty, keeps runs with this status.
	Status Status
	// Limit caps the result (DefaultLimit when zero, at most MaxLimit);
	// Offset skips that many of the newest first.
	Limit, Offset int
}

// Limits of listings.
const (
	DefaultLimit = 10
	MaxLimit     = 1000
)

func limitOf(n int) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", ErrInvalid, n)
	case n == 0:
		return DefaultLimit, nil
	case n > MaxLimit:
		return 0, fmt.Errorf("%w: limit %d is over %d", ErrInvalid, n, MaxLimit)
	}
	return n, nil
}

// Errors of the runs layer. Errors wrap them with what was missing or
// wrong, so errors.Is works and the message says which.
var (
	// ErrNotFound reports a run or thread that does not exist (or belongs
	// to another owner: see WithOwner).
	ErrNotFound = errors.New("not found")
	// ErrThreadBusy reports a run refused because its thread has an active
	// run (StrategyReject), or a thread that cannot be deleted or changed
	// while a run holds it. It is graph.ErrThreadBusy, so callers test one
	// error for both layers.
	ErrThreadBusy = graph.ErrThreadBusy
	// ErrInvalid reports a request that cannot be carried out as given.
	ErrInvalid = errors.New("invalid request")
	// ErrUnknownGraph reports a request for a graph that is not registered.
	ErrUnknownGraph = errors.New("unknown graph")
	// ErrLeaseLost reports a worker that lost a run's lease (it was taken
	// for dead, and the run moved on): it stopped the run and committed
	// nothing more.
	ErrLeaseLost = errors.New("the run's lease was lost")
	// ErrNoOutput reports a run without a final state to read (Output): it
	// has not ended, or did not succeed.
	ErrNoOutput = errors.New("the run has no output")
	// ErrClosed reports a call on a Manager that was closed.
	ErrClosed = errors.New("the runs manager is closed")
)
