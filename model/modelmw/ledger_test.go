package modelmw_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

func TestLedgerCountsStreamedAndGeneratedCallsPerModelAndAgent(t *testing.T) {
	u := model.Usage{InputTokens: 100, OutputTokens: 20, CachedInputTokens: 60, ReasoningTokens: 5}
	big := scripted.New(scripted.Reply("a").WithUsage(u), scripted.Reply("b").WithUsage(u))
	big.Name = "big"
	m := modelmw.Chain(big)
	l := modelmw.NewLedger()
	ctx := modelmw.WithLedger(t.Context(), l)
	_, err := m.Generate(modelmw.WithAgent(ctx, "planner"), userReq("x"))
	require.NoError(t, err)
	_, err = textOf(m.Stream(modelmw.WithAgent(ctx, "writer"), userReq("x")))
	require.NoError(t, err)

	per := model.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, CachedInputTokens: 60, ReasoningTokens: 5}
	rep := l.Report()
	assert.Equal(t, 2, rep.Calls)
	assert.Equal(t, per.Add(per), rep.Total)
	assert.Equal(t, map[string]model.Usage{"planner": per, "writer": per}, rep.ByAgent)
	assert.Equal(t, map[string]model.Usage{"big": per.Add(per)}, rep.ByModel)

	prices := modelmw.Prices{"big": {Input: 3, CachedInput: 0.3, Output: 15}}
	// 2 × (40 × 3 + 60 × 0.3 + 20 × 15) per million
	assert.InDelta(t, 2*(40*3+60*0.3+20*15)/1e6, l.Cost(prices), 1e-12)
}
