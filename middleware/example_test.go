package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type quoteArgs struct {
	Symbol string `json:"symbol"`
}

// quoteTool is a read-only tool that counts its runs.
func quoteTool(runs *atomic.Int64) tool.Tool {
	return tool.MustFunc("quote", "Latest price of a stock",
		func(_ context.Context, in quoteArgs) (string, error) {
			runs.Add(1)
			return in.Symbol + ": 101.5", nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}),
	)
}

func quoteCall(id, symbol string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "quote", Arguments: json.RawMessage(`{"symbol":"` + symbol + `"}`)}
}

// The recommended order, outermost first.
func Example() {
	var runs atomic.Int64
	ex := executor.Parallel(executor.WithMiddleware(
		middleware.OpenTelemetry(),
		middleware.Logging(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		middleware.Permission(nil),
		middleware.Cache(middleware.WithTTL(time.Minute)),
		middleware.Retry(middleware.WithMaxAttempts(3)),
		middleware.CircuitBreaker(middleware.WithConsecutiveFailures(5)),
		middleware.RateLimit(10, 5),
		middleware.Timeout(10*time.Second),
	))
	batch := executor.Batch{
		Calls: []model.ToolCall{quoteCall("call_1", "ACME")},
		Tools: executor.Tools(quoteTool(&runs)),
	}
	for range 3 {
		res, _ := ex.Execute(context.Background(), batch)
		fmt.Println(res[0].Text())
	}
	fmt.Println("runs:", runs.Load())
	// Output:
	// ACME: 101.5
	// ACME: 101.5
	// ACME: 101.5
	// runs: 1
}

func ExampleCache() {
	var runs atomic.Int64
	h := executor.Chain(executor.Terminal(nil), middleware.Cache())
	q := quoteTool(&runs)
	for _, call := range []model.ToolCall{
		quoteCall("a", "ACME"),
		{ID: "b", Name: "quote", Arguments: json.RawMessage(` { "symbol" : "ACME" } `)}, // same question
		quoteCall("c", "INIT"),
	} {
		res := h.Handle(context.Background(), &executor.Request{Call: call, Tool: q})
		fmt.Println(call.ID, res.Text())
	}
	fmt.Println("runs:", runs.Load())
	// Output:
	// a ACME: 101.5
	// b ACME: 101.5
	// c INIT: 101.5
	// runs: 2
}

func ExampleTimeout() {
	slow := tool.MustFunc("report", "Builds a report", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-time.After(time.Minute):
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	h := executor.Chain(executor.Terminal(nil),
		middleware.Timeout(time.Minute, middleware.WithToolTimeout("report", 10*time.Millisecond)))
	res := h.Handle(context.Background(), &executor.Request{Call: model.ToolCall{ID: "r1", Name: "report"}, Tool: slow})
	fmt.Println(res.Status, res.Text())
	// Output: timeout tool "report" timed out after 10ms: context deadline exceeded
}

func ExampleRetry() {
	var attempts atomic.Int64
	flaky := tool.MustFunc("fetch", "Fetches a page", func(context.Context, struct{}) (string, error) {
		if attempts.Add(1) < 3 {
			return "", middleware.Transient(errors.New("connection reset"))
		}
		return "page", nil
	})
	h := executor.Chain(executor.Terminal(nil), middleware.Retry(
		middleware.WithMaxAttempts(5),
		middleware.WithInitialInterval(time.Millisecond),
		middleware.WithBackoffFactor(2),
		middleware.WithMaxInterval(10*time.Millisecond),
	))
	res := h.Handle(context.Background(), &executor.Request{Call: model.ToolCall{ID: "1", Name: "fetch"}, Tool: flaky})
	fmt.Println(res.Text(), "after", attempts.Load(), "attempts")
	// Output: page after 3 attempts
}

func ExamplePermanent() {
	var attempts atomic.Int64
	strict := tool.MustFunc("pay", "Makes a payment", func(context.Context, struct{}) (string, error) {
		attempts.Add(1)
		// Retrying cannot help: say so.
		return "", middleware.Permanent(middleware.Transient(errors.New("card declined")))
	})
	h := executor.Chain(executor.Terminal(nil), middleware.Retry(middleware.WithInitialInterval(time.Millisecond)))
	res := h.Handle(context.Background(), &executor.Request{Call: model.ToolCall{ID: "1", Name: "pay"}, Tool: strict})
	fmt.Println(res.Status, attempts.Load())
	// Output: failed 1
}

func ExampleCircuitBreaker() {
	down := tool.MustFunc("inventory", "Stock levels", func(context.Context, struct{}) (string, error) {
		return "", errors.New("503 service unavailable")
	})
	h := executor.Chain(executor.Terminal(nil), middleware.CircuitBreaker(
		middleware.WithConsecutiveFailures(2),
		middleware.WithOpenTimeout(time.Minute),
	))
	for i := range 3 {
		res := h.Handle(context.Background(), &executor.Request{Call: model.ToolCall{ID: fmt.Sprint(i), Name: "inventory"}, Tool: down})
		fmt.Println(res.ErrorCode)
	}
	// Output:
	// tool_error
	// tool_error
	// circuit_open
}

func ExampleRateLimit() {
	var runs atomic.Int64
	h := executor.Chain(executor.Terminal(nil), middleware.RateLimit(1, 2, middleware.WithReject()))
	q := quoteTool(&runs)
	for i := range 3 {
		res := h.Handle(context.Background(), &executor.Request{Call: quoteCall(fmt.Sprint(i), "ACME"), Tool: q})
		fmt.Printf("%s %q\n", res.Status, res.ErrorCode)
	}
	// Output:
	// success ""
	// success ""
	// failed "rate_limited"
}

func ExamplePermission() {
	wipe := tool.MustFunc("wipe_disk", "Erases a disk", func(context.Context, struct{}) (string, error) {
		return "erased", nil
	}, tool.WithMetadata(tool.Metadata{Destructive: true}))
	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		if req.Metadata.Destructive {
			return tool.Ask("erase the disk?"), nil
		}
		return tool.Allow(), nil
	})
	h := executor.Chain(executor.Terminal(nil), middleware.Permission(policy))
	res := h.Handle(context.Background(), &executor.Request{Call: model.ToolCall{ID: "1", Name: "wipe_disk"}, Tool: wipe})
	fmt.Println(res.Status, res.ErrorCode)
	// Output: denied approval_required
}

func ExampleLogging() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{} // keep the output stable
			}
			return a
		},
	}))
	var runs atomic.Int64
	h := executor.Chain(executor.Terminal(nil), middleware.Logging(logger))
	h.Handle(context.Background(), &executor.Request{Call: quoteCall("call_9", "ACME"), Tool: quoteTool(&runs)})
	// Output: level=INFO msg="tool call" tool=quote call_id=call_9 index=0 status=success
}
