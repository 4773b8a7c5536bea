package integration

import (
	"context"
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

// helpDesk is a swarm of a triage agent and a billing agent. Triage hands
// every request to billing, asking the customer to confirm who they are in
// the same turn; billing refunds (after a human approves) and answers.
type helpDesk struct {
	swarm    *graph.Graph[agent.SwarmState]
	triageM  *scripted.Model
	billingM *scripted.Model
	refunds  *counter
}

func newHelpDesk(t *testing.T, saver state.Saver) *helpDesk {
	t.Helper()
	d := &helpDesk{refunds: newCounter()}
	confirm := tool.MustFunc("confirm_identity", "asks the customer to confirm who they are", func(ctx context.Context, _ struct{}) (string, error) {
		who, err := graph.Interrupt[string](ctx, "who are you?")
		if err != nil {
			return "", err
		}
		return "customer is " + who, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	refund := tool.MustFunc("refund", "refunds an invoice once a human approves", func(ctx context.Context, in struct {
		Invoice string `json:"invoice"`
	}) (string, error) {
		ok, err := graph.Interrupt[bool](ctx, "refund "+in.Invoice+"?")
		if err != nil {
			return "", err
		}
		if !ok {
			return "refund of " + in.Invoice + " refused", nil
		}
		d.refunds.add(in.Invoice)
		return "refunded " + in.Invoice, nil
	})
	d.triageM = reactive("triage", func(msgs []model.Message) model.Message {
		if msgs[len(msgs)-1].Role == model.RoleTool {
			return model.Assistant("triage should not speak after handing over")
		}
		n := itoa(userTurns(msgs))
		return model.Assistant("",
			scripted.CallWithID("t"+n+"a", agent.TransferToolName("billing"), `{}`),
			scripted.CallWithID("t"+n+"b", "confirm_identity", `{}`),
		)
	})
	d.billingM = reactive("billing", func(msgs []model.Message) model.Message {
		last := msgs[len(msgs)-1]
		if last.Role == model.RoleTool && strings.HasPrefix(last.ToolCallID, "b") {
			return model.Assistant("billing: " + last.Text())
		}
		n := itoa(userTurns(msgs))
		return model.Assistant("", scripted.CallWithID("b"+n, "refund", jsonArgs(map[string]string{"invoice": lastUser(msgs)})))
	})
	var err error
	d.swarm, err = agent.NewSwarm([]agent.SwarmAgent{
		{Name: "triage", Description: "Greets customers.", Model: d.triageM,
			Options: []agent.Option{agent.WithTools(confirm)}},
		{Name: "billing", Description: "Handles refunds.", Model: d.billingM,
			Options: []agent.Option{agent.WithTools(refund)}},
	}, agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return d
}

// A transfer made in a turn that pauses holds: the resumed run continues
// at the target, which pauses in turn for its own approval; the next user
// turn of the thread, on a new swarm instance over the same store, starts
// at the agent that has control.
func TestSwarmTransferAcrossPausesAndTurns(t *testing.T) {
	eachStore(t, func(t *testing.T, saver state.Saver) {
		ctx := context.Background()
		d := newHelpDesk(t, saver)

		_, err := agent.Continue(ctx, d.swarm, "cust", "INV-7")
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 1)
		assert.Equal(t, "who are you?", ie.Interrupts[0].Payload)
		assert.Equal(t, agent.SwarmToolsNode("triage"), ie.Interrupts[0].Node)
		snap, err := d.swarm.GetState(ctx, "cust")
		require.NoError(t, err)
		assert.Equal(t, "billing", snap.State.Active, "the transfer holds while the turn pauses")

		d2 := newHelpDesk(t, saver)
		_, err = d2.swarm.Resume(ctx, "cust", graph.WithResumeValue("Ada"))
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 1)
		assert.Equal(t, "refund INV-7?", ie.Interrupts[0].Payload)
		assert.Equal(t, agent.SwarmToolsNode("billing"), ie.Interrupts[0].Node)
		assert.Equal(t, 0, d2.triageM.Calls(), "triage does not speak again")

		out, err := d2.swarm.Resume(ctx, "cust", graph.WithResumeValue(true))
		require.NoError(t, err)
		assert.Equal(t, "billing", out.Active)
		assert.Equal(t, "billing: refunded INV-7", agent.FinalText(out.Messages))
		assert.Equal(t, "customer is Ada", toolText(t, out.Messages, "t1b"))
		assert.Equal(t, []string{"INV-7"}, d2.refunds.drain())

		d3 := newHelpDesk(t, saver)
		_, err = agent.Continue(ctx, d3.swarm, "cust", "INV-8")
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, "refund INV-8?", ie.Interrupts[0].Payload, "the next turn starts at billing")
		out, err = d3.swarm.Resume(ctx, "cust", graph.WithResumeValue(false))
		require.NoError(t, err)
		assert.Equal(t, "billing: refund of INV-8 refused", agent.FinalText(out.Messages))
		assert.Equal(t, 0, d3.triageM.Calls())
		assert.Equal(t, "billing", out.Active)
		assert.Empty(t, d3.refunds.drain())
	})
}
