package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// shellArgs are the arguments of the served shell tool of these tests.
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

// refuseRm is a permission policy written as applications write them: it
// decodes the arguments it is shown, ignoring errors, and refuses rm and
// more than two repetitions.
var refuseRm = tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
	var in shellArgs
	_ = json.Unmarshal(req.Call.Arguments, &in)
	if strings.HasPrefix(in.Command, "rm ") || in.Count > 2 {
		return tool.Deny("not allowed"), nil
	}
	return tool.Allow(), nil
})

// almostJSON are arguments a model writes that JSON repair turns into a
// call the policy refuses.
var almostJSON = []struct{ name, args string }{
	{"trailing comma", `{"command": "rm -rf /x",}`},
	{"single quotes", `{'command': 'rm -rf /x'}`},
	{"fenced block", "```json\n{\"command\": \"rm -rf /x\"}\n```"},
	{"truncated object", `{"command": "rm -rf /x`},
}

// shellServer serves a shell tool, which counts its runs in ran, behind
// refuseRm, with JSON repair on.
func shellServer(t *testing.T, ran *atomic.Int32) *Server {
	t.Helper()
	shell := tool.MustFunc("shell", "Runs a command.", func(_ context.Context, in shellArgs) (string, error) {
		ran.Add(1)
		return "ran " + in.Command, nil
	}, tool.WithPrepareArguments(renameCmd))
	srv, err := NewServer(context.Background(), tool.NewStatic("shell", shell),
		WithPolicy(refuseRm), WithInvokeOptions(tool.WithJSONRepair(true)))
	require.NoError(t, err)
	return srv
}

// The server's policy judges the arguments the tool runs with — coerced
// toward its schema, rewritten by its PrepareArguments hook, decoded from
// the JSON string a client sent them in — so arguments the pipeline
// changes on the way to the tool cannot slip past it.
func TestServerPolicySeesTheArgumentsTheToolRunsWith(t *testing.T) {
	var ran atomic.Int32
	cs := goClient(t, shellServer(t, &ran), nil)
	for _, tc := range []struct {
		name string
		args any
	}{
		{"as sent", map[string]any{"command": "rm -rf /x"}},
		{"an object sent as a JSON string", `{"command": "rm -rf /x"}`},
		{"coerced number", map[string]any{"command": "ls /x", "count": "3"}},
		{"prepared by the hook", map[string]any{"cmd": "rm -rf /x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := callGo(t, cs, "shell", tc.args)
			assert.True(t, res.IsError)
			assert.Contains(t, textOf(res), "not allowed")
			assert.Zero(t, ran.Load(), "the tool ran")
		})
	}
	// Almost-JSON reaches an MCP server only inside a JSON string (the
	// protocol's messages are JSON): the tool refuses it, and runs nothing.
	for _, tc := range almostJSON {
		t.Run("in a string/"+tc.name, func(t *testing.T) {
			res := callGo(t, cs, "shell", tc.args)
			assert.True(t, res.IsError)
			assert.Zero(t, ran.Load(), "the tool ran")
		})
	}
	res := callGo(t, cs, "shell", map[string]any{"cmd": "ls /x", "count": "2"})
	assert.False(t, res.IsError, textOf(res))
	assert.Equal(t, "ran ls /x", textOf(res), "an allowed call runs with the arguments the policy saw")
	assert.EqualValues(t, 1, ran.Load())
}

// A model's almost-JSON, repaired by the invoker of the client's side,
// reaches the server as the call the policy refuses.
func TestServerPolicyRefusesRepairedArguments(t *testing.T) {
	var ran atomic.Int32
	ts := memToolset(t, shellServer(t, &ran))
	tools, err := ts.Tools(context.Background())
	require.NoError(t, err)
	require.Len(t, tools, 1)
	for _, tc := range almostJSON {
		t.Run(tc.name, func(t *testing.T) {
			call := model.ToolCall{ID: "call_1", Name: "shell", Arguments: json.RawMessage(tc.args)}
			r := tool.Invoke(context.Background(), tools[0], call, tool.WithJSONRepair(true))
			assert.True(t, r.IsError)
			assert.Contains(t, r.Text(), "not allowed")
			assert.Zero(t, ran.Load(), "the tool ran")
		})
	}
}
