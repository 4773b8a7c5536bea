package agent_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/sqlite"
)

// summarizing builds a graph that summarizes the conversation before its
// model answers, over a thread store in file.
func summarizing(t *testing.T, file string, summarizer, m model.Model) *graph.Graph[agent.State] {
	t.Helper()
	saver, err := sqlite.Open(file)
	require.NoError(t, err)
	t.Cleanup(func() { _ = saver.Close() })
	g, err := graph.New[agent.State]().
		AddNode("summarize", nodes.Summarize[agent.State](summarizer, nodes.SummaryPolicy{MaxTokens: 120, KeepTokens: 40})).
		AddNode("llm", nodes.LLM[agent.State](m, nodes.WithSystemPrompt("You chat."))).
		AddEdge(graph.START, "summarize").
		AddEdge("summarize", "llm").
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func TestSummaryIsStoredInTheThreadAndSurvivesARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "threads.db")
	summarizer := scripted.New(scripted.Reply("The user is planning a trip to Oslo in May."))
	long := strings.Repeat("I would like to plan my trip carefully. ", 4)
	m := scripted.New(scripted.Reply(long), scripted.Reply(long), scripted.Reply(long))
	g := summarizing(t, file, summarizer, m)
	ctx := t.Context()
	for _, text := range []string{"I go to Oslo in May. " + long, "What should I pack? " + long} {
		_, err := agent.Continue[agent.State](ctx, g, "trip", text)
		require.NoError(t, err)
	}
	require.Equal(t, 1, summarizer.Calls(), "the conversation outgrew its limit once")

	// A new process over the same store: the summary is in the thread.
	summarizer2 := scripted.New(scripted.Reply("Trip to Oslo in May; the user asked what to pack."))
	m2 := scripted.New(scripted.Reply("Warm layers."))
	g2 := summarizing(t, file, summarizer2, m2)
	snap, err := g2.GetState(ctx, "trip")
	require.NoError(t, err)
	first := snap.State.Messages[0]
	assert.Equal(t, "true", first.Metadata[nodes.MetaSummary])
	assert.Contains(t, first.Text(), "trip to Oslo in May")

	out, err := agent.Continue[agent.State](ctx, g2, "trip", "And shoes?")
	require.NoError(t, err)
	assert.Equal(t, "Warm layers.", agent.FinalText(out.Messages))
	// The conversation outgrew its limit again: the new summary folds the
	// stored one in rather than reading the old turns, which are gone.
	require.Equal(t, 1, summarizer2.Calls())
	asked := summarizer2.Requests()[0].Messages[1].Text()
	assert.Contains(t, asked, "[earlier summary]")
	assert.NotContains(t, asked, "I go to Oslo in May")
	sent := m2.Requests()[0].Messages
	assert.Equal(t, model.RoleSystem, sent[0].Role)
	assert.Contains(t, sent[1].Text(), "the user asked what to pack", "the model sees the summary in place of the old turns")
	assert.Equal(t, "And shoes?", sent[len(sent)-1].Text())
}
