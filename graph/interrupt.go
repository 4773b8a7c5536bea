package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// ErrInterrupted is matched by *InterruptError.
var ErrInterrupted = errors.New("run interrupted")

// When says where an interrupt stopped a run.
type When string

// Where an interrupt can stop a run.
const (
	// During: a node called Interrupt.
	During When = "during"
	// Before: the run reached a node listed in InterruptBefore.
	Before When = "before"
	// After: a node listed in InterruptAfter finished.
	After When = "after"
)

// PendingInterrupt describes a pause that waits for the caller.
type PendingInterrupt struct {
	// ID identifies the interrupt; resume values are addressed to it.
	ID string `json:"id"`
	// When says whether a node asked for input or a static interrupt hit.
	When When `json:"when"`
	// Node is the node that was interrupted or is about to run.
	Node string `json:"node"`
	// Path is the chain of subgraph nodes (and agents) that lead to Node's
	// graph from the graph the caller runs; empty at the top level.
	Path []string `json:"path,omitempty"`
	// Payload is what the node passed to Interrupt. After a round trip
	// through a checkpoint it is a json.RawMessage.
	Payload any `json:"payload,omitempty"`
}

// InterruptError ends a run that paused for the caller. It is not a failure:
// the state of the last completed superstep is returned with it, and Resume
// continues the thread. Interrupts lists everything the run waits for.
type InterruptError struct {
	// Thread is the thread to resume, empty if the run had no checkpointer.
	Thread string
	// Interrupts are the pending interrupts, in task order.
	Interrupts []PendingInterrupt
}

// Error returns the error's message.
func (e *InterruptError) Error() string {
	var b strings.Builder
	b.WriteString("graph: run interrupted")
	if e.Thread != "" {
		fmt.Fprintf(&b, " (thread %q)", e.Thread)
	}
	b.WriteString(": ")
	for i, in := range e.Interrupts {
		if i > 0 {
			b.WriteString("; ")
		}
		where := in.Node
		if len(in.Path) > 0 {
			where = strings.Join(in.Path, "/") + "/" + in.Node
		}
		fmt.Fprintf(&b, "%s %s [%s]", in.When, where, in.ID)
	}
	return b.String()
}

// Is reports whether target is ErrInterrupted.
func (e *InterruptError) Is(target error) bool { return target == ErrInterrupted }

// Permanent reports true: a pause is not a failure to retry. Retry and
// circuit-breaker middleware recognise the method and leave paused calls
// alone.
func (e *InterruptError) Permanent() bool { return true }

func isInterrupt(err error) bool {
	var ie *InterruptError
	return errors.As(err, &ie)
}

func interruptsOf(err error) []PendingInterrupt {
	var ie *InterruptError
	if errors.As(err, &ie) {
		return ie.Interrupts
	}
	return nil
}

// Interrupt pauses the node running with ctx and asks the caller for a value
// of type T. The first time, it returns an error the node must return
// (typically `if err != nil { return s, err }`): the run stops with an
// *InterruptError that carries payload. When the thread is resumed with a
// value for this interrupt, the node runs again from its start and this call
// returns the value. A node may call Interrupt several times; each call is
// answered in turn.
//
// A value supplied as a T is returned as is; any other value (such as one
// read back from a checkpoint) is converted through JSON.
//
// Resuming needs a checkpointer and a thread (see WithCheckpointer and
// WithThread). Outside a run, Interrupt returns an error.
func Interrupt[T any](ctx context.Context, payload any) (T, error) {
	var zero T
	m := metaFrom(ctx)
	if m == nil || m.task == nil {
		return zero, errors.New("graph: Interrupt called outside a node")
	}
	ts := m.task
	// Interrupts are numbered in the order a task raises them. Tool calls
	// that a node runs concurrently each number theirs apart, under the
	// call's ID, so that the calls need not interrupt in the same order on
	// resume to get their own answers; each invocation of a call (a retry
	// is another) numbers from the start, as a task's attempts do.
	var idx int
	task := ts.taskID()
	if call, _ := ctx.Value(callScopeKey{}).(*callScope); call != nil && call.id != "" {
		idx = int(call.n.Add(1) - 1)
		task += "\x00call\x00" + call.id
	} else {
		ts.mu.Lock()
		idx = ts.calls
		ts.calls++
		ts.mu.Unlock()
	}
	id := interruptID(m.ns(), task, idx)
	if v, ok := m.resume.get(id); ok {
		var out T
		if err := convertValue(v, &out); err != nil {
			return zero, fmt.Errorf("graph: resume value for interrupt %s in node %q: %w", id, m.node, err)
		}
		return out, nil
	}
	return zero, &InterruptError{Thread: m.thread(), Interrupts: []PendingInterrupt{{ID: id, When: During, Node: m.node, Path: m.path, Payload: payload}}}
}

// Resuming reports whether the next Interrupt call of the node running
// with ctx (outside a tool call) will return a value the caller supplied
// when resuming, rather than pause the run. A node whose work depends on
// the answer — the ToolsNode, which uses the caller's results for the calls
// it left to the caller even when the resuming run would classify those
// calls differently — asks before it does the work. Outside a node it
// reports false.
func Resuming(ctx context.Context) bool {
	m := metaFrom(ctx)
	return m != nil && m.Resuming(ctx)
}

// Resuming is Resuming of ctx, a context of m's run: the nodes of this
// module ask m, found once (internal/runkey.Node), rather than look it up
// again.
func (m *runMeta) Resuming(ctx context.Context) bool {
	if m.task == nil || m.resume == nil {
		return false
	}
	if call, _ := ctx.Value(callScopeKey{}).(*callScope); call != nil && call.id != "" {
		return false
	}
	ts := m.task
	ts.mu.Lock()
	idx := ts.calls
	ts.mu.Unlock()
	_, ok := m.resume.get(interruptID(m.ns(), ts.taskID(), idx))
	return ok
}

// convertValue stores v into out, directly if it has out's type, else
// through JSON.
func convertValue[T any](v any, out *T) error {
	if raw, ok := v.(json.RawMessage); ok {
		// An answer saved with the run comes back as JSON text: decode it
		// (into T even when T is any), unless T asks for the text.
		if _, wantRaw := any(out).(*json.RawMessage); !wantRaw {
			return json.Unmarshal(raw, out)
		}
	}
	if t, ok := v.(T); ok {
		*out = t
		return nil
	}
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		raw = b
	}
	return json.Unmarshal(raw, out)
}

// callScopeKey asks a context for the invocation of the tool call it
// belongs to. The tool package's call contexts answer a key with this
// method (see internal/callscope) without either package importing the other.
type callScopeKey struct{}

// callScope is one invocation of a tool call: its ID and how many
// interrupts it raised.
type callScope struct {
	id string
	n  atomic.Int32
}

// ScopeOfCall returns the invocation's callScope, made on first use and
// kept in its slot.
func (callScopeKey) ScopeOfCall(callID string, slot *atomic.Value) any {
	if v := slot.Load(); v != nil {
		return v
	}
	slot.CompareAndSwap(nil, &callScope{id: callID})
	return slot.Load()
}

// interruptID derives a stable ID from where the interrupt happens: the
// graph's namespace, the task (and the tool call within it, if any) and the
// interrupt's index there.
func interruptID(ns, task string, idx int) string {
	h := sha256.Sum256([]byte(ns + "\x00" + task + "\x00" + strconv.Itoa(idx)))
	return hex.EncodeToString(h[:8])
}

func staticInterruptID(ns, task string, when When) string {
	h := sha256.Sum256([]byte(ns + "\x00" + task + "\x00" + string(when)))
	return hex.EncodeToString(h[:8])
}

// UnmarshalJSON keeps the payload as raw JSON, so that callers can decode it
// into the type they expect.
func (p *PendingInterrupt) UnmarshalJSON(data []byte) error {
	type plain PendingInterrupt
	var aux struct {
		plain
		Payload json.RawMessage `json:"payload,omitempty"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*p = PendingInterrupt(aux.plain)
	if len(aux.Payload) > 0 {
		p.Payload = aux.Payload
	}
	return nil
}
