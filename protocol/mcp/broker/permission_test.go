package broker

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

// shellArgs are the arguments of the remote shell tool of these tests.
type shellArgs struct {
	Command string `json:"command"`
	Count   int    `json:"count,omitempty"`
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

// The broker's policy judges the arguments the remote tool runs with:
// those the model wrote, repaired by the executor's invoker when they were
// almost-JSON, taken out of the JSON string they came in, and coerced
// toward the remote tool's schema; a call it refuses reaches no server.
func TestBrokerPolicySeesTheArgumentsTheRemoteToolRunsWith(t *testing.T) {
	var ran atomic.Int32
	url := serve(t, "shell", tool.MustFunc("shell", "Runs a command.", func(_ context.Context, in shellArgs) (string, error) {
		ran.Add(1)
		return "ran " + in.Command, nil
	}))
	b, err := New(WithServers(mcp.Config{Name: "shell", URL: url}), WithPolicy(refuseRm))
	require.NoError(t, err)
	defer b.Close()
	// As an executor that repairs the arguments runs mcp_call_tool.
	call := func(t *testing.T, args string) tool.Result {
		t.Helper()
		tools, err := b.Tools(context.Background())
		require.NoError(t, err)
		for _, x := range tools {
			if tool.Name(x) == CallToolTool {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				c := model.ToolCall{ID: "call_1", Name: CallToolTool, Arguments: json.RawMessage(args)}
				return tool.Invoke(ctx, x, c, tool.WithJSONRepair(true))
			}
		}
		t.Fatalf("no %s tool", CallToolTool)
		return tool.Result{}
	}
	for _, tc := range []struct{ name, args string }{
		{"as sent", `{"server": "shell", "tool": "shell", "arguments": {"command": "rm -rf /x"}}`},
		{"an object sent as a JSON string", `{"server": "shell", "tool": "shell", "arguments": "{\"command\": \"rm -rf /x\"}"}`},
		{"coerced number", `{"server": "shell", "tool": "shell", "arguments": {"command": "ls /x", "count": "3"}}`},
		{"coerced number in a JSON string", `{"server": "shell", "tool": "shell", "arguments": "{\"command\": \"ls /x\", \"count\": \"3\"}"}`},
		{"trailing comma", `{"server": "shell", "tool": "shell", "arguments": {"command": "rm -rf /x",},}`},
		{"single quotes", `{'server': 'shell', 'tool': 'shell', 'arguments': {'command': 'rm -rf /x'}}`},
		{"fenced block", "```json\n{\"server\": \"shell\", \"tool\": \"shell\", \"arguments\": {\"command\": \"rm -rf /x\"}}\n```"},
		{"truncated object", `{"server": "shell", "tool": "shell", "arguments": {"command": "rm -rf /x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.args)
			assert.Equal(t, tool.StatusDenied, r.Status, r.Text())
			assert.Contains(t, r.Text(), "not allowed")
			assert.Zero(t, ran.Load(), "the remote tool ran")
		})
	}
	t.Run("almost-JSON in a string", func(t *testing.T) {
		r := call(t, `{"server": "shell", "tool": "shell", "arguments": "{'command': 'rm -rf /x',}"}`)
		assert.True(t, r.IsError)
		assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, r.Text())
		assert.Zero(t, ran.Load(), "the remote tool ran")
	})
	r := call(t, `{"server": "shell", "tool": "shell", "arguments": {"command": "ls /x", "count": "2"}}`)
	assert.False(t, r.IsError, r.Text())
	assert.Equal(t, "ran ls /x", r.Text(), "an allowed call runs with the arguments the policy saw")
	assert.EqualValues(t, 1, ran.Load())
}
