package graph

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-go/trellis/internal/editdist"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/store"
)

// Graph is a compiled, frozen graph. It is safe for concurrent runs; with a
// checkpointer, runs on one thread take turns: a run on a thread that has
// one in progress fails with ErrThreadBusy.
type Graph[S any] struct {
	name     string
	nodes    []*node[S]
	names    []string // the nodes' names, by index
	byName   map[string]int
	start    []int // entry nodes (static edges from START)
	startEnd bool  // a static edge from START to END (drawn only)
	startRts []*route[S]
	joins    []join
	fields   *fieldTable[S]
	maxSteps int

	saver      state.Saver
	ser        state.Serializer
	durability Durability
	store      store.Store
	before     map[int]bool // static interrupts
	after      map[int]bool
	tp         trace.TracerProvider
	mp         metric.MeterProvider

	// running holds the threads that have a run of this graph in progress
	// (top-level runs of a checkpointed graph only), or an UpdateState.
	running *sync.Map
}

type node[S any] struct {
	name    string
	idx     int
	fn      NodeFunc[S]
	cmd     CommandFunc[S]
	cmdTo   map[string]int // declared command destinations (END = -1)
	edges   []int          // static successors, END excluded
	toEnd   bool           // a static edge to END (drawn only)
	routes  []*route[S]
	joins   []int // joins this node is a source of
	retry   *RetryPolicy
	timeout time.Duration
	spec    *nodeSpec[S]
}

type route[S any] struct {
	from    string
	fn      Route[S]
	fan     FanOut[S]
	to      map[string]int // declared destinations (END = -1)
	declare []string
}

type join struct {
	from []int
	to   int
}

// CompileOption configures Compile.
type CompileOption func(*compileOptions)

type compileOptions struct {
	maxSteps   int
	saver      state.Saver
	store      store.Store
	ser        state.Serializer
	durability Durability
	before     []string
	after      []string
	tp         trace.TracerProvider
	mp         metric.MeterProvider
}

// WithCheckpointer makes every run of the graph write a checkpoint after
// each superstep to saver, under the run's thread (WithThread). Subgraphs
// checkpoint through their parent's saver.
func WithCheckpointer(saver state.Saver) CompileOption {
	return func(o *compileOptions) { o.saver = saver }
}

// WithStore gives every run of the graph a long-term store: its nodes, and
// the tools they call, find it with store.FromContext(ctx) (the runs of
// its subgraphs too, unless they were compiled with a store of their own).
// Where the checkpointer keeps one thread's state, the store keeps what
// every thread may read: memories, profiles, documents.
func WithStore(s store.Store) CompileOption {
	return func(o *compileOptions) { o.store = s }
}

// WithSerializer sets how checkpoints are encoded (state.JSON() unless set;
// wrap it with state.Encrypted to encrypt them). A state.BoundSerializer,
// as Encrypted's are, gets each payload's place: the engine binds a
// checkpoint's payload to its thread, namespace and ID, and a pending
// write's to its checkpoint and task.
func WithSerializer(ser state.Serializer) CompileOption {
	return func(o *compileOptions) { o.ser = ser }
}

// WithDefaultDurability sets when checkpoints are written (DurabilitySync
// unless set). A run can override it with WithDurability.
func WithDefaultDurability(d Durability) CompileOption {
	return func(o *compileOptions) { o.durability = d }
}

// InterruptBefore pauses runs before any of the nodes runs. Resume
// continues with the node.
func InterruptBefore(nodes ...string) CompileOption {
	return func(o *compileOptions) { o.before = append(o.before, nodes...) }
}

// InterruptAfter pauses runs after the superstep in which any of the nodes
// ran. Resume continues with what follows.
func InterruptAfter(nodes ...string) CompileOption {
	return func(o *compileOptions) { o.after = append(o.after, nodes...) }
}

// DefaultMaxSteps is the superstep limit of a run unless one is set.
const DefaultMaxSteps = 25

// WithDefaultStepLimit sets the superstep limit of the compiled graph's runs
// (DefaultMaxSteps unless set). A run can override it with WithStepLimit.
func WithDefaultStepLimit(n int) CompileOption {
	return func(o *compileOptions) { o.maxSteps = n }
}

// Compile checks the graph and freezes it. Every problem found is reported
// in one *CompileError matching ErrInvalidGraph: unknown and unreachable
// nodes, a missing entry, undeclared or unknown route destinations,
// mismatched subgraph state types, misplaced reducers.
func (b *Builder[S]) Compile(opts ...CompileOption) (*Graph[S], error) {
	o := compileOptions{maxSteps: DefaultMaxSteps}
	for _, opt := range opts {
		opt(&o)
	}
	problems := slices.Clone(b.problems)
	addf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if o.maxSteps < 1 {
		addf("superstep limit %d is below 1", o.maxSteps)
	}

	g := &Graph[S]{name: b.name, byName: make(map[string]int, len(b.nodes)), maxSteps: o.maxSteps, running: new(sync.Map),
		saver: o.saver, ser: o.ser, durability: o.durability, store: o.store, tp: o.tp, mp: o.mp}
	if o.durability < DurabilitySync || o.durability > DurabilityExit {
		addf("unknown durability mode %v", o.durability)
	}
	for i, s := range b.nodes {
		g.byName[s.name] = i
		g.nodes = append(g.nodes, &node[S]{name: s.name, idx: i, fn: s.fn, cmd: s.cmd, retry: s.retry, timeout: s.timeout, spec: s})
		g.names = append(g.names, s.name)
		if s.sub.err != "" {
			addf("subgraph node %q: %s", s.name, s.sub.err)
		}
	}
	// resolve maps a destination to a node index (END = -1).
	resolve := func(what, name string, allowEnd bool) (int, bool) {
		if name == END && allowEnd {
			return -1, true
		}
		if i, ok := g.byName[name]; ok {
			return i, true
		}
		if name == START {
			addf("%s: START cannot be a destination", what)
		} else if name == END {
			addf("%s: END cannot be used here", what)
		} else {
			addf("%s: unknown node %q%s", what, name, suggest(name, b.nodeNames()))
		}
		return 0, false
	}
	source := func(what, name string) (*node[S], bool) {
		if name == START {
			return nil, true
		}
		if i, ok := g.byName[name]; ok {
			return g.nodes[i], true
		}
		if name == END {
			addf("%s: END has no outgoing edges", what)
		} else {
			addf("%s: unknown node %q%s", what, name, suggest(name, b.nodeNames()))
		}
		return nil, false
	}

	for _, e := range b.edges {
		what := fmt.Sprintf("edge %s -> %s", e.from, e.to)
		from, okFrom := source(what, e.from)
		to, okTo := resolve(what, e.to, true)
		if !okFrom || !okTo {
			continue
		}
		if to < 0 {
			if from == nil {
				g.startEnd = true
			} else {
				from.toEnd = true
			}
			continue
		}
		if from == nil {
			if !slices.Contains(g.start, to) {
				g.start = append(g.start, to)
			}
		} else if !slices.Contains(from.edges, to) {
			from.edges = append(from.edges, to)
		}
	}
	for _, r := range b.routes {
		kind := "conditional edges"
		if r.fan != nil {
			kind = "fan-out"
		}
		what := fmt.Sprintf("%s after %s", kind, r.from)
		from, ok := source(what, r.from)
		if !ok {
			continue
		}
		rt := &route[S]{from: r.from, fn: r.route, fan: r.fan, to: make(map[string]int, len(r.dests)), declare: r.dests}
		for _, d := range r.dests {
			if i, ok := resolve(what, d, r.fan == nil); ok {
				rt.to[d] = i
			}
		}
		if from == nil {
			g.startRts = append(g.startRts, rt)
		} else {
			from.routes = append(from.routes, rt)
		}
	}
	for i, s := range b.nodes {
		if s.cmd == nil {
			continue
		}
		n := g.nodes[i]
		n.cmdTo = make(map[string]int, len(s.dests))
		for _, d := range s.dests {
			if j, ok := resolve(fmt.Sprintf("command node %s", s.name), d, true); ok {
				n.cmdTo[d] = j
			}
		}
	}
	for _, j := range b.joins {
		what := fmt.Sprintf("join into %s", j.to)
		to, ok := resolve(what, j.to, false)
		var jn join
		for _, f := range j.from {
			if fi, okf := resolve(what, f, false); okf {
				jn.from = append(jn.from, fi)
			} else {
				ok = false
			}
		}
		if !ok {
			continue
		}
		jn.to = to
		g.joins = append(g.joins, jn)
		for _, f := range jn.from {
			g.nodes[f].joins = append(g.nodes[f].joins, len(g.joins)-1)
		}
	}
	static := func(what string, names []string) map[int]bool {
		if len(names) == 0 {
			return nil
		}
		set := make(map[int]bool, len(names))
		for _, n := range names {
			if i, ok := resolve(what, n, false); ok {
				set[i] = true
			}
		}
		return set
	}
	g.before = static("InterruptBefore", o.before)
	g.after = static("InterruptAfter", o.after)
	if len(g.start) == 0 && len(g.startRts) == 0 {
		addf("no entry: add an edge from START")
	}
	for _, name := range g.unreachable() {
		addf("node %q is unreachable from START", name)
	}

	ft, fp := newFieldTable(b.binders)
	problems = append(problems, fp...)
	g.fields = ft

	if len(problems) > 0 {
		return nil, &CompileError{Graph: b.name, Problems: problems}
	}
	return g, nil
}

func (b *Builder[S]) nodeNames() []string {
	names := make([]string, len(b.nodes))
	for i, n := range b.nodes {
		names[i] = n.name
	}
	return names
}

// unreachable lists nodes no path from START reaches, in declaration order.
func (g *Graph[S]) unreachable() []string {
	seen := make([]bool, len(g.nodes))
	var stack []int
	push := func(i int) {
		if i >= 0 && !seen[i] {
			seen[i] = true
			stack = append(stack, i)
		}
	}
	pushRoutes := func(rs []*route[S]) {
		for _, r := range rs {
			for _, i := range r.to {
				push(i)
			}
		}
	}
	for _, i := range g.start {
		push(i)
	}
	pushRoutes(g.startRts)
	for len(stack) > 0 {
		n := g.nodes[stack[len(stack)-1]]
		stack = stack[:len(stack)-1]
		for _, i := range n.edges {
			push(i)
		}
		pushRoutes(n.routes)
		for _, i := range n.cmdTo {
			push(i)
		}
		for _, j := range n.joins {
			push(g.joins[j].to)
		}
	}
	var out []string
	for i, ok := range seen {
		if !ok {
			out = append(out, g.nodes[i].name)
		}
	}
	return out
}

// Name returns the graph's name.
func (g *Graph[S]) Name() string { return g.name }

// Nodes returns the names of the graph's nodes in the order they were added.
func (g *Graph[S]) Nodes() []string {
	names := make([]string, len(g.nodes))
	for i, n := range g.nodes {
		names[i] = n.name
	}
	return names
}

// suggest returns ` (did you mean "x"?)` for the nearest known name, or "".
func suggest(name string, known []string) string {
	best, bestD := "", len(name)/2+2
	for _, k := range known {
		if d := editdist.Levenshtein(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
