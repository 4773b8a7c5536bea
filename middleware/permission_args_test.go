package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// shellArgs are the arguments of the shell tool of these tests.
type shellArgs struct {
	Command string `json:"command"`
	Count   int    `json:"count,omitempty"`
}

// refusesRM is a permission rule written as applications write them: it
// decodes the arguments it is shown, ignoring errors, and refuses rm and
// more than two repetitions.
func refusesRM(args json.RawMessage) bool {
	var in shellArgs
	_ = json.Unmarshal(args, &in)
	return strings.HasPrefix(in.Command, "rm ") || in.Count > 2
}

var naivePolicy = tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
	if refusesRM(req.Call.Arguments) {
		return tool.Deny("not allowed"), nil
	}
	return tool.Allow(), nil
})

// refusedArguments are calls the rule refuses once the arguments are what
// the tool runs with, one per step of the argument pipeline that changes
// them.
var refusedArguments = []struct{ name, args string }{
	{"trailing comma", `{"command": "rm -rf /x",}`},
	{"single quotes", `{'command': 'rm -rf /x'}`},
	{"fenced block", "```json\n{\"command\": \"rm -rf /x\"}\n```"},
	{"truncated object", `{"command": "rm -rf /x`},
	{"coerced number", `{"command": "ls /x", "count": "3"}`},
	{"prepared by the hook", `{"cmd": "rm -rf /x"}`},
}

// shellTool is a typed tool that takes the legacy key "cmd" for "command"
// (a PrepareArguments hook) and counts its runs.
func shellTool(runs *atomic.Int32) tool.Tool {
	return tool.MustFunc("shell", "runs a command", func(context.Context, shellArgs) (string, error) {
		runs.Add(1)
		return "ran", nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}),
		tool.WithPrepareArguments(func(m map[string]any) map[string]any {
			if c, ok := m["cmd"]; ok {
				m["command"] = c
				delete(m, "cmd")
			}
			return m
		}))
}

// refusedBatch is one call of each of refusedArguments.
func refusedBatch(tl tool.Tool) executor.Batch {
	calls := make([]model.ToolCall, len(refusedArguments))
	for i, tc := range refusedArguments {
		calls[i] = model.ToolCall{ID: tc.name, Name: "shell", Arguments: json.RawMessage(tc.args)}
	}
	return executor.Batch{Calls: calls, Tools: executor.Tools(tl)}
}

// With JSON repair on, the permission policy — and a BeforeCall hook that
// applies the same rule — sees the arguments after repair, PrepareArguments
// and coercion: arguments the pipeline changes on the way to the tool
// cannot slip a refused call past it.
func TestPermissionPolicySeesTheArgumentsTheToolRunsWith(t *testing.T) {
	hookRule := executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
		if refusesRM(req.Call.Arguments) {
			r := tool.Decision{Verdict: tool.VerdictDeny, Reason: "hook"}.Result(req.Call)
			return &r, nil
		}
		return nil, nil
	}}
	executors := map[string]func(...executor.Option) executor.Executor{
		"sequential": func(o ...executor.Option) executor.Executor { return executor.Sequential(o...) },
		"parallel": func(o ...executor.Option) executor.Executor {
			opts := make([]executor.ParallelOption, len(o))
			for i := range o {
				opts[i] = o[i]
			}
			return executor.Parallel(opts...)
		},
	}
	checks := map[string][]executor.Option{
		"policy":                     {executor.WithMiddleware(middleware.Permission(naivePolicy))},
		"hook":                       {executor.WithHooks(hookRule)},
		"policy behind a middleware": {executor.WithMiddleware(middleware.Logging(slog.New(slog.NewTextHandler(io.Discard, nil))), middleware.Permission(naivePolicy))},
	}
	for en, build := range executors {
		for cn, opts := range checks {
			t.Run(en+"/"+cn, func(t *testing.T) {
				var runs atomic.Int32
				tl := shellTool(&runs)
				ex := build(append([]executor.Option{executor.WithJSONRepair(true)}, opts...)...)
				// All at once, and one by one.
				res, err := ex.Execute(context.Background(), refusedBatch(tl))
				require.NoError(t, err)
				for i, r := range res {
					assert.Equal(t, tool.StatusDenied, r.Status, "%s: %s", refusedArguments[i].name, r.Text())
				}
				for _, tc := range refusedArguments {
					res, err := ex.Execute(context.Background(), executor.Batch{
						Calls: []model.ToolCall{{ID: "1", Name: "shell", Arguments: json.RawMessage(tc.args)}}, Tools: executor.Tools(tl)})
					require.NoError(t, err)
					assert.Equal(t, tool.StatusDenied, res[0].Status, "%s: %s", tc.name, res[0].Text())
				}
				assert.Zero(t, runs.Load(), "a refused call ran")
			})
		}
	}
}

// Permission prepares the arguments it is handed itself: a middleware
// outside it that rewrites them into a form the pipeline changes cannot
// slip a refused call past the policy, and a request made outside an
// executor is prepared too.
func TestPermissionPreparesRewrittenArguments(t *testing.T) {
	var runs atomic.Int32
	tl := shellTool(&runs)
	legacy := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		r := *req
		r.Call.Arguments = json.RawMessage(`{"cmd": "rm -rf /x", "count": "1"}`)
		return next.Handle(ctx, &r)
	})
	res, err := executor.Sequential(executor.WithMiddleware(legacy, middleware.Permission(naivePolicy))).Execute(context.Background(),
		executor.Batch{Calls: []model.ToolCall{{ID: "c", Name: "shell", Arguments: json.RawMessage(`{"command":"ls"}`)}}, Tools: executor.Tools(tl)})
	require.NoError(t, err)
	assert.Equal(t, tool.StatusDenied, res[0].Status, res[0].Text())

	r := handler(middleware.Permission(naivePolicy)).Handle(context.Background(), req(tl, "1", `{"cmd": "rm -rf /x"}`))
	assert.Equal(t, tool.StatusDenied, r.Status, r.Text())

	r = handler(middleware.Permission(naivePolicy)).Handle(context.Background(), req(tl, "1", `{"command": "rm -rf /x",}`))
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "without repair, broken arguments are refused before any check")
	assert.Zero(t, runs.Load())
}

// What the policy and the hooks see is what the tool runs with, byte for
// byte, and a PrepareArguments hook that does not give the same result
// twice runs once per call.
func TestPermissionPolicyAndToolSeeTheSameArguments(t *testing.T) {
	var (
		mu        sync.Mutex
		seen      []string
		hookRuns  atomic.Int32
		toolCalls atomic.Int32
	)
	record := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	tl, err := tool.New(model.ToolDefinition{Name: "shell", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"command":{"type":"string"},"count":{"type":"integer"}},"additionalProperties":false}`)},
		func(_ context.Context, _ string, args json.RawMessage) (tool.Result, error) {
			toolCalls.Add(1)
			record("tool " + string(args))
			return tool.Text("ran"), nil
		}, tool.WithPrepareArguments(func(m map[string]any) map[string]any {
			hookRuns.Add(1)
			m["command"] = "echo " + m["command"].(string) // not idempotent
			return m
		}))
	require.NoError(t, err)
	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		record("policy " + string(req.Call.Arguments))
		return tool.Allow(), nil
	})
	hooks := executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
		record("hook " + string(req.Call.Arguments))
		return nil, nil
	}}
	retry := middleware.Retry(middleware.WithMaxAttempts(2), middleware.WithClock(newFakeClock()),
		middleware.WithRetryOn(func(context.Context, middleware.RetryInfo) bool { return toolCalls.Load() < 2 }))
	ex := executor.Sequential(executor.WithJSONRepair(true), executor.WithHooks(hooks),
		executor.WithMiddleware(middleware.Permission(policy), retry, executor.Intercept(
			func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
				r := next.Handle(ctx, req)
				if toolCalls.Load() < 2 {
					r = tool.Errorf("once more")
				}
				return r
			})))
	res, err := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "1", Name: "shell", Arguments: json.RawMessage(`{command: 'hi', count: '2',}`)}}, Tools: executor.Tools(tl)})
	require.NoError(t, err)
	require.False(t, res[0].IsError, res[0].Text())
	const final = `{"command":"echo hi","count":2}`
	assert.Equal(t, []string{"hook " + final, "policy " + final, "tool " + final, "tool " + final}, seen)
	assert.Equal(t, int32(1), hookRuns.Load(), "the PrepareArguments hook ran more than once for the call")
}
