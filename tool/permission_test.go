package tool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
)

func TestCheckPermissionOrder(t *testing.T) {
	var order []string
	checker := func(d Decision) PermissionCheckerFunc {
		return func(_ context.Context, req PermissionRequest) (Decision, error) {
			order = append(order, "tool:"+req.Call.Name)
			return d, nil
		}
	}
	policy := func(d Decision) PolicyFunc {
		return func(_ context.Context, req PermissionRequest) (Decision, error) {
			order = append(order, "policy")
			assert.True(t, req.Metadata.Destructive)
			return d, nil
		}
	}
	fn := func(context.Context, searchArgs) (string, error) { return "", nil }
	c := model.ToolCall{ID: "1", Name: "rm", Arguments: json.RawMessage(`{"query":"/tmp"}`)}
	meta := WithMetadata(Metadata{Destructive: true})

	cases := []struct {
		name      string
		tool      Tool
		policy    Policy
		want      Verdict
		wantOrder []string
	}{
		{"nothing configured", MustFunc("rm", "", fn), nil, VerdictAllow, nil},
		{"tool allows, policy asks", MustFunc("rm", "", fn, meta, WithPermission(checker(Allow()))), policy(Ask("really?")), VerdictAsk, []string{"tool:rm", "policy"}},
		{"tool denies first", MustFunc("rm", "", fn, meta, WithPermission(checker(Deny("never")))), policy(Allow()), VerdictDeny, []string{"tool:rm"}},
		{"policy only", MustFunc("rm", "", fn, meta), policy(Deny("not today")), VerdictDeny, []string{"policy"}},
		{"both allow", MustFunc("rm", "", fn, meta, WithPermission(checker(Allow()))), policy(Allow()), VerdictAllow, []string{"tool:rm", "policy"}},
		{"zero decision allows", MustFunc("rm", "", fn, meta, WithPermission(checker(Decision{}))), policy(Decision{}), VerdictAllow, []string{"tool:rm", "policy"}},
		{"unknown verdict refuses", MustFunc("rm", "", fn, meta), policy(Decision{Verdict: "maybe"}), "maybe", []string{"policy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			order = nil
			d, err := CheckPermission(context.Background(), tc.tool, c, tc.policy)
			require.NoError(t, err)
			assert.Equal(t, tc.want, d.Verdict)
			assert.Equal(t, tc.wantOrder, order)
		})
	}
}

func TestAuthorizeResults(t *testing.T) {
	fn := func(context.Context, searchArgs) (string, error) { return "", nil }
	tool := MustFunc("rm", "", fn)
	c := model.ToolCall{ID: "1", Name: "rm", Arguments: json.RawMessage(`{"query":"/tmp"}`)}

	r, ok := Authorize(context.Background(), tool, c, nil)
	assert.True(t, ok)
	assert.Equal(t, Result{}, r)

	r, ok = Authorize(context.Background(), tool, c, PolicyFunc(func(context.Context, PermissionRequest) (Decision, error) {
		return Deny("outside working hours"), nil
	}))
	assert.False(t, ok)
	assert.Equal(t, StatusDenied, r.Status)
	assert.True(t, r.IsError)
	assert.Equal(t, CodePermissionDenied, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrPermission)
	require.Len(t, r.Content, 1)
	assert.JSONEq(t, `{"error":"permission_denied","tool":"rm","reason":"outside working hours","message":"The call was not run: it is not permitted."}`, string(r.Content[0].JSON))
	assert.Equal(t, Deny("outside working hours"), r.Details)

	r, ok = Authorize(context.Background(), tool, c, PolicyFunc(func(context.Context, PermissionRequest) (Decision, error) {
		return Ask("delete /tmp?"), nil
	}))
	assert.False(t, ok)
	assert.Equal(t, CodeApprovalRequired, r.ErrorCode)
	assert.JSONEq(t, `{"error":"approval_required","tool":"rm","reason":"delete /tmp?","arguments":{"query":"/tmp"},"message":"The call was not run: it needs approval first."}`, string(r.Content[0].JSON))
	var perr *PermissionError
	require.ErrorAs(t, r.Err, &perr)
	assert.Equal(t, `tool "rm" needs approval: delete /tmp?`, perr.Error())

	// A failing check refuses the call.
	boom := errors.New("policy store down")
	r, ok = Authorize(context.Background(), tool, c, PolicyFunc(func(context.Context, PermissionRequest) (Decision, error) {
		return Decision{}, boom
	}))
	assert.False(t, ok)
	assert.Equal(t, StatusDenied, r.Status)
	assert.ErrorIs(t, r.Err, boom)
	assert.JSONEq(t, `{"error":"permission_denied","tool":"rm","reason":"the permission policy failed","message":"The call was not run: it is not permitted."}`, string(r.Content[0].JSON))
	assert.NotContains(t, string(r.Content[0].JSON), "policy store down", "the model is not told the application's internals")
}

// Invoke consults the tool's own checker before the tool runs, whoever
// invokes it: a call it refuses is answered with the denied result and the
// body never runs. A frame marked authorized (a permission middleware ran
// the check) skips it, also when the call is retried with that frame.
func TestInvokeEnforcesTheToolsOwnChecker(t *testing.T) {
	var checks, runs int
	verdict := Allow()
	var failure error
	rm := MustFunc("rm", "", func(context.Context, searchArgs) (string, error) {
		runs++
		return "removed", nil
	}, WithPermission(PermissionCheckerFunc(func(ctx context.Context, req PermissionRequest) (Decision, error) {
		checks++
		assert.Equal(t, "c1", CallID(ctx), "the check runs in the call's context")
		assert.Contains(t, string(req.Call.Arguments), `"query"`, "the check sees the call's arguments")
		return verdict, failure
	})))
	c := model.ToolCall{ID: "c1", Name: "rm", Arguments: json.RawMessage(`{"query":"/tmp"}`)}
	ctx := context.Background()

	r := Invoke(ctx, rm, c)
	assert.Equal(t, "removed", r.Text())
	assert.Equal(t, 1, checks)

	verdict = Deny("never on Fridays")
	r = Invoke(ctx, rm, c)
	assert.Equal(t, StatusDenied, r.Status)
	assert.Equal(t, CodePermissionDenied, r.ErrorCode)
	assert.Contains(t, r.Text(), "never on Fridays")
	assert.Equal(t, 1, runs, "a denied call does not run")

	verdict = Ask("sure?")
	r = Invoke(ctx, rm, c)
	assert.Equal(t, CodeApprovalRequired, r.ErrorCode)

	verdict, failure = Allow(), errors.New("directory service down")
	r = Invoke(ctx, rm, c)
	assert.Equal(t, StatusDenied, r.Status)
	assert.ErrorIs(t, r.Err, ErrPermission)
	assert.NotContains(t, r.Text(), "directory service", "the model does not read the check's error")
	assert.Equal(t, 1, runs)

	// Checked already: the checker is not consulted again, on a retry
	// with the same frame either.
	checks, failure, verdict = 0, nil, Deny("would refuse")
	var f callctx.Frame
	f.MarkAuthorized(rm, c)
	var iv Invoker
	assert.Equal(t, "removed", iv.invokeFrame(ctx, &f, rm, c).Text())
	assert.Equal(t, "removed", iv.invokeFrame(ctx, &f, rm, c).Text(), "the used frame's mark passes on")
	assert.Zero(t, checks)

	// The mark is for that tool and those arguments: the same frame handed
	// other arguments, or another tool, is checked.
	other := c
	other.Arguments = json.RawMessage(`{"query":"/etc"}`)
	r = iv.invokeFrame(ctx, &f, rm, other)
	assert.Equal(t, StatusDenied, r.Status, "other arguments are checked")
	rm2 := MustFunc("rm", "", func(context.Context, searchArgs) (string, error) { return "removed too", nil },
		WithPermission(PermissionCheckerFunc(func(context.Context, PermissionRequest) (Decision, error) { return Deny("not this one"), nil })))
	r = iv.invokeFrame(ctx, &f, rm2, c)
	assert.Contains(t, r.Text(), "not this one", "another tool is checked")

	// An allowed check is remembered for the same call only.
	checks, verdict = 0, Allow()
	var g callctx.Frame
	assert.Equal(t, "removed", iv.invokeFrame(ctx, &g, rm, c).Text())
	assert.Equal(t, "removed", iv.invokeFrame(ctx, &g, rm, c).Text())
	assert.Equal(t, 1, checks, "the retry was not checked again")
	verdict = Deny("no")
	assert.Equal(t, StatusDenied, iv.invokeFrame(ctx, &g, rm, other).Status)

	// A tool of another package that implements PermissionChecker is
	// held to it too.
	r = Invoke(ctx, &checkedTool{Tool: MustFunc("ls", "", func(context.Context, searchArgs) (string, error) { return "x", nil })}, model.ToolCall{ID: "c2", Name: "ls", Arguments: json.RawMessage(`{"query":"/"}`)})
	assert.Equal(t, StatusDenied, r.Status)
	assert.Contains(t, r.Text(), "read-only day")
}

// checkedTool wraps a tool with a permission rule of its own.
type checkedTool struct{ Tool }

func (c *checkedTool) CheckPermission(context.Context, PermissionRequest) (Decision, error) {
	return Deny("read-only day"), nil
}
