package middleware

import (
	"context"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/tool"
)

// Permission checks every call before it runs: the tool's own permission
// checker first (tool.PermissionChecker), then policy (which may be nil),
// as tool.Authorize does. A call that is not allowed does not run: it is
// answered with the structured result the model reads (Status denied,
// ErrorCode tool.CodePermissionDenied, or tool.CodeApprovalRequired for an
// ask). A check that fails refuses the call.
//
// The check sees the arguments the tool will run with: after the
// executor's BeforeCall hooks and the middleware outside this one, and
// after the tool's argument pipeline — JSON repair when the executor
// repairs, the tool's PrepareArguments hook, coercion toward its schema
// (executor.Request.Prepared) — and the rest of the chain is handed
// exactly those arguments. A call whose arguments the pipeline refuses is
// answered with the invalid-arguments result without being checked: its
// tool would not run. Calls of unknown tools pass through: there is
// nothing to run.
//
// Without this middleware the tool's own checker is still consulted, by
// the tool package right before the tool runs; a call this middleware
// allowed is marked (executor.Request.MarkAuthorized) so that the checker
// is not consulted twice for it — for requests an executor made, which
// carry the call's frame, and as long as the tool and arguments stay the
// same.
func Permission(policy tool.Policy) executor.Middleware {
	return func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			if req.Tool == nil {
				return next.Handle(ctx, req)
			}
			req, res, ok := req.Prepared()
			if !ok {
				return res
			}
			if r, ok := tool.Authorize(ctx, req.Tool, req.Call, policy); !ok {
				return r
			}
			req.MarkAuthorized()
			return next.Handle(ctx, req)
		})
	}
}
