package agent_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/sqlite"
	"github.com/trellis-go/trellis/tool"
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

// summarizingAgent compiles a ReAct agent with a lookup tool whose model
// calls go through the summarization middleware, over a thread store in
// file: each call of the function is a process of its own.
func summarizingAgent(t *testing.T, file string, summarizer, m model.Model) *graph.Graph[agent.State] {
	t.Helper()
	saver, err := sqlite.Open(file)
	require.NoError(t, err)
	t.Cleanup(func() { _ = saver.Close() })
	lookup := tool.MustFunc("lookup", "Looks a word up.", func(_ context.Context, in struct {
		Word string `json:"word"`
	}) (string, error) {
		return "the meaning of " + in.Word, nil
	})
	g, err := agent.NewReAct(m,
		agent.WithSystemPrompt("You explain words."),
		agent.WithTools(lookup),
		agent.WithSummarization(summarizer, modelmw.SummaryPolicy{MaxTokens: 150, KeepTokens: 60}),
		agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// checkPairs fails unless every tool message of every request follows the
// assistant message that called it, and every request starts with the
// system prompt.
func checkPairs(t *testing.T, reqs []model.Request) {
	t.Helper()
	for i, r := range reqs {
		require.NotEmpty(t, r.Messages)
		assert.Equal(t, "You explain words.", r.Messages[0].Text(), "request %d keeps the system prompt first", i)
		open := map[string]bool{}
		for _, msg := range r.Messages {
			switch {
			case msg.Role == model.RoleAssistant:
				open = map[string]bool{}
				for _, c := range msg.ToolCalls {
					open[c.ID] = true
				}
			case msg.Role == model.RoleTool:
				assert.True(t, open[msg.ToolCallID], "request %d: tool result %s follows its call", i, msg.ToolCallID)
			}
		}
	}
}

func TestSummarizationMiddlewareStoresTheSummaryInTheThreadAndSurvivesARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "threads.db")
	long := strings.Repeat("Words carry history in their shapes. ", 3)
	turn := func(word string) []scripted.Step {
		return []scripted.Step{
			scripted.CallTools(scripted.Call("lookup", `{"word":"`+word+`"}`)),
			scripted.Reply(word + ": " + long),
		}
	}
	var steps []scripted.Step
	for _, w := range []string{"ephemeral", "laconic", "sonder"} {
		steps = append(steps, turn(w)...)
	}
	summarizer := scripted.New()
	summary := scripted.Reply("The user asked what some words mean.")
	summarizer.Fallback = &summary
	m := scripted.New(steps...)
	g := summarizingAgent(t, file, summarizer, m)
	ctx := t.Context()
	for _, w := range []string{"ephemeral", "laconic", "sonder"} {
		_, err := agent.Continue[agent.State](ctx, g, "words", "What does "+w+" mean? "+long)
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, summarizer.Calls(), 1, "the conversation outgrew its limit")
	calls := summarizer.Calls()
	assert.Less(t, calls, len(m.Requests()), "a summary is computed once, not on every call")
	for _, r := range summarizer.Requests()[1:] {
		assert.Contains(t, r.Messages[1].Text(), "[earlier summary] The user asked", "a later summary folds the stored one in")
	}
	checkPairs(t, m.Requests())

	// A new process over the same store: the summary is in the thread.
	summarizer2 := scripted.New()
	m2 := scripted.New(scripted.Reply("Short answer."))
	g2 := summarizingAgent(t, file, summarizer2, m2)
	snap, err := g2.GetState(ctx, "words")
	require.NoError(t, err)
	var stored []model.Message
	for _, msg := range snap.State.Messages {
		if msg.Metadata[modelmw.MetaSummary] != "" {
			stored = append(stored, msg)
		}
	}
	require.Len(t, stored, calls, "every summary is stored in the thread")
	latest := stored[len(stored)-1]
	assert.NotEmpty(t, latest.ID)
	assert.NotEmpty(t, latest.Metadata[modelmw.MetaSummaryCovers])
	assert.Equal(t, "What does ephemeral mean? "+long, snap.State.Messages[0].Text(), "the state keeps the whole conversation")

	out, err := agent.Continue[agent.State](ctx, g2, "words", "Thanks!")
	require.NoError(t, err)
	assert.Equal(t, "Short answer.", agent.FinalText(out.Messages))
	assert.Zero(t, summarizer2.Calls(), "the stored summary is used, not computed again")
	sent := m2.Requests()[0].Messages
	assert.Equal(t, latest.Text(), sent[1].Text(), "the model sees the stored summary in place of the old turns")
	for _, msg := range sent[2:] {
		assert.NotContains(t, msg.Text(), "What does ephemeral mean", "covered messages are not sent")
	}
	assert.Equal(t, "Thanks!", sent[len(sent)-1].Text())
	checkPairs(t, m2.Requests())
}
