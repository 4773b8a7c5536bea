package temporalruns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/temporalruns"
	"github.com/trellis-go/trellis/temporal/temporaltest"
)

// Ticket is the state of the example's graph.
type Ticket struct {
	Text     string `json:"text"`
	Approved string `json:"approved"`
}

// Code written against runs.Client starts a run, streams it, answers its
// interrupt and reads its output; here the runs execute as Temporal
// workflows. A test environment stands in for the server and a worker
// (with a server: temporalruns.New(c, queue), c from client.Dial).
func Example() {
	b := graph.New[Ticket]()
	b.AddNode("approve", func(ctx context.Context, s Ticket) (Ticket, error) {
		who, err := graph.Interrupt[string](ctx, "approve "+s.Text+"?")
		s.Approved = who
		return s, err
	})
	b.AddEdge(graph.START, "approve").AddEdge("approve", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	temporal.New("tickets", g).Register(env)

	var m runs.Client = temporalruns.New(temporaltest.NewClient(env), "tickets")
	ctx := context.Background()
	run, err := m.Start(ctx, runs.Request{Graph: "tickets", Thread: "ticket-1", Input: json.RawMessage(`{"text":"refund"}`)})
	if err != nil {
		panic(err)
	}
	for ev, err := range m.Stream(ctx, run.ID, 0) {
		if err != nil {
			panic(err)
		}
		fmt.Println(strings.TrimSpace(fmt.Sprint(ev.Kind, " ", ev.Status)))
	}
	_, err = m.Start(ctx, runs.Request{Graph: "tickets", Thread: run.Thread, Resume: &runs.Resume{HasValue: true, Value: json.RawMessage(`"ada"`)}})
	if err != nil {
		panic(err)
	}
	done, err := m.Wait(ctx, run.ID)
	if err != nil {
		panic(err)
	}
	out, err := m.Output(ctx, run.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(done.Status, string(out))
	// Output:
	// interrupt
	// run_end interrupted
	// success {"text":"refund","approved":"ada"}
}
