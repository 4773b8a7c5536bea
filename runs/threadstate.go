package runs

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invopop/jsonschema"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/jsonvalue"
	"github.com/trellis-go/trellis/state"
)

// ThreadState is a thread's state at one checkpoint, with the state in
// JSON: what graph.Snapshot holds, for callers that do not know the
// graph's state type (a server).
type ThreadState struct {
	// Values is the state, as JSON; null for a thread with no checkpoint.
	Values json.RawMessage `json:"values"`
	// Next lists the nodes due next; empty when the run ended.
	Next []string `json:"next"`
	// Interrupts lists what the thread waits for at this checkpoint.
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	// Thread is the thread's ID.
	Thread string `json:"thread_id"`
	// CheckpointID identifies the checkpoint, ParentID the one before it;
	// both empty for a thread with no checkpoint.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	ParentID     string `json:"parent_checkpoint_id,omitempty"`
	// Step is the superstep after which the checkpoint was taken.
	Step int `json:"step"`
	// Source says what wrote it: "input", "loop", "update" or "fork".
	Source string `json:"source,omitempty"`
	// CreatedAt is when it was written.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// HistoryQuery narrows a thread's history.
type HistoryQuery struct {
	// Limit caps the result (DefaultLimit when zero, at most MaxLimit).
	Limit int
	// Before, when set, keeps the checkpoints older than the one with this
	// ID.
	Before string
	// Source and Step, when set, keep the checkpoints written by this
	// source ("input", "loop", "update", "fork") or after this superstep.
	Source string
	Step   *int
}

// GraphInfo describes a registered graph.
type GraphInfo struct {
	// Name is the name it is registered under.
	Name string
	// Nodes are its nodes, in the order they were added.
	Nodes []string
	// Mermaid is its Mermaid flowchart (graph.Graph.Mermaid).
	Mermaid string
	// StateSchema is the JSON Schema of its state type, derived with
	// invopop/jsonschema (the library the tool package derives argument
	// schemas with).
	StateSchema json.RawMessage
	// Fields maps the state's fields, as the engine names them
	// (graph.Event.Fields: Go names, promoted fields by their path), to
	// their JSON names.
	Fields map[string]string
}

// stateAccess is the type-free access to a graph's threads that
// ThreadState, History, UpdateState and ForkThread use.
type stateAccess interface {
	state(ctx context.Context, thread, checkpoint string) (ThreadState, error)
	history(ctx context.Context, thread string, q HistoryQuery) ([]ThreadState, error)
	update(ctx context.Context, thread string, values json.RawMessage, asNode, checkpoint string) (string, error)
	fork(ctx context.Context, thread, checkpoint string) (string, error)
	info() GraphInfo
}

// Graphs lists the names of the registered graphs, sorted.
func (m *Manager) Graphs() []string {
	var out []string
	m.graphs.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	sort.Strings(out)
	return out
}

// GraphInfo describes the graph registered under name (an error matching
// ErrUnknownGraph if none is).
func (m *Manager) GraphInfo(name string) (GraphInfo, error) {
	r, ok := m.graph(name)
	if !ok {
		return GraphInfo{}, fmt.Errorf("runs: %w %s", ErrUnknownGraph, quoteCut(name))
	}
	return r.state.info(), nil
}

// access returns the state access of graph name, or of the thread's graph
// when name is empty; ok is false when neither names a registered graph.
func (m *Manager) access(name string, t Thread) (stateAccess, bool, error) {
	if name == "" {
		name = t.Graph
	}
	if name == "" {
		return nil, false, nil
	}
	r, ok := m.graph(name)
	if !ok {
		return nil, false, fmt.Errorf("runs: %w %s", ErrUnknownGraph, quoteCut(name))
	}
	return r.state, true, nil
}

// ThreadState returns a thread's state at its latest checkpoint, or at
// checkpoint when it is not empty, read through graph (the thread's
// latest run's graph when empty). A thread that has no checkpoint yet, or
// no graph to read it with, has an empty state (null Values).
func (m *Manager) ThreadState(ctx context.Context, graphName, thread, checkpoint string) (ThreadState, error) {
	t, err := m.Thread(ctx, thread)
	if err != nil {
		return ThreadState{}, err
	}
	a, ok, err := m.access(graphName, t)
	if err != nil || !ok {
		return ThreadState{Thread: t.ID, Values: json.RawMessage("null"), Step: -1}, err
	}
	st, err := a.state(ctx, thread, checkpoint)
	if errors.Is(err, state.ErrNotFound) {
		if checkpoint != "" {
			return ThreadState{}, fmt.Errorf("runs: thread %s: checkpoint %s: %w", quoteCut(thread), quoteCut(checkpoint), ErrNotFound)
		}
		return ThreadState{Thread: t.ID, Values: json.RawMessage("null"), Step: -1}, nil
	}
	if err != nil {
		return ThreadState{}, fmt.Errorf("runs: state of thread %s: %w", quoteCut(thread), err)
	}
	return st, nil
}

// History returns a thread's checkpoints, newest first, narrowed by q.
func (m *Manager) History(ctx context.Context, graphName, thread string, q HistoryQuery) ([]ThreadState, error) {
	limit, err := limitOf(q.Limit)
	if err != nil {
		return nil, err
	}
	q.Limit = limit
	t, err := m.Thread(ctx, thread)
	if err != nil {
		return nil, err
	}
	a, ok, err := m.access(graphName, t)
	if err != nil || !ok {
		return nil, err
	}
	out, err := a.history(ctx, thread, q)
	if err != nil {
		return nil, fmt.Errorf("runs: history of thread %s: %w", quoteCut(thread), err)
	}
	return out, nil
}

// UpdateState writes values (a JSON object of state fields, as a run's
// Input) to a thread's latest state, or to its state at checkpoint, as if
// node asNode had written them: the fields' reducers apply, and the nodes
// that follow asNode are due next (graph.Graph.UpdateState). An empty
// asNode is the node that wrote the checkpoint (START for a run's input,
// END when the thread's run ended). It returns the new checkpoint's ID. A
// thread with an active run is not updated (ErrThreadBusy).
func (m *Manager) UpdateState(ctx context.Context, graphName, thread string, values json.RawMessage, asNode, checkpoint string) (string, error) {
	t, err := m.Thread(ctx, thread)
	if err != nil {
		return "", err
	}
	if t.ActiveRun != "" {
		return "", fmt.Errorf("runs: thread %s has run %s in progress: %w", quoteCut(thread), t.ActiveRun, ErrThreadBusy)
	}
	a, ok, err := m.access(graphName, t)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("runs: %w: thread %s has no graph yet: name one", ErrInvalid, quoteCut(thread))
	}
	id, err := a.update(ctx, thread, values, asNode, checkpoint)
	if err != nil {
		return "", fmt.Errorf("runs: update the state of thread %s: %w", quoteCut(thread), err)
	}
	m.settle(ctx, a, thread, graphName)
	return id, nil
}

// ForkThread makes a copy of one of a thread's checkpoints its latest
// (graph.Graph.Fork): the thread is back at that state, with its nodes
// due, and a run continues from there. It returns the copy's ID.
func (m *Manager) ForkThread(ctx context.Context, graphName, thread, checkpoint string) (string, error) {
	t, err := m.Thread(ctx, thread)
	if err != nil {
		return "", err
	}
	if t.ActiveRun != "" {
		return "", fmt.Errorf("runs: thread %s has run %s in progress: %w", quoteCut(thread), t.ActiveRun, ErrThreadBusy)
	}
	a, ok, err := m.access(graphName, t)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("runs: %w: thread %s has no graph yet: name one", ErrInvalid, quoteCut(thread))
	}
	id, err := a.fork(ctx, thread, checkpoint)
	if errors.Is(err, state.ErrNotFound) {
		return "", fmt.Errorf("runs: thread %s: checkpoint %s: %w", quoteCut(thread), quoteCut(checkpoint), ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("runs: fork thread %s: %w", quoteCut(thread), err)
	}
	m.settle(ctx, a, thread, graphName)
	return id, nil
}

// settle records an idle thread's status after its state changed outside a
// run: interrupted while it waits for input, idle otherwise.
func (m *Manager) settle(ctx context.Context, a stateAccess, thread, graphName string) {
	st, err := a.state(ctx, thread, "")
	if err != nil {
		return
	}
	status := ThreadIdle
	if len(st.Interrupts) > 0 {
		status = ThreadInterrupted
	}
	_, _ = m.exec(ctx, nil, `UPDATE {threads} SET status = $2, graph = CASE WHEN $3 = '' THEN graph ELSE $3 END,
		updated_at = {now} WHERE thread_id = $1 AND active_run = ''`, thread, string(status), graphName)
}

// CopyThread makes a new thread with a thread's metadata and a copy of its
// checkpoints (those of the top-level graph, with their pending writes;
// the checkpoints of subgraphs and agents are not copied, so a copy
// resumed in the middle of one runs it from its start). A thread with an
// active run is not copied (ErrThreadBusy).
func (m *Manager) CopyThread(ctx context.Context, thread string) (Thread, error) {
	t, err := m.Thread(ctx, thread)
	if err != nil {
		return Thread{}, err
	}
	if t.ActiveRun != "" {
		return Thread{}, fmt.Errorf("runs: thread %s has run %s in progress: %w", quoteCut(thread), t.ActiveRun, ErrThreadBusy)
	}
	id := uuid.Must(uuid.NewV7()).String()
	saver := m.b.Saver
	cps, err := saver.List(ctx, thread, "", state.ListOptions{})
	if err != nil {
		return Thread{}, fmt.Errorf("runs: copy thread %s: %w", quoteCut(thread), err)
	}
	meta, err := json.Marshal(orEmpty(t.Metadata))
	if err != nil {
		return Thread{}, fmt.Errorf("runs: copy thread %s: %w", quoteCut(thread), err)
	}
	if _, err := m.exec(ctx, nil, `INSERT INTO {threads} (thread_id, owner, graph, status, metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, {now}, {now})`, id, OwnerOf(ctx), t.Graph, string(t.Status), string(meta)); err != nil {
		return Thread{}, fmt.Errorf("runs: copy thread %s: %w", quoteCut(thread), err)
	}
	for _, cp := range slices.Backward(cps) {
		tup, err := saver.Get(ctx, thread, "", cp.ID)
		if err == nil {
			tup.Checkpoint.ThreadID = id
			if err = saver.Put(ctx, tup.Checkpoint); err == nil && len(tup.Writes) > 0 {
				err = saver.PutWrites(ctx, id, "", cp.ID, tup.Writes)
			}
		}
		if err != nil {
			_ = m.DeleteThread(ctx, id)
			return Thread{}, fmt.Errorf("runs: copy thread %s: checkpoint %s: %w", quoteCut(thread), cp.ID, err)
		}
	}
	return m.Thread(ctx, id)
}

// DeleteRun deletes a run that has ended, and its events. An active run is
// not deleted (ErrThreadBusy): cancel it first.
func (m *Manager) DeleteRun(ctx context.Context, id string) error {
	r, err := m.Get(ctx, id)
	if err != nil {
		return err
	}
	if !r.Status.Final() {
		return fmt.Errorf("runs: run %s is %s: %w", quoteCut(id), r.Status, ErrThreadBusy)
	}
	err = m.tx(ctx, func(tx *sql.Tx) error {
		if _, err := m.exec(ctx, tx, `DELETE FROM {events} WHERE run_id = $1`, id); err != nil {
			return err
		}
		_, err := m.exec(ctx, tx, `DELETE FROM {runs} WHERE run_id = $1 AND owner = $2`, id, OwnerOf(ctx))
		return err
	})
	if err != nil {
		return fmt.Errorf("runs: delete run %s: %w", quoteCut(id), err)
	}
	return nil
}

// The adapter's side of stateAccess.

func (a *adapter[S]) snapshot(s graph.Snapshot[S]) ThreadState {
	return ThreadState{Values: jsonvalue.Encode(s.State), Next: orNone(s.Next), Interrupts: s.Interrupts, Thread: s.Thread,
		CheckpointID: s.CheckpointID, ParentID: s.ParentID, Step: s.Step, Source: s.Source, CreatedAt: s.CreatedAt}
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (a *adapter[S]) state(ctx context.Context, thread, checkpoint string) (ThreadState, error) {
	var opts []graph.RunOption
	if checkpoint != "" {
		opts = append(opts, graph.FromCheckpoint(checkpoint))
	}
	s, err := a.g.GetState(ctx, thread, opts...)
	if err != nil {
		return ThreadState{}, err
	}
	return a.snapshot(s), nil
}

func (a *adapter[S]) history(ctx context.Context, thread string, q HistoryQuery) ([]ThreadState, error) {
	read := q.Limit
	if q.Before != "" || q.Source != "" || q.Step != nil {
		read = 0 // filters apply to the whole history
	}
	all, err := a.g.History(ctx, thread, read)
	if err != nil {
		return nil, err
	}
	out := make([]ThreadState, 0, min(len(all), q.Limit))
	seen := q.Before == ""
	for _, s := range all {
		if !seen {
			seen = s.CheckpointID == q.Before
			continue
		}
		if q.Source != "" && s.Source != q.Source || q.Step != nil && s.Step != *q.Step {
			continue
		}
		out = append(out, a.snapshot(s))
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func (a *adapter[S]) update(ctx context.Context, thread string, values json.RawMessage, asNode, checkpoint string) (string, error) {
	var opts []graph.RunOption
	if checkpoint != "" {
		opts = append(opts, graph.FromCheckpoint(checkpoint))
	}
	head, err := a.g.GetState(ctx, thread, opts...)
	if errors.Is(err, state.ErrNotFound) {
		return "", fmt.Errorf("%w: the thread has no state to update yet (run it first)", ErrInvalid)
	}
	if err != nil {
		return "", err
	}
	if asNode == "" {
		asNode, err = a.lastWriter(ctx, thread, head)
		if err != nil {
			return "", err
		}
	}
	if asNode != graph.START && asNode != graph.END && !slices.Contains(a.g.Nodes(), asNode) {
		return "", fmt.Errorf("%w: as_node %s is not a node of graph %q", ErrInvalid, quoteCut(asNode), a.g.Name())
	}
	var applyErr error
	update := func(s S) S {
		out, err := a.input(s, values)
		if err != nil {
			applyErr = err
			return s
		}
		return out
	}
	// Check the values before writing anything.
	if _, err := a.input(head.State, values); err != nil {
		return "", err
	}
	latest, err := a.g.GetState(ctx, thread)
	if err != nil {
		return "", err
	}
	id, err := a.g.UpdateState(ctx, thread, asNode, update, append(opts, graph.IfLatest(latest.CheckpointID))...)
	if applyErr != nil {
		return "", applyErr
	}
	return id, err
}

// lastWriter is the node that wrote checkpoint head: the one task of the
// superstep before it, START for a run's input, END for a thread whose run
// ended with nothing due.
func (a *adapter[S]) lastWriter(ctx context.Context, thread string, head graph.Snapshot[S]) (string, error) {
	if head.ParentID == "" || head.Source == "input" {
		return graph.START, nil
	}
	parent, err := a.g.GetState(ctx, thread, graph.FromCheckpoint(head.ParentID))
	if err != nil {
		return "", err
	}
	switch len(parent.Next) {
	case 0:
		if len(head.Next) == 0 {
			return graph.END, nil
		}
		return graph.START, nil
	case 1:
		return parent.Next[0], nil
	}
	return "", fmt.Errorf("%w: several nodes (%s) wrote the checkpoint: name the node the update is written as", ErrInvalid, strings.Join(parent.Next, ", "))
}

func (a *adapter[S]) fork(ctx context.Context, thread, checkpoint string) (string, error) {
	return a.g.Fork(ctx, thread, checkpoint)
}

func (a *adapter[S]) info() GraphInfo {
	gi := a.described()
	// A copy each: the caller may change what it gets.
	gi.Nodes, gi.StateSchema, gi.Fields = slices.Clone(gi.Nodes), bytes.Clone(gi.StateSchema), maps.Clone(gi.Fields)
	return gi
}

// describe derives the GraphInfo of a's graph.
func (a *adapter[S]) describe() GraphInfo {
	fields := make(map[string]string, len(a.fields))
	for lower, engine := range a.fields {
		fields[engine] = jsonName(reflect.TypeFor[S](), engine, lower)
	}
	return GraphInfo{Name: a.g.Name(), Nodes: a.g.Nodes(), Mermaid: a.g.Mermaid(), StateSchema: stateSchema(reflect.TypeFor[S]()), Fields: fields}
}

// stateSchema derives the JSON Schema of S.
func stateSchema(t reflect.Type) json.RawMessage {
	r := &jsonschema.Reflector{ExpandedStruct: true, DoNotReference: false, AllowAdditionalProperties: true}
	var out json.RawMessage
	func() {
		defer func() {
			if recover() != nil {
				out = nil
			}
		}()
		b, err := json.Marshal(r.ReflectFromType(t))
		if err == nil {
			out = b
		}
	}()
	if out == nil {
		out = json.RawMessage(`{"type":"object"}`)
	}
	return out
}

// jsonName is the JSON name of the field at the engine's path in t (lower,
// its lower-cased form, when it cannot be found).
func jsonName(t reflect.Type, path, lower string) string {
	if t.Kind() != reflect.Struct {
		return lower
	}
	f, ok := t.FieldByName(path[strings.LastIndexByte(path, '.')+1:])
	if !ok {
		return lower
	}
	if tag, ok := f.Tag.Lookup("json"); ok {
		if n, _, _ := strings.Cut(tag, ","); n != "" && n != "-" {
			return n
		}
	}
	return f.Name
}
