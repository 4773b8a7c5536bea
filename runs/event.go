package runs

import (
	"encoding/json"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/jsonvalue"
	"github.com/trellis-go/trellis/model/modelmw"
)

// KindRunEnd is the kind of the last event of every run's stream: Status
// says how the run ended, Error why it failed or was cancelled,
// Interrupts what an interrupted run waits for, and Usage the tokens its
// model calls took.
const KindRunEnd graph.EventKind = "run_end"

// Event is one event of a run as the runs layer records it: a graph.Event
// in JSON, numbered within its run. Streams resume after a Seq.
type Event struct {
	// Seq numbers the run's events from 1, in the order they were recorded.
	Seq int64 `json:"seq"`
	// Run is the run's ID.
	Run string `json:"run_id"`
	// Attempt is the attempt (Run.Attempts) that recorded the event. A
	// worker that died mid-superstep leaves that superstep's events, and
	// the next attempt records its own when it runs the superstep again.
	Attempt int `json:"attempt"`
	// Kind, Graph, Path, Step, Node, Nodes, Fields, Name, CallID and Time
	// are the graph.Event's.
	Kind   graph.EventKind `json:"kind"`
	Graph  string          `json:"graph,omitempty"`
	Path   []string        `json:"path,omitempty"`
	Step   int             `json:"step"`
	Node   string          `json:"node,omitempty"`
	Nodes  []string        `json:"nodes,omitempty"`
	Fields []string        `json:"fields,omitempty"`
	Name   string          `json:"name,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	Time   time.Time       `json:"time"`
	// State and Payload are the graph.Event's in JSON. On the KindRunEnd
	// event of a run that succeeded, State is the run's final state.
	State   json.RawMessage `json:"state,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// DurationMS is how long a node ran (graph.KindNodeEnd).
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Error is the message of a node's error (graph.KindNodeEnd) or of the
	// run's failure (KindRunEnd).
	Error string `json:"error,omitempty"`
	// Status says how the run ended (KindRunEnd).
	Status Status `json:"status,omitempty"`
	// Interrupts are what an interrupted run waits for (graph.KindInterrupt,
	// KindRunEnd).
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	// Usage is the token usage of the run's model calls, in all, per
	// model and per agent (KindRunEnd; nil when the run made none). It
	// counts the calls of the attempt that ended the run: those of an
	// earlier attempt, whose worker stopped or died, are not in it.
	Usage *modelmw.Report `json:"usage,omitempty"`
}

// encodeEvent turns a graph event into its recorded form. A value that
// does not encode as JSON is recorded as a JSON string saying so, rather
// than failing the run.
func encodeEvent(ev *graph.Event) Event {
	out := Event{Kind: ev.Kind, Graph: ev.Graph, Path: ev.Path, Step: ev.Step, Node: ev.Node, Nodes: ev.Nodes,
		Fields: ev.Fields, Name: ev.Name, CallID: ev.CallID, Time: ev.Time}
	if out.Time.IsZero() {
		out.Time = time.Now()
	}
	if ev.State != nil {
		out.State = jsonvalue.Encode(ev.State)
	}
	if ev.Kind == graph.KindInterrupt {
		if ins, ok := ev.Payload.([]graph.PendingInterrupt); ok {
			out.Interrupts = ins
		}
	} else if ev.Payload != nil {
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

func graphMode(m uint16) graph.Mode { return graph.Mode(m) }
