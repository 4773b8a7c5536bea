package graph_test

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/graph"
)

// A Stepper plans the supersteps of a run and RunTask runs their tasks:
// an executor of its own (here a plain loop; in package temporal, a
// workflow whose tasks are activities) drives the run between them.
func ExampleStepper() {
	type S struct{ N int }
	b := graph.New[S]()
	b.AddNode("inc", func(_ context.Context, s S) (S, error) {
		s.N++
		return s, nil
	})
	b.AddEdge(graph.START, "inc")
	b.AddConditionalEdges("inc", func(_ context.Context, s S) []string {
		if s.N < 3 {
			return []string{"inc"}
		}
		return []string{graph.END}
	}, "inc", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	st, err := g.NewStepper(ctx, S{})
	if err != nil {
		panic(err)
	}
	for !st.Done() {
		tasks := st.Tasks()
		outs := make([]graph.TaskOutput[S], len(tasks))
		for i, t := range tasks {
			if outs[i], err = g.RunTask(ctx, t, st.State(), graph.TaskScope{Step: st.Step(), Index: i}); err != nil {
				panic(err)
			}
		}
		if err := st.Advance(ctx, outs); err != nil {
			panic(err)
		}
		fmt.Println("superstep", st.Step(), "N =", st.State().N)
	}
	// Output:
	// superstep 1 N = 1
	// superstep 2 N = 2
	// superstep 3 N = 3
}
