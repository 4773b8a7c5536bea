package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/cloudwego/eino/compose"

	"github.com/trellis-go/trellis/graph"
)

type counter struct{ N int }

func incr(_ context.Context, s counter) (counter, error) {
	s.N++
	return s, nil
}

func trellisChain(b *testing.B, n int) *graph.Graph[counter] {
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

func einoChain(b *testing.B, n int) compose.Runnable[counter, counter] {
	ctx := context.Background()
	g := compose.NewGraph[counter, counter]()
	prev := compose.START
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		if err := g.AddLambdaNode(name, compose.InvokableLambda(incr)); err != nil {
			b.Fatal(err)
		}
		if err := g.AddEdge(prev, name); err != nil {
			b.Fatal(err)
		}
		prev = name
	}
	if err := g.AddEdge(prev, compose.END); err != nil {
		b.Fatal(err)
	}
	r, err := g.Compile(ctx, compose.WithMaxRunSteps(n+10))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func benchChain(b *testing.B, n int) {
	ctx := context.Background()
	b.Run("trellis", func(b *testing.B) {
		g := trellisChain(b, n)
		b.ReportAllocs()
		for b.Loop() {
			out, err := g.Invoke(ctx, counter{})
			if err != nil || out.N != n {
				b.Fatalf("got %d, %v", out.N, err)
			}
		}
	})
	b.Run("eino", func(b *testing.B) {
		r := einoChain(b, n)
		b.ReportAllocs()
		for b.Loop() {
			out, err := r.Invoke(ctx, counter{})
			if err != nil || out.N != n {
				b.Fatalf("got %d, %v", out.N, err)
			}
		}
	})
}

// BenchmarkChain3 runs three nodes in a row, each incrementing an int field.
func BenchmarkChain3(b *testing.B) { benchChain(b, 3) }

// BenchmarkChain100 runs a hundred such nodes in a row.
func BenchmarkChain100(b *testing.B) { benchChain(b, 100) }

type fan struct {
	A, B, C, D, E bool
	Count         int
}

var branches = []string{"a", "b", "c", "d", "e"}

func trellisFan(b *testing.B) *graph.Graph[fan] {
	g := graph.New[fan]()
	setters := map[string]func(*fan){
		"a": func(s *fan) { s.A = true }, "b": func(s *fan) { s.B = true }, "c": func(s *fan) { s.C = true },
		"d": func(s *fan) { s.D = true }, "e": func(s *fan) { s.E = true },
	}
	for _, name := range branches {
		set := setters[name]
		g.AddNode(name, func(_ context.Context, s fan) (fan, error) { set(&s); return s, nil }).
			AddEdge(graph.START, name).AddEdge(name, "join")
	}
	g.AddNode("join", func(_ context.Context, s fan) (fan, error) {
		for _, v := range [...]bool{s.A, s.B, s.C, s.D, s.E} {
			if v {
				s.Count++
			}
		}
		return s, nil
	})
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// einoFan is the same workload in Eino's dataflow model: each branch returns
// the field it writes as a map entry, Eino merges the branches' maps into the
// join node's input, and the join counts the fields written.
func einoFan(b *testing.B) compose.Runnable[map[string]any, int] {
	ctx := context.Background()
	g := compose.NewGraph[map[string]any, int]()
	err := g.AddLambdaNode("join", compose.InvokableLambda(func(_ context.Context, in map[string]any) (int, error) {
		n := 0
		for _, v := range in {
			if v == true {
				n++
			}
		}
		return n, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range branches {
		key := name
		err := g.AddLambdaNode(name, compose.InvokableLambda(func(_ context.Context, _ map[string]any) (map[string]any, error) {
			return map[string]any{key: true}, nil
		}))
		if err != nil {
			b.Fatal(err)
		}
		if err := g.AddEdge(compose.START, name); err != nil {
			b.Fatal(err)
		}
		if err := g.AddEdge(name, "join"); err != nil {
			b.Fatal(err)
		}
	}
	if err := g.AddEdge("join", compose.END); err != nil {
		b.Fatal(err)
	}
	r, err := g.Compile(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkFanOut5Join runs five parallel nodes that each write their own
// field, then a join node that counts the fields written (5).
func BenchmarkFanOut5Join(b *testing.B) {
	ctx := context.Background()
	b.Run("trellis", func(b *testing.B) {
		g := trellisFan(b)
		b.ReportAllocs()
		for b.Loop() {
			out, err := g.Invoke(ctx, fan{})
			if err != nil || out.Count != 5 {
				b.Fatalf("got %d, %v", out.Count, err)
			}
		}
	})
	b.Run("eino", func(b *testing.B) {
		r := einoFan(b)
		b.ReportAllocs()
		for b.Loop() {
			n, err := r.Invoke(ctx, map[string]any{})
			if err != nil || n != 5 {
				b.Fatalf("got %d, %v", n, err)
			}
		}
	})
}
