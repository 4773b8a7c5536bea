package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// Two tools of one parallel batch each ask a human. Each interrupt is
// answered by ID; each tool must receive the answer addressed to the
// interrupt it raised, whichever order the tools reach graph.Interrupt in
// when the batch runs again.
func TestParallelToolInterruptsGetTheirOwnAnswers(t *testing.T) {
	var phase atomic.Int32
	aFirst, bFirst := make(chan struct{}), make(chan struct{})
	ask := func(name string) tool.Tool {
		return tool.MustFunc("approve_"+name, "asks a human about "+name, func(ctx context.Context, _ struct{}) (string, error) {
			// Run 1: a asks before b. Run 2: b asks before a.
			switch {
			case phase.Load() == 1 && name == "b":
				<-aFirst
			case phase.Load() == 2 && name == "a":
				<-bFirst
			}
			v, err := graph.Interrupt[string](ctx, "approve "+name+"?")
			switch {
			case phase.Load() == 1 && name == "a":
				close(aFirst)
			case phase.Load() == 2 && name == "b":
				close(bFirst)
			}
			if err != nil {
				return "", err
			}
			return name + " got " + v, nil
		}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	}
	m := scripted.New(scripted.CallTools(
		scripted.CallWithID("ca", "approve_a", `{}`),
		scripted.CallWithID("cb", "approve_b", `{}`),
	), scripted.Reply("ok"))
	g, err := agent.NewReAct(m, agent.WithTools(ask("a"), ask("b")), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()

	phase.Store(1)
	_, err = g.Invoke(ctx, agent.Ask("go"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 2)
	var opts []graph.RunOption
	for _, in := range ie.Interrupts {
		switch in.Payload {
		case "approve a?":
			opts = append(opts, graph.WithResume(in.ID, "answer for a"))
		case "approve b?":
			opts = append(opts, graph.WithResume(in.ID, "answer for b"))
		}
	}
	require.Len(t, opts, 2)

	phase.Store(2)
	out, err := g.Resume(ctx, "t", opts...)
	require.NoError(t, err)
	assert.Equal(t, "a got answer for a", toolText(t, out.Messages, "ca"))
	assert.Equal(t, "b got answer for b", toolText(t, out.Messages, "cb"))
}

func toolText(t *testing.T, msgs []model.Message, id string) string {
	t.Helper()
	return toolMessage(t, msgs, id).Text()
}

// Two calls of one worker in a batch both pause (each handoff's agent asks
// a human): the interrupts name the worker, are answered by ID in one
// resume, and each agent receives the answer addressed to it.
func TestParallelWorkerPausesAreAnsweredByID(t *testing.T) {
	slow(t)
	eachStore(t, func(t *testing.T, saver state.Saver) {
		ctx := context.Background()
		paid := newCounter()
		pm := oneToolWorker("payer", "pay", "payer: ", func(task string) string {
			return jsonArgs(map[string]string{"invoice": task})
		})
		payer, err := agent.NewReAct(pm, agent.WithName("payer"), agent.WithTools(approvalTool(paid)))
		require.NoError(t, err)
		sm := reactive("boss", func(msgs []model.Message) model.Message {
			if msgs[len(msgs)-1].Role == model.RoleTool {
				return model.Assistant("boss: " + strings.Join(trailingToolTexts(msgs), " | "))
			}
			return model.Assistant("",
				scripted.CallWithID("p1", "payer", `{"task":"INV-1"}`),
				scripted.CallWithID("p2", "payer", `{"task":"INV-2"}`))
		})
		sup, err := agent.NewSupervisor(sm, []agent.Worker{{Name: "payer", Description: "Pays invoices.", Agent: payer}},
			agent.WithCheckpointer(saver))
		require.NoError(t, err)

		_, err = sup.Invoke(ctx, agent.Ask("pay both"), graph.WithThread("two"))
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 2)
		var opts []graph.RunOption
		for _, in := range ie.Interrupts {
			assert.Equal(t, []string{"payer"}, in.Path)
			switch in.Payload {
			case "approve payment of INV-1?":
				opts = append(opts, graph.WithResume(in.ID, true))
			case "approve payment of INV-2?":
				opts = append(opts, graph.WithResume(in.ID, false))
			}
		}
		require.Len(t, opts, 2)
		_, err = sup.Resume(ctx, "two", graph.WithResumeValue(true))
		require.Error(t, err, "one value cannot answer two interrupts")
		assert.NotErrorIs(t, err, graph.ErrInterrupted)

		out, err := sup.Resume(ctx, "two", opts...)
		require.NoError(t, err)
		assert.Equal(t, "payer: paid INV-1", toolText(t, out.Messages, "p1"))
		assert.Equal(t, "payer: payment of INV-2 declined", toolText(t, out.Messages, "p2"))
		assert.Equal(t, []string{"INV-1"}, paid.drain())
	})
}
