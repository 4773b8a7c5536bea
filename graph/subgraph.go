package graph

import (
	"context"
	"fmt"
	"reflect"
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
		var em *emitter
		m := metaFrom(ctx)
		if m != nil {
			em = m.emit
		}
		c := in(p)
		res, err := child.execute(ctx, &c, &runConfig{}, em, m)
		if err != nil {
			return p, err
		}
		return out(p, res), nil
	}
	return s
}

// AddSubgraph adds a compiled graph as a node.
func (b *Builder[S]) AddSubgraph(name string, sub *SubgraphNode[S], opts ...NodeOption) *Builder[S] {
	if sub == nil {
		b.problemf("subgraph node %q is nil", name)
		return b
	}
	fn := sub.run
	if fn == nil {
		fn = func(_ context.Context, s S) (S, error) {
			return s, fmt.Errorf("subgraph node %q: %s", name, sub.info.err)
		}
	}
	return b.add(&nodeSpec[S]{name: name, fn: fn, sub: sub.info}, opts)
}

// AsSubgraph prepares g to run as a node of a parent graph with the same
// state type: the node passes the parent's state in and takes the child's
// final state as its output. It is Subgraph[S, S](g).
func (g *Graph[S]) AsSubgraph() *SubgraphNode[S] {
	return Subgraph[S, S](g)
}
