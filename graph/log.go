package graph

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
)

// logEvent writes ev as one slog record.
func logEvent(l *slog.Logger, ev Event) {
	level := slog.LevelDebug
	msg := string(ev.Kind)
	switch ev.Kind {
	case KindNodeEnd:
		level, msg = slog.LevelInfo, "node finished"
		if ev.Err != nil {
			level, msg = slog.LevelError, "node failed"
		}
	case KindNodeStart:
		msg = "node started"
	case KindInterrupt:
		level, msg = slog.LevelInfo, "run interrupted"
	case KindCustom:
		level = slog.LevelInfo
	default:
		if strings.HasSuffix(msg, "_end") {
			level = slog.LevelInfo
		}
		if ev.Err != nil {
			level = slog.LevelError
		}
	}
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("event", string(ev.Kind)))
	if ev.Graph != "" {
		attrs = append(attrs, slog.String("graph", ev.Graph))
	}
	if len(ev.Path) > 0 {
		attrs = append(attrs, slog.String("path", strings.Join(ev.Path, "/")))
	}
	if ev.CallID != "" {
		attrs = append(attrs, slog.String("call_id", ev.CallID))
	}
	if ev.Node != "" {
		attrs = append(attrs, slog.String("node", ev.Node), slog.Int("step", ev.Step))
	}
	if ev.Name != "" {
		attrs = append(attrs, slog.String("name", ev.Name))
	}
	if ev.Duration > 0 {
		attrs = append(attrs, slog.Duration("duration", ev.Duration))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	if ev.Payload != nil {
		attrs = append(attrs, slog.Any("payload", ev.Payload))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

// logRunEnd logs the end of a top-level run.
func logRunEnd(l *slog.Logger, graphName, thread string, d time.Duration, err error) {
	level, msg := slog.LevelInfo, "run finished"
	switch {
	case isInterrupt(err):
		msg = "run paused"
	case errors.Is(err, errStreamLeft):
		msg = "run stopped"
	case err != nil:
		level, msg = slog.LevelError, "run failed"
	}
	attrs := []slog.Attr{slog.String("graph", graphName), slog.Duration("duration", d)}
	if thread != "" {
		attrs = append(attrs, slog.String("thread", thread))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	l.LogAttrs(context.Background(), level, msg, attrs...)
}
