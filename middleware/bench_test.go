package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// BenchmarkMiddleware handles one successful call of a trivial tool
// through each middleware alone, and through the recommended chain of all
// eight; "none" is the terminal handler alone. The difference from "none"
// is the cost of the middleware on the success path.
func BenchmarkMiddleware(b *testing.B) {
	allow := tool.PolicyFunc(func(context.Context, tool.PermissionRequest) (tool.Decision, error) { return tool.Allow(), nil })
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cases := []struct {
		name string
		mws  func() []executor.Middleware
	}{
		{"none", func() []executor.Middleware { return nil }},
		{"cache-hit", func() []executor.Middleware { return []executor.Middleware{middleware.Cache()} }},
		{"cache-ineligible", func() []executor.Middleware {
			return []executor.Middleware{middleware.Cache(middleware.WithCacheable(func(*executor.Request) bool { return false }))}
		}},
		{"timeout", func() []executor.Middleware { return []executor.Middleware{middleware.Timeout(time.Minute)} }},
		{"breaker", func() []executor.Middleware { return []executor.Middleware{middleware.CircuitBreaker()} }},
		{"retry", func() []executor.Middleware { return []executor.Middleware{middleware.Retry()} }},
		{"ratelimit", func() []executor.Middleware { return []executor.Middleware{middleware.RateLimit(rate.Inf, 1)} }},
		{"permission", func() []executor.Middleware { return []executor.Middleware{middleware.Permission(allow)} }},
		{"logging-filtered", func() []executor.Middleware { return []executor.Middleware{middleware.Logging(quiet)} }},
		{"otel-noop", func() []executor.Middleware { return []executor.Middleware{middleware.OpenTelemetry()} }},
		{"recommended-chain", func() []executor.Middleware {
			return []executor.Middleware{
				middleware.OpenTelemetry(), middleware.Logging(quiet), middleware.Permission(allow),
				middleware.Cache(middleware.WithCacheable(func(*executor.Request) bool { return false })),
				middleware.Retry(), middleware.CircuitBreaker(), middleware.RateLimit(rate.Inf, 1), middleware.Timeout(time.Minute),
			}
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			tl := tool.MustFunc("noop", "does nothing", func(context.Context, struct{}) (string, error) { return "ok", nil },
				tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
			h := executor.Chain(executor.Terminal(tool.NewInvoker()), tc.mws()...)
			r := &executor.Request{Call: model.ToolCall{ID: "call_1", Name: "noop", Arguments: json.RawMessage(`{}`)}, Tool: tl}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res := h.Handle(ctx, r); res.IsError {
					b.Fatal(res.Text())
				}
			}
		})
	}
}
