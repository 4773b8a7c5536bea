package modelmw_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/openai/tokens"
	"github.com/trellis-go/trellis/model/scripted"
)

// mixedConversation is a system prompt and turns of prose, code and
// other scripts, whose tokens the estimate gets wrong in both directions,
// each turn with a tool call and its result.
func mixedConversation(turns int) []model.Message {
	texts := []string{
		strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6),
		strings.Repeat("func f(x int) (int, error) { return x*2, nil } // ", 4),
		strings.Repeat("東京の天気は晴れです。明日は雨が降るでしょう。", 5),
		strings.Repeat(`{"id":12345,"tags":["a","b"],"ok":true} `, 5),
	}
	msgs := []model.Message{model.System("You are a careful assistant.")}
	for i := range turns {
		id := fmt.Sprint("call", i)
		msgs = append(msgs,
			model.User(texts[i%len(texts)]),
			model.Assistant("", model.ToolCall{ID: id, Name: "lookup", Arguments: []byte(`{"q":"` + fmt.Sprint(i) + `"}`)}),
			model.ToolMessage(id, "lookup", false, model.TextPart(texts[(i+1)%len(texts)])),
			model.Assistant(texts[(i+2)%len(texts)]))
	}
	return msgs
}

func TestTrimByTheOfflineCounterKeepsTheLongestEndThatFits(t *testing.T) {
	counter, err := tokens.New("gpt-4o")
	require.NoError(t, err)
	count := func(req *model.Request) int {
		n, err := counter.CountTokens(t.Context(), req)
		require.NoError(t, err)
		return n
	}
	tools := []model.ToolDefinition{{Name: "lookup", Description: "Looks a thing up.", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
	msgs := mixedConversation(12)
	whole := count(&model.Request{Messages: msgs, Tools: tools})
	for limit := 50; limit <= whole+50; limit += 97 {
		base := scripted.New(scripted.Reply("ok"))
		m := modelmw.Chain(base, modelmw.Trim(modelmw.TrimPolicy{MaxTokens: limit, Counter: counter}))
		_, err := m.Generate(t.Context(), &model.Request{Model: "gpt-4o", Messages: msgs, Tools: tools})
		require.NoError(t, err)
		sent := base.Requests()[0]
		require.Equal(t, msgs[0].Text(), sent.Messages[0].Text(), "limit %d: the system prompt is kept", limit)
		assert.Equal(t, tools, sent.Tools)
		kept := len(sent.Messages) - 1
		from := len(msgs) - kept
		require.Equal(t, texts(msgs[from:]), texts(sent.Messages[1:]), "limit %d: an end of the conversation", limit)
		require.NotEqual(t, model.RoleTool, msgs[from].Role, "limit %d: a result cut from its call", limit)
		if kept > 1 {
			assert.LessOrEqual(t, count(&sent), limit, "limit %d: over the limit by the counter", limit)
		}
		if from > 1 {
			// One more unit would not fit.
			prev := from - 1
			for msgs[prev].Role == model.RoleTool {
				prev--
			}
			longer := sent
			longer.Messages = append([]model.Message{msgs[0]}, msgs[prev:]...)
			assert.Greater(t, count(&longer), limit, "limit %d: a longer end fits too", limit)
		}
	}
}

// texts returns the messages' texts.
func texts(msgs []model.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}
