package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
)

// Names that read alike once made into Mermaid identifiers, or that are
// words of Mermaid's syntax, still give every node an identifier of its own.
func TestMermaidIdentifiersAreDistinct(t *testing.T) {
	child := mustCompile(t, graph.New[sampleState]().
		AddNode("check", sampleNoop).
		AddEdge(graph.START, "check"))
	g := mustCompile(t, graph.New[sampleState]().
		AddNode("a-b", sampleNoop).
		AddNode("a_b", sampleNoop).
		AddNode("end", sampleNoop).
		AddNode("review_check", sampleNoop).
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
	g := mustCompile(t, graph.New[sampleState]().
		AddNode("a", sampleNoop).
		AddNode("b", sampleNoop).
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

// WithLabel changes the text Mermaid shows for a node, escaped like any
// label, while the node keeps its name for its Mermaid ID, its edges and at
// run time.
func TestWithLabelShowsLabelInMermaid(t *testing.T) {
	child := mustCompile(t, graph.New[sampleState](graph.WithName("review")).
		AddNode("check", sampleNoop, graph.WithLabel("Check facts")).
		AddEdge(graph.START, "check"))
	var seen []string
	var mu sync.Mutex
	record := func(ctx context.Context, s sampleState) (sampleState, error) {
		mu.Lock()
		seen = append(seen, graph.NodeName(ctx))
		mu.Unlock()
		return s, nil
	}
	g := mustCompile(t, graph.New[sampleState](graph.WithName("pipeline")).
		AddNode("fetch-data", record, graph.WithLabel(`Fetch "web" <page>`)).
		AddNode("parse", record).
		AddSubgraph("review", child.AsSubgraph(), graph.WithLabel("Human review")).
		AddEdge(graph.START, "fetch-data").
		AddEdge("fetch-data", "parse").
		AddEdge("parse", "review"))

	want := "---\n" +
		"title: pipeline\n" +
		"---\n" +
		"flowchart TD\n" +
		"\t__start__([start]):::first\n" +
		"\tfetch_data(\"Fetch #quot;web#quot; #lt;page#gt;\")\n" +
		"\tparse(\"parse\")\n" +
		"\tsubgraph review [\"Human review\"]\n" +
		"\t\treview___start__([start]):::first\n" +
		"\t\treview_check(\"Check facts\")\n" +
		"\t\treview___start__ --> review_check\n" +
		"\t\treview_check --> review___end__\n" +
		"\t\treview___end__([end]):::last\n" +
		"\tend\n" +
		"\t__start__ --> fetch_data\n" +
		"\tfetch_data --> parse\n" +
		"\tparse --> review\n" +
		"\treview --> __end__\n" +
		"\t__end__([end]):::last\n" +
		"\tclassDef first fill:#eee,stroke:#999\n" +
		"\tclassDef last fill:#bfb6fc,stroke:#777\n"
	assert.Equal(t, want, g.Mermaid())
	// The child draws its labelled node the same way on its own.
	assert.Contains(t, child.Mermaid(), "\tcheck(\"Check facts\")\n")
	assert.Contains(t, child.Mermaid(), "\t__start__ --> check\n")

	// A label is only for drawing: the node keeps its name.
	assert.Equal(t, []string{"fetch-data", "parse", "review"}, g.Nodes())
	_, err := g.Invoke(context.Background(), sampleState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"fetch-data", "parse"}, seen)
}
