package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/state"
)

// A Runnable is a compiled graph made ready for the runs layer by Graph.
// Runs carry their input and results as JSON; a Runnable turns them into
// the graph's state type and back.
type Runnable interface {
	// Name is the graph's name.
	Name() string
	runnable() *runner
}

// Graph makes g runnable by a Manager. g must be compiled with the
// Manager's checkpointer (Manager.Saver), which fences every checkpoint a
// worker writes with the worker's lease on the run.
func Graph[S any](g *graph.Graph[S]) Runnable {
	a := &adapter[S]{g: g, fields: jsonFields(reflect.TypeFor[S]())}
	a.described = sync.OnceValue(a.describe)
	a.r = &runner{name: g.Name(), exec: a.exec, rollback: a.rollback, head: a.head, saver: g.Checkpointer, state: a}
	return a
}

type adapter[S any] struct {
	g      *graph.Graph[S]
	fields map[string]string // JSON name, lower-cased → Go field name
	r      *runner
	// described is what info returns, derived once: the schema and the
	// Mermaid chart cost a reflection and a drawing, and servers ask for
	// them with each request.
	described func() GraphInfo
}

func (a *adapter[S]) Name() string      { return a.g.Name() }
func (a *adapter[S]) runnable() *runner { return a.r }

// runner is the type-free face of a graph the workers use.
type runner struct {
	name string
	// exec runs x on its thread, sending each event to x.emit.
	exec func(ctx context.Context, x *execution) outcome
	// rollback returns thread to checkpoint to ("": to no checkpoint).
	rollback func(ctx context.Context, thread, to string) error
	// head is the ID of thread's latest checkpoint, "" when it has none.
	head func(ctx context.Context, thread string) (string, error)
	// saver is the checkpointer the graph was compiled with.
	saver func() state.Saver
	// state reads and writes the graph's threads (threadstate.go).
	state stateAccess
}

// execution is one attempt at a run.
type execution struct {
	thread string
	req    *storedRequest
	// continuing: the run already wrote to its thread in an earlier
	// attempt, so this one resumes where it stopped.
	continuing bool
	// gate is asked before each superstep whether the run may go on.
	gate func(context.Context) error
	// head is told the checkpoint the run found its thread at, before it
	// writes (for a rollback to return to).
	head func(string)
	emit func(graph.Event)
}

// outcome is how an attempt ended.
type outcome struct {
	status     Status
	err        error // the failure, for StatusError, or the stop cause
	interrupts []graph.PendingInterrupt
	state      json.RawMessage // the final state (success or interrupt)
	usage      *modelmw.Report // the model calls of the attempt, nil for none
}

func (a *adapter[S]) exec(ctx context.Context, x *execution) outcome {
	opts := []graph.RunOption{graph.WithThread(x.thread), graph.WithModes(graphMode(x.req.Modes)), graph.WithStepGate(x.gate)}
	if x.req.StepLimit > 0 {
		opts = append(opts, graph.WithStepLimit(x.req.StepLimit))
	}
	var events func(yield func(graph.Event, error) bool)
	switch {
	case x.continuing:
		events = a.g.ResumeStream(ctx, x.thread, opts...)
	case x.req.Resume != nil:
		head, err := a.head(ctx, x.thread)
		if err != nil {
			return outcome{status: StatusError, err: fmt.Errorf("reading thread %q: %w", x.thread, err)}
		}
		x.head(head)
		r := x.req.Resume
		if r.HasValue {
			opts = append(opts, graph.WithResumeValue(r.Value))
		}
		for id, v := range r.ByID {
			opts = append(opts, graph.WithResume(id, v))
		}
		events = a.g.ResumeStream(ctx, x.thread, append(opts, graph.IfLatest(head))...)
	default:
		var latest S
		head := ""
		snap, err := a.g.GetState(ctx, x.thread)
		switch {
		case err == nil:
			latest, head = snap.State, snap.CheckpointID
		case !errors.Is(err, state.ErrNotFound):
			return outcome{status: StatusError, err: fmt.Errorf("reading thread %q: %w", x.thread, err)}
		}
		in, err := a.input(latest, x.req.Input)
		if err != nil {
			return outcome{status: StatusError, err: err}
		}
		x.head(head)
		events = a.g.Stream(ctx, in, append(opts, graph.IfLatest(head))...)
	}
	var final *S
	for ev, err := range events {
		if err != nil {
			return a.ended(err)
		}
		if ev.Kind == graph.KindDone {
			if s, ok := ev.State.(S); ok {
				final = &s
			}
		}
		x.emit(ev)
	}
	out := outcome{status: StatusSuccess}
	if final != nil {
		out.state, _ = json.Marshal(*final)
	}
	return out
}

// ended is the outcome of a stream that ended with err.
func (a *adapter[S]) ended(err error) outcome {
	var ie *graph.InterruptError
	if errors.As(err, &ie) {
		return outcome{status: StatusInterrupted, interrupts: ie.Interrupts}
	}
	return outcome{status: StatusError, err: err}
}

// input writes the request's input to latest, field by field, as a write
// of graph.START (see Request.Input).
func (a *adapter[S]) input(latest S, raw json.RawMessage) (S, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return latest, nil
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return latest, fmt.Errorf("%w: the input must be a JSON object of state fields: %w", ErrInvalid, err)
	}
	var update S
	if err := json.Unmarshal(raw, &update); err != nil {
		return latest, fmt.Errorf("%w: the input does not fit the state of graph %q: %w", ErrInvalid, a.g.Name(), err)
	}
	names := make([]string, 0, len(props))
	for k := range props {
		f, ok := a.fields[strings.ToLower(k)]
		if !ok {
			return latest, fmt.Errorf("%w: the input names %s, which is not a field of the state of graph %q", ErrInvalid, quoteCut(k), a.g.Name())
		}
		names = append(names, f)
	}
	return a.g.Apply(latest, update, names...)
}

func (a *adapter[S]) rollback(ctx context.Context, thread, to string) error {
	if to == "" {
		// The run was the thread's first: the thread had nothing to go
		// back to.
		return a.g.Checkpointer().DeleteThread(ctx, thread)
	}
	_, err := a.g.Fork(ctx, thread, to)
	return err
}

func (a *adapter[S]) head(ctx context.Context, thread string) (string, error) {
	snap, err := a.g.GetState(ctx, thread)
	switch {
	case err == nil:
		return snap.CheckpointID, nil
	case errors.Is(err, state.ErrNotFound):
		return "", nil
	}
	return "", err
}

// jsonFields maps the JSON names of t's fields (lower-cased, as
// encoding/json matches them case-insensitively) to the names the engine
// gives them: Go names, with the path of embedded structs for promoted
// fields ("Base.Count"). It follows encoding/json's rules for tags and
// embedded structs.
func jsonFields(t reflect.Type) map[string]string {
	out := map[string]string{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct && !tagged(f) {
			continue // unexported, or an embedded struct whose fields are promoted
		}
		path, ok := enginePath(t, f.Index)
		if !ok {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" && !strings.HasPrefix(tag, "-,") {
				continue
			}
			if n != "" {
				name = n
			}
		}
		if _, taken := out[strings.ToLower(name)]; !taken {
			out[strings.ToLower(name)] = path
		}
	}
	return out
}

func tagged(f reflect.StructField) bool {
	_, ok := f.Tag.Lookup("json")
	return ok
}

// enginePath is the engine's name of the field at index: the names along
// the path joined with dots. ok is false when the path goes through
// something encoding/json would not promote from (a tagged or pointer
// embedding), which the engine does not see as a field of the state.
func enginePath(t reflect.Type, index []int) (string, bool) {
	var parts []string
	for k, i := range index {
		f := t.Field(i)
		parts = append(parts, f.Name)
		if k < len(index)-1 {
			if !f.Anonymous || f.Type.Kind() != reflect.Struct || tagged(f) {
				return "", false
			}
			t = f.Type
		}
	}
	return strings.Join(parts, "."), true
}

// quoteCut quotes s, at most its first 64 bytes.
func quoteCut(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
}
