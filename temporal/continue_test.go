package temporal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/temporal"
)

// countingGraph counts to five, one superstep a count, joining two
// branches on the way so that the join's progress must carry over.
func countingGraph(t *testing.T) *graph.Graph[flow] {
	t.Helper()
	return compile(t, countingBuilder())
}

// countingBuilder builds countingGraph's graph.
func countingBuilder() *graph.Builder[flow] {
	b := graph.New[flow](appendLog())
	b.AddNode("split", logNode("split")).AddNode("quick", logNode("quick")).AddNode("slow", logNode("slow")).AddNode("slower", logNode("slower"))
	b.AddNode("count", func(_ context.Context, s flow) (flow, error) {
		s.N++
		return s, nil
	})
	b.AddEdge(graph.START, "split").AddEdge("split", "quick").AddEdge("split", "slow").AddEdge("slow", "slower")
	b.AddJoin([]string{"quick", "slower"}, "count")
	b.AddConditionalEdges("count", func(_ context.Context, s flow) []string {
		if s.N < 5 {
			return []string{"count"}
		}
		return []string{graph.END}
	}, "count", graph.END)
	return b
}

func TestContinueAsNewGivesTheSameResult(t *testing.T) {
	g := countingGraph(t)
	want, err := g.Invoke(context.Background(), flow{})
	require.NoError(t, err)

	env := newEnv()
	r := temporal.New("flow", g, temporal.WithContinueAsNew(2))
	r.Register(env)
	env.ExecuteWorkflow(r.Name(), flow{})
	runs, lastSeq := 1, int64(0)
	lastCheckpoint := ""
	for {
		// Each run holds its checkpoints from the one it restored.
		cps, herr := temporal.History[flow](context.Background(), envQuerier{env}, "flow", temporal.HistoryFilter{})
		require.NoError(t, herr)
		if lastCheckpoint != "" {
			require.Equal(t, lastCheckpoint, cps[len(cps)-1].ID, "a run starts at its predecessor's last checkpoint")
		}
		lastCheckpoint = cps[0].ID
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			require.NoError(t, err)
			break
		}
		// The stream's numbering goes on in the next run.
		v, qerr := env.QueryWorkflow(temporal.QueryEvents, int64(0))
		require.NoError(t, qerr)
		var page temporal.EventPage
		require.NoError(t, v.Get(&page))
		require.True(t, page.Done)
		require.Equal(t, lastSeq+1, page.First)
		lastSeq = page.Events[len(page.Events)-1].Seq

		require.Equal(t, r.Name(), can.WorkflowType.Name)
		var input flow
		var cont *temporal.Continuation[flow]
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &input, &cont))
		require.NotNil(t, cont)
		require.Equal(t, lastSeq, cont.Seq)
		require.Equal(t, input, cont.Stepper.State, "the next run's input is the state reached")
		env = newEnv()
		r.Register(env)
		env.ExecuteWorkflow(r.Name(), input, cont)
		runs++
		require.Less(t, runs, 20, "the run does not end")
	}
	var out flow
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, want, out)
	require.Equal(t, 5, out.N)
	// split; quick+slow; slower; count ×5: eight supersteps, two a run.
	require.Equal(t, 4, runs)
	v, err := env.QueryWorkflow(temporal.QueryEvents, lastSeq)
	require.NoError(t, err)
	var page temporal.EventPage
	require.NoError(t, v.Get(&page))
	require.Equal(t, lastSeq+1, page.Events[0].Seq)
	require.Equal(t, temporal.KindRunEnd, page.Events[len(page.Events)-1].Kind)
}
