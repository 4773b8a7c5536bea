package modelmw_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

// longConversation is a system prompt and n turns, each a tool call with
// its result and an answer.
func longConversation(n int) []model.Message {
	msgs := []model.Message{model.System("sys")}
	for i := range n {
		id := "c" + string(rune('a'+i))
		msgs = append(msgs,
			model.User("question "+strings.Repeat("x", 80)),
			model.Assistant("", model.ToolCall{ID: id, Name: "t", Arguments: []byte(`{}`)}),
			model.ToolMessage(id, "t", false, model.TextPart("result "+strings.Repeat("y", 80))),
			model.Assistant("answer "+strings.Repeat("z", 80)))
	}
	return msgs
}

func TestSummarizeSendsTheSummaryInPlaceOfOlderTurns(t *testing.T) {
	summarizer := scripted.New(scripted.Reply("older turns"))
	base := scripted.New(scripted.Reply("ok"))
	m := modelmw.Chain(base, modelmw.Summarize(summarizer, modelmw.SummaryPolicy{MaxTokens: 200, KeepTokens: 80}))
	var stored []model.Message
	ctx := modelmw.WithHistory(t.Context(), func(msg model.Message) { stored = append(stored, msg) })
	msgs := longConversation(6)
	_, err := m.Generate(ctx, &model.Request{Messages: msgs})
	require.NoError(t, err)

	require.Equal(t, 1, summarizer.Calls())
	sent := base.Requests()[0].Messages
	assert.Equal(t, "sys", sent[0].Text(), "the system prompt stays first")
	assert.Equal(t, "true", sent[1].Metadata[modelmw.MetaSummary])
	assert.Contains(t, sent[1].Text(), "older turns")
	assert.Equal(t, msgs[len(msgs)-1].Text(), sent[len(sent)-1].Text())
	checkToolPairs(t, sent)

	require.Len(t, stored, 1, "the summary is handed to the history sink")
	covers := stored[0].Metadata[modelmw.MetaSummaryCovers]
	assert.NotEmpty(t, covers)

	// The next call, with the summary stored after the conversation, is
	// sent it in place of what it covers, without summarizing again.
	reply := model.Assistant("ok")
	next := append(append(msgs, stored[0], reply), model.User("more"))
	base2 := scripted.New(scripted.Reply("fine"))
	m2 := modelmw.Chain(base2, modelmw.Summarize(scripted.New(), modelmw.SummaryPolicy{MaxTokens: 200, KeepTokens: 80}))
	_, err = m2.Generate(t.Context(), &model.Request{Messages: next})
	require.NoError(t, err)
	sent2 := base2.Requests()[0].Messages
	assert.Equal(t, texts(sent), texts(sent2[:len(sent)]), "the same view as the call that made the summary")
	assert.Equal(t, []string{"ok", "more"}, texts(sent2[len(sent):]))
}

func TestSummarizeLeavesAShortConversationAlone(t *testing.T) {
	summarizer := scripted.New()
	base := scripted.New(scripted.Reply("ok"))
	m := modelmw.Chain(base, modelmw.Summarize(summarizer, modelmw.SummaryPolicy{MaxTokens: 10_000}))
	req := &model.Request{Messages: longConversation(2)}
	_, err := m.Generate(t.Context(), req)
	require.NoError(t, err)
	assert.Zero(t, summarizer.Calls())
	assert.Equal(t, texts(req.Messages), texts(base.Requests()[0].Messages))
}

func TestSummarizeFailsTheCallWhenTheSummaryFails(t *testing.T) {
	summarizer := scripted.New(scripted.Fail(model.ErrOverloaded))
	base := scripted.New(scripted.Reply("ok"))
	m := modelmw.Chain(base, modelmw.Summarize(summarizer, modelmw.SummaryPolicy{MaxTokens: 100}))
	_, err := m.Generate(context.Background(), &model.Request{Messages: longConversation(4)})
	assert.ErrorIs(t, err, model.ErrOverloaded)
	assert.Zero(t, base.Calls())
}

// checkToolPairs fails unless every tool message follows the assistant
// message that called it.
func checkToolPairs(t *testing.T, msgs []model.Message) {
	t.Helper()
	open := map[string]bool{}
	for i, msg := range msgs {
		switch msg.Role {
		case model.RoleAssistant:
			open = map[string]bool{}
			for _, c := range msg.ToolCalls {
				open[c.ID] = true
			}
		case model.RoleTool:
			assert.True(t, open[msg.ToolCallID], "message %d: tool result %s without its call before it", i, msg.ToolCallID)
		}
	}
}

func TestSummarizeGoesByTheCounter(t *testing.T) {
	// By the estimate the conversation is far under 500 tokens; by the
	// counter (100 a message) it is 900, and the end that keeps 300 is
	// the last turn's call, result and answer.
	msgs := conversation()
	require.Less(t, modelmw.EstimateTokens(&model.Request{Messages: msgs}), 500)
	summarizer := scripted.New(scripted.Reply("older turns"))
	base := scripted.New(scripted.Reply("ok"))
	c := &perMessage{}
	m := modelmw.Chain(base, modelmw.Summarize(summarizer, modelmw.SummaryPolicy{MaxTokens: 500, KeepTokens: 300, Counter: c}))
	_, err := m.Generate(t.Context(), &model.Request{Messages: msgs})
	require.NoError(t, err)
	require.Equal(t, 1, summarizer.Calls())
	sent := base.Requests()[0].Messages
	assert.Equal(t, "sys", sent[0].Text())
	assert.Equal(t, "true", sent[1].Metadata[modelmw.MetaSummary])
	assert.Equal(t, []string{"", "result b", "answer two"}, texts(sent[2:]))
	checkToolPairs(t, sent)

	// Under the limit by the counter, nothing is summarized.
	summarizer = scripted.New()
	m = modelmw.Chain(scripted.New(scripted.Reply("ok")), modelmw.Summarize(summarizer, modelmw.SummaryPolicy{MaxTokens: 900, Counter: &perMessage{}}))
	_, err = m.Generate(t.Context(), &model.Request{Messages: msgs})
	require.NoError(t, err)
	assert.Zero(t, summarizer.Calls())
}

func TestSummarizeFailsTheCallWhenTheCounterFails(t *testing.T) {
	errCount := errors.New("count endpoint down")
	for _, failAt := range []int{1, 2} {
		calls := 0
		c := modelmw.TokenCounterFunc(func(context.Context, *model.Request) (int, error) {
			calls++
			if calls >= failAt {
				return 0, errCount
			}
			return 10_000, nil
		})
		summarizer := scripted.New(scripted.Reply("older turns"))
		base := scripted.New(scripted.Reply("ok"))
		m := modelmw.Chain(base, modelmw.Summarize(summarizer, modelmw.SummaryPolicy{MaxTokens: 500, Counter: c}))
		_, err := m.Generate(t.Context(), &model.Request{Messages: conversation()})
		require.ErrorIs(t, err, errCount, "failing at count %d", failAt)
		assert.Contains(t, err.Error(), "summarize")
		assert.Zero(t, base.Calls())
		assert.Zero(t, summarizer.Calls())
	}
}
