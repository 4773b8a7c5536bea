package modelmw

import (
	"context"
	"iter"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-go/trellis/internal/chatspan"
	"github.com/trellis-go/trellis/model"
)

const scope = "github.com/trellis-go/trellis/model/modelmw"

// Telemetry returns a Middleware that reports every call that passes it as
// a "chat {model}" OpenTelemetry client span with the GenAI semantic
// convention's attributes, and records the GenAI client metrics, with the
// tracer and meter providers given (either may be nil). They are the spans
// and metrics the LLM node reports for the runs of a graph compiled with
// a tracer or meter provider; this middleware is for models called
// outside such runs, or for a span per attempt when it sits inside Retry
// or Fallback.
func Telemetry(tp trace.TracerProvider, mp metric.MeterProvider) Middleware {
	return func(next model.Model) model.Model {
		info := Describe(next)
		call := func(ctx context.Context, req *model.Request) chatspan.Call {
			return chatspan.Call{Provider: info.Provider, Model: orModel(req.Model, info.Name), Agent: Agent(ctx)}
		}
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				sctx, span := chatspan.Start(ctx, scope, tp, mp, call(ctx, req), req)
				resp, err := next.Generate(sctx, req)
				span.End(ctx, resp, err)
				return resp, err
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					sctx, span := chatspan.Start(ctx, scope, tp, mp, call(ctx, req), req)
					var acc usageOnly
					var failed error
					defer func() { span.End(ctx, acc.response(), failed) }()
					for c, err := range next.Stream(sctx, req) {
						if err != nil {
							failed = err
						} else {
							acc.add(c)
						}
						if !yield(c, err) || err != nil {
							return
						}
					}
				}
			},
		}
	}
}

// usageOnly keeps what a span or a log reports of a streamed reply: its
// usage, finish reason and model, without assembling the reply.
type usageOnly struct {
	usage  model.Usage
	finish string
	model  string
}

func (u *usageOnly) add(c model.Chunk) {
	if c.Usage != nil {
		u.usage = *c.Usage
	}
	if c.FinishReason != "" {
		u.finish = c.FinishReason
	}
	if c.Model != "" {
		u.model = c.Model
	}
}

func (u *usageOnly) response() *model.Response {
	return &model.Response{Usage: u.usage, FinishReason: u.finish, Model: u.model}
}

// Log returns a Middleware that logs every call with logger (slog.Default
// when nil) when it ends: at level Info when it succeeded, Warn when it
// failed. A record holds the model, the agent (see WithAgent), whether
// the call streamed, its duration, and either the usage and finish reason
// or the error and its class (see model.Classify). The conversation is
// never logged.
func Log(logger *slog.Logger) Middleware {
	return func(next model.Model) model.Model {
		info := Describe(next)
		record := func(ctx context.Context, req *model.Request, stream bool, start time.Time, resp *model.Response, err error) {
			l := logger
			if l == nil {
				l = slog.Default()
			}
			attrs := []slog.Attr{
				slog.String("model", orModel(req.Model, info.Name)),
				slog.Bool("stream", stream),
				slog.Duration("duration", time.Since(start)),
			}
			if a := Agent(ctx); a != "" {
				attrs = append(attrs, slog.String("agent", a))
			}
			if err != nil {
				class := "other"
				if c := model.Classify(err); c != nil {
					class = c.Error()
				}
				attrs = append(attrs, slog.String("error", err.Error()), slog.String("error_class", class))
				l.LogAttrs(ctx, slog.LevelWarn, "model call failed", attrs...)
				return
			}
			if resp != nil {
				if resp.Model != "" {
					attrs = append(attrs, slog.String("response_model", resp.Model))
				}
				attrs = append(attrs, slog.Int("input_tokens", resp.Usage.InputTokens),
					slog.Int("output_tokens", resp.Usage.OutputTokens),
					slog.String("finish_reason", resp.FinishReason))
			}
			l.LogAttrs(ctx, slog.LevelInfo, "model call", attrs...)
		}
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				start := time.Now()
				resp, err := next.Generate(ctx, req)
				record(ctx, req, false, start, resp, err)
				return resp, err
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					start := time.Now()
					var acc usageOnly
					var failed error
					defer func() { record(ctx, req, true, start, acc.response(), failed) }()
					for c, err := range next.Stream(ctx, req) {
						if err != nil {
							failed = err
						} else {
							acc.add(c)
						}
						if !yield(c, err) || err != nil {
							return
						}
					}
				}
			},
		}
	}
}
