package modelmw_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

func conversation() []model.Message {
	call := func(id string) model.Message {
		return model.Assistant("", model.ToolCall{ID: id, Name: "t", Arguments: []byte(`{}`)})
	}
	res := func(id string) model.Message { return model.ToolMessage(id, "t", false, model.TextPart("result "+id)) }
	return []model.Message{
		model.System("sys"),
		model.User("one"), call("a"), res("a"), model.Assistant("answer one"),
		model.User("two"), call("b"), res("b"), model.Assistant("answer two"),
	}
}

func TestTrimMessagesKeepsCallsWithTheirResults(t *testing.T) {
	msgs := conversation()
	for limit := 1; limit <= len(msgs); limit++ {
		out := modelmw.TrimMessages(msgs, modelmw.TrimPolicy{MaxMessages: limit})
		require.Equal(t, model.RoleSystem, out[0].Role)
		for i, m := range out {
			if m.Role == model.RoleTool {
				require.Greater(t, i, 1, "limit %d: a result with no call before it", limit)
				require.True(t, out[i-1].HasToolCalls(), "limit %d: result %d separated from its call", limit, i)
			}
			if m.HasToolCalls() {
				require.Less(t, i+1, len(out), "limit %d: a call without its result", limit)
				require.Equal(t, model.RoleTool, out[i+1].Role)
			}
		}
	}
	out := modelmw.TrimMessages(msgs, modelmw.TrimPolicy{MaxMessages: 4})
	assert.Equal(t, []string{"sys", "two", "", "result b", "answer two"}, texts(out))
	out = modelmw.TrimMessages(msgs, modelmw.TrimPolicy{MaxMessages: 3})
	assert.Equal(t, []string{"sys", "", "result b", "answer two"}, texts(out), "a call and its result go together")
	out = modelmw.TrimMessages(msgs, modelmw.TrimPolicy{MaxMessages: 1})
	assert.Equal(t, []string{"sys", "answer two"}, texts(out))
}

func TestTrimMessagesDropsAResultWhoseCallIsGone(t *testing.T) {
	msgs := []model.Message{model.ToolMessage("x", "t", false, model.TextPart("stray")), model.User("hi")}
	assert.Equal(t, []string{"hi"}, texts(modelmw.TrimMessages(msgs, modelmw.TrimPolicy{MaxMessages: 5})))
}

func TestTrimMiddlewareSendsAConversationWithinTheTokenLimit(t *testing.T) {
	base := scripted.New(scripted.Reply("ok"))
	long := []model.Message{model.System("sys")}
	for range 50 {
		long = append(long, model.User(strings.Repeat("words ", 20)), model.Assistant(strings.Repeat("reply ", 20)))
	}
	long = append(long, model.User("last question"))
	m := modelmw.Chain(base, modelmw.Trim(modelmw.TrimPolicy{MaxTokens: 200}))
	_, err := m.Generate(t.Context(), &model.Request{Messages: long})
	require.NoError(t, err)
	sent := base.Requests()[0]
	assert.LessOrEqual(t, modelmw.EstimateTokens(&sent), 200)
	assert.Equal(t, "sys", sent.Messages[0].Text())
	assert.Equal(t, "last question", sent.Messages[len(sent.Messages)-1].Text())
	assert.Less(t, len(sent.Messages), len(long))
}

func texts(msgs []model.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}
