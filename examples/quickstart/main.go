package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
)

// Essay is the graph's state. Reviews has a reducer: the reviewers write it
// in the same superstep, and their notes are merged in node order.
type Essay struct {
	Topic    string
	Draft    string
	Revision int
	Reviews  []string
}

func build() (*graph.Graph[Essay], error) {
	reviewer := func(name, wants string) graph.NodeFunc[Essay] {
		return func(ctx context.Context, s Essay) (Essay, error) {
			if err := pause(ctx, 5*time.Millisecond); err != nil { // a reviewer takes a moment
				return s, err
			}
			verdict := "approves"
			if !strings.Contains(s.Draft, wants) {
				verdict = "asks for " + wants
			}
			graph.EmitCustom(ctx, "review", name+" "+verdict)
			s.Reviews = append(s.Reviews, name+": "+verdict)
			return s, nil
		}
	}
	return graph.New[Essay](
		graph.WithName("essay"),
		graph.WithReducer(func(s *Essay) *[]string { return &s.Reviews }, state.Append[string]()),
	).
		AddNode("write", func(_ context.Context, s Essay) (Essay, error) {
			s.Draft = "Graphs are " + s.Topic + "."
			return s, nil
		}).
		AddNode("style", reviewer("style", "clearly")).
		AddNode("facts", reviewer("facts", "examples")).
		AddNode("edit", func(_ context.Context, s Essay) (Essay, error) {
			s.Revision++
			if !strings.Contains(s.Draft, "clearly") {
				s.Draft = strings.Replace(s.Draft, "are", "are clearly", 1)
			} else if !strings.Contains(s.Draft, "examples") {
				s.Draft += " Here are examples."
			}
			return s, nil
		}).
		AddEdge(graph.START, "write").
		AddEdge("write", "style").
		AddEdge("write", "facts").
		// After both reviews of a round are in, edit again or stop.
		AddConditionalEdges("style", func(_ context.Context, s Essay) []string {
			for _, r := range s.Reviews[max(0, len(s.Reviews)-2):] {
				if strings.Contains(r, "asks") {
					return []string{"edit"}
				}
			}
			return []string{graph.END}
		}, "edit", graph.END).
		AddEdge("edit", "style").
		AddEdge("edit", "facts").
		Compile()
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func run(ctx context.Context, w io.Writer) error {
	g, err := build()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, g.Mermaid())
	for ev, err := range g.Stream(ctx, Essay{Topic: "useful"}, graph.WithModes(graph.ModeEvents|graph.ModeCustom)) {
		if err != nil {
			return err
		}
		switch ev.Kind {
		case graph.KindNodeStart:
			fmt.Fprintf(w, "step %d  ▶ %s\n", ev.Step, ev.Node)
		case graph.KindNodeEnd:
			fmt.Fprintf(w, "step %d  ✓ %s (%s)\n", ev.Step, ev.Node, ev.Duration.Round(time.Millisecond))
		case graph.KindCustom:
			fmt.Fprintf(w, "          %s\n", ev.Payload)
		case graph.KindDone:
			if final, ok := ev.State.(Essay); ok {
				fmt.Fprintf(w, "\nfinal draft after %d revisions: %q\n", final.Revision, final.Draft)
				fmt.Fprintf(w, "reviews: %s\n", strings.Join(final.Reviews, "; "))
			}
		}
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
