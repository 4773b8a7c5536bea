package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-go/trellis/graph"
)

type counter struct{ N int }

func incr(_ context.Context, s counter) (counter, error) {
	s.N++
	return s, nil
}

func chain(b testing.TB, n int) *graph.Graph[counter] {
	g := graph.New[counter]()
	prev := graph.START
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		g.AddNode(name, incr).AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.END)
	c, err := g.Compile(graph.WithDefaultStepLimit(n + 1))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func benchChain(b *testing.B, n int) {
	g := chain(b, n)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := g.Invoke(ctx, counter{})
		if err != nil || out.N != n {
			b.Fatalf("got %d, %v", out.N, err)
		}
	}
}

// BenchmarkChain3 runs three nodes in a row, each incrementing an int field.
func BenchmarkChain3(b *testing.B) { benchChain(b, 3) }

// BenchmarkChain100 runs a hundred nodes in a row.
func BenchmarkChain100(b *testing.B) { benchChain(b, 100) }

// BenchmarkChain3Stream runs Chain3 through Stream and reads every event
// (the default modes: values, updates, tasks, ...): the run goes on a
// goroutine of its own and hands the events over as they happen.
func BenchmarkChain3Stream(b *testing.B) { benchChainStream(b, 3) }

// BenchmarkChain100Stream is Chain100 through Stream.
func BenchmarkChain100Stream(b *testing.B) { benchChainStream(b, 100) }

func benchChainStream(b *testing.B, n int) {
	g := chain(b, n)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		events := 0
		var last graph.Event
		for ev, err := range g.Stream(ctx, counter{}) {
			if err != nil {
				b.Fatal(err)
			}
			events++
			last = ev
		}
		if out, ok := last.State.(counter); last.Kind != graph.KindDone || !ok || out.N != n || events < n+1 {
			b.Fatalf("%d events, the last %+v", events, last)
		}
	}
}

type fan struct {
	A, B, C, D, E bool
	Count         int
}

// BenchmarkFanOut5Join runs five nodes in parallel, each writing its own
// field, then a join node that counts the fields written.
func BenchmarkFanOut5Join(b *testing.B) {
	g := graph.New[fan]()
	set := func(f func(*fan)) graph.NodeFunc[fan] {
		return func(_ context.Context, s fan) (fan, error) { f(&s); return s, nil }
	}
	g.AddNode("a", set(func(s *fan) { s.A = true })).
		AddNode("b", set(func(s *fan) { s.B = true })).
		AddNode("c", set(func(s *fan) { s.C = true })).
		AddNode("d", set(func(s *fan) { s.D = true })).
		AddNode("e", set(func(s *fan) { s.E = true })).
		AddNode("join", func(_ context.Context, s fan) (fan, error) {
			for _, v := range []bool{s.A, s.B, s.C, s.D, s.E} {
				if v {
					s.Count++
				}
			}
			return s, nil
		})
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		g.AddEdge(graph.START, n).AddEdge(n, "join")
	}
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, fan{})
		if err != nil || out.Count != 5 {
			b.Fatalf("got %d, %v", out.Count, err)
		}
	}
}
