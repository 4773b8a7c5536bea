package agent_test

import (
	"context"
	"errors"
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
)

type cityIn struct {
	City string `json:"city"`
}

// weather is a tool that takes a moment, and counts the calls running at
// once in running, and the most there were in peak. Each call also waits,
// for a few seconds at most, until together calls have been running at
// once.
func weather(running, peak *atomic.Int32, together int32) tool.Tool {
	return tool.MustFunc("weather", "weather of a city", func(ctx context.Context, in cityIn) (string, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		defer running.Add(-1)
		time.Sleep(20 * time.Millisecond)
		for deadline := time.Now().Add(10 * time.Second); peak.Load() < together && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		return "sunny in " + in.City, nil
	}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}

func TestReActRunsParallelToolCallsThroughMiddleware(t *testing.T) {
	var running, peak atomic.Int32
	var mu sync.Mutex
	var order []string
	logCalls := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		res := next.Handle(ctx, req)
		mu.Lock()
		order = append(order, req.Call.ID)
		mu.Unlock()
		res.Content = append(res.Content, model.TextPart(" (checked)"))
		return res
	})
	m := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("p", "weather", `{"city":"Paris"}`),
			scripted.CallWithID("r", "weather", `{"city":"Rome"}`),
			scripted.CallWithID("o", "weather", `{"city":"Oslo"}`),
		),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			var parts []string
			for _, msg := range req.Messages {
				if msg.Role == model.RoleTool {
					parts = append(parts, msg.Text())
				}
			}
			return &model.Response{Message: model.Assistant(strings.Join(parts, "; "))}, nil
		}),
	)
	g, err := agent.NewReAct(m,
		agent.WithName("forecaster"),
		agent.WithSystemPrompt("Answer weather questions."),
		agent.WithTools(weather(&running, &peak, 3)),
		agent.WithMiddleware(logCalls))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("Weather in Paris, Rome and Oslo?"))
	require.NoError(t, err)
	assert.Equal(t, "sunny in Paris (checked); sunny in Rome (checked); sunny in Oslo (checked)", agent.FinalText(out.Messages))
	assert.Equal(t, int32(3), peak.Load(), "the three calls ran at the same time")
	assert.Len(t, order, 3)
	assert.Equal(t, "forecaster", out.Messages[1].Name)
	assert.Equal(t, "Answer weather questions.", m.Requests()[0].Messages[0].Text())
}

func TestReActWithoutToolsAnswersOnce(t *testing.T) {
	g, err := agent.NewReAct(scripted.New(scripted.Reply("hello")))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("hi"))
	require.NoError(t, err)
	assert.Equal(t, "hello", agent.FinalText(out.Messages))
	assert.Len(t, out.Messages, 2)
}

// An agent without tools of its own still answers a call of a tool it
// lacks (a model's guess), as unknown, instead of ending the run with the
// call unanswered; the model then answers.
func TestReActWithoutToolsAnswersAGuessedCall(t *testing.T) {
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "search", `{}`)), scripted.Reply("sorry"))
	g, err := agent.NewReAct(m)
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("hi"))
	require.NoError(t, err)
	require.Len(t, out.Messages, 4)
	assert.True(t, out.Messages[2].IsError)
	assert.Contains(t, out.Messages[2].Text(), `unknown tool "search"`)
	assert.Equal(t, "sorry", agent.FinalText(out.Messages))
}

func TestReActHopCap(t *testing.T) {
	var running, peak atomic.Int32
	call := scripted.CallTools(scripted.Call("weather", `{"city":"X"}`))
	m := scripted.New()
	m.Fallback = &call
	g, err := agent.NewReAct(m, agent.WithTools(weather(&running, &peak, 1)), agent.WithMaxHops(3))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Ask("loop"))
	var he *nodes.HopLimitError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 3, he.Limit)
	assert.Equal(t, "weather", he.LastReply.ToolCalls[0].Name)
}

type answer struct {
	City string `json:"city"`
	Temp int    `json:"temp"`
}

func TestReActStructuredOutput(t *testing.T) {
	var running, peak atomic.Int32
	m := scripted.New(
		scripted.CallTools(scripted.Call("weather", `{"city":"Lima"}`)),
		scripted.CallTools(scripted.Call(tool.SetModelResponseName, `{"city":"Lima","temp":"21"}`)),
	)
	g, err := agent.NewReAct(m, agent.WithTools(weather(&running, &peak, 1)), agent.WithStructuredOutput[answer]())
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("temperature in Lima?"))
	require.NoError(t, err)
	last, _ := model.LastAssistant(out.Messages)
	got, err := nodes.Structured[answer](last)
	require.NoError(t, err)
	assert.Equal(t, answer{City: "Lima", Temp: 21}, got)
}

func TestReActCallerExecutedToolsResumeThroughCheckpointer(t *testing.T) {
	confirm, err := tool.NewDeclaration(model.ToolDefinition{Name: "confirm", Description: "asks the user to confirm", InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "confirm", `{}`)), scripted.Reply("booked"))
	g, err := agent.NewReAct(m, agent.WithTools(confirm), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = g.Invoke(ctx, agent.Ask("book it"), graph.WithThread("trip"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "c1", ie.Interrupts[0].Payload.(nodes.PendingToolCalls).Calls[0].ID)

	out, err := g.Resume(ctx, "trip", graph.WithResumeValue(map[string]tool.Result{"c1": tool.Text("yes")}))
	require.NoError(t, err)
	assert.Equal(t, "booked", agent.FinalText(out.Messages))
}

func TestContinueRunsTheNextTurnOfAThread(t *testing.T) {
	m := scripted.New(scripted.Reply("hello Ada"), scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant("you said: " + req.Messages[len(req.Messages)-1].Text() + " after " + req.Messages[0].Text())}, nil
	}))
	g, err := agent.NewReAct(m, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	out, err := agent.Continue(ctx, g, "chat", "I am Ada")
	require.NoError(t, err)
	assert.Equal(t, "hello Ada", agent.FinalText(out.Messages))
	out, err = agent.Continue(ctx, g, "chat", "what is my name?")
	require.NoError(t, err)
	assert.Len(t, out.Messages, 4)
	assert.Equal(t, "you said: what is my name? after I am Ada", agent.FinalText(out.Messages))
}

func TestReActStructuredOutputRetriesAnInvalidAnswer(t *testing.T) {
	// No tools of its own: the agent still loops, so that an answer outside
	// the schema goes back to the model with the validation error.
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", tool.SetModelResponseName, `{"city":"Lima"}`)),
		scripted.CallTools(scripted.CallWithID("c2", tool.SetModelResponseName, `{"city":"Lima","temp":21}`)),
	)
	g, err := agent.NewReAct(m, agent.WithStructuredOutput[answer]())
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("temperature in Lima?"))
	require.NoError(t, err)
	require.Len(t, out.Messages, 4)
	refusal := out.Messages[2]
	assert.Equal(t, "c1", refusal.ToolCallID)
	assert.True(t, refusal.IsError)
	assert.Contains(t, refusal.Text(), "$.temp: required property is missing")
	got, err := nodes.Structured[answer](out.Messages[3])
	require.NoError(t, err)
	assert.Equal(t, answer{City: "Lima", Temp: 21}, got)
	assert.Contains(t, m.Requests()[1].Messages[len(m.Requests()[1].Messages)-1].Text(), "required property is missing", "the model saw what was wrong")
}

func TestReActStructuredOutputGivesUpAtTheHopCap(t *testing.T) {
	bad := scripted.CallTools(scripted.Call(tool.SetModelResponseName, `{"city":"Lima"}`))
	m := scripted.New(bad, bad, bad)
	g, err := agent.NewReAct(m, agent.WithStructuredOutput[answer](), agent.WithMaxHops(2))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Ask("temperature in Lima?"))
	require.ErrorIs(t, err, nodes.ErrHopLimit, "an agent that never answers validly fails instead of ending without an answer")
	assert.Equal(t, 3, m.Calls())
}

func TestReActWithToolsetsResolvesPerRun(t *testing.T) {
	var running, peak atomic.Int32
	var resolved atomic.Int32
	set := toolsetFunc{name: "weather tools", fn: func(ctx context.Context) ([]tool.Tool, error) {
		resolved.Add(1)
		return []tool.Tool{weather(&running, &peak, 1)}, nil
	}}
	m := scripted.New(scripted.CallTools(scripted.Call("weather", `{"city":"Lima"}`)), scripted.Reply("warm"))
	g, err := agent.NewReAct(m, agent.WithToolsets(set))
	require.NoError(t, err)
	assert.Contains(t, g.Nodes(), agent.ToolsNode, "toolsets make the loop")
	out, err := g.Invoke(context.Background(), agent.Ask("Lima?"))
	require.NoError(t, err)
	assert.Equal(t, "sunny in Lima", out.Messages[2].Text())
	assert.Equal(t, "warm", agent.FinalText(out.Messages))
	assert.Equal(t, int32(3), resolved.Load(), "two model turns and one batch each resolve the set")
}

// toolsetFunc is a toolset whose tools a function returns.
type toolsetFunc struct {
	name string
	fn   func(ctx context.Context) ([]tool.Tool, error)
}

func (s toolsetFunc) Name() string                                   { return s.name }
func (s toolsetFunc) Tools(ctx context.Context) ([]tool.Tool, error) { return s.fn(ctx) }
func (s toolsetFunc) Close() error                                   { return nil }

func TestReActExecutorOptionsReachTheDefaultExecutor(t *testing.T) {
	var running, peak atomic.Int32
	m := scripted.New(
		scripted.CallTools(
			scripted.Call("weather", `{"city":"A"}`),
			scripted.Call("weather", `{"city":"B"}`),
			scripted.Call("weather", `{"city":"C"}`),
		),
		scripted.Reply("done"),
	)
	g, err := agent.NewReAct(m, agent.WithTools(weather(&running, &peak, 1)), agent.WithExecutorOptions(executor.WithMaxConcurrency(1)))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Ask("three cities"))
	require.NoError(t, err)
	assert.Equal(t, int32(1), peak.Load(), "a concurrency cap of one runs the calls one at a time")
}

func TestReActPassesOptionsToItsNodes(t *testing.T) {
	var running, peak atomic.Int32
	m := scripted.New(scripted.CallTools(scripted.Call("weather", `{"city":"Oslo"}`)), scripted.Reply("cold"))
	var ended []string
	g, err := agent.NewReAct(m,
		agent.WithTools(weather(&running, &peak, 1)),
		agent.WithLLMOptions(nodes.WithModelName("small-model")),
		agent.WithToolsOptions(nodes.WithErrorPolicy(nodes.ReturnError, "weather")),
		agent.WithMiddleware(executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
			ended = append(ended, req.Call.Name)
			return tool.ErrorResult(tool.CodeToolError, errBackend)
		})))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Ask("Oslo?"))
	assert.Equal(t, "small-model", m.Requests()[0].Model, "LLM options reach the LLM node")
	var te *nodes.ToolError
	require.ErrorAs(t, err, &te, "tools options reach the ToolsNode: the error policy returns the failure")
	assert.Equal(t, "weather", te.Call.Name)
	assert.ErrorIs(t, err, errBackend)
	assert.Equal(t, []string{"weather"}, ended)
}

var errBackend = errors.New("backend down")

func TestReActCompileOptionsComeAfterTheAgentsOwn(t *testing.T) {
	var running, peak atomic.Int32
	m := scripted.New(scripted.CallTools(scripted.Call("weather", `{"city":"Oslo"}`)), scripted.Reply("cold"))
	g, err := agent.NewReAct(m, agent.WithTools(weather(&running, &peak, 1)), agent.WithCompileOptions(graph.WithDefaultStepLimit(1)))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Ask("Oslo?"))
	require.ErrorIs(t, err, graph.ErrStepLimit, "the caller's step limit replaces the agent's default")
}

func TestContinueRefusesAPausedThread(t *testing.T) {
	confirm, err := tool.NewDeclaration(model.ToolDefinition{Name: "confirm", Description: "asks the user to confirm", InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "confirm", `{}`)), scripted.Reply("cancelled, as you wish"))
	g, err := agent.NewReAct(m, agent.WithTools(confirm), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = agent.Continue(ctx, g, "trip", "book it")
	require.ErrorIs(t, err, graph.ErrInterrupted)

	out, err := agent.Continue(ctx, g, "trip", "never mind")
	require.ErrorIs(t, err, agent.ErrPaused)
	var pe *agent.PausedError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "trip", pe.Thread)
	require.Len(t, pe.Interrupts, 1)
	assert.Contains(t, err.Error(), `thread "trip" is paused`)
	assert.Len(t, out.Messages, 2, "the thread's state, without the new message")
	assert.Equal(t, 1, m.Calls(), "no new turn ran")

	// Answering the pending call lets the conversation go on.
	out, err = g.Resume(ctx, "trip", graph.WithResumeValue(map[string]tool.Result{"c1": tool.ErrorResult(tool.CodeCancelled, errors.New("the user changed their mind"))}))
	require.NoError(t, err)
	assert.Equal(t, "cancelled, as you wish", agent.FinalText(out.Messages))
}

func TestReActStructuredOutputRetriesUnderAReturnErrorPolicy(t *testing.T) {
	// Failing tools stop the run, but an answer outside the schema still
	// goes back to the model, as WithStructuredOutput promises.
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", tool.SetModelResponseName, `{"city":"Lima"}`)),
		scripted.CallTools(scripted.CallWithID("c2", tool.SetModelResponseName, `{"city":"Lima","temp":21}`)),
	)
	g, err := agent.NewReAct(m, agent.WithStructuredOutput[answer](), agent.WithToolsOptions(nodes.WithErrorPolicy(nodes.ReturnError)))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("temperature in Lima?"))
	require.NoError(t, err)
	got, err := nodes.Structured[answer](out.Messages[len(out.Messages)-1])
	require.NoError(t, err)
	assert.Equal(t, answer{City: "Lima", Temp: 21}, got)

	// Naming the set-model-response tool makes its refusals fail the run.
	m = scripted.New(scripted.CallTools(scripted.CallWithID("c1", tool.SetModelResponseName, `{"city":"Lima"}`)))
	g, err = agent.NewReAct(m, agent.WithStructuredOutput[answer](), agent.WithToolsOptions(nodes.WithErrorPolicy(nodes.ReturnError, tool.SetModelResponseName)))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Ask("temperature in Lima?"))
	require.ErrorIs(t, err, nodes.ErrToolFailed)
}

func TestContinueRejectsAMissingGraphOrThread(t *testing.T) {
	ctx := context.Background()
	_, err := agent.Continue[agent.State](ctx, nil, "chat", "hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "agent: Continue needs a graph")

	m := scripted.New(scripted.Reply("hello"))
	g, err := agent.NewReAct(m, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	_, err = agent.Continue(ctx, g, "", "hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "agent: Continue needs a thread")
	assert.Equal(t, 0, m.Calls())
}

func TestSwarmStructuredOutputRetriesUnderAReturnErrorPolicy(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", tool.SetModelResponseName, `{"city":"Lima"}`)),
		scripted.CallTools(scripted.CallWithID("c2", tool.SetModelResponseName, `{"city":"Lima","temp":21}`)),
	)
	g, err := agent.NewSwarm([]agent.SwarmAgent{{Name: "solo", Model: m, Options: []agent.Option{
		agent.WithStructuredOutput[answer](), agent.WithToolsOptions(nodes.WithErrorPolicy(nodes.ReturnError)),
	}}})
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.SwarmState{Chat: agent.Ask("temperature in Lima?").Chat})
	require.NoError(t, err)
	got, err := nodes.Structured[answer](out.Messages[len(out.Messages)-1])
	require.NoError(t, err)
	assert.Equal(t, answer{City: "Lima", Temp: 21}, got)
}

func TestNilOptionsAreSkipped(t *testing.T) {
	var unset agent.Option
	g, err := agent.NewReAct(scripted.New(scripted.Reply("hello")), unset, agent.WithName("greeter"), nil)
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("hi"))
	require.NoError(t, err)
	assert.Equal(t, "hello", agent.FinalText(out.Messages))
	assert.Equal(t, "greeter", g.Name())

	_, err = agent.NewSwarm([]agent.SwarmAgent{{Name: "solo", Model: scripted.New(), Options: []agent.Option{nil}}}, nil)
	require.NoError(t, err)
}

func TestExecutorSettingsAlongsideWithExecutorAreRefused(t *testing.T) {
	m := scripted.New(scripted.Reply("hi"))
	exec := executor.Sequential()
	_, err := agent.NewReAct(m, agent.WithExecutor(exec), agent.WithMiddleware(middleware.Timeout(time.Second)))
	require.ErrorContains(t, err, "WithMiddleware configure the default executor")
	_, err = agent.NewReAct(m, agent.WithExecutor(exec), agent.WithExecutorOptions(executor.WithMaxConcurrency(2)),
		agent.WithMiddleware(middleware.Timeout(time.Second)))
	require.ErrorContains(t, err, "WithMiddleware and WithExecutorOptions")
	_, err = agent.NewSwarm([]agent.SwarmAgent{{Name: "a", Model: m,
		Options: []agent.Option{agent.WithExecutor(exec), agent.WithExecutorOptions(executor.WithMaxConcurrency(2))}}})
	require.ErrorContains(t, err, `swarm agent "a": WithExecutorOptions`)

	_, err = agent.NewReAct(m, agent.WithExecutor(exec))
	require.NoError(t, err)
	_, err = agent.NewReAct(m, agent.WithMiddleware(middleware.Timeout(time.Second)), agent.WithExecutorOptions(executor.WithMaxConcurrency(2)))
	require.NoError(t, err)
}

// A tool's own permission rule holds in a default agent, whose executor has
// no permission middleware: the refused call does not run, and the model
// reads why.
func TestReActHonoursAToolsOwnPermissionChecker(t *testing.T) {
	ran := false
	wipe := tool.MustFunc("wipe", "deletes everything", func(context.Context, cityIn) (string, error) {
		ran = true
		return "wiped", nil
	}, tool.WithPermission(tool.PermissionCheckerFunc(func(context.Context, tool.PermissionRequest) (tool.Decision, error) {
		return tool.Deny("wiping needs an administrator"), nil
	})))
	m := scripted.New(scripted.CallTools(scripted.CallWithID("w", "wipe", `{"city":"all"}`)), scripted.Reply("I may not."))
	g, err := agent.NewReAct(m, agent.WithTools(wipe))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("wipe it"))
	require.NoError(t, err)
	assert.False(t, ran, "the denied call did not run")
	answer := out.Messages[2]
	require.Equal(t, model.RoleTool, answer.Role)
	assert.True(t, answer.IsError)
	assert.Contains(t, answer.Text(), "permission_denied")
	assert.Contains(t, answer.Text(), "wiping needs an administrator")
}

// A selector picks what the model is offered, once per turn: the ToolsNode
// does not ask it again, so a tool offered on a turn runs even when the
// selector would now pick another, and a filter set once applies to both
// nodes.
func TestReActSelectorsRunOncePerTurn(t *testing.T) {
	var selections atomic.Int32
	// The selector alternates between the two tools.
	alternate := tool.SelectorFunc(func(_ context.Context, tools []tool.Tool) ([]tool.Tool, error) {
		n := selections.Add(1)
		for _, x := range tools {
			if (n%2 == 1) == (tool.Name(x) == "weather") {
				return []tool.Tool{x}, nil
			}
		}
		return nil, nil
	})
	hidden := tool.MustFunc("secret", "", func(context.Context, cityIn) (string, error) { return "leaked", nil })
	clock := tool.MustFunc("clock", "the time", func(context.Context, cityIn) (string, error) { return "noon", nil })
	var running, peak atomic.Int32
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("w", "weather", `{"city":"Oslo"}`)),
		scripted.CallTools(scripted.CallWithID("s", "secret", `{"city":"Oslo"}`)),
		scripted.Reply("done"),
	)
	g, err := agent.NewReAct(m, agent.WithTools(weather(&running, &peak, 1), clock, hidden),
		agent.WithResolveOptions(
			tool.VisibleIf(func(_ context.Context, x tool.Tool) bool { return tool.Name(x) != "secret" }),
			tool.SelectWith(alternate)))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("weather?"))
	require.NoError(t, err)
	assert.Equal(t, int32(3), selections.Load(), "one selection per model call")
	reqs := m.Requests()
	require.Len(t, reqs, 3)
	require.Len(t, reqs[0].Tools, 1)
	assert.Equal(t, "weather", reqs[0].Tools[0].Name)
	assert.Equal(t, "sunny in Oslo", out.Messages[2].Text(), "the offered tool ran")
	assert.True(t, out.Messages[4].IsError)
	assert.Equal(t, `unknown tool "secret". Available tools: weather, clock.`, out.Messages[4].Text(),
		"a hidden tool stays unknown; the tools the selector left out are still available")
}

// One compiled agent serves runs with different tools: the filters of the
// run's context (tool.ResolveWith) decide what each run's model is offered
// and what its calls may reach.
func TestReActRunFiltersFromTheContext(t *testing.T) {
	var running, peak atomic.Int32
	admin := tool.MustFunc("purge", "purges the cache", func(context.Context, cityIn) (string, error) { return "purged", nil })
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("p", "purge", `{"city":"x"}`)), scripted.Reply("ok"),
		scripted.CallTools(scripted.CallWithID("p", "purge", `{"city":"x"}`)), scripted.Reply("ok"),
	)
	g, err := agent.NewReAct(m, agent.WithTools(weather(&running, &peak, 1), admin))
	require.NoError(t, err)

	adminRun, err := g.Invoke(context.Background(), agent.Ask("purge"))
	require.NoError(t, err)
	assert.Equal(t, "purged", adminRun.Messages[2].Text())

	userCtx := tool.ResolveWith(context.Background(), tool.VisibleIf(tool.DenyNames("purge")))
	userRun, err := g.Invoke(userCtx, agent.Ask("purge"))
	require.NoError(t, err)
	assert.True(t, userRun.Messages[2].IsError)
	assert.Contains(t, userRun.Messages[2].Text(), `unknown tool "purge"`)

	reqs := m.Requests()
	require.Len(t, reqs, 4)
	assert.Len(t, reqs[0].Tools, 2)
	require.Len(t, reqs[2].Tools, 1, "the user's run was offered the weather alone")
	assert.Equal(t, "weather", reqs[2].Tools[0].Name)
}

func TestNewReActRefusesTwoToolsWithOneName(t *testing.T) {
	a := tool.MustFunc("lookup", "a", func(context.Context, cityIn) (string, error) { return "a", nil })
	b := tool.MustFunc("lookup", "b", func(context.Context, cityIn) (string, error) { return "b", nil })
	_, err := agent.NewReAct(scripted.New(), agent.WithTools(a, b))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `duplicate tool name "lookup"`)
}

// With argument repair, broken arguments are repaired in the conversation
// itself: the tool, the events and the next model call all see valid JSON,
// and the message says which calls were repaired.
func TestReActRepairsArgumentsInTheConversation(t *testing.T) {
	var running, peak atomic.Int32
	m := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("a", "weather", `{city: 'Oslo',}`),
			scripted.CallWithID("b", "weather", `{"city":"Rome"}`),
			scripted.CallWithID("c", "weather", `not json at all`),
		),
		scripted.Reply("done"),
	)
	g, err := agent.NewReAct(m, agent.WithTools(weather(&running, &peak, 1)), agent.WithArgumentRepair())
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("weather?"))
	require.NoError(t, err)
	calls := out.Messages[1].ToolCalls
	assert.JSONEq(t, `{"city":"Oslo"}`, string(calls[0].Arguments))
	assert.Equal(t, `{"city":"Rome"}`, string(calls[1].Arguments), "valid arguments are left as they are")
	assert.Equal(t, "a", out.Messages[1].Metadata[nodes.MetaRepairedCalls])
	assert.Equal(t, "sunny in Oslo", out.Messages[2].Text())
	assert.True(t, out.Messages[4].IsError, "what repair cannot fix is still refused")
	sent := m.Requests()[1].Messages[1].ToolCalls[0]
	assert.JSONEq(t, `{"city":"Oslo"}`, string(sent.Arguments), "the provider is sent the repaired call")
}

// Tools search the run's memory: the agent's store, or the one a run
// brings in its context.
func TestReActToolsSearchTheRunsMemory(t *testing.T) {
	storeOf := func(fact string) tool.Retriever {
		return tool.RetrieverFunc(func(context.Context, string, int) ([]tool.Document, error) {
			return []tool.Document{{Content: fact}}, nil
		})
	}
	recall := tool.MustFunc("recall", "recalls what is known about the user", func(ctx context.Context, in cityIn) (string, error) {
		docs, err := tool.SearchMemory(ctx, in.City, 1)
		if err != nil {
			return "", err
		}
		return docs[0].Content, nil
	})
	newModel := func() *scripted.Model {
		return scripted.New(scripted.CallTools(scripted.Call("recall", `{"city":"Oslo"}`)), scripted.Reply("ok"))
	}
	g, err := agent.NewReAct(newModel(), agent.WithTools(recall), agent.WithMemory(storeOf("likes fjords")))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("plan a trip"))
	require.NoError(t, err)
	assert.Equal(t, "likes fjords", out.Messages[2].Text())

	g, err = agent.NewReAct(newModel(), agent.WithTools(recall))
	require.NoError(t, err)
	out, err = g.Invoke(tool.WithMemory(context.Background(), storeOf("likes deserts")), agent.Ask("plan a trip"))
	require.NoError(t, err)
	assert.Equal(t, "likes deserts", out.Messages[2].Text(), "the run's own store")

	g, err = agent.NewReAct(newModel(), agent.WithTools(recall))
	require.NoError(t, err)
	out, err = g.Invoke(context.Background(), agent.Ask("plan a trip"))
	require.NoError(t, err)
	assert.True(t, out.Messages[2].IsError, "no memory: the tool's error goes to the model")
}

// The set-model-response tool is the agent's own: neither the agent's
// filters nor a run's (tool.ResolveWith) hide it or leave its calls to the
// caller, so an invalid answer still goes back to the model.
func TestReActStructuredOutputUnderFilters(t *testing.T) {
	var running, peak atomic.Int32
	for _, c := range []struct {
		name  string
		agent []agent.Option
		ctx   func(context.Context) context.Context
	}{
		{"run filters", nil, func(ctx context.Context) context.Context {
			return tool.ResolveWith(ctx, tool.VisibleIf(tool.AllowNames("weather")), tool.ExecutableIf(tool.AllowNames("weather")))
		}},
		{"agent filters", []agent.Option{agent.WithResolveOptions(tool.VisibleIf(tool.AllowNames("weather")))}, func(ctx context.Context) context.Context { return ctx }},
		{"both", []agent.Option{agent.WithResolveOptions(tool.VisibleIf(tool.AllowNames("weather")))}, func(ctx context.Context) context.Context {
			return tool.ResolveWith(ctx, tool.ExecutableIf(tool.AllowNames("weather")))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(
				scripted.CallTools(scripted.CallWithID("c1", tool.SetModelResponseName, `{"city":"Lima"}`)),
				scripted.CallTools(scripted.CallWithID("c2", tool.SetModelResponseName, `{"city":"Lima","temp":21}`)),
			)
			opts := append([]agent.Option{agent.WithTools(weather(&running, &peak, 1)), agent.WithStructuredOutput[answer]()}, c.agent...)
			g, err := agent.NewReAct(m, opts...)
			require.NoError(t, err)
			out, err := g.Invoke(c.ctx(context.Background()), agent.Ask("temperature in Lima?"))
			require.NoError(t, err)
			got, err := nodes.Structured[answer](out.Messages[len(out.Messages)-1])
			require.NoError(t, err)
			assert.Equal(t, answer{City: "Lima", Temp: 21}, got)
			assert.Contains(t, out.Messages[2].Text(), "temp", "the first answer was refused for its missing field")
		})
	}
}
