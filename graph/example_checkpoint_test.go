package graph_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

type Order struct {
	Item   string
	Status string
}

// A node asks a person for a decision with Interrupt. The run stops with an
// *InterruptError; Resume answers it and the node runs again from its start,
// this time receiving the answer.
func ExampleInterrupt() {
	g, _ := graph.New[Order]().
		AddNode("review", func(ctx context.Context, o Order) (Order, error) {
			ok, err := graph.Interrupt[bool](ctx, "approve "+o.Item+"?")
			if err != nil {
				return o, err
			}
			o.Status = map[bool]string{true: "approved", false: "rejected"}[ok]
			return o, nil
		}).
		AddEdge(graph.START, "review").
		Compile(graph.WithCheckpointer(memory.New()))

	ctx := context.Background()
	_, err := g.Invoke(ctx, Order{Item: "a bicycle"}, graph.WithThread("order-1"))
	var ie *graph.InterruptError
	if errors.As(err, &ie) {
		fmt.Println("asked:", ie.Interrupts[0].Payload)
	}

	out, err := g.Resume(ctx, "order-1", graph.WithResumeValue(true))
	fmt.Println(out.Status, err)
	// Output:
	// asked: approve a bicycle?
	// approved <nil>
}

// A static interrupt pauses before a node; UpdateState edits the state as
// if a node had written it, and Resume carries on.
func ExampleGraph_UpdateState() {
	g, _ := graph.New[Order]().
		AddNode("pick", func(_ context.Context, o Order) (Order, error) { o.Status = "picked"; return o, nil }).
		AddNode("ship", func(_ context.Context, o Order) (Order, error) { o.Status += ", shipped"; return o, nil }).
		AddEdge(graph.START, "pick").
		AddEdge("pick", "ship").
		Compile(graph.WithCheckpointer(memory.New()), graph.InterruptBefore("ship"))

	ctx := context.Background()
	_, err := g.Invoke(ctx, Order{Item: "lamp"}, graph.WithThread("t"))
	fmt.Println(errors.Is(err, graph.ErrInterrupted))

	snap, _ := g.GetState(ctx, "t")
	fmt.Println(snap.State.Status, "→ next:", snap.Next)

	// Change the item as if "pick" had done it; "ship" is still next.
	_, _ = g.UpdateState(ctx, "t", "pick", func(o Order) Order { o.Item = "desk lamp"; return o })
	out, _ := g.Resume(ctx, "t")
	fmt.Println(out.Item+":", out.Status)
	// Output:
	// true
	// picked → next: [ship]
	// desk lamp: picked, shipped
}

// History lists a thread's checkpoints, newest first; resuming from an older
// one replays the run from there.
func ExampleGraph_History() {
	g, _ := graph.New[Order]().
		AddNode("a", func(_ context.Context, o Order) (Order, error) { o.Status += "a"; return o, nil }).
		AddNode("b", func(_ context.Context, o Order) (Order, error) { o.Status += "b"; return o, nil }).
		AddEdge(graph.START, "a").
		AddEdge("a", "b").
		Compile(graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, _ = g.Invoke(ctx, Order{}, graph.WithThread("t"))

	hist, _ := g.History(ctx, "t", 0)
	for _, h := range hist {
		fmt.Printf("step %d %-5s state %q next %v\n", h.Step, h.Source, h.State.Status, h.Next)
	}
	replayed, _ := g.Resume(ctx, "t", graph.FromCheckpoint(hist[1].CheckpointID))
	fmt.Println("replayed from after a:", replayed.Status)
	// Output:
	// step 1 loop  state "ab" next []
	// step 0 loop  state "a" next [b]
	// step -1 input state "" next [a]
	// replayed from after a: ab
}
