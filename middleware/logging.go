package middleware

import (
	"context"
	"log/slog"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/tool"
)

type logConfig struct {
	args    bool
	success slog.Level
}

// LogOption configures Logging.
type LogOption interface{ applyLog(*logConfig) }

type logOption func(*logConfig)

func (o logOption) applyLog(c *logConfig) { o(c) }

// WithLogArguments adds the call's arguments to the log records (off by
// default: arguments may hold personal data or secrets).
func WithLogArguments(on bool) LogOption {
	return logOption(func(c *logConfig) { c.args = on })
}

// WithSuccessLevel sets the level of the record of a call that succeeded
// (default slog.LevelInfo).
func WithSuccessLevel(l slog.Level) LogOption {
	return logOption(func(c *logConfig) { c.success = l })
}

// Logging writes one structured record per call to logger (slog.Default()
// when nil) when the call is answered: "tool call" with the attributes
// tool, call_id, index, status, duration and, for failures, error_code and
// error. Successes are logged at WithSuccessLevel (default Info), failures
// at Warn, and panics at Error, including a panic in the rest of the chain
// on its way to the executor (recorded with error_code tool.CodePanic). A
// Debug record "tool call started" comes first. Nothing is formatted when
// the logger's level leaves a record out.
func Logging(logger *slog.Logger, opts ...LogOption) executor.Middleware {
	c := logConfig{success: slog.LevelInfo}
	for _, o := range opts {
		if o != nil {
			o.applyLog(&c)
		}
	}
	return func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			l := logger
			if l == nil {
				l = slog.Default()
			}
			if l.Enabled(ctx, slog.LevelDebug) {
				attrs := []slog.Attr{slog.String("tool", req.Call.Name), slog.String("call_id", req.Call.ID), slog.Int("index", req.Index)}
				if c.args {
					attrs = append(attrs, slog.String("arguments", string(req.Call.Arguments)))
				}
				l.LogAttrs(ctx, slog.LevelDebug, "tool call started", attrs...)
			}
			start := time.Now()
			finished := false
			defer func() {
				if !finished { // a panic: the executor answers it; log it on its way
					c.record(ctx, l, req, start, tool.Result{Status: tool.StatusFailed, IsError: true, ErrorCode: tool.CodePanic})
				}
			}()
			r := next.Handle(ctx, req)
			finished = true
			c.record(ctx, l, req, start, r)
			return r
		})
	}
}

// record writes the record of a call that started at start and was
// answered with r, as the executor settles it.
func (c *logConfig) record(ctx context.Context, l *slog.Logger, req *executor.Request, start time.Time, r tool.Result) {
	r = executor.Settle(r)
	level := c.success
	switch {
	case r.ErrorCode == tool.CodePanic:
		level = slog.LevelError
	case r.IsError:
		level = slog.LevelWarn
	}
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("tool", req.Call.Name),
		slog.String("call_id", req.Call.ID),
		slog.Int("index", req.Index),
		slog.String("status", string(r.Status)),
		slog.Duration("duration", time.Since(start)),
	)
	if r.IsError {
		attrs = append(attrs, slog.String("error_code", r.ErrorCode))
		if r.Err != nil {
			attrs = append(attrs, slog.String("error", r.Err.Error()))
		}
	}
	if c.args {
		attrs = append(attrs, slog.String("arguments", string(req.Call.Arguments)))
	}
	l.LogAttrs(ctx, level, "tool call", attrs...)
}
