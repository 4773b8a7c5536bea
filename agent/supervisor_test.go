package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// echoLastTool answers with the text of the last tool message, prefixed.
func echoLastTool(prefix string) scripted.Step {
	return scripted.Func(func(req *model.Request) (*model.Response, error) {
		var texts []string
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == model.RoleTool; i-- {
			texts = append([]string{req.Messages[i].Text()}, texts...)
		}
		return &model.Response{Message: model.Assistant(prefix + strings.Join(texts, " | "))}, nil
	})
}

// echoTask answers with the task it was given, prefixed.
func echoTask(prefix string) scripted.Step {
	return scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant(prefix + req.Messages[len(req.Messages)-1].Text())}, nil
	})
}

// callUntilAnswered is a model that reacts to its conversation: it makes
// call until a tool answers, then replies with prefix and the answer.
func callUntilAnswered(call model.ToolCall, prefix string) *scripted.Model {
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
			return &model.Response{Message: model.Assistant(prefix + last.Text())}, nil
		}
		return &model.Response{Message: model.Assistant("", call)}, nil
	})
	m := scripted.New()
	m.Fallback = &step
	return m
}

func newWorker(t *testing.T, name string, m model.Model, opts ...agent.Option) *graph.Graph[agent.State] {
	t.Helper()
	g, err := agent.NewReAct(m, append([]agent.Option{agent.WithName(name), agent.WithSystemPrompt("You are the " + name + ".")}, opts...)...)
	require.NoError(t, err)
	return g
}

func TestSupervisorDelegatesInOrderAndAnswers(t *testing.T) {
	research := scripted.New(scripted.Reply("Go 1.18 added generics."))
	write := scripted.New(echoTask("Draft: "))
	sup := scripted.New(
		scripted.CallTools(scripted.CallWithID("r", "researcher", `{"task":"When did Go get generics?"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			facts := req.Messages[len(req.Messages)-1].Text()
			return &model.Response{Message: model.Assistant("", scripted.CallWithID("w", "writer", fmt.Sprintf(`{"task":"Write one sentence.","context":%q}`, facts)))}, nil
		}),
		echoLastTool(""),
	)
	workers := []agent.Worker{
		{Name: "researcher", Description: "Finds facts.", Agent: newWorker(t, "researcher", research)},
		{Name: "writer", Description: "Writes prose.", Agent: newWorker(t, "writer", write)},
	}
	g, err := agent.NewSupervisor(sup, workers)
	require.NoError(t, err)
	assert.Equal(t, agent.SupervisorName, g.Name())

	out, err := g.Invoke(context.Background(), agent.Ask("Tell me about Go generics."))
	require.NoError(t, err)
	assert.Equal(t, "Draft: Context:\nGo 1.18 added generics.\n\nTask:\nWrite one sentence.", agent.FinalText(out.Messages))

	// The order of the conversation: user, call researcher, its answer,
	// call writer, its answer, final answer.
	var order []string
	for _, m := range out.Messages {
		switch {
		case m.HasToolCalls():
			order = append(order, m.Name+"→"+m.ToolCalls[0].Name)
		case m.Role == model.RoleTool:
			order = append(order, m.ToolName+"←")
		default:
			order = append(order, string(m.Role)+":"+m.Name)
		}
	}
	assert.Equal(t, []string{"user:", "supervisor→researcher", "researcher←", "supervisor→writer", "writer←", "assistant:supervisor"}, order)
	assert.Equal(t, 1, research.Calls())
	assert.Equal(t, 1, write.Calls())

	// The supervisor's model reads the routing prompt and is offered one
	// tool per worker.
	req := sup.Requests()[0]
	assert.Equal(t, agent.RoutingPrompt(workers), req.Messages[0].Text())
	assert.Contains(t, req.Messages[0].Text(), "- researcher: Finds facts.\n- writer: Writes prose.")
	require.Len(t, req.Tools, 2)
	assert.Equal(t, "researcher", req.Tools[0].Name)
	assert.Equal(t, "Writes prose.", req.Tools[1].Description)
}

// meet returns a tool that returns only once n calls of it are running at
// the same time, or fails after a while: a batch that runs its calls one
// after the other fails it.
func meet(n int) tool.Tool {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return tool.MustFunc("meet", "waits for the others", func(ctx context.Context, in struct {
		Who string `json:"who"`
	}) (string, error) {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return in.Who + " met the others", nil
		case <-time.After(5 * time.Second):
			return "", errors.New(in.Who + " waited alone")
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
}

func TestSupervisorRunsTwoHandoffsOfOneBatchConcurrently(t *testing.T) {
	rendezvous := meet(2)
	worker := func(name string) agent.Worker {
		m := scripted.New(scripted.CallTools(scripted.Call("meet", fmt.Sprintf(`{"who":%q}`, name))), echoLastTool(""))
		return agent.Worker{Name: name, Description: "works", Agent: newWorker(t, name, m, agent.WithTools(rendezvous))}
	}
	sup := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("a", "alpha", `{"task":"a"}`),
			scripted.CallWithID("b", "beta", `{"task":"b"}`),
		),
		echoLastTool(""),
	)
	g, err := agent.NewSupervisor(sup, []agent.Worker{worker("alpha"), worker("beta")})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Equal(t, "alpha met the others | beta met the others", agent.FinalText(out.Messages),
		"both handoffs were running at once, and their answers are in call order")
}

func TestSupervisorReadsAFailingWorkerAndGoesOn(t *testing.T) {
	broken := scripted.New(scripted.Fail(errors.New("upstream 500")))
	fine := scripted.New(scripted.Reply("fine answer"))
	sup := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("x", "broken", `{"task":"t"}`),
			scripted.CallWithID("y", "fine", `{"task":"t"}`),
		),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			var seen []string
			for _, m := range req.Messages {
				if m.Role == model.RoleTool {
					seen = append(seen, fmt.Sprintf("%s error=%v", m.ToolName, m.IsError))
				}
			}
			return &model.Response{Message: model.Assistant(strings.Join(seen, "; "))}, nil
		}),
	)
	g, err := agent.NewSupervisor(sup, []agent.Worker{
		{Name: "broken", Description: "fails", Agent: newWorker(t, "broken", broken)},
		{Name: "fine", Description: "works", Agent: newWorker(t, "fine", fine)},
	})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Equal(t, "broken error=true; fine error=false", agent.FinalText(out.Messages))
	for _, m := range out.Messages {
		if m.ToolCallID == "x" {
			assert.Contains(t, m.Text(), "upstream 500")
		}
	}
}

func TestSupervisorWorkerRetries(t *testing.T) {
	flaky := scripted.New(scripted.Fail(errors.New("timeout talking to the model")), scripted.Reply("second time lucky"))
	sup := scripted.New(scripted.CallTools(scripted.Call("flaky", `{"task":"t"}`)), echoLastTool("got: "))
	g, err := agent.NewSupervisor(sup, []agent.Worker{{
		Name: "flaky", Description: "sometimes fails", Agent: newWorker(t, "flaky", flaky),
		Handoff: []handoff.Option{handoff.WithRetries(1, time.Millisecond)},
	}})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Equal(t, "got: second time lucky", agent.FinalText(out.Messages))
	assert.Equal(t, 2, flaky.Calls())
}

func TestSupervisorInterruptInsideAWorkerResumes(t *testing.T) {
	approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		ok, err := graph.Interrupt[bool](ctx, map[string]any{"question": "pay?", "amount": in.Amount})
		if err != nil {
			return "", err
		}
		if !ok {
			return "payment refused", nil
		}
		return fmt.Sprintf("paid %d", in.Amount), nil
	})
	// The payer's model reacts to its conversation: it asks for approval
	// until it has the answer. (The lookup finishes in the same batch, so the
	// ToolsNode keeps its answer and waits for the payer in a new superstep,
	// where the payer's handoff resumes from its own checkpoints: the payer's
	// model is not asked again before the interrupt stops the run.)
	payer := callUntilAnswered(scripted.Call("approve", `{"amount":40}`), "payer: ")
	lookup := scripted.New(scripted.Reply("invoice 7 is due"))
	sup := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("l", "lookup", `{"task":"which invoice is due?"}`),
			scripted.CallWithID("p", "payer", `{"task":"pay invoice 7"}`),
		),
		echoLastTool("done: "),
	)
	g, err := agent.NewSupervisor(sup, []agent.Worker{
		{Name: "lookup", Description: "finds invoices", Agent: newWorker(t, "lookup", lookup)},
		{Name: "payer", Description: "pays", Agent: newWorker(t, "payer", payer, agent.WithTools(approve))},
	}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()

	_, err = g.Invoke(ctx, agent.Ask("pay what is due"), graph.WithThread("billing"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, []string{"payer"}, ie.Interrupts[0].Path)

	snap, err := g.GetState(ctx, "billing")
	require.NoError(t, err)
	var answered []string
	for _, m := range snap.State.Messages {
		if m.Role == model.RoleTool {
			answered = append(answered, m.ToolCallID)
		}
	}
	assert.Equal(t, []string{"l"}, answered, "the finished handoff's answer is kept while the other waits")

	out, err := g.Resume(ctx, "billing", graph.WithResume(ie.Interrupts[0].ID, true))
	require.NoError(t, err)
	assert.Equal(t, "done: invoice 7 is due | payer: paid 40", agent.FinalText(out.Messages))
	assert.Equal(t, 1, lookup.Calls(), "the finished worker did not run again")
	assert.Equal(t, 2, payer.Calls(), "the paused worker resumed where it stopped: one call to ask, one after the answer")
	assert.Equal(t, 2, sup.Calls())
}

func TestSupervisorOfSupervisors(t *testing.T) {
	leaf := scripted.New(scripted.Reply("leaf work"))
	teamLead := scripted.New(scripted.CallTools(scripted.Call("leaf", `{"task":"do the leaf work"}`)), echoLastTool("team: "))
	team, err := agent.NewSupervisor(teamLead, []agent.Worker{
		{Name: "leaf", Description: "does leaf work", Agent: newWorker(t, "leaf", leaf)},
	}, agent.WithName("team"))
	require.NoError(t, err)
	top := scripted.New(scripted.CallTools(scripted.Call("team", `{"task":"get it done"}`)), echoLastTool("top: "))
	g, err := agent.NewSupervisor(top, []agent.Worker{{Name: "team", Description: "a team", Agent: team}})
	require.NoError(t, err)

	var paths []string
	for ev, err := range g.Stream(context.Background(), agent.Ask("go"), graph.WithModes(graph.ModeEvents)) {
		require.NoError(t, err)
		if ev.Kind == graph.KindNodeStart {
			paths = append(paths, strings.Join(append(ev.Path, ev.Node), "/"))
		}
		if ev.Kind == graph.KindDone {
			assert.Equal(t, "top: team: leaf work", agent.FinalText(ev.State.(agent.State).Messages))
		}
	}
	assert.Equal(t, []string{"agent", "tools", "team/agent", "team/tools", "team/leaf/agent", "team/agent", "agent"}, paths)
}

func TestSupervisorWithDynamicWorkerAndOwnPrompt(t *testing.T) {
	template := func(instruction string, tools []tool.Tool) (*graph.Graph[agent.State], error) {
		return agent.NewReAct(scripted.New(echoTask(instruction + ": ")))
	}
	dyn, err := handoff.NewDynamic("", "Starts a helper.", template, nil)
	require.NoError(t, err)
	sup := scripted.New(scripted.CallTools(scripted.Call(handoff.DynamicName, `{"request":"sum 2 and 2","instruction":"be terse"}`)), echoLastTool(""))
	workers := []agent.Worker{{Tool: dyn}}
	g, err := agent.NewSupervisor(sup, workers, agent.WithSystemPrompt(agent.RoutingPrompt(workers)+"\nAlways be polite."))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("2+2?"))
	require.NoError(t, err)
	assert.Equal(t, "be terse: sum 2 and 2", agent.FinalText(out.Messages))
	system := sup.Requests()[0].Messages[0].Text()
	assert.Contains(t, system, "- dynamic_agent: Starts a helper.")
	assert.True(t, strings.HasSuffix(system, "Always be polite."))
}

func TestNewSupervisorRejectsBadWorkers(t *testing.T) {
	g := newWorker(t, "w", scripted.New())
	dyn, err := handoff.NewDynamic[agent.State]("", "", func(string, []tool.Tool) (*graph.Graph[agent.State], error) { return nil, nil }, nil)
	require.NoError(t, err)
	tests := []struct {
		name    string
		workers []agent.Worker
		want    []string
	}{
		{"none", nil, []string{"at least one worker"}},
		{"no name", []agent.Worker{{Description: "d", Agent: g}}, []string{"worker 0: the worker has no name"}},
		{"no agent", []agent.Worker{{Name: "w", Description: "d"}}, []string{`worker "w" has no Agent`}},
		{"no description", []agent.Worker{{Name: "w", Agent: g}}, []string{`worker "w" has no description`}},
		{"duplicate", []agent.Worker{{Name: "w", Description: "d", Agent: g}, {Name: "w", Description: "e", Agent: g}}, []string{`workers 0 and 1 are both named "w"`}},
		{"tool and agent", []agent.Worker{{Tool: dyn, Agent: g}}, []string{"leave Name, Description, Agent and Handoff empty"}},
		{"bad handoff option", []agent.Worker{{Name: "w", Description: "d", Agent: g, Handoff: []handoff.Option{handoff.WithMaxDepth(0)}}}, []string{"at least 1"}},
		{"all problems at once", []agent.Worker{{Name: "a"}, {Name: "b", Agent: g}}, []string{`"a" has no Agent`, `"b" has no description`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.NewSupervisor(scripted.New(), tc.workers)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	_, err = agent.NewSupervisor(nil, []agent.Worker{{Name: "w", Description: "d", Agent: g}})
	require.EqualError(t, err, "agent: a supervisor needs a model")
}

func TestSupervisorParallelWorkersBothInterruptAndResumeTogether(t *testing.T) {
	ask := tool.MustFunc("ask", "asks a human", func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		a, err := graph.Interrupt[string](ctx, in.Q)
		return in.Q + " " + a, err
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	newAsker := func(name, q string) (agent.Worker, *scripted.Model) {
		m := scripted.New(scripted.CallTools(scripted.Call("ask", fmt.Sprintf(`{"q":%q}`, q))), echoLastTool(name+": "))
		return agent.Worker{Name: name, Description: "asks", Agent: newWorker(t, name, m, agent.WithTools(ask))}, m
	}
	left, lm := newAsker("left", "tea?")
	right, rm := newAsker("right", "milk?")
	sup := scripted.New(
		scripted.CallTools(scripted.CallWithID("l", "left", `{"task":"t"}`), scripted.CallWithID("r", "right", `{"task":"t"}`)),
		echoLastTool(""),
	)
	g, err := agent.NewSupervisor(sup, []agent.Worker{left, right}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()

	_, err = g.Invoke(ctx, agent.Ask("go"), graph.WithThread("both"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 2)
	answers := map[string]string{"tea?": "yes", "milk?": "no"}
	var opts []graph.RunOption
	for _, in := range ie.Interrupts {
		require.Len(t, in.Path, 1)
		opts = append(opts, graph.WithResume(in.ID, answers[in.Payload.(string)]))
	}
	assert.ElementsMatch(t, []string{"left", "right"}, []string{ie.Interrupts[0].Path[0], ie.Interrupts[1].Path[0]})

	out, err := g.Resume(ctx, "both", opts...)
	require.NoError(t, err)
	assert.Equal(t, "left: tea? yes | right: milk? no", agent.FinalText(out.Messages))
	assert.Equal(t, 2, lm.Calls(), "each worker resumed where it stopped")
	assert.Equal(t, 2, rm.Calls())
}

func TestSupervisorInterruptThroughTheStandardMiddleware(t *testing.T) {
	var asked atomic.Int32
	confirm := tool.MustFunc("confirm", "asks a human", func(ctx context.Context, _ struct{}) (string, error) {
		asked.Add(1)
		ok, err := graph.Interrupt[string](ctx, "ship it?")
		return "human: " + ok, err
	})
	exec := executor.Parallel(executor.WithObserver(nodes.ToolEvents), executor.WithMiddleware(
		middleware.Cache(),
		middleware.Retry(middleware.WithInitialInterval(time.Millisecond)),
		// A call that waits for a person has not failed: with one failure
		// tripping the breaker, a pause counted as one would open it and the
		// resumed call would be refused.
		middleware.CircuitBreaker(middleware.WithConsecutiveFailures(1)),
		middleware.Timeout(5*time.Second),
	))
	shipper := scripted.New(scripted.CallTools(scripted.Call("confirm", `{}`)), echoLastTool("shipper: "))
	sup := scripted.New(scripted.CallTools(scripted.Call("shipper", `{"task":"ship"}`)), echoLastTool(""))
	g, err := agent.NewSupervisor(sup, []agent.Worker{
		{Name: "shipper", Description: "ships", Agent: newWorker(t, "shipper", shipper, agent.WithTools(confirm), agent.WithExecutor(exec))},
	}, agent.WithExecutor(exec), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = g.Invoke(ctx, agent.Ask("ship"), graph.WithThread("s"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, int32(1), asked.Load(), "the interrupt was not retried")
	out, err := g.Resume(ctx, "s", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.Equal(t, "shipper: human: yes", agent.FinalText(out.Messages))
}

// A worker that asks the user (nodes.AskUser) pauses the whole system; the
// user's answer goes back to that worker, which carries on with it.
func TestSupervisorWorkerAsksTheUser(t *testing.T) {
	booker := callUntilAnswered(scripted.Call(nodes.AskUserName, `{"question":"Which date?"}`), "booked for ")
	sup := scripted.New(scripted.CallTools(scripted.CallWithID("b", "booker", `{"task":"book a table"}`)), echoLastTool("done: "))
	g, err := agent.NewSupervisor(sup, []agent.Worker{
		{Name: "booker", Description: "books tables", Agent: newWorker(t, "booker", booker, agent.WithTools(nodes.AskUser()))},
	}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = g.Invoke(ctx, agent.Ask("book me a table"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, []string{"booker"}, ie.Interrupts[0].Path, "the question names the worker that asks")
	q, ok := ie.Interrupts[0].Payload.(nodes.Question)
	require.True(t, ok)
	assert.Equal(t, "Which date?", q.Question)

	out, err := g.Resume(ctx, "t", graph.WithResumeValue("Friday"))
	require.NoError(t, err)
	assert.Equal(t, "done: booked for Friday", agent.FinalText(out.Messages))
	assert.Equal(t, 2, sup.Calls(), "the supervisor was not asked again before the worker answered")
}

// A worker whose answer is the final answer (handoff.WithDirectAnswer) ends
// the supervisor's turn: the supervisor's model is not called again to
// restate it, and FinalText returns it.
func TestSupervisorWorkerWithADirectAnswer(t *testing.T) {
	writer := scripted.New(scripted.Reply("Roses are red."))
	sup := scripted.New(scripted.CallTools(scripted.CallWithID("w", "poet", `{"task":"a poem"}`)), scripted.Reply("unused"))
	g, err := agent.NewSupervisor(sup, []agent.Worker{{
		Name: "poet", Description: "writes poems", Agent: newWorker(t, "poet", writer),
		Handoff: []handoff.Option{handoff.WithDirectAnswer()},
	}})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("a poem please"))
	require.NoError(t, err)
	assert.Equal(t, "Roses are red.", agent.FinalText(out.Messages))
	assert.Equal(t, 1, sup.Calls(), "no second call to restate the answer")
	last := out.Messages[len(out.Messages)-1]
	assert.Equal(t, model.RoleTool, last.Role)
	assert.Equal(t, "true", last.Metadata[nodes.MetaTerminate])

	// A failed worker goes back to the supervisor's model as usual.
	failing := scripted.New(scripted.Fail(errors.New("writer's block")))
	sup2 := scripted.New(scripted.CallTools(scripted.CallWithID("w", "poet", `{"task":"a poem"}`)), echoLastTool("sorry: "))
	g2, err := agent.NewSupervisor(sup2, []agent.Worker{{
		Name: "poet", Description: "writes poems", Agent: newWorker(t, "poet", failing),
		Handoff: []handoff.Option{handoff.WithDirectAnswer()},
	}})
	require.NoError(t, err)
	out, err = g2.Invoke(context.Background(), agent.Ask("a poem please"))
	require.NoError(t, err)
	assert.Equal(t, 2, sup2.Calls())
	assert.Contains(t, agent.FinalText(out.Messages), "sorry: ")
}

func TestFinalText(t *testing.T) {
	done := model.ToolMessage("c1", "t", false, model.TextPart("direct"))
	done.Metadata = map[string]string{nodes.MetaTerminate: "true"}
	plain := model.ToolMessage("c2", "t", false, model.TextPart("plain"))
	ask := model.Assistant("thinking", model.ToolCall{ID: "c1", Name: "t"})
	assert.Equal(t, "direct", agent.FinalText([]model.Message{model.User("q"), ask, done}))
	assert.Equal(t, "thinking", agent.FinalText([]model.Message{model.User("q"), ask, done, plain}), "not every result ended the run")
	assert.Equal(t, "answer", agent.FinalText([]model.Message{model.User("q"), model.Assistant("answer")}))
	assert.Equal(t, "", agent.FinalText([]model.Message{model.User("q")}))
	assert.Equal(t, "", agent.FinalText(nil))
}
