package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trellis-go/trellis/model"
)

// Verdict is the answer of a permission check.
type Verdict string

// The verdicts.
const (
	// VerdictAllow lets the call run.
	VerdictAllow Verdict = "allow"
	// VerdictDeny refuses the call; the model receives a structured denied
	// result.
	VerdictDeny Verdict = "deny"
	// VerdictAsk refuses the call until someone approves it; the model
	// receives a structured approval-required result. An application with an
	// approval flow asks inside its policy and allows after approval.
	VerdictAsk Verdict = "ask"
)

// Decision is a permission check's verdict with its reason. The zero
// Decision allows.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	// Reason explains a deny; for ask it is what to ask (for example
	// "delete 3 files under /srv/data?").
	Reason string `json:"reason,omitempty"`
}

// Allow returns a decision that lets the call run.
func Allow() Decision { return Decision{Verdict: VerdictAllow} }

// Deny returns a decision that refuses the call for reason.
func Deny(reason string) Decision { return Decision{Verdict: VerdictDeny, Reason: reason} }

// Ask returns a decision that holds the call until it is approved; question
// is what to ask.
func Ask(question string) Decision { return Decision{Verdict: VerdictAsk, Reason: question} }

// Allowed reports whether d lets the call run. An empty verdict allows; a
// verdict this package does not know refuses.
func (d Decision) Allowed() bool { return d.Verdict == VerdictAllow || d.Verdict == "" }

// PermissionRequest is what a permission check sees of a call.
type PermissionRequest struct {
	// Tool is the tool about to run.
	Tool Tool
	// Call is the call, with its final arguments: those the tool runs
	// with, after JSON repair, PrepareArguments and coercion (see
	// Invoker.Prepare). The framework's checks pass them so.
	Call model.ToolCall
	// Metadata is the tool's metadata.
	Metadata Metadata
}

// PermissionChecker is implemented by tools that enforce their own
// permission rule (see WithPermission). It is consulted before the run's
// Policy.
type PermissionChecker interface {
	CheckPermission(ctx context.Context, req PermissionRequest) (Decision, error)
}

// PermissionCheckerFunc adapts a function to PermissionChecker.
type PermissionCheckerFunc func(ctx context.Context, req PermissionRequest) (Decision, error)

// CheckPermission calls f.
func (f PermissionCheckerFunc) CheckPermission(ctx context.Context, req PermissionRequest) (Decision, error) {
	return f(ctx, req)
}

// Policy is a run-level permission policy, consulted for every call the
// framework is about to execute, after the tool's own checker.
type Policy interface {
	Decide(ctx context.Context, req PermissionRequest) (Decision, error)
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(ctx context.Context, req PermissionRequest) (Decision, error)

// Decide calls f.
func (f PolicyFunc) Decide(ctx context.Context, req PermissionRequest) (Decision, error) {
	return f(ctx, req)
}

// CheckPermission decides whether call of t may run: t's own checker first,
// then policy (which may be nil). The first decision that does not allow
// wins; with neither a checker nor a policy the call is allowed. An error
// from either is returned with a deny decision whose reason says which
// check failed but not why: the error, which may describe the
// application's internals, is for the caller, not the model.
//
// The checks judge call's arguments as given. Give them the call that
// Invoker.Prepare returns, and run the tool with that same call: arguments
// as the model sent them may still be repaired, prepared or coerced on the
// way to the tool, and a check of those would judge other arguments than
// the tool runs with.
func CheckPermission(ctx context.Context, t Tool, call model.ToolCall, policy Policy) (Decision, error) {
	var c PermissionChecker
	if p := ownProfile(t); p != nil {
		c = p.checker
	} else {
		c, _ = As[PermissionChecker](t)
	}
	return check(ctx, t, c, MetadataOf(t), call, policy)
}

// check is CheckPermission with t's checker (nil for none) and metadata.
func check(ctx context.Context, t Tool, c PermissionChecker, meta Metadata, call model.ToolCall, policy Policy) (Decision, error) {
	req := PermissionRequest{Tool: t, Call: call, Metadata: meta}
	if c != nil {
		d, err := c.CheckPermission(ctx, req)
		if err != nil {
			return Deny("the tool's permission check failed"), fmt.Errorf("tool %q: permission check: %w", call.Name, err)
		}
		if !d.Allowed() {
			return d, nil
		}
	}
	if policy != nil {
		d, err := policy.Decide(ctx, req)
		if err != nil {
			return Deny("the permission policy failed"), fmt.Errorf("tool %q: permission policy: %w", call.Name, err)
		}
		if !d.Allowed() {
			return d, nil
		}
	}
	return Allow(), nil
}

// Authorize runs CheckPermission and reports whether the call may run.
// When it may not, the returned result is what the model receives instead:
// a structured denied result (ErrorCode CodePermissionDenied, or
// CodeApprovalRequired for ask). A failing check refuses the call. Like
// CheckPermission, it judges call's arguments as given: pass the call
// Invoker.Prepare returns.
func Authorize(ctx context.Context, t Tool, call model.ToolCall, policy Policy) (Result, bool) {
	d, err := CheckPermission(ctx, t, call, policy)
	return authorized(call, d, err)
}

// authorize is Authorize with t's checker (nil for none) and metadata.
func authorize(ctx context.Context, t Tool, c PermissionChecker, meta Metadata, call model.ToolCall, policy Policy) (Result, bool) {
	d, err := check(ctx, t, c, meta, call, policy)
	return authorized(call, d, err)
}

// authorized returns what Authorize does for the decision d and the error
// err of a check.
func authorized(call model.ToolCall, d Decision, err error) (Result, bool) {
	if err == nil && d.Allowed() {
		return Result{}, true
	}
	r := d.Result(call)
	if err != nil {
		r.Err = &PermissionError{Tool: call.Name, Decision: d, Cause: err}
	}
	return r, false
}

// PermissionError is the error behind a denied result.
type PermissionError struct {
	// Tool is the tool's name.
	Tool string
	// Decision is the decision that refused the call.
	Decision Decision
	// Cause is the error of a check that failed, if any.
	Cause error
}

// Error says which tool was refused and why.
func (e *PermissionError) Error() string {
	if e.Decision.Verdict == VerdictAsk {
		return fmt.Sprintf("tool %q needs approval: %s", e.Tool, e.Decision.Reason)
	}
	return fmt.Sprintf("tool %q is not permitted: %s", e.Tool, e.Decision.Reason)
}

// Is reports whether target is ErrPermission.
func (e *PermissionError) Is(target error) bool { return target == ErrPermission }

// Unwrap returns the error of a failed check.
func (e *PermissionError) Unwrap() error { return e.Cause }

// Result returns the result the model receives for a call d refuses: a JSON
// object the model can read, such as
//
//	{"error":"permission_denied","tool":"delete_file","reason":"..."}
//
// or, for ask, {"error":"approval_required",...,"arguments":{...}}. Status
// is StatusDenied and Details holds d. For a decision that allows, Result
// returns the zero Result.
func (d Decision) Result(call model.ToolCall) Result {
	if d.Allowed() {
		return Result{}
	}
	code := CodePermissionDenied
	if d.Verdict == VerdictAsk {
		code = CodeApprovalRequired
	}
	body := struct {
		Error     string          `json:"error"`
		Tool      string          `json:"tool"`
		Reason    string          `json:"reason,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Message   string          `json:"message"`
	}{Error: code, Tool: call.Name, Reason: d.Reason}
	if d.Verdict == VerdictAsk {
		if json.Valid(call.Arguments) {
			body.Arguments = call.Arguments
		}
		body.Message = "The call was not run: it needs approval first."
	} else {
		body.Message = "The call was not run: it is not permitted."
	}
	raw, _ := json.Marshal(body)
	return Result{
		Content:   []model.Part{model.JSONPart(raw)},
		Details:   d,
		IsError:   true,
		Status:    StatusDenied,
		ErrorCode: code,
		Err:       &PermissionError{Tool: call.Name, Decision: d},
	}
}
