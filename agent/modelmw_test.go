package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
)

func TestAgentModelCallsGoThroughItsMiddlewareAndIntoTheRunsLedger(t *testing.T) {
	m := scripted.New(scripted.Reply("hello").WithUsage(model.Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: 4}))
	var seen []string
	g, err := agent.NewReAct(m, agent.WithName("greeter"), agent.WithModelMiddleware(
		modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
			seen = append(seen, modelmw.Agent(ctx))
			return req, nil, nil
		})))
	require.NoError(t, err)
	ledger := modelmw.NewLedger()
	out, err := g.Invoke(modelmw.WithLedger(t.Context(), ledger), agent.Ask("hi"))
	require.NoError(t, err)
	assert.Equal(t, "hello", agent.FinalText(out.Messages))
	assert.Equal(t, []string{"greeter"}, seen)
	rep := ledger.Report()
	want := model.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12, CachedInputTokens: 4}
	assert.Equal(t, 1, rep.Calls)
	assert.Equal(t, want, rep.Total)
	assert.Equal(t, map[string]model.Usage{"greeter": want}, rep.ByAgent)
	assert.Equal(t, map[string]model.Usage{"scripted": want}, rep.ByModel)
}

func TestAgentBudgetStopsTheRunBeforeTheCallThatWouldExceedIt(t *testing.T) {
	u := model.Usage{InputTokens: 300, OutputTokens: 50}
	m := scripted.New(
		scripted.CallTools(scripted.Call("weather", `{"city":"Oslo"}`)).WithUsage(u),
		scripted.Reply("done").WithUsage(u),
	)
	g, err := agent.NewReAct(m, agent.WithTools(weather(new(atomic.Int32), new(atomic.Int32), 1)),
		agent.WithModelMiddleware(modelmw.Budget(modelmw.BudgetPolicy{MaxTokens: 360})))
	require.NoError(t, err)
	ledger := modelmw.NewLedger()
	_, err = g.Invoke(modelmw.WithLedger(t.Context(), ledger), agent.Ask("hi"))
	var be *modelmw.BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 350, be.Spent.TotalTokens)
	assert.Equal(t, 1, m.Calls(), "the second call was not made")
	assert.Equal(t, 350, ledger.Total().TotalTokens)
}

func TestAgentOutputGuardrailTripsMidStreamAndStopsTheRun(t *testing.T) {
	noCode := modelmw.GuardrailFunc("no-code", func(_ context.Context, text string) (string, error) {
		if strings.Contains(text, "rm -rf") {
			return "a destructive command", nil
		}
		return "", nil
	})
	noCode.Streaming = true
	m := scripted.New(scripted.Reply("run rm -rf / to clean up, then reboot"))
	g, err := agent.NewReAct(m, agent.WithOutputGuardrails(noCode), agent.WithLLMOptions(nodes.WithStreaming(true)))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.Ask("how do I free disk space?"))
	var trip *modelmw.TripwireError
	require.ErrorAs(t, err, &trip)
	assert.Equal(t, "no-code", trip.Guardrail)
	assert.Equal(t, modelmw.StageOutput, trip.Stage)
}

func TestAgentInputGuardrailStopsTheRunBeforeTheModel(t *testing.T) {
	m := scripted.New(scripted.Reply("never"))
	g, err := agent.NewReAct(m, agent.WithInputGuardrails(modelmw.PIIGuardrail()))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.Ask("my card is 4111 1111 1111 1111"))
	assert.ErrorIs(t, err, modelmw.ErrTripwire)
	assert.Zero(t, m.Calls())
}
