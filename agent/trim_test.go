package agent_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

// orphans lists the tool messages of msgs whose call no earlier assistant
// message of msgs made, and the calls no later tool message answers.
func orphans(msgs []model.Message) []string {
	var out []string
	calls := map[string]bool{}
	answered := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == model.RoleTool {
			if !calls[m.ToolCallID] {
				out = append(out, "result "+m.ToolCallID)
			}
			answered[m.ToolCallID] = true
		}
	}
	for id := range calls {
		if !answered[id] {
			out = append(out, "call "+id)
		}
	}
	return out
}

// TestLongConversationStaysWithinItsTokenLimit runs 200 turns of an agent
// that calls a tool and answers on every turn, with a trimming
// middleware: no request goes over the limit, none holds a tool result
// without its call or a call without its result, and the system prompt is
// always first.
func TestLongConversationStaysWithinItsTokenLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("200 turns take a few seconds")
	}
	const limit = 600
	var (
		over, orphaned []string
		calls          atomic.Int32
	)
	m := scripted.New()
	m.Fallback = ptrTo(scripted.Func(func(req *model.Request) (*model.Response, error) {
		n := calls.Add(1)
		if got := modelmw.EstimateTokens(req); got > limit {
			over = append(over, fmt.Sprintf("call %d: %d tokens", n, got))
		}
		if o := orphans(req.Messages); len(o) > 0 {
			orphaned = append(orphaned, fmt.Sprintf("call %d: %v", n, o))
		}
		if req.Messages[0].Role != model.RoleSystem {
			over = append(over, fmt.Sprintf("call %d: no system prompt first", n))
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleUser {
			return &model.Response{Message: model.Assistant("Let me check.", model.ToolCall{Name: "weather", Arguments: []byte(`{"city":"Oslo"}`)})}, nil
		}
		return &model.Response{Message: model.Assistant("It is sunny in Oslo, as it was the last " + strings.Repeat("few ", 10) + "times.")}, nil
	}))
	g, err := agent.NewReAct(m, agent.WithSystemPrompt("You report the weather."),
		agent.WithTools(weather(new(atomic.Int32), new(atomic.Int32), 1)),
		agent.WithModelMiddleware(modelmw.Trim(modelmw.TrimPolicy{MaxTokens: limit})))
	require.NoError(t, err)
	st := agent.State{}
	for turn := range 200 {
		st.Messages = append(st.Messages, model.User(fmt.Sprintf("Turn %d: how is the weather in Oslo today?", turn)))
		st, err = g.Invoke(t.Context(), st)
		require.NoError(t, err)
	}
	assert.Equal(t, int32(400), calls.Load())
	assert.Empty(t, over)
	assert.Empty(t, orphaned)
	assert.Len(t, st.Messages, 800, "the state keeps the whole conversation")
}

func ptrTo[T any](v T) *T { return &v }
