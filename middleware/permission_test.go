package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestPermission(t *testing.T) {
	destructive := tool.Metadata{Destructive: true}
	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		switch {
		case req.Call.Name == "broken":
			return tool.Decision{}, errors.New("policy store unreachable")
		case req.Metadata.Destructive:
			return tool.Ask("delete the files?"), nil
		case req.Call.Name == "forbidden":
			return tool.Deny("not for this user"), nil
		}
		return tool.Allow(), nil
	})
	cases := []struct {
		name   string
		tool   string
		meta   tool.Metadata
		opts   []tool.Option
		policy tool.Policy
		code   string
		runs   int64
	}{
		{"allowed", "read", tool.Metadata{}, nil, policy, "", 1},
		{"denied by the policy", "forbidden", tool.Metadata{}, nil, policy, tool.CodePermissionDenied, 0},
		{"ask", "wipe", destructive, nil, policy, tool.CodeApprovalRequired, 0},
		{"failing policy", "broken", tool.Metadata{}, nil, policy, tool.CodePermissionDenied, 0},
		{"nil policy allows", "read", tool.Metadata{}, nil, nil, "", 1},
		{"the tool's own checker first", "read", tool.Metadata{}, []tool.Option{tool.WithPermission(tool.PermissionCheckerFunc(
			func(context.Context, tool.PermissionRequest) (tool.Decision, error) {
				return tool.Deny("tool says no"), nil
			}))}, policy, tool.CodePermissionDenied, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &counted{}
			tl, err := tool.New(model.ToolDefinition{Name: tc.tool, InputSchema: objectSchema},
				func(context.Context, string, json.RawMessage) (tool.Result, error) {
					c.runs.Add(1)
					return tool.Text("ran"), nil
				}, append(tc.opts, tool.WithMetadata(tc.meta))...)
			require.NoError(t, err)
			c.Tool = tl
			r := handler(middleware.Permission(tc.policy)).Handle(context.Background(), req(c, "1", `{"path":"/srv"}`))
			assert.Equal(t, tc.runs, c.Runs())
			if tc.code == "" {
				assert.Equal(t, "ran", r.Text())
				return
			}
			assert.Equal(t, tc.code, r.ErrorCode)
			assert.Equal(t, tool.StatusDenied, r.Status)
			assert.ErrorIs(t, r.Err, tool.ErrPermission)
		})
	}
}

func TestPermissionUnknownToolPassesThrough(t *testing.T) {
	denyAll := tool.PolicyFunc(func(context.Context, tool.PermissionRequest) (tool.Decision, error) { return tool.Deny("no"), nil })
	r := handler(middleware.Permission(denyAll)).Handle(context.Background(), req(nil, "1", ""))
	assert.Equal(t, tool.CodeUnknownTool, r.ErrorCode)
}
