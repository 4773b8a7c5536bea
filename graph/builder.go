package graph

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/trellis-go/trellis/state"
)

// START and END are the virtual nodes where every run begins and ends.
// Edges leave START to name the entry nodes; edges into END end a branch.
const (
	START = "__start__"
	END   = "__end__"
)

// NodeFunc is a node: it receives the state and returns the state it wants.
//
// The state is passed by value. A node changes a field by assigning it
// (s.Count++, s.Log = append(s.Log, x)) and returning s; fields it leaves
// alone are not written. It must not modify elements of slices or maps it
// was given in place: they may be shared with other nodes.
type NodeFunc[S any] func(ctx context.Context, s S) (S, error)

// CommandFunc is a node that, besides returning the state, chooses which
// nodes run next. The destinations it may choose are declared when it is added.
type CommandFunc[S any] func(ctx context.Context, s S) (S, Command[S], error)

// Command tells the engine where to go after a command node.
// Its destinations are added to those of the node's edges.
type Command[S any] struct {
	// Goto names nodes to run next (END is allowed and means nowhere).
	Goto []string
	// Send starts tasks with inputs of their own.
	Send []Send[S]
}

// Send starts one task of a node with its own input instead of the graph's
// state. A route that returns several sends to one node fans out (map);
// the tasks' writes are merged through the fields' reducers (reduce).
type Send[S any] struct {
	// Node is the node to run.
	Node string
	// State is the task's input.
	State S
}

// Route chooses, after a node, the nodes that run next. It sees the state as
// merged at the end of the superstep. Returning END or nothing ends the branch.
type Route[S any] func(ctx context.Context, s S) []string

// FanOut returns, after a node, the tasks to start with inputs of their own.
type FanOut[S any] func(ctx context.Context, s S) []Send[S]

// Builder assembles a graph over a state type S. Its methods record mistakes
// instead of failing at once; Compile reports all of them.
//
// A Builder is not safe for concurrent use. The Graph it compiles is.
type Builder[S any] struct {
	name     string
	nodes    []*nodeSpec[S]
	byName   map[string]*nodeSpec[S]
	edges    []edgeSpec
	joins    []joinSpec
	routes   []*routeSpec[S]
	binders  []fieldBinder[S]
	problems []string
}

type nodeSpec[S any] struct {
	name    string
	fn      NodeFunc[S]
	cmd     CommandFunc[S]
	dests   []string // declared command destinations
	sub     subgraphInfo
	retry   *RetryPolicy
	timeout time.Duration
	label   string
}

type edgeSpec struct{ from, to string }

type joinSpec struct {
	from []string
	to   string
}

type routeSpec[S any] struct {
	from  string
	route Route[S]
	fan   FanOut[S]
	dests []string
}

// Option configures a Builder.
type Option func(*builderOptions)

type builderOptions struct {
	name    string
	binders []any
}

// WithName names the graph. The name appears in errors, events and Mermaid output.
func WithName(name string) Option {
	return func(o *builderOptions) { o.name = name }
}

// WithReducer gives a field of the state a reducer, which merges the writes
// that several tasks make to the field in one superstep. field returns the
// address of a top-level field of the state (fields of embedded structs count
// as top-level: they are promoted):
//
//	graph.WithReducer(func(s *State) *[]string { return &s.Log }, state.Append[string]())
//
// Fields without a reducer accept one write per superstep.
func WithReducer[S, T any](field func(*S) *T, reducer state.Reducer[T]) Option {
	return func(o *builderOptions) {
		o.binders = append(o.binders, &binding[S, T]{get: field, reduce: reducer})
	}
}

// New returns a Builder for a graph over the state type S.
func New[S any](opts ...Option) *Builder[S] {
	var o builderOptions
	for _, opt := range opts {
		opt(&o)
	}
	b := &Builder[S]{name: o.name, byName: make(map[string]*nodeSpec[S])}
	for _, x := range o.binders {
		fb, ok := x.(fieldBinder[S])
		if !ok {
			b.problemf("a reducer was given for a state of another type (%s), not %s", binderStateType(x), reflect.TypeFor[S]())
			continue
		}
		b.binders = append(b.binders, fb)
	}
	return b
}

// Problem records a problem that a helper adding nodes found (nodes.AddTools
// checks the names of its fixed tools, for one): Compile fails with it
// among its problems. A nil err is ignored.
func (b *Builder[S]) Problem(err error) *Builder[S] {
	if err != nil {
		b.problemf("%v", err)
	}
	return b
}

func (b *Builder[S]) problemf(format string, args ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// NodeOption configures a node.
type NodeOption func(*nodeOptions)

type nodeOptions struct {
	retry   *RetryPolicy
	timeout time.Duration
	label   string
}

// WithRetry retries the node according to p when it fails.
func WithRetry(p RetryPolicy) NodeOption {
	return func(o *nodeOptions) { o.retry = &p }
}

// WithTimeout bounds each attempt of the node: its context expires after d.
// An attempt that runs out of time and returns an error fails with an error
// matching ErrNodeTimeout and context.DeadlineExceeded.
func WithTimeout(d time.Duration) NodeOption {
	return func(o *nodeOptions) { o.timeout = d }
}

// WithLabel sets the text Mermaid shows for the node (its name by default).
func WithLabel(label string) NodeOption {
	return func(o *nodeOptions) { o.label = label }
}

func (b *Builder[S]) add(n *nodeSpec[S], opts []NodeOption) *Builder[S] {
	switch {
	case n.name == "":
		b.problemf("a node has an empty name")
		return b
	case n.name == START || n.name == END:
		b.problemf("node name %q is reserved", n.name)
		return b
	case b.byName[n.name] != nil:
		b.problemf("node %q is added twice", n.name)
		return b
	}
	var o nodeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.retry != nil {
		if err := o.retry.validate(); err != nil {
			b.problemf("node %q: %v", n.name, err)
		}
	}
	if o.timeout < 0 {
		b.problemf("node %q: negative timeout %v", n.name, o.timeout)
	}
	n.retry, n.timeout, n.label = o.retry, o.timeout, o.label
	b.nodes = append(b.nodes, n)
	b.byName[n.name] = n
	return b
}

// AddNode adds a node.
func (b *Builder[S]) AddNode(name string, fn NodeFunc[S], opts ...NodeOption) *Builder[S] {
	if fn == nil {
		b.problemf("node %q has a nil function", name)
		return b
	}
	return b.add(&nodeSpec[S]{name: name, fn: fn}, opts)
}

// AddCommandNode adds a node that chooses its successors itself. dests
// declares every node its Command may name (END included if it may end the
// branch); Compile checks them and Mermaid draws them.
func (b *Builder[S]) AddCommandNode(name string, fn CommandFunc[S], dests []string, opts ...NodeOption) *Builder[S] {
	if fn == nil {
		b.problemf("node %q has a nil function", name)
		return b
	}
	if len(dests) == 0 {
		b.problemf("command node %q declares no destinations", name)
	}
	return b.add(&nodeSpec[S]{name: name, cmd: fn, dests: append([]string(nil), dests...)}, opts)
}

// AddEdge runs to after from. from may be START; to may be END.
func (b *Builder[S]) AddEdge(from, to string) *Builder[S] {
	b.edges = append(b.edges, edgeSpec{from, to})
	return b
}

// AddJoin runs to once every node in from has run since to last ran: the
// edge waits for all its sources, wherever in the run they finish.
func (b *Builder[S]) AddJoin(from []string, to string) *Builder[S] {
	if len(from) == 0 {
		b.problemf("join into %q has no sources", to)
		return b
	}
	b.joins = append(b.joins, joinSpec{from: append([]string(nil), from...), to: to})
	return b
}

// AddConditionalEdges routes after from through route, which may return any
// of dests (END included if listed). Compile checks the destinations exist;
// a route that returns one it did not declare fails the run.
func (b *Builder[S]) AddConditionalEdges(from string, route Route[S], dests ...string) *Builder[S] {
	if route == nil {
		b.problemf("conditional edges after %q have a nil route", from)
		return b
	}
	if len(dests) == 0 {
		b.problemf("conditional edges after %q declare no destinations", from)
	}
	b.routes = append(b.routes, &routeSpec[S]{from: from, route: route, dests: append([]string(nil), dests...)})
	return b
}

// AddFanOut starts, after from, the tasks fan returns: each a run of one of
// dests with its own input. Sends to one node run concurrently in the next
// superstep; their writes are merged through the fields' reducers.
func (b *Builder[S]) AddFanOut(from string, fan FanOut[S], dests ...string) *Builder[S] {
	if fan == nil {
		b.problemf("fan-out after %q has a nil function", from)
		return b
	}
	if len(dests) == 0 {
		b.problemf("fan-out after %q declares no destinations", from)
	}
	b.routes = append(b.routes, &routeSpec[S]{from: from, fan: fan, dests: append([]string(nil), dests...)})
	return b
}
