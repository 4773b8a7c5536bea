package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

type shellArgs struct {
	Command string `json:"command"`
	Count   int    `json:"count,omitempty"`
}

// refusesRM is a permission rule written as applications write them: it
// decodes the arguments it is shown, ignoring errors, and refuses rm and
// more than two repetitions.
func refusesRM(args json.RawMessage) tool.Decision {
	var in shellArgs
	_ = json.Unmarshal(args, &in)
	if strings.HasPrefix(in.Command, "rm ") || in.Count > 2 {
		return tool.Deny("not allowed")
	}
	return tool.Allow()
}

// An agent whose arguments are repaired — by its own option or by its
// executor's — checks its calls on the arguments its tools run with:
// repaired, prepared and coerced. A refused call never runs, whichever
// check refuses it.
func TestAgentChecksTheArgumentsItsToolsRunWith(t *testing.T) {
	refused := []string{
		`{"command": "rm -rf /x",}`,
		`{'command': 'rm -rf /x'}`,
		"```json\n{\"command\": \"rm -rf /x\"}\n```",
		`{"command": "rm -rf /x`,
		`{"command": "ls /x", "count": "3"}`,
		`{"cmd": "rm -rf /x"}`,
	}
	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		return refusesRM(req.Call.Arguments), nil
	})
	checker := tool.PermissionCheckerFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		return refusesRM(req.Call.Arguments), nil
	})
	repairs := map[string]agent.Option{
		"agent option":    agent.WithArgumentRepair(),
		"executor option": agent.WithExecutorOptions(executor.WithJSONRepair(true)),
	}
	checks := map[string]func(runs *atomic.Int32) []agent.Option{
		"policy": func(runs *atomic.Int32) []agent.Option {
			return []agent.Option{agent.WithTools(shell(runs)), agent.WithMiddleware(middleware.Permission(policy))}
		},
		"tool's checker": func(runs *atomic.Int32) []agent.Option {
			return []agent.Option{agent.WithTools(shell(runs, tool.WithPermission(checker)))}
		},
	}
	for rn, repair := range repairs {
		for cn, check := range checks {
			t.Run(rn+"/"+cn, func(t *testing.T) {
				calls := make([]model.ToolCall, len(refused))
				for i, args := range refused {
					calls[i] = model.ToolCall{ID: string(rune('a' + i)), Name: "shell", Arguments: json.RawMessage(args)}
				}
				m := scripted.New(scripted.CallTools(calls...), scripted.Reply("done"))
				var runs atomic.Int32
				g, err := agent.NewReAct(m, append(check(&runs), repair)...)
				require.NoError(t, err)
				out, err := g.Invoke(context.Background(), agent.Ask("clean up"))
				require.NoError(t, err)
				assert.Zero(t, runs.Load(), "a refused call ran")
				var denied int
				for _, msg := range out.Messages {
					if msg.Role == model.RoleTool {
						assert.Contains(t, msg.Text(), tool.CodePermissionDenied, msg.ToolCallID)
						denied++
					}
				}
				assert.Equal(t, len(refused), denied)
			})
		}
	}
}

// shell is a typed tool that takes the legacy key "cmd" for "command" and
// counts its runs.
func shell(runs *atomic.Int32, opts ...tool.Option) tool.Tool {
	return tool.MustFunc("shell", "runs a command", func(context.Context, shellArgs) (string, error) {
		runs.Add(1)
		return "ran", nil
	}, append(opts, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}),
		tool.WithPrepareArguments(func(m map[string]any) map[string]any {
			if c, ok := m["cmd"]; ok {
				m["command"] = c
				delete(m, "cmd")
			}
			return m
		}))...)
}
