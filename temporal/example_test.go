package temporal_test

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/temporaltest"
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

// A run's events, read with the query QueryEvents and a cursor: those the
// workflow records (node outputs, states, the end) and those a task
// publishes while it runs (here a custom event). A caller polls the query
// while the run goes on; this one reads the stream once the run is over.
func Example_stream() {
	b := graph.New[Greeting]()
	b.AddNode("greet", func(ctx context.Context, s Greeting) (Greeting, error) {
		graph.EmitCustom(ctx, "progress", "half way")
		s.Text = "hello, " + s.Name
		return s, nil
	})
	b.AddEdge(graph.START, "greet").AddEdge("greet", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet())
	env := suite.NewTestWorkflowEnvironment()
	// With a server the default sink signals the workflow through the
	// worker's client; the test environment takes the signals itself.
	r := temporal.New("greeting", g,
		temporal.WithStreamModes(temporal.DefaultStreamModes|graph.ModeCustom),
		temporal.WithSink(temporal.SignalSink(temporaltest.Signaler{Env: env})))
	r.Register(env)
	env.ExecuteWorkflow(r.Name(), Greeting{Name: "ada"})

	v, err := env.QueryWorkflow(temporal.QueryEvents, int64(0)) // 0: from the start
	if err != nil {
		panic(err)
	}
	var page temporal.EventPage
	if err := v.Get(&page); err != nil {
		panic(err)
	}
	for _, ev := range page.Events {
		fmt.Println(strings.TrimSpace(fmt.Sprint(ev.Seq, " ", ev.Kind, " ", ev.Node, " ", string(ev.Payload))))
	}
	// Output:
	// 1 custom greet "half way"
	// 2 update greet
	// 3 values
	// 4 run_end
}

// A run's checkpoints, newest first, and a second run forked from one of
// them with its state changed. Each test environment holds one workflow;
// with a server, c is the same client.Client for both.
func ExampleFork() {
	build := func() *graph.Graph[Greeting] {
		b := graph.New[Greeting]()
		b.AddNode("greet", func(_ context.Context, s Greeting) (Greeting, error) {
			s.Text = "hello, " + s.Name
			return s, nil
		})
		b.AddNode("shout", func(_ context.Context, s Greeting) (Greeting, error) {
			s.Text = strings.ToUpper(s.Text)
			return s, nil
		})
		b.AddEdge(graph.START, "greet").AddEdge("greet", "shout").AddEdge("shout", graph.END)
		g, err := b.Compile()
		if err != nil {
			panic(err)
		}
		return g
	}
	start := func() *temporaltest.Client {
		var suite testsuite.WorkflowTestSuite
		suite.SetLogger(quiet())
		env := suite.NewTestWorkflowEnvironment()
		temporal.New("greeting", build()).Register(env)
		return temporaltest.NewClient(env)
	}
	ctx := context.Background()
	first := start()
	run, err := first.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "first", TaskQueue: "greetings"}, "greeting", Greeting{Name: "ada"})
	if err != nil {
		panic(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		panic(err)
	}
	cps, err := temporal.History[Greeting](ctx, first, "first", temporal.HistoryFilter{})
	if err != nil {
		panic(err)
	}
	for _, c := range cps {
		fmt.Println(strings.TrimSpace(fmt.Sprint(c.ID, " ", c.Source, " ", c.Next, " ", c.State.Text)))
	}

	// The fork runs "shout" again, on a state it changed.
	second := start()
	forked, err := temporal.Fork(ctx, twoClients{first, second}, "first", "step-1", temporal.ForkOptions[Greeting]{
		Workflow: "greeting",
		Start:    client.StartWorkflowOptions{ID: "second", TaskQueue: "greetings"},
		Update:   func(s Greeting) Greeting { s.Text = "bonjour, " + s.Name; return s },
	})
	if err != nil {
		panic(err)
	}
	var out Greeting
	if err := forked.Get(ctx, &out); err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	// Output:
	// step-2 loop [] HELLO, ADA
	// step-1 loop [shout] hello, ada
	// step-0 input [greet]
	// BONJOUR, ADA
}

// twoClients reads checkpoints through one test environment's client and
// starts workflows through another's.
type twoClients struct{ from, to *temporaltest.Client }

func (c twoClients) QueryWorkflow(ctx context.Context, id, run, name string, args ...any) (converter.EncodedValue, error) {
	return c.from.QueryWorkflow(ctx, id, run, name, args...)
}

func (c twoClients) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	return c.to.ExecuteWorkflow(ctx, opts, wf, args...)
}

// A graph whose nodes or edges change is registered under a new name, and
// the worker keeps the old one until no run of it is open: a run goes on
// with the graph it began with (its history names the nodes it ran), new
// runs start on the new graph. A change inside a node's function needs no
// new name: tasks run as activities, whose code a replay does not run.
func Example_versions() {
	greet := func(_ context.Context, s Greeting) (Greeting, error) {
		s.Text = "hello, " + s.Name
		return s, nil
	}
	v1 := graph.New[Greeting]()
	v1.AddNode("greet", greet)
	v1.AddEdge(graph.START, "greet").AddEdge("greet", graph.END)
	v2 := graph.New[Greeting]()
	v2.AddNode("greet", greet)
	v2.AddNode("shout", func(_ context.Context, s Greeting) (Greeting, error) {
		s.Text = strings.ToUpper(s.Text)
		return s, nil
	})
	v2.AddEdge(graph.START, "greet").AddEdge("greet", "shout").AddEdge("shout", graph.END)
	g1, err := v1.Compile()
	if err != nil {
		panic(err)
	}
	g2, err := v2.Compile()
	if err != nil {
		panic(err)
	}

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet())
	for _, r := range []interface {
		Name() string
		Register(temporal.Registry)
	}{temporal.New("greeting-v1", g1), temporal.New("greeting-v2", g2)} {
		env := suite.NewTestWorkflowEnvironment()
		// A worker registers both: r.Register(w) for each.
		r.Register(env)
		env.ExecuteWorkflow(r.Name(), Greeting{Name: "ada"})
		var out Greeting
		if err := env.GetWorkflowResult(&out); err != nil {
			panic(err)
		}
		fmt.Println(r.Name()+":", out.Text)
	}
	// Output:
	// greeting-v1: hello, ada
	// greeting-v2: HELLO, ADA
}
