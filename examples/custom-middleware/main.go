package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// CodeBudgetExhausted is the error code of a call refused by callBudget.
const CodeBudgetExhausted = "budget_exhausted"

// callBudget lets each tool be called at most n times through the chains
// built with it, across batches (the model's turns). Its state (the counts)
// is created once, before the Middleware is returned, so every chain built
// from this value shares it; a mutex guards it because the parallel
// executor handles calls at once. It is keyed by tool name, never by call
// ID.
func callBudget(n int) executor.Middleware {
	var (
		mu   sync.Mutex
		used = map[string]int{}
	)
	return func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			if req.Tool == nil { // unknown tool: nothing to count
				return next.Handle(ctx, req)
			}
			mu.Lock()
			used[req.Call.Name]++
			k := used[req.Call.Name]
			mu.Unlock()
			if k > n {
				// An error result, not a Go error: the model reads it and the
				// run goes on.
				return tool.ErrorResult(CodeBudgetExhausted,
					fmt.Errorf("tool %q may be called at most %d times in this conversation", req.Call.Name, n))
			}
			return next.Handle(ctx, req)
		})
	}
}

// upperOrderIDs rewrites the "order" argument to upper case before the
// rest of the chain sees it. It changes a copy of the request: the call
// keeps its ID, and the executor's request stays as the model sent it.
func upperOrderIDs(next executor.Handler) executor.Handler {
	return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
		var args map[string]any
		if json.Unmarshal(req.Call.Arguments, &args) != nil {
			return next.Handle(ctx, req) // let validation report it
		}
		if s, ok := args["order"].(string); ok {
			args["order"] = strings.ToUpper(s)
			raw, err := json.Marshal(args)
			if err == nil {
				r := *req
				r.Call.Arguments = raw
				return next.Handle(ctx, &r)
			}
		}
		return next.Handle(ctx, req)
	})
}

// auditTrail records every call's outcome, as seen from the outside of the
// chain.
type auditTrail struct {
	mu      sync.Mutex
	entries []string
}

func (a *auditTrail) middleware() executor.Middleware {
	return executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		res := next.Handle(ctx, req)
		entry := fmt.Sprintf("%s %s -> %s", req.Call.ID, req.Call.Name, res.Status)
		if res.IsError {
			entry += " (" + res.ErrorCode + ")"
		}
		a.mu.Lock()
		a.entries = append(a.entries, entry)
		a.mu.Unlock()
		return res
	})
}

func (a *auditTrail) sorted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Clone(a.entries)
	slices.Sort(out)
	return out
}

type orderArgs struct {
	Order string `json:"order" jsonschema:"description=Order ID,minLength=1"`
}

func tools() (tool.Tool, tool.Tool) {
	lookup := tool.MustFunc("lookup_order", "Status of an order",
		func(_ context.Context, in orderArgs) (string, error) {
			return in.Order + ": shipped", nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}),
	)
	refund := tool.MustFunc("refund_order", "Refunds an order",
		func(_ context.Context, in orderArgs) (string, error) {
			return in.Order + ": refunded", nil
		},
		tool.WithMetadata(tool.Metadata{Destructive: true, ConcurrencySafe: true}),
	)
	return lookup, refund
}

func run(ctx context.Context, w io.Writer) error {
	lookup, refund := tools()
	list, err := tool.Resolve(ctx, []tool.Toolset{tool.NewStatic("orders", lookup, refund)})
	if err != nil {
		return err
	}
	// Destructive tools need a person's approval.
	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		if req.Metadata.Destructive {
			return tool.Ask("refund this order?"), nil
		}
		return tool.Allow(), nil
	})
	audit := &auditTrail{}
	ex := executor.Parallel(
		executor.WithMaxConcurrency(4),
		executor.WithMiddleware(
			audit.middleware(),                // outermost: sees every call and its final result
			middleware.Permission(policy),     // refused calls use no budget
			callBudget(2),                     // our stateful middleware
			upperOrderIDs,                     // our rewriting middleware
			middleware.Timeout(5*time.Second), // innermost: bounds the tool itself
		),
		executor.WithObserver(func(_ context.Context, ev executor.Event) {
			if ev.Kind == executor.ToolEnd {
				fmt.Fprintf(w, "event: %s %s ended %s\n", ev.Call.ID, ev.Call.Name, ev.Result.Status)
			}
		}),
	)
	// Two model turns: the budget is shared across them.
	turns := [][]model.ToolCall{{
		{ID: "call_1", Name: "lookup_order", Arguments: json.RawMessage(`{"order":"a-100"}`)},
		{ID: "call_2", Name: "lookup_order", Arguments: json.RawMessage(`{"order":"b-200"}`)},
		{ID: "call_3", Name: "refund_order", Arguments: json.RawMessage(`{"order":"a-100"}`)},
		{ID: "call_4", Name: "cancel_order", Arguments: json.RawMessage(`{"order":"a-100"}`)},
	}, {
		{ID: "call_5", Name: "lookup_order", Arguments: json.RawMessage(`{"order":"c-300"}`)},
	}}
	for n, calls := range turns {
		fmt.Fprintf(w, "turn %d\n", n+1)
		results, err := ex.Execute(ctx, executor.Batch{Calls: calls, Tools: list})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "results, in call order:")
		for i, r := range results {
			msg := r.Message(calls[i].ID, calls[i].Name) // the tool message the model reads next
			fmt.Fprintf(w, "  %s %s: %s\n", msg.ToolCallID, r.Status, firstLine(r.Text()))
		}
	}
	fmt.Fprintln(w, "audit trail:")
	for _, e := range audit.sorted() {
		fmt.Fprintln(w, "  "+e)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
