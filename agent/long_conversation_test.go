package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// sentLog records every request a model is sent, by the agent that sent
// it.
type sentLog struct {
	mu   sync.Mutex
	reqs []sentRequest
}

type sentRequest struct {
	agent string
	req   model.Request
}

// record is a middleware, innermost in a chain, that logs what the
// model is sent.
func (l *sentLog) record(agentName string) modelmw.Middleware {
	return modelmw.Before(func(_ context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		r := *req
		r.Messages = append([]model.Message(nil), req.Messages...)
		l.reqs = append(l.reqs, sentRequest{agent: agentName, req: r})
		return req, nil, nil
	})
}

// reactive returns a scripted model that, asked by a user (or a
// supervisor's task), calls call(n) for the n-th task, and answered by a
// tool, replies with prefix and the answer.
func reactive(name string, call func(n int) model.ToolCall, prefix string) *scripted.Model {
	var (
		mu sync.Mutex
		n  int
	)
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			return &model.Response{Message: model.Assistant(prefix + last.Text()),
				Usage: model.Usage{InputTokens: modelmw.EstimateTokens(req), OutputTokens: 20}}, nil
		}
		mu.Lock()
		n++
		c := call(n)
		mu.Unlock()
		return &model.Response{Message: model.Assistant("", c)}, nil
	})
	m := scripted.New()
	m.Name = name
	m.Fallback = &step
	return m
}

func TestSupervisorConversationOf200TurnsStaysWithinTheTokenLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("200 turns of a supervisor and its workers take seconds")
	}
	const limit = 1200
	log := &sentLog{}
	summary := scripted.Reply("Earlier: the user asked for facts and drafts, and the workers delivered them.")
	summarizer := scripted.New()
	summarizer.Fallback = &summary
	keep := func(name string) agent.Option {
		return agent.WithModelMiddleware(
			modelmw.Summarize(summarizer, modelmw.SummaryPolicy{MaxTokens: limit * 3 / 4, KeepTokens: limit / 3}),
			modelmw.Trim(modelmw.TrimPolicy{MaxTokens: limit}),
			log.record(name))
	}
	lookup := tool.MustFunc("lookup", "Looks a fact up.", func(_ context.Context, in struct {
		Topic string `json:"topic"`
	}) (string, error) {
		return "Fact about " + in.Topic + ": " + strings.Repeat("details ", 15), nil
	})
	worker := func(name string) agent.Worker {
		m := reactive(name, func(n int) model.ToolCall {
			return scripted.Call("lookup", fmt.Sprintf(`{"topic":"topic %d"}`, n))
		}, name+" found: ")
		return agent.Worker{Name: name, Description: "Finds facts about a topic.",
			Agent: newWorker(t, name, m, agent.WithTools(lookup), keep(name))}
	}
	sup := reactive("sup", func(n int) model.ToolCall {
		name := []string{"researcher", "analyst"}[n%2]
		return scripted.Call(name, fmt.Sprintf(`{"task":"Tell me about topic %d."}`, n))
	}, "Here is what I learned: ")
	g, err := agent.NewSupervisor(sup, []agent.Worker{worker("researcher"), worker("analyst")},
		keep(agent.SupervisorName), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)

	ctx := t.Context()
	start := time.Now()
	for i := range 200 {
		out, err := agent.Continue[agent.State](ctx, g, "long", fmt.Sprintf("Question %d: %s", i, strings.Repeat("please explain ", 10)))
		require.NoError(t, err, "turn %d", i)
		require.Contains(t, agent.FinalText(out.Messages), "Here is what I learned", "turn %d", i)
	}
	t.Logf("200 turns in %v, %d model requests, %d summaries", time.Since(start), len(log.reqs), summarizer.Calls())

	require.Greater(t, summarizer.Calls(), 0, "the conversation outgrew its limit")
	for i, s := range log.reqs {
		n := modelmw.EstimateTokens(&s.req)
		require.LessOrEqual(t, n, limit, "request %d of %s: %d tokens", i, s.agent, n)
		open := map[string]bool{}
		for j, msg := range s.req.Messages {
			switch msg.Role {
			case model.RoleAssistant:
				open = map[string]bool{}
				for _, c := range msg.ToolCalls {
					open[c.ID] = true
				}
			case model.RoleTool:
				require.True(t, open[msg.ToolCallID], "request %d of %s: tool result %d (%s) does not follow its call", i, s.agent, j, msg.ToolCallID)
			}
		}
		require.Equal(t, model.RoleSystem, s.req.Messages[0].Role, "request %d of %s keeps its system prompt", i, s.agent)
	}
}
