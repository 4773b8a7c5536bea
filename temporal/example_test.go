package temporal_test

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/temporal"
)

// Greeting is the state of the example's graph.
type Greeting struct {
	Name, Text string
}

// A graph of two nodes, run as a workflow. The testsuite's environment
// stands in for a worker connected to a Temporal server.
func Example() {
	b := graph.New[Greeting]()
	b.AddNode("greet", func(_ context.Context, s Greeting) (Greeting, error) {
		s.Text = "hello, " + s.Name
		return s, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5}))
	b.AddNode("shout", func(_ context.Context, s Greeting) (Greeting, error) {
		s.Text = strings.ToUpper(s.Text)
		return s, nil
	})
	b.AddEdge(graph.START, "greet").AddEdge("greet", "shout").AddEdge("shout", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}

	r := temporal.New("greeting", g)
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet())
	env := suite.NewTestWorkflowEnvironment()
	r.Register(env) // with a server: r.Register(worker.New(c, queue, worker.Options{}))
	env.ExecuteWorkflow(r.Name(), Greeting{Name: "ada"})

	var out Greeting
	if err := env.GetWorkflowResult(&out); err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	// Output: HELLO, ADA
}
