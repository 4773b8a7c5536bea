package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// earliestBefore returns the ID of the oldest checkpoint of the thread after
// which node runs next.
func earliestBefore(t *testing.T, g *graph.Graph[agent.State], thread, node string) string {
	t.Helper()
	hist, err := g.History(context.Background(), thread, 0)
	require.NoError(t, err)
	for i := len(hist) - 1; i >= 0; i-- {
		if len(hist[i].Next) == 1 && hist[i].Next[0] == node {
			return hist[i].CheckpointID
		}
	}
	require.Failf(t, "no checkpoint", "before %s", node)
	return ""
}

// A replay from before the supervisor's tools runs the tasks after that
// checkpoint again, the workers' runs included, on a new branch.
func TestReplayOfASupervisorRunsItsWorkersAgain(t *testing.T) {
	ctx := context.Background()
	team := newBillingTeam(t, memory.New())
	_, err := team.sup.Invoke(ctx, agent.Ask("INV-1"), graph.WithThread("r"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = team.sup.Resume(ctx, "r", graph.WithResumeValue(true))
	require.NoError(t, err)
	require.Equal(t, []string{"INV-1"}, team.lookups.drain())
	require.Equal(t, []string{"INV-1"}, team.paid.drain())

	_, err = team.sup.Resume(ctx, "r", graph.FromCheckpoint(earliestBefore(t, team.sup, "r", agent.ToolsNode)))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie, "the payer asks again on the new branch")
	assert.Equal(t, []string{"INV-1"}, team.lookups.drain(), "the researcher looks the invoice up again")
}
