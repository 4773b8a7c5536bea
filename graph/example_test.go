package graph_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
)

// A state is a plain struct. Nodes receive it by value and return the state
// they want.
type Essay struct {
	Topic  string
	Draft  string
	Review []string
}

func Example() {
	g, err := graph.New[Essay](graph.WithName("essay")).
		AddNode("write", func(_ context.Context, s Essay) (Essay, error) {
			s.Draft = "All about " + s.Topic + "."
			return s, nil
		}).
		AddNode("polish", func(_ context.Context, s Essay) (Essay, error) {
			s.Draft = strings.ToUpper(s.Draft)
			return s, nil
		}).
		AddEdge(graph.START, "write").
		AddEdge("write", "polish").
		AddEdge("polish", graph.END).
		Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), Essay{Topic: "graphs"})
	fmt.Println(out.Draft, err)
	// Output: ALL ABOUT GRAPHS. <nil>
}

// Nodes triggered together run concurrently; a reducer merges their writes
// to one field in the order the nodes were added.
func Example_parallel() {
	reviewer := func(name string) graph.NodeFunc[Essay] {
		return func(_ context.Context, s Essay) (Essay, error) {
			s.Review = append(s.Review, name+" approves")
			return s, nil
		}
	}
	g, _ := graph.New[Essay](
		graph.WithReducer(func(s *Essay) *[]string { return &s.Review }, state.Append[string]()),
	).
		AddNode("style", reviewer("style")).
		AddNode("facts", reviewer("facts")).
		AddEdge(graph.START, "style").
		AddEdge(graph.START, "facts").
		Compile()
	out, _ := g.Invoke(context.Background(), Essay{})
	fmt.Println(out.Review)
	// Output: [style approves facts approves]
}

// A route chooses the next node from the state; its possible destinations
// are declared so that Compile can check them.
func ExampleBuilder_AddConditionalEdges() {
	g, _ := graph.New[Essay]().
		AddNode("write", func(_ context.Context, s Essay) (Essay, error) {
			s.Draft += "x"
			return s, nil
		}).
		AddEdge(graph.START, "write").
		AddConditionalEdges("write", func(_ context.Context, s Essay) []string {
			if len(s.Draft) < 3 {
				return []string{"write"}
			}
			return []string{graph.END}
		}, "write", graph.END).
		Compile()
	out, _ := g.Invoke(context.Background(), Essay{})
	fmt.Println(out.Draft)
	// Output: xxx
}

// A fan-out starts one task per item, each with its own input; the reducer
// gathers their results (map-reduce).
func ExampleBuilder_AddFanOut() {
	type job struct {
		Word    string
		Lengths []int
	}
	words := []string{"a", "bb", "ccc"}
	g, _ := graph.New[job](graph.WithReducer(func(s *job) *[]int { return &s.Lengths }, state.Append[int]())).
		AddNode("split", func(_ context.Context, s job) (job, error) { return s, nil }).
		AddNode("measure", func(_ context.Context, s job) (job, error) {
			s.Lengths = append(s.Lengths, len(s.Word))
			return s, nil
		}).
		AddEdge(graph.START, "split").
		AddFanOut("split", func(_ context.Context, _ job) []graph.Send[job] {
			var sends []graph.Send[job]
			for _, w := range words {
				sends = append(sends, graph.Send[job]{Node: "measure", State: job{Word: w}})
			}
			return sends
		}, "measure").
		Compile()
	out, _ := g.Invoke(context.Background(), job{})
	fmt.Println(out.Lengths)
	// Output: [1 2 3]
}

// Stream yields events as the run goes; the last one carries the final state.
func ExampleGraph_Stream() {
	g, _ := graph.New[Essay]().
		AddNode("write", func(ctx context.Context, s Essay) (Essay, error) {
			graph.EmitCustom(ctx, "status", "drafting")
			s.Draft = "done"
			return s, nil
		}).
		AddEdge(graph.START, "write").
		Compile()
	for ev, err := range g.Stream(context.Background(), Essay{}, graph.WithModes(graph.ModeCustom|graph.ModeUpdates)) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Kind {
		case graph.KindCustom:
			fmt.Println(ev.Node, ev.Name, ev.Payload)
		case graph.KindUpdate:
			fmt.Println(ev.Node, "wrote", ev.Fields)
		case graph.KindDone:
			fmt.Println("final:", ev.State.(Essay).Draft)
		}
	}
	// Output:
	// write status drafting
	// write wrote [Draft]
	// final: done
}

// A command node updates the state and chooses where to go in one step.
func ExampleBuilder_AddCommandNode() {
	g, _ := graph.New[Essay]().
		AddCommandNode("triage", func(_ context.Context, s Essay) (Essay, graph.Command[Essay], error) {
			s.Draft = "triaged"
			if s.Topic == "" {
				return s, graph.Command[Essay]{Goto: []string{graph.END}}, nil
			}
			return s, graph.Command[Essay]{Goto: []string{"write"}}, nil
		}, []string{"write", graph.END}).
		AddNode("write", func(_ context.Context, s Essay) (Essay, error) {
			s.Draft += " and written"
			return s, nil
		}).
		AddEdge(graph.START, "triage").
		Compile()
	a, _ := g.Invoke(context.Background(), Essay{})
	b, _ := g.Invoke(context.Background(), Essay{Topic: "x"})
	fmt.Println(a.Draft + "; " + b.Draft)
	// Output: triaged; triaged and written
}

func ExampleGraph_Mermaid() {
	child, _ := graph.New[Essay](graph.WithName("review")).
		AddNode("check", func(_ context.Context, s Essay) (Essay, error) { return s, nil }).
		AddEdge(graph.START, "check").
		Compile()
	g, _ := graph.New[Essay](graph.WithName("essay")).
		AddNode("write", func(_ context.Context, s Essay) (Essay, error) { return s, nil }).
		AddSubgraph("review", child.AsSubgraph()).
		AddEdge(graph.START, "write").
		AddConditionalEdges("write", func(context.Context, Essay) []string { return nil }, "review", graph.END).
		Compile()
	fmt.Print(g.Mermaid())
	// Output:
	// ---
	// title: essay
	// ---
	// flowchart TD
	// 	__start__([start]):::first
	// 	write("write")
	// 	subgraph review ["review"]
	// 		review___start__([start]):::first
	// 		review_check("check")
	// 		review___start__ --> review_check
	// 		review_check --> review___end__
	// 		review___end__([end]):::last
	// 	end
	// 	__start__ --> write
	// 	write -.->|"review"| review
	// 	write -.->|"end"| __end__
	// 	review --> __end__
	// 	__end__([end]):::last
	// 	classDef first fill:#eee,stroke:#999
	// 	classDef last fill:#bfb6fc,stroke:#777
}
