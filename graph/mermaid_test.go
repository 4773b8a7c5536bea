package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/graph"
)

// Names that read alike once made into Mermaid identifiers, or that are
// words of Mermaid's syntax, still give every node an identifier of its own.
func TestMermaidIdentifiersAreDistinct(t *testing.T) {
	child := mustCompile(t, graph.New[uaState]().
		AddNode("check", uaNoop).
		AddEdge(graph.START, "check"))
	g := mustCompile(t, graph.New[uaState]().
		AddNode("a-b", uaNoop).
		AddNode("a_b", uaNoop).
		AddNode("end", uaNoop).
		AddNode("review_check", uaNoop).
		AddSubgraph("review", child.AsSubgraph()).
		AddEdge(graph.START, "a-b").
		AddEdge(graph.START, "a_b").
		AddEdge("a-b", "end").
		AddEdge("a_b", "review_check").
		AddEdge("review_check", "review"))

	want := "flowchart TD\n" +
		"\t__start__([start]):::first\n" +
		"\ta_b(\"a-b\")\n" +
		"\ta_b_2(\"a_b\")\n" +
		"\tend_2(\"end\")\n" +
		"\treview_check(\"review_check\")\n" +
		"\tsubgraph review [\"review\"]\n" +
		"\t\treview___start__([start]):::first\n" +
		"\t\treview_check_2(\"check\")\n" +
		"\t\treview___start__ --> review_check_2\n" +
		"\t\treview_check_2 --> review___end__\n" +
		"\t\treview___end__([end]):::last\n" +
		"\tend\n" +
		"\t__start__ --> a_b\n" +
		"\t__start__ --> a_b_2\n" +
		"\ta_b --> end_2\n" +
		"\ta_b_2 --> review_check\n" +
		"\tend_2 --> __end__\n" +
		"\treview_check --> review\n" +
		"\treview --> __end__\n" +
		"\t__end__([end]):::last\n" +
		"\tclassDef first fill:#eee,stroke:#999\n" +
		"\tclassDef last fill:#bfb6fc,stroke:#777\n"
	assert.Equal(t, want, g.Mermaid())
}

// An edge to END is drawn even when its node has other edges, and so is an
// edge from START to END.
func TestMermaidDrawsEveryEdgeToEnd(t *testing.T) {
	g := mustCompile(t, graph.New[uaState]().
		AddNode("a", uaNoop).
		AddNode("b", uaNoop).
		AddEdge(graph.START, "a").
		AddEdge(graph.START, graph.END).
		AddEdge("a", "b").
		AddEdge("a", graph.END))

	want := "flowchart TD\n" +
		"\t__start__([start]):::first\n" +
		"\ta(\"a\")\n" +
		"\tb(\"b\")\n" +
		"\t__start__ --> a\n" +
		"\t__start__ --> __end__\n" +
		"\ta --> b\n" +
		"\ta --> __end__\n" +
		"\tb --> __end__\n" +
		"\t__end__([end]):::last\n" +
		"\tclassDef first fill:#eee,stroke:#999\n" +
		"\tclassDef last fill:#bfb6fc,stroke:#777\n"
	assert.Equal(t, want, g.Mermaid())
}
