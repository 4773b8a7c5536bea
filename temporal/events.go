package temporal

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/jsonvalue"
)

// Names of the query and signal that carry a run's events.
const (
	// QueryEvents returns the run's events after a cursor: its argument is
	// the Seq of the last event the caller has (0 for all), its answer an
	// EventPage. Queries add nothing to the workflow's history.
	QueryEvents = "trellis.events"
	// SignalEvents carries a batch of events ([]Event) that a task
	// published while it ran (SignalSink) into the run's event log.
	SignalEvents = "trellis.publish"
)

// KindRunEnd is the kind of the last event of a run's stream; Status says
// how it ended, State holds the final state of a run that succeeded.
// It is the runs layer's kind of the same name.
const KindRunEnd graph.EventKind = "run_end"

// How a run ended (Event.Status of a KindRunEnd event).
const (
	StatusSuccess   = "success"
	StatusError     = "error"
	StatusCancelled = "cancelled"
)

// DefaultStreamModes are the events a Runner streams unless WithStreamModes
// says otherwise: the state after each superstep and each node's output,
// which the workflow records itself. The events tasks publish while they
// run (ModeCustom, ModeMessages, ModeEvents) are asked for with
// WithStreamModes, since each batch of them is a signal in the workflow's
// history.
const DefaultStreamModes = graph.ModeValues | graph.ModeUpdates

// maxPage caps the events one QueryEvents answer holds.
const maxPage = 1000

// Event is one event of a run's stream, in JSON form. The workflow records
// the events of supersteps (graph.KindValues, graph.KindUpdate, the
// interrupts, KindRunEnd); tasks publish those their nodes emit while they
// run (custom events, model tokens, nodes starting and ending) through the
// Runner's Sink.
type Event struct {
	// Seq numbers the run's events from 1 in the order the workflow took
	// them; a caller resumes after a Seq. It goes on across continue-as-new.
	Seq int64 `json:"seq"`
	// Kind, Graph, Path, Step, Node, Nodes, Name and CallID are the
	// graph.Event's.
	Kind   graph.EventKind `json:"kind"`
	Graph  string          `json:"graph,omitempty"`
	Path   []string        `json:"path,omitempty"`
	Step   int             `json:"step"`
	Node   string          `json:"node,omitempty"`
	Nodes  []string        `json:"nodes,omitempty"`
	Name   string          `json:"name,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	// State and Payload are the graph.Event's in JSON: the state after a
	// superstep (KindValues), a node's output (KindUpdate), the final state
	// (KindRunEnd of a run that succeeded).
	State   json.RawMessage `json:"state,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// DurationMS is how long a node ran (graph.KindNodeEnd).
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Error is a node's error (graph.KindNodeEnd) or the run's (KindRunEnd).
	Error string `json:"error,omitempty"`
	// Status says how the run ended (KindRunEnd).
	Status string `json:"status,omitempty"`
	// Interrupts are what the run waits for (graph.KindInterrupt).
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	// Time is when the event was emitted: the task's clock for published
	// events, the workflow's for the others.
	Time time.Time `json:"time"`
}

// EventPage is the answer to QueryEvents.
type EventPage struct {
	// Events are the events after the cursor, at most 1,000.
	Events []Event `json:"events,omitempty"`
	// First is the Seq of the first event this workflow run holds: a run
	// continued as new holds only its own. A cursor before First-1 reads
	// the rest from the run named by Previous.
	First int64 `json:"first"`
	// Previous is the ID of the run this one continued (continue-as-new),
	// empty for the first.
	Previous string `json:"previous,omitempty"`
	// More says that events after the page's last are held already.
	More bool `json:"more,omitempty"`
	// Done says the run has ended (its KindRunEnd event is held) or
	// continued as new (the rest of the stream is the next run's).
	Done bool `json:"done"`
}

// eventLog is the workflow's record of its run's events.
type eventLog struct {
	base     int64 // Seq of the event before the first held
	events   []Event
	modes    graph.Mode
	previous string
	done     bool
}

func (l *eventLog) add(ctx workflow.Context, ev Event) {
	ev.Seq = l.base + int64(len(l.events)) + 1
	if ev.Time.IsZero() {
		ev.Time = workflow.Now(ctx)
	}
	l.events = append(l.events, ev)
}

// record adds a workflow-side event of mode m if the run streams m.
func (l *eventLog) record(ctx workflow.Context, m graph.Mode, ev Event) {
	if l.modes&m != 0 {
		l.add(ctx, ev)
	}
}

func (l *eventLog) page(after int64) EventPage {
	p := EventPage{First: l.base + 1, Previous: l.previous, Done: l.done}
	i := max(after-l.base, 0)
	if i >= int64(len(l.events)) {
		return p
	}
	end := min(int64(len(l.events)), i+maxPage)
	p.Events = l.events[i:end]
	p.More = end < int64(len(l.events))
	return p
}

// receive takes the batches tasks published from ch: waiting for them
// (in a workflow goroutine) or, with drain, those already delivered.
func (l *eventLog) receive(ctx workflow.Context, ch workflow.ReceiveChannel, drain bool) {
	for {
		var evs []Event
		if drain {
			if !ch.ReceiveAsync(&evs) {
				return
			}
		} else if !ch.Receive(ctx, &evs) {
			return
		}
		for _, ev := range evs {
			l.add(ctx, ev)
		}
	}
}

// Execution names the workflow run a task belongs to.
type Execution struct {
	WorkflowID string
	RunID      string
}

// A Sink takes the events the nodes of a task emit while it runs, in
// batches, in the order they were emitted, and makes them reach the run's
// stream. Publish is called from one goroutine at a time per task; an
// error is logged and the batch dropped (a stream is not a reason to fail
// a node).
type Sink interface {
	Publish(ctx context.Context, run Execution, events []Event) error
}

// Signaler is what SignalSink needs of a Temporal client (client.Client
// has it).
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// SignalSink is the default Sink: it sends each batch to the run's own
// workflow as the signal SignalEvents, with c, or with the worker's own
// client (activity.GetClient) when c is nil. The workflow adds the events
// to its log, so that any process that can query the workflow streams them
// (QueryEvents), and a worker that replays it holds them again. Each batch
// is an event of the workflow's history.
//
// The testsuite's environments give activities no usable client: tests
// pass a Signaler that calls TestWorkflowEnvironment.SignalWorkflow.
func SignalSink(c Signaler) Sink { return signalSink{c} }

type signalSink struct{ c Signaler }

func (s signalSink) Publish(ctx context.Context, run Execution, events []Event) error {
	c := s.c
	if c == nil {
		c = activity.GetClient(ctx)
	}
	return c.SignalWorkflow(ctx, run.WorkflowID, run.RunID, SignalEvents, events)
}

// publisher batches a task's events for a Sink: the first event of a
// batch leaves at once, the next ones at most every interval.
type publisher struct {
	sink     Sink
	run      Execution
	interval time.Duration
	ctx      context.Context
	warn     func(msg string, keyvals ...any)

	mu   sync.Mutex
	buf  []Event
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

func startPublisher(ctx context.Context, sink Sink, interval time.Duration) *publisher {
	info := activity.GetInfo(ctx)
	p := &publisher{
		sink: sink, interval: interval,
		run: Execution{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID},
		// The last batch leaves after the node, even if the task was
		// cancelled meanwhile.
		ctx:  context.WithoutCancel(ctx),
		warn: activity.GetLogger(ctx).Warn,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.loop()
	return p
}

// add takes an event a node emitted (from any goroutine).
func (p *publisher) add(ev graph.Event) {
	if ev.Kind == graph.KindInterrupt {
		return // the workflow records the interrupts it waits for
	}
	e := encodeEvent(ev)
	p.mu.Lock()
	p.buf = append(p.buf, e)
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *publisher) loop() {
	defer close(p.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.kick:
		case <-p.stop:
			p.flush()
			return
		}
		p.flush()
		t.Reset(p.interval)
		select {
		case <-t.C:
		case <-p.stop:
			p.flush()
			return
		}
	}
}

func (p *publisher) flush() {
	p.mu.Lock()
	batch := p.buf
	p.buf = nil
	p.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := p.sink.Publish(ctx, p.run, batch); err != nil {
		p.warn("task events dropped", "events", len(batch), "error", err)
	}
}

// close publishes what is left and stops the publisher.
func (p *publisher) close() {
	close(p.stop)
	<-p.done
}

// encodeEvent turns a graph event into its JSON form.
func encodeEvent(ev graph.Event) Event {
	out := Event{Kind: ev.Kind, Graph: ev.Graph, Path: ev.Path, Step: ev.Step, Node: ev.Node, Nodes: ev.Nodes,
		Name: ev.Name, CallID: ev.CallID, Time: ev.Time}
	if ev.State != nil {
		out.State = jsonvalue.Encode(ev.State)
	}
	if ev.Payload != nil {
		out.Payload = jsonvalue.Encode(ev.Payload)
	}
	if ev.Duration > 0 {
		out.DurationMS = float64(ev.Duration.Microseconds()) / 1000
	}
	if ev.Err != nil {
		out.Error = ev.Err.Error()
	}
	return out
}
