package temporal_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/temporal"
)

// linearGraph is the graph testdata/linear_history.json recorded a run of:
// START → a → b → END.
func linearGraph(t *testing.T) *graph.Graph[flow] {
	t.Helper()
	b := graph.New[flow](appendLog())
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END)
	return compile(t, b)
}

func TestWorkflowReplaysRecordedHistory(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	temporal.New("flow", linearGraph(t)).RegisterWorkflow(replayer)
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(quiet(), "testdata/linear_history.json"))
}

func TestWorkflowReplayDetectsChangedGraph(t *testing.T) {
	// A graph whose second node runs two tasks where the history has one:
	// the replay finds commands that the history does not hold.
	b := graph.New[flow](appendLog())
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c").AddEdge("b", graph.END).AddEdge("c", graph.END)
	replayer := worker.NewWorkflowReplayer()
	temporal.New("flow", compile(t, b)).RegisterWorkflow(replayer)
	err := replayer.ReplayWorkflowHistoryFromJSONFile(quiet(), "testdata/linear_history.json")
	require.ErrorContains(t, err, "TMPRL1100") // the SDK's code for a nondeterministic replay
}

func TestWorkflowReplaysHistoryRecordedBeforeContinueAsNew(t *testing.T) {
	// The history was recorded by a workflow that never continued as new:
	// a Runner that continues after every superstep replays it unchanged,
	// since the decision is versioned (workflow.GetVersion).
	replayer := worker.NewWorkflowReplayer()
	temporal.New("flow", linearGraph(t), temporal.WithContinueAsNew(1)).RegisterWorkflow(replayer)
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(quiet(), "testdata/linear_history.json"))
}
