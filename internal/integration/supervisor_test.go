package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
)

// billingTeam is a supervisor over a researcher (a lookup tool) and a payer
// (a payment tool that waits for a human's approval). Each turn the
// supervisor sends both workers a task in one batch, then answers with
// what they said. Every model reacts to the conversation only, so that a
// new instance over the same store continues a thread as the old would.
type billingTeam struct {
	sup     *graph.Graph[agent.State]
	lookups *counter
	paid    *counter
	supM    *scripted.Model
	resM    *scripted.Model
	payM    *scripted.Model
}

func newBillingTeam(t *testing.T, saver state.Saver) *billingTeam {
	t.Helper()
	team := &billingTeam{lookups: newCounter(), paid: newCounter()}
	lookup := tool.MustFunc("lookup", "looks an invoice up", func(ctx context.Context, in struct {
		Invoice string `json:"invoice"`
	}) (string, error) {
		team.lookups.add(in.Invoice)
		return in.Invoice + " is due", nil
	}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
	team.resM = oneToolWorker("researcher", "lookup", "found: ", func(task string) string {
		return jsonArgs(map[string]string{"invoice": task})
	})
	team.payM = oneToolWorker("payer", "pay", "payer: ", func(task string) string {
		return jsonArgs(map[string]string{"invoice": task})
	})
	researcher, err := agent.NewReAct(team.resM, agent.WithName("researcher"), agent.WithTools(lookup))
	require.NoError(t, err)
	payer, err := agent.NewReAct(team.payM, agent.WithName("payer"), agent.WithTools(approvalTool(team.paid)))
	require.NoError(t, err)
	team.supM = reactive("supervisor", func(msgs []model.Message) model.Message {
		last := msgs[len(msgs)-1]
		if last.Role == model.RoleTool {
			return model.Assistant("done: " + strings.Join(trailingToolTexts(msgs), " | "))
		}
		n := userTurns(msgs)
		inv := lastUser(msgs)
		return model.Assistant("",
			scripted.CallWithID("r"+itoa(n), "researcher", jsonArgs(map[string]string{"task": inv})),
			scripted.CallWithID("p"+itoa(n), "payer", jsonArgs(map[string]string{"task": inv})),
		)
	})
	team.sup, err = agent.NewSupervisor(team.supM, []agent.Worker{
		{Name: "researcher", Description: "Looks invoices up.", Agent: researcher},
		{Name: "payer", Description: "Pays invoices.", Agent: payer},
	}, agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return team
}

// itoa formats a small count.
func itoa(n int) string { return strconv.Itoa(n) }

// A supervisor whose worker's tool waits for a human: the whole team pauses,
// the pause is visible on the thread, a new turn is refused, a new process
// resumes it with the human's answer without redoing finished work, and
// the next turn runs on the same thread.
func TestSupervisorWorkerApprovalAcrossTurnsAndProcesses(t *testing.T) {
	slow(t)
	eachStore(t, func(t *testing.T, saver state.Saver) {
		ctx := context.Background()
		team := newBillingTeam(t, saver)

		_, err := agent.Continue(ctx, team.sup, "billing", "INV-1")
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 1)
		in := ie.Interrupts[0]
		assert.Equal(t, []string{"payer"}, in.Path)
		assert.Equal(t, "billing", ie.Thread)
		assert.Equal(t, []string{"INV-1"}, team.lookups.drain())

		snap, err := team.sup.GetState(ctx, "billing")
		require.NoError(t, err)
		require.Len(t, snap.Interrupts, 1)
		assert.Equal(t, in.ID, snap.Interrupts[0].ID)
		assert.Equal(t, []string{"payer"}, snap.Interrupts[0].Path)
		assert.Equal(t, []string{agent.ToolsNode}, snap.Next)

		_, err = agent.Continue(ctx, team.sup, "billing", "INV-2")
		require.ErrorIs(t, err, agent.ErrPaused)

		// Another process picks the thread up.
		team2 := newBillingTeam(t, saver)
		out, err := team2.sup.Resume(ctx, "billing", graph.WithResume(in.ID, true))
		require.NoError(t, err)
		assert.Equal(t, "done: found: INV-1 is due | payer: paid INV-1", agent.FinalText(out.Messages))
		assert.Equal(t, []string{"INV-1"}, team2.paid.drain())
		assert.Empty(t, team2.lookups.drain(), "the researcher's finished run is not run again")
		assert.Equal(t, 0, team2.resM.Calls(), "the researcher's model is not called again")
		assert.Equal(t, 1, team2.payM.Calls(), "the payer's model answers once, after the tool")
		assert.Equal(t, 1, team2.supM.Calls(), "the supervisor's model answers once")

		// The next turn.
		_, err = agent.Continue(ctx, team2.sup, "billing", "INV-2")
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 1)
		assert.NotEqual(t, in.ID, ie.Interrupts[0].ID)
		out, err = team2.sup.Resume(ctx, "billing", graph.WithResumeValue(false))
		require.NoError(t, err)
		assert.Equal(t, "done: found: INV-2 is due | payer: payment of INV-2 declined", agent.FinalText(out.Messages))
		assert.Empty(t, team2.paid.drain())
		assert.Equal(t, 2, userTurns(out.Messages))
		assert.Equal(t, "payer: paid INV-1", toolMessage(t, out.Messages, "p1").Text())

		snap, err = team2.sup.GetState(ctx, "billing")
		require.NoError(t, err)
		assert.Empty(t, snap.Interrupts)
		assert.Empty(t, snap.Next)
		assert.Equal(t, out.Messages, snap.State.Messages)

		hist, err := team2.sup.History(ctx, "billing", 0)
		require.NoError(t, err)
		require.NotEmpty(t, hist)
		assert.Equal(t, snap.CheckpointID, hist[0].CheckpointID)
		inputs := 0
		for i := 1; i < len(hist); i++ {
			if hist[i-1].Source == "input" {
				inputs++ // each turn is a run of its own, which starts with its input
				continue
			}
			assert.Equal(t, hist[i].CheckpointID, hist[i-1].ParentID, "history %d links to its parent", i)
		}
		assert.Equal(t, 1, inputs, "the second turn's input; the first turn's is the oldest")
		assert.Equal(t, "input", hist[len(hist)-1].Source)
	})
}
