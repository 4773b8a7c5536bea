package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
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
					c.Ran()
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

// The tool's own checker is consulted once per call: by Permission when it
// is in the chain (the call then runs without a second check, on every
// attempt of a retry inside it), and by the tool package when it is not
// (the call's frame, which the executor's requests carry, remembers it for
// the next attempts).
func TestToolsOwnCheckerIsConsultedOncePerCall(t *testing.T) {
	var checks atomic.Int32
	var attempts atomic.Int32
	tl, err := tool.New(model.ToolDefinition{Name: "flaky", InputSchema: objectSchema},
		func(context.Context, string, json.RawMessage) (tool.Result, error) {
			if attempts.Add(1) < 3 {
				return tool.Result{}, errors.New("transient")
			}
			return tool.Text("ran"), nil
		}, tool.WithPermission(tool.PermissionCheckerFunc(func(context.Context, tool.PermissionRequest) (tool.Decision, error) {
			checks.Add(1)
			return tool.Allow(), nil
		})))
	require.NoError(t, err)
	retry := middleware.Retry(middleware.WithMaxAttempts(3), middleware.WithClock(newFakeClock()),
		middleware.WithRetryOn(func(context.Context, middleware.RetryInfo) bool { return true }))
	run := func(mws ...executor.Middleware) {
		t.Helper()
		attempts.Store(0)
		checks.Store(0)
		res, err := executor.Sequential(executor.WithMiddleware(mws...)).Execute(context.Background(),
			executor.Batch{Calls: []model.ToolCall{{ID: "c", Name: "flaky", Arguments: json.RawMessage(`{}`)}}, Tools: executor.Tools(tl)})
		require.NoError(t, err)
		assert.Equal(t, "ran", res[0].Text())
		assert.Equal(t, int32(3), attempts.Load())
	}

	run(middleware.Permission(nil), retry)
	assert.Equal(t, int32(1), checks.Load(), "checked by Permission alone")

	run(retry)
	assert.Equal(t, int32(1), checks.Load(), "without Permission, the tool package checks the first attempt")

	// Attempts that time out and are abandoned, with Permission inside the
	// retry: the call's mark is shared safely (run with -race).
	run(retry, middleware.Timeout(time.Second), middleware.Permission(nil))
	assert.Equal(t, int32(3), checks.Load(), "Permission inside the retry checks every attempt")
}

// Permission's mark holds for the call it checked: a middleware after it
// that hands the rest of the chain other arguments gets them checked.
func TestPermissionMarkHoldsForTheCheckedCallOnly(t *testing.T) {
	rm, err := tool.New(model.ToolDefinition{Name: "rm", InputSchema: objectSchema},
		func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Text("removed"), nil },
		tool.WithPermission(tool.PermissionCheckerFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
			if strings.Contains(string(req.Call.Arguments), "/etc") {
				return tool.Deny("not /etc"), nil
			}
			return tool.Allow(), nil
		})))
	require.NoError(t, err)
	redirect := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		r := *req
		r.Call.Arguments = json.RawMessage(`{"path":"/etc/passwd"}`)
		return next.Handle(ctx, &r)
	})
	res, err := executor.Sequential(executor.WithMiddleware(middleware.Permission(nil), redirect)).Execute(context.Background(),
		executor.Batch{Calls: []model.ToolCall{{ID: "c", Name: "rm", Arguments: json.RawMessage(`{"path":"/tmp/x"}`)}}, Tools: executor.Tools(rm)})
	require.NoError(t, err)
	assert.Equal(t, tool.StatusDenied, res[0].Status, "the rewritten call was checked")
	assert.Contains(t, res[0].Text(), "not /etc")
}
