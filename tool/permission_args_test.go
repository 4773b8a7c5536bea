package tool

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
)

// shellArgs are the arguments of the shell tools of these tests.
type shellArgs struct {
	Command string `json:"command"`
	Count   int    `json:"count,omitempty"`
}

// renameCmd is a PrepareArguments hook that takes the legacy key "cmd"
// for "command".
func renameCmd(m map[string]any) map[string]any {
	if c, ok := m["cmd"]; ok {
		m["command"] = c
		delete(m, "cmd")
	}
	return m
}

// naiveRefusal is a permission rule written as applications write them: it
// decodes the arguments it is shown, ignoring errors, and refuses rm and
// more than two repetitions.
func naiveRefusal(args json.RawMessage) Decision {
	var in shellArgs
	_ = json.Unmarshal(args, &in)
	if strings.HasPrefix(in.Command, "rm ") || in.Count > 2 {
		return Deny("not allowed")
	}
	return Allow()
}

// refusedArguments are calls a naive rule refuses once the arguments are
// what the tool runs with, one per step of the argument pipeline that
// changes them.
var refusedArguments = []struct{ name, args string }{
	{"trailing comma", `{"command": "rm -rf /x",}`},
	{"single quotes", `{'command': 'rm -rf /x'}`},
	{"fenced block", "```json\n{\"command\": \"rm -rf /x\"}\n```"},
	{"truncated object", `{"command": "rm -rf /x`},
	{"coerced number", `{"command": "ls /x", "count": "3"}`},
	{"prepared by the hook", `{"cmd": "rm -rf /x"}`},
}

// A tool's own permission checker sees the arguments after repair,
// PrepareArguments and coercion, so a rule it applies cannot be slipped past
// by arguments the pipeline changes on the way to the tool.
func TestOwnCheckerSeesTheArgumentsTheToolRunsWith(t *testing.T) {
	checker := PermissionCheckerFunc(func(_ context.Context, req PermissionRequest) (Decision, error) {
		return naiveRefusal(req.Call.Arguments), nil
	})
	builds := map[string]func(ran *int) Tool{
		"typed": func(ran *int) Tool {
			return MustFunc("shell", "", func(context.Context, shellArgs) (string, error) { *ran++; return "ran", nil },
				WithPrepareArguments(renameCmd), WithPermission(checker))
		},
		"raw": func(ran *int) Tool {
			tl, err := New(model.ToolDefinition{Name: "shell", InputSchema: json.RawMessage(
				`{"type":"object","properties":{"command":{"type":"string"},"count":{"type":"integer"}},"additionalProperties":false}`)},
				func(context.Context, string, json.RawMessage) (Result, error) { *ran++; return Text("ran"), nil },
				WithPrepareArguments(renameCmd), WithPermission(checker))
			require.NoError(t, err)
			return tl
		},
		"foreign": func(ran *int) Tool { return &foreignShell{ran: ran, checker: checker} },
	}
	for kind, build := range builds {
		for _, tc := range refusedArguments {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				var ran int
				tl := build(&ran)
				call := model.ToolCall{ID: "1", Name: "shell", Arguments: json.RawMessage(tc.args)}
				for _, r := range []Result{
					NewInvoker(WithJSONRepair(true)).Invoke(context.Background(), tl, call),
					Invoke(context.Background(), tl, call, WithJSONRepair(true)),
				} {
					assert.Equal(t, CodePermissionDenied, r.ErrorCode, r.Text())
				}
				assert.Zero(t, ran, "the tool ran")
			})
		}
	}
}

// A policy given to Invoke with WithPolicy judges the same final arguments
// as the tool's own checker, so a caller outside an executor can enforce a
// policy that repaired or prepared arguments cannot slip past.
func TestInvokePolicySeesTheArgumentsTheToolRunsWith(t *testing.T) {
	allowAll := PermissionCheckerFunc(func(context.Context, PermissionRequest) (Decision, error) { return Allow(), nil })
	var seen []string
	policy := PolicyFunc(func(_ context.Context, req PermissionRequest) (Decision, error) {
		seen = append(seen, string(req.Call.Arguments))
		return naiveRefusal(req.Call.Arguments), nil
	})
	for _, tc := range refusedArguments {
		t.Run(tc.name, func(t *testing.T) {
			var ran int
			tl := MustFunc("shell", "", func(context.Context, shellArgs) (string, error) { ran++; return "ran", nil },
				WithPrepareArguments(renameCmd))
			call := model.ToolCall{ID: "1", Name: "shell", Arguments: json.RawMessage(tc.args)}
			for _, r := range []Result{
				NewInvoker(WithJSONRepair(true), WithPolicy(policy)).Invoke(context.Background(), tl, call),
				Invoke(context.Background(), tl, call, WithJSONRepair(true), WithPolicy(policy)),
				Invoke(context.Background(), &foreignShell{ran: &ran, checker: allowAll}, call, WithJSONRepair(true), WithPolicy(policy)),
			} {
				assert.Equal(t, CodePermissionDenied, r.ErrorCode, r.Text())
			}
			assert.Zero(t, ran, "the tool ran")
		})
	}
	seen = nil
	r := Invoke(context.Background(), MustFunc("shell", "", func(context.Context, shellArgs) (string, error) { return "ran", nil }),
		model.ToolCall{ID: "2", Name: "shell", Arguments: json.RawMessage(`{"command": "ls",}`)}, WithJSONRepair(true), WithPolicy(policy))
	assert.False(t, r.IsError, r.Text())
	assert.Equal(t, []string{`{"command":"ls"}`}, seen, "the policy saw the repaired arguments")
}

// foreignShell is a shell tool of another package: it prepares and checks
// its own arguments through the interfaces.
type foreignShell struct {
	ran     *int
	checker PermissionChecker
}

func (f *foreignShell) Definition() model.ToolDefinition {
	return model.ToolDefinition{Name: "shell", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"command":{"type":"string"},"count":{"type":"integer"}}}`)}
}

func (f *foreignShell) Call(context.Context, string, json.RawMessage) (Result, error) {
	*f.ran++
	return Text("ran"), nil
}

func (f *foreignShell) PrepareArguments(m map[string]any) map[string]any { return renameCmd(m) }

func (f *foreignShell) CheckPermission(ctx context.Context, req PermissionRequest) (Decision, error) {
	return f.checker.CheckPermission(ctx, req)
}

// The checker and the tool see the same arguments, and a hook that does
// not give the same result twice runs once per call, whether the call was
// prepared beforehand (Prepare with the call's frame) or not.
func TestPreparedArgumentsRunAsTheCheckerSawThem(t *testing.T) {
	var (
		mu       sync.Mutex
		seen     []string
		hookRuns int
	)
	stamp := func(m map[string]any) map[string]any {
		mu.Lock()
		hookRuns++
		mu.Unlock()
		m["command"] = "echo " + m["command"].(string) // not idempotent
		return m
	}
	checker := PermissionCheckerFunc(func(_ context.Context, req PermissionRequest) (Decision, error) {
		seen = append(seen, "checker "+string(req.Call.Arguments))
		return Allow(), nil
	})
	tl := MustFunc("shell", "", func(_ context.Context, in shellArgs) (string, error) {
		b, _ := json.Marshal(in)
		seen = append(seen, "tool "+string(b))
		return "ok", nil
	}, WithPrepareArguments(stamp), WithPermission(checker))
	iv := NewInvoker(WithJSONRepair(true))
	call := model.ToolCall{ID: "1", Name: "shell", Arguments: json.RawMessage(`{command: 'hi', count: "2"}`)}

	r := iv.Invoke(context.Background(), tl, call)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, []string{`checker {"command":"echo hi","count":2}`, `tool {"command":"echo hi","count":2}`}, seen)
	assert.Equal(t, 1, hookRuns)

	seen, hookRuns = nil, 0
	var f callctx.Frame
	prepared, _, ok := iv.prepare(&f, tl, call)
	require.True(t, ok)
	assert.JSONEq(t, `{"command":"echo hi","count":2}`, string(prepared.Arguments))
	r = iv.invokeFrame(context.Background(), &f, tl, prepared)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, []string{`checker {"command":"echo hi","count":2}`, `tool {"command":"echo hi","count":2}`}, seen)
	assert.Equal(t, 1, hookRuns, "the hook ran again on prepared arguments")

	// Prepared arguments that were changed afterwards are prepared again.
	seen, hookRuns = nil, 0
	var g callctx.Frame
	prepared, _, ok = iv.prepare(&g, tl, call)
	require.True(t, ok)
	prepared.Arguments = json.RawMessage(`{"command":"bye"}`)
	r = iv.invokeFrame(context.Background(), &g, tl, prepared)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, []string{`checker {"command":"echo bye"}`, `tool {"command":"echo bye"}`}, seen)
}

// Prepare gives well-formed arguments back as they are, and refuses what
// the pipeline refuses with the result Invoke answers it with.
func TestPrepareArguments(t *testing.T) {
	tl := MustFunc("shell", "", func(context.Context, shellArgs) (string, error) { return "", nil })
	iv := NewInvoker(WithJSONRepair(true))
	good := json.RawMessage(`{"command":"ls"}`)
	got, _, ok := iv.Prepare(tl, model.ToolCall{Name: "shell", Arguments: good})
	require.True(t, ok)
	assert.Same(t, &good[0], &got.Arguments[0], "well-formed arguments are not copied")

	got, _, ok = iv.Prepare(tl, model.ToolCall{Name: "shell", Arguments: json.RawMessage(`{'command': 'ls', count: '4',}`)})
	require.True(t, ok)
	assert.JSONEq(t, `{"command":"ls","count":4}`, string(got.Arguments))

	_, r, ok := iv.Prepare(tl, model.ToolCall{Name: "shell", Arguments: json.RawMessage(`{"command": 3, "extra": true}`)})
	require.False(t, ok)
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Equal(t, StatusFailed, r.Status)
	assert.ErrorIs(t, r.Err, ErrInvalidArguments)

	_, r, ok = NewInvoker().Prepare(tl, model.ToolCall{Name: "shell", Arguments: json.RawMessage(`{"command": "ls",}`)})
	require.False(t, ok, "without repair, broken JSON is refused")
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)

	panicky := MustFunc("p", "", func(context.Context, shellArgs) (string, error) { return "", nil },
		WithPrepareArguments(func(map[string]any) map[string]any { panic("boom") }))
	_, r, ok = iv.Prepare(panicky, model.ToolCall{Name: "p", Arguments: good})
	require.False(t, ok)
	assert.Equal(t, CodePanic, r.ErrorCode)
}
