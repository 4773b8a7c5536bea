package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/trellis-go/trellis/state"
)

// SubgraphNode is a compiled graph prepared to run as a node of a parent
// graph whose state type is P. Make one with Subgraph and add it with
// Builder.AddSubgraph.
type SubgraphNode[P any] struct {
	run  func(ctx context.Context, p P) (P, error)
	info subgraphInfo
}

type subgraphInfo struct {
	err     string
	mermaid func(w *mermaidWriter, prefix string)
	name    string
}

// SubgraphOption configures a subgraph node.
type SubgraphOption[P, C any] func(*subgraphOptions[P, C])

type subgraphOptions[P, C any] struct {
	in  func(P) C
	out func(P, C) P
}

// MapInput derives the child's input from the parent's state. It is
// required when the child's state type differs from the parent's.
func MapInput[P, C any](in func(parent P) C) SubgraphOption[P, C] {
	return func(o *subgraphOptions[P, C]) { o.in = in }
}

// MapOutput folds the child's final state into the parent's. It is required
// when the child's state type differs from the parent's.
func MapOutput[P, C any](out func(parent P, child C) P) SubgraphOption[P, C] {
	return func(o *subgraphOptions[P, C]) { o.out = out }
}

// Subgraph wraps child to run as a node of a graph over P. With the same
// state type on both sides the child receives the parent's state and its
// final state becomes the node's output; otherwise MapInput and MapOutput say
// how the two translate, and Compile reports them missing.
//
// The child's events reach the parent's stream with the node's name added to
// their Path.
func Subgraph[P, C any](child *Graph[C], opts ...SubgraphOption[P, C]) *SubgraphNode[P] {
	var o subgraphOptions[P, C]
	for _, opt := range opts {
		opt(&o)
	}
	s := &SubgraphNode[P]{}
	if child == nil {
		s.info.err = "the child graph is nil"
		return s
	}
	s.info.name = child.name
	s.info.mermaid = func(w *mermaidWriter, prefix string) { child.writeMermaid(w, prefix) }
	pt, ct := reflect.TypeFor[P](), reflect.TypeFor[C]()
	var problems []string
	if o.in == nil {
		if pt != ct {
			problems = append(problems, fmt.Sprintf("the child's state type %s differs from the parent's %s: MapInput is required", ct, pt))
		} else {
			o.in = func(p P) C { return any(p).(C) }
		}
	}
	if o.out == nil {
		if pt != ct {
			problems = append(problems, fmt.Sprintf("the child's state type %s differs from the parent's %s: MapOutput is required", ct, pt))
		} else {
			o.out = func(_ P, c C) P { return any(c).(P) }
		}
	}
	if len(problems) > 0 {
		s.info.err = fmt.Sprint(problems)
		if len(problems) == 1 {
			s.info.err = problems[0]
		}
		return s
	}
	in, out := o.in, o.out
	s.run = func(ctx context.Context, p P) (P, error) {
		var (
			em   *emitter
			nest *nesting
		)
		if m := metaFrom(ctx); m != nil {
			em = m.emit
			nest = &nesting{parent: m, path: append(slices.Clip(m.path), m.node), ns: m.ns() + "/" + m.node + ":" + m.task.taskID()}
		}
		c := in(p)
		res, err := child.execute(ctx, &c, &runConfig{}, em, nest)
		if err != nil {
			return p, err
		}
		return out(p, res), nil
	}
	return s
}

// persistence is how a nested run checkpoints: when its parent does, in
// the namespace of its place in the parent. A run that is not checkpointed
// keeps the namespace too, for its interrupts' IDs are made of it: without
// it, the interrupts of two nested runs (two parallel tasks of one
// subgraph, say) and of the parent's own tasks would share IDs, and a
// value given to one would answer them all.
func (n *nesting) persistence() *persistence {
	p := &persistence{ns: n.ns}
	if pp := n.parent.p; pp != nil {
		p.saver, p.ser, p.durability, p.thread = pp.saver, pp.ser, pp.durability, pp.thread
	}
	return p
}

// AddSubgraph adds a compiled graph as a node.
func (b *Builder[S]) AddSubgraph(name string, sub *SubgraphNode[S], opts ...NodeOption) *Builder[S] {
	if sub == nil {
		b.problemf("subgraph node %q is nil", name)
		return b
	}
	fn, info := sub.run, sub.info
	if fn == nil {
		if info.err == "" {
			info.err = "it was not made with graph.Subgraph or Graph.AsSubgraph"
		}
		fn = func(_ context.Context, s S) (S, error) {
			return s, fmt.Errorf("subgraph node %q: %s", name, info.err)
		}
	}
	return b.add(&nodeSpec[S]{name: name, fn: fn, sub: info}, opts)
}

// AsSubgraph prepares g to run as a node of a parent graph with the same
// state type: the node passes the parent's state in and takes the child's
// final state as its output. It is Subgraph[S, S](g).
func (g *Graph[S]) AsSubgraph() *SubgraphNode[S] {
	return Subgraph[S, S](g)
}

// NestedStarted reports whether a nested run of that name and key (see
// Nested) left checkpoints in the run behind ctx: a run that was stopped by
// an interrupt or a failure and that Nested would resume. Outside a
// checkpointed run it reports false. A tool that tries several nested runs
// in turn (the retries of a handoff) uses it to resume the one that was
// under way.
func NestedStarted(ctx context.Context, name, key string) (bool, error) {
	m := metaFrom(ctx)
	// A run may be named by a thread and not checkpointed (WithThread
	// without a checkpointer, a task of RunTask): nothing to look in.
	if m == nil || m.p == nil || m.p.saver == nil {
		return false, nil
	}
	return hasCheckpoint(ctx, m.p.saver, m.p.thread, nestedNamespace(m, name, key))
}

// hasCheckpoint reports whether the namespace ns of thread has a checkpoint.
func hasCheckpoint(ctx context.Context, saver state.Saver, thread, ns string) (bool, error) {
	_, err := saver.Get(ctx, thread, ns, "")
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, state.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("graph: thread %q: namespace %q: %w", thread, ns, err)
}

// nestedNamespace is the checkpoint namespace of a nested run.
func nestedNamespace(m *runMeta, name, key string) string {
	// With a key (unique within the thread, such as a tool call's ID) the
	// namespace does not depend on the task: a node that finishes part of its
	// work, continues in a new superstep and runs the same nested graph again
	// finds its checkpoints.
	//
	// A replay (FromCheckpoint) runs on a branch of its own, which scopes
	// the keyed namespaces too: the fork runs its nested graphs again
	// rather than find the original branch's finished runs.
	if key == "" {
		return m.ns() + "/" + m.node + ":" + m.task.taskID() + "/" + name
	}
	ns := m.ns() + "/" + m.node + "/" + name + ":" + key
	if m.p != nil && m.p.branch != "" {
		ns += "@" + m.p.branch
	}
	return ns
}

// Nested runs g to the end as part of the run behind ctx, from inside one of
// its nodes or from a tool such a node runs (which is how handoff tools run
// agents). The nested run
//   - sends its events to the parent's stream, with name appended to their
//     Path (restrict them with WithModes, or drop them with WithModes(0))
//     and, given WithCallID, the call's ID in their CallID;
//   - checkpoints through the parent's saver, in a namespace of its own made
//     of the parent task, name and key, so that when the parent task runs
//     again after an interrupt or a crash, the nested run resumes from its
//     checkpoints instead of starting over;
//   - stops the parent with its interrupts (their Path starts with the
//     parent's path and name), and receives the values the parent is
//     resumed with.
//
// key tells apart several nested runs of one name (a tool call's ID, say).
// With a key, the nested run's checkpoints belong to the key rather than to
// the task, so keys must be unique within the thread (a replay, which runs
// on a branch of the thread, runs them again); without one, they belong to
// the task. Outside a run, Nested is Invoke.
func (g *Graph[S]) Nested(ctx context.Context, input S, name, key string, opts ...RunOption) (S, error) {
	cfg := runConfig{modes: ModeAll}
	for _, o := range opts {
		o(&cfg)
	}
	m := metaFrom(ctx)
	if m == nil {
		return g.execute(ctx, &input, &cfg, nil, nil)
	}
	em := m.emit.restrict(cfg.modes)
	if em != nil && cfg.callID != "" {
		em.callID = cfg.callID // restrict made em a copy
	}
	ns := nestedNamespace(m, name, key)
	cfg.thread = ""
	return g.execute(ctx, &input, &cfg, em, &nesting{parent: m, path: append(slices.Clip(m.path), name), ns: ns})
}
