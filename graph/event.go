package graph

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Mode selects which events a stream carries. Modes combine with |.
type Mode uint16

// The stream modes.
const (
	// ModeValues: the whole state after each superstep (KindValues).
	ModeValues Mode = 1 << iota
	// ModeUpdates: each node's output and the fields it wrote (KindUpdate).
	ModeUpdates
	// ModeEvents: lifecycle events: nodes starting and ending with their
	// duration, and the lifecycle events of tools and models run by nodes.
	ModeEvents
	// ModeCustom: events nodes emit themselves through EmitCustom.
	ModeCustom
	// ModeMessages: token-by-token output of models run by nodes.
	ModeMessages
	// ModeDebug: supersteps starting and ending, with the tasks of each.
	ModeDebug

	// ModeAll is every mode.
	ModeAll = ModeValues | ModeUpdates | ModeEvents | ModeCustom | ModeMessages | ModeDebug
)

// EventKind names an event. Packages that run inside nodes (tools, models)
// define kinds of their own.
type EventKind string

// The kinds of event the engine emits.
const (
	KindValues    EventKind = "values"
	KindUpdate    EventKind = "update"
	KindNodeStart EventKind = "node_start"
	KindNodeEnd   EventKind = "node_end"
	KindCustom    EventKind = "custom"
	KindStepStart EventKind = "step_start"
	KindStepEnd   EventKind = "step_end"
	// KindInterrupt reports that the run paused; Payload is the []PendingInterrupt.
	// It is sent whatever the modes; the stream then ends with an
	// *InterruptError.
	KindInterrupt EventKind = "interrupt"
	// KindCheckpoint reports a checkpoint written (ModeDebug); Name is its ID.
	KindCheckpoint EventKind = "checkpoint"
	// KindDone is the last event of a stream that ended without error; its
	// State is the run's final state.
	KindDone EventKind = "done"
)

// Event is one element of a run's stream.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Graph is the name of the graph the event comes from.
	Graph string
	// Path is the chain of subgraph nodes (and agents) between the streamed
	// graph and the one the event comes from; empty for the streamed graph.
	Path []string
	// Step is the superstep.
	Step int
	// Node is the node the event concerns, if any.
	Node string
	// Nodes lists a superstep's tasks (KindStepStart, KindStepEnd).
	Nodes []string
	// State is the state: after a superstep (KindValues), a node's output
	// (KindUpdate), or the final state (KindDone). Events from nested graphs
	// carry their own graph's state type.
	State any
	// Fields names the fields a node wrote (KindUpdate).
	Fields []string
	// Duration is how long the node ran (KindNodeEnd).
	Duration time.Duration
	// Err is the node's error (KindNodeEnd), nil on success.
	Err error
	// Name names a custom event (KindCustom) or refines other kinds.
	Name string
	// Payload carries the data of custom, tool and model events.
	Payload any
	// CallID is, for an event of a nested run that a tool call started
	// (the agent of a handoff tool), the ID of that call, so that a user
	// interface can show the run's events under the call; for deeper runs,
	// the innermost such call's. It is empty for other events (see
	// WithCallID).
	CallID string
	// Time is when the event was emitted.
	Time time.Time
}

// emitter delivers events from a run, and from the goroutines of its nodes,
// to the stream's consumer and to the run's logger.
type emitter struct {
	modes    Mode // what anyone listens to: chModes | logModes
	chModes  Mode
	ch       chan Event
	stop     chan struct{} // closed when the consumer stops reading
	gate     *emitGate     // with ch: guards ch against sends after the run
	log      *slog.Logger
	logModes Mode
	callID   string // Event.CallID of the events of a nested run
	// fn, when set, receives the events of chModes instead of a channel
	// (TaskScope.Events).
	fn func(Event)
}

// emitGate lets the run close its stream's channel while goroutines the
// run's nodes left behind may still emit: their events are then dropped.
type emitGate struct {
	mu     sync.RWMutex
	closed bool
}

// deliver puts ev on the stream, unless the stream has ended or its
// consumer stopped reading.
func (e *emitter) deliver(ev Event) {
	e.gate.mu.RLock()
	defer e.gate.mu.RUnlock()
	if e.gate.closed {
		return
	}
	select {
	case e.ch <- ev:
	case <-e.stop:
	}
}

// end closes the stream's channel once no send is in progress; later
// events are dropped.
func (e *emitter) end() {
	e.gate.mu.Lock()
	defer e.gate.mu.Unlock()
	e.gate.closed = true
	close(e.ch)
}

// send delivers ev, an event of mode m, to whoever listens to m.
func (e *emitter) send(m Mode, ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.CallID == "" {
		ev.CallID = e.callID
	}
	if e.log != nil && e.logModes&m != 0 {
		logEvent(e.log, ev)
	}
	if e.ch != nil && e.chModes&m != 0 {
		e.deliver(ev)
	}
	if e.fn != nil && e.chModes&m != 0 {
		e.fn(ev)
	}
}

// sendAlways delivers ev to the stream whatever modes it carries, and to the
// logger if there is one. It is for the events every stream must see
// (KindInterrupt).
func (e *emitter) sendAlways(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.CallID == "" {
		ev.CallID = e.callID
	}
	if e.log != nil && e.logModes != 0 {
		logEvent(e.log, ev)
	}
	if e.ch != nil {
		e.deliver(ev)
	}
	if e.fn != nil {
		e.fn(ev)
	}
}

// restrict returns an emitter that passes on only the modes in m, or nil
// when none is left.
func (e *emitter) restrict(m Mode) *emitter {
	if e == nil || e.modes&m == 0 {
		return nil
	}
	r := *e
	r.chModes &= m
	r.logModes &= m
	r.modes = r.chModes | r.logModes
	return &r
}

// Emitting reports whether the run behind ctx streams events of mode m.
// Nodes can skip building events no one reads.
func Emitting(ctx context.Context, m Mode) bool {
	meta := metaFrom(ctx)
	return meta != nil && meta.emit != nil && meta.emit.modes&m != 0
}

// Emit sends ev to the stream of the run behind ctx if the stream carries
// mode m; it does nothing otherwise, and outside a run. Graph, Path, Node
// and Step are filled in from ctx where ev leaves them empty.
//
// Emit is safe to call from goroutines a node starts, at any time, even
// after the node returned; once the run is over, their events are dropped.
// A goroutine that may outlive its node should emit with Detach(ctx): its
// events then keep the node's name and step. The run reuses the node's own
// context for the nodes that run after it alone, so an event emitted with
// that context after the node returned takes the node and step that run
// with it at that moment (none between nodes).
func Emit(ctx context.Context, m Mode, ev Event) {
	meta := metaFrom(ctx)
	if meta == nil || meta.emit == nil || meta.emit.modes&m == 0 {
		return
	}
	if ev.Graph == "" {
		ev.Graph = meta.graph
	}
	if ev.Path == nil {
		ev.Path = meta.path
	}
	if ev.Node == "" {
		ev.Node, ev.Step = meta.place()
	}
	meta.emit.send(m, ev)
}

// EmitCustom sends a custom event (ModeCustom) named name with payload from
// inside a node.
func EmitCustom(ctx context.Context, name string, payload any) {
	Emit(ctx, ModeCustom, Event{Kind: KindCustom, Name: name, Payload: payload})
}
