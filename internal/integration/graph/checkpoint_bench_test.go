package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

type counter struct{ N int }

func incr(_ context.Context, s counter) (counter, error) {
	s.N++
	return s, nil
}

// BenchmarkChain3Checkpoint runs Chain3 with a checkpoint after every
// superstep (four per run: the input and three supersteps), on each store.
func BenchmarkChain3Checkpoint(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) state.Saver
	}{
		{"memory", func(*testing.B) state.Saver { return memory.New() }},
		{"sqlite", func(b *testing.B) state.Saver {
			return openCrashStore(b, "sqlite", filepath.Join(b.TempDir(), "bench.db"), "")
		}},
		{"postgres", func(b *testing.B) state.Saver {
			schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
			s := openCrashStore(b, "postgres", postgresURL(), schema)
			b.Cleanup(func() { dropSchemaSQL(b, postgresURL(), schema) })
			return s
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			saver := st.open(b)
			g := graph.New[counter]()
			prev := graph.START
			for i := range 3 {
				name := fmt.Sprintf("n%d", i)
				g.AddNode(name, incr).AddEdge(prev, name)
				prev = name
			}
			c, err := g.Compile(graph.WithCheckpointer(saver))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				out, err := c.Invoke(ctx, counter{}, graph.WithThread(fmt.Sprintf("thread-%d", i)))
				if err != nil || out.N != 3 {
					b.Fatalf("got %d, %v", out.N, err)
				}
			}
		})
	}
}
