package modelmw_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"
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

// perMessage is a counter far from the estimate: 100 tokens a message
// and 100 a tool definition, whatever their text. calls counts its calls.
type perMessage struct{ calls atomic.Int64 }

func (c *perMessage) CountTokens(_ context.Context, req *model.Request) (int, error) {
	c.calls.Add(1)
	return 100 * (len(req.Messages) + len(req.Tools)), nil
}

// longestFit is the messages TrimRequest is to keep by c: the system
// messages and the longest end, from a unit start, that fits maxTokens by
// c, or the last unit; found by trying every start from the first.
func longestFit(t *testing.T, c modelmw.TokenCounter, req *model.Request, maxTokens int) []model.Message {
	t.Helper()
	msgs := req.Messages
	head := 0
	for head < len(msgs) && msgs[head].Role == model.RoleSystem {
		head++
	}
	last := -1
	for from := head; from < len(msgs); from++ {
		if msgs[from].Role == model.RoleTool {
			continue
		}
		last = from
		r := *req
		r.Messages = append(append([]model.Message{}, msgs[:head]...), msgs[from:]...)
		n, err := c.CountTokens(t.Context(), &r)
		require.NoError(t, err)
		if n <= maxTokens {
			return r.Messages
		}
	}
	return append(append([]model.Message{}, msgs[:head]...), msgs[last:]...)
}

func TestTrimRequestKeepsTheUnitsThatFitByTheCounter(t *testing.T) {
	msgs := conversation()
	tools := []model.ToolDefinition{{Name: "t", Description: "a tool"}}
	for _, withTools := range []bool{false, true} {
		for limit := 0; limit <= 1000; limit += 50 {
			req := &model.Request{Messages: msgs}
			if withTools {
				req.Tools = tools
			}
			c := &perMessage{}
			out, err := modelmw.TrimRequest(t.Context(), req, modelmw.TrimPolicy{MaxTokens: max(limit, 1), Counter: c})
			require.NoError(t, err)
			want := longestFit(t, &perMessage{}, req, max(limit, 1))
			require.Equal(t, texts(want), texts(out.Messages), "limit %d, tools %v", limit, withTools)
			assert.Equal(t, req.Tools, out.Tools, "the tools are sent as they are")
			assert.Equal(t, "sys", out.Messages[0].Text(), "the system prompt is kept")
			checkToolPairs(t, out.Messages)
		}
	}

	// By the estimate this short conversation fits 450 tokens whole; by
	// the counter only the last turn's call, result and answer do.
	req := &model.Request{Messages: msgs}
	require.Less(t, modelmw.EstimateTokens(req), 450)
	out, err := modelmw.TrimRequest(t.Context(), req, modelmw.TrimPolicy{MaxTokens: 450, Counter: &perMessage{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"sys", "", "result b", "answer two"}, texts(out.Messages))
	// One message less and the call would be cut from its result: the
	// whole unit goes.
	out, err = modelmw.TrimRequest(t.Context(), req, modelmw.TrimPolicy{MaxTokens: 350, Counter: &perMessage{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"sys", "answer two"}, texts(out.Messages))
}

func TestTrimRequestWithACounterPassesARequestThatFitsAfterOneCount(t *testing.T) {
	req := &model.Request{Messages: conversation()}
	c := &perMessage{}
	out, err := modelmw.TrimRequest(t.Context(), req, modelmw.TrimPolicy{MaxTokens: 100 * len(req.Messages), Counter: c})
	require.NoError(t, err)
	assert.Same(t, req, out, "a request that fits is passed as it is")
	assert.EqualValues(t, 1, c.calls.Load())
}

func TestTrimRequestCountsLogarithmicallyOften(t *testing.T) {
	for _, turns := range []int{1, 2, 3, 10, 100, 300} {
		var msgs []model.Message
		msgs = append(msgs, model.System("sys"))
		for i := range turns {
			id := fmt.Sprint("c", i)
			msgs = append(msgs,
				model.User(fmt.Sprint("question ", i)),
				model.Assistant("", model.ToolCall{ID: id, Name: "t", Arguments: []byte(`{}`)}),
				model.ToolMessage(id, "t", false, model.TextPart("result")))
		}
		units := 2 * turns
		req := &model.Request{Messages: msgs}
		for _, limit := range []int{1, 300, 100 * len(msgs) / 2, 100*len(msgs) - 100} {
			c := &perMessage{}
			out, err := modelmw.TrimRequest(t.Context(), req, modelmw.TrimPolicy{MaxTokens: limit, Counter: c})
			require.NoError(t, err)
			require.Equal(t, texts(longestFit(t, &perMessage{}, req, limit)), texts(out.Messages), "%d turns, limit %d", turns, limit)
			// One count of the whole request, then a binary search over
			// the units but the last.
			assert.LessOrEqual(t, c.calls.Load(), int64(1+bits.Len(uint(units-1))), "%d turns, limit %d", turns, limit)
		}
	}
}

func TestTrimRequestWithACounterHonoursMaxMessages(t *testing.T) {
	req := &model.Request{Messages: conversation()}
	for limit := 1; limit <= len(req.Messages); limit++ {
		byCount, err := modelmw.TrimRequest(t.Context(), req, modelmw.TrimPolicy{MaxMessages: limit, MaxTokens: 100_000, Counter: &perMessage{}})
		require.NoError(t, err)
		assert.Equal(t, texts(modelmw.TrimMessages(req.Messages, modelmw.TrimPolicy{MaxMessages: limit})), texts(byCount.Messages), "limit %d", limit)
	}
}

func TestTrimFailsTheCallWhenTheCounterFails(t *testing.T) {
	errCount := errors.New("count endpoint down")
	failing := modelmw.TokenCounterFunc(func(context.Context, *model.Request) (int, error) { return 0, errCount })
	base := scripted.New(scripted.Reply("ok"))
	m := modelmw.Chain(base, modelmw.Trim(modelmw.TrimPolicy{MaxTokens: 100, Counter: failing}))
	_, err := m.Generate(t.Context(), &model.Request{Messages: conversation()})
	require.ErrorIs(t, err, errCount)
	assert.Contains(t, err.Error(), "trim")
	assert.Zero(t, base.Calls(), "nothing is sent")

	// A failure in the search, after the first count, too.
	calls := 0
	late := modelmw.TokenCounterFunc(func(context.Context, *model.Request) (int, error) {
		calls++
		if calls > 1 {
			return 0, errCount
		}
		return 1000, nil
	})
	_, err = modelmw.TrimRequest(t.Context(), &model.Request{Messages: conversation()}, modelmw.TrimPolicy{MaxTokens: 100, Counter: late})
	require.ErrorIs(t, err, errCount)
}

func TestTrimMiddlewareSendsWhatTheCounterSaysFits(t *testing.T) {
	base := scripted.New(scripted.Reply("ok"))
	m := modelmw.Chain(base, modelmw.Trim(modelmw.TrimPolicy{MaxTokens: 450, Counter: &perMessage{}}))
	_, err := m.Generate(t.Context(), &model.Request{Messages: conversation()})
	require.NoError(t, err)
	assert.Equal(t, []string{"sys", "", "result b", "answer two"}, texts(base.Requests()[0].Messages))
}
