package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func logRecords(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

func TestLogging(t *testing.T) {
	good := newCounted(t, "search", readOnly, ok("hits"))
	bad := newCounted(t, "fetch", readOnly, failWith(errors.New("404 not found")))
	boom := newCounted(t, "boom", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) { panic("x") })
	cases := []struct {
		name    string
		tool    tool.Tool
		level   slog.Level
		minimum slog.Level
		opts    []middleware.LogOption
		check   func(t *testing.T, recs []map[string]any)
	}{
		{"success at info", good, slog.LevelInfo, slog.LevelInfo, nil, func(t *testing.T, recs []map[string]any) {
			require.Len(t, recs, 1)
			r := recs[0]
			assert.Equal(t, "tool call", r["msg"])
			assert.Equal(t, "INFO", r["level"])
			assert.Equal(t, "search", r["tool"])
			assert.Equal(t, "call-1", r["call_id"])
			assert.EqualValues(t, 0, r["index"])
			assert.Equal(t, "success", r["status"])
			assert.Contains(t, r, "duration")
			assert.NotContains(t, r, "arguments", "arguments are left out by default")
			assert.NotContains(t, r, "error_code")
		}},
		{"failure at warn", bad, slog.LevelWarn, slog.LevelInfo, nil, func(t *testing.T, recs []map[string]any) {
			require.Len(t, recs, 1)
			assert.Equal(t, "WARN", recs[0]["level"])
			assert.Equal(t, "failed", recs[0]["status"])
			assert.Equal(t, tool.CodeToolError, recs[0]["error_code"])
			assert.Contains(t, recs[0]["error"], "404 not found")
		}},
		{"panic at error", boom, slog.LevelError, slog.LevelInfo, nil, func(t *testing.T, recs []map[string]any) {
			require.Len(t, recs, 1)
			assert.Equal(t, "ERROR", recs[0]["level"])
			assert.Equal(t, tool.CodePanic, recs[0]["error_code"])
		}},
		{"debug start and arguments", good, slog.LevelInfo, slog.LevelDebug, []middleware.LogOption{middleware.WithLogArguments(true)}, func(t *testing.T, recs []map[string]any) {
			require.Len(t, recs, 2)
			assert.Equal(t, "tool call started", recs[0]["msg"])
			assert.Equal(t, `{"q":"go"}`, recs[0]["arguments"])
			assert.Equal(t, `{"q":"go"}`, recs[1]["arguments"])
		}},
		{"success level below the logger's", good, slog.LevelDebug, slog.LevelInfo, []middleware.LogOption{middleware.WithSuccessLevel(slog.LevelDebug)}, func(t *testing.T, recs []map[string]any) {
			assert.Empty(t, recs)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tc.minimum}))
			h := handler(middleware.Logging(logger, tc.opts...))
			h.Handle(context.Background(), req(tc.tool, "call-1", `{"q":"go"}`))
			tc.check(t, logRecords(t, &buf))
		})
	}
}

func TestLoggingNilLoggerUsesDefault(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	_, err := executor.Sequential(executor.WithMiddleware(middleware.Logging(nil))).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "c", Name: "search"}}, Tools: executor.Tools(newCounted(t, "search", readOnly, ok("x"))),
	})
	require.NoError(t, err)
	recs := logRecords(t, &buf)
	require.Len(t, recs, 1)
	assert.Equal(t, "c", recs[0]["call_id"])
}

// TestLoggingRecordsAPanicInTheChain checks that a call whose chain panics
// (a middleware inside the logger, say) still gets its record, at Error,
// before the executor answers the call.
func TestLoggingRecordsAPanicInTheChain(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	boom := executor.Intercept(func(context.Context, *executor.Request, executor.Handler) tool.Result { panic("inner bug") })
	api := newCounted(t, "api", readOnly, ok("unused"))
	res, err := executor.Sequential(executor.WithMiddleware(middleware.Logging(logger), boom)).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "c-9", Name: "api"}}, Tools: executor.Tools(api),
	})
	require.NoError(t, err)
	require.Equal(t, tool.CodePanic, res[0].ErrorCode)
	recs := logRecords(t, &buf)
	require.Len(t, recs, 1)
	assert.Equal(t, "tool call", recs[0]["msg"])
	assert.Equal(t, "ERROR", recs[0]["level"])
	assert.Equal(t, "c-9", recs[0]["call_id"])
	assert.Equal(t, string(tool.StatusFailed), recs[0]["status"])
	assert.Equal(t, tool.CodePanic, recs[0]["error_code"])
}

// TestLoggingReadsResultsAsTheExecutorDoes checks that a result a
// middleware inside Logging makes without a consistent Status and IsError
// is logged as the executor answers it.
func TestLoggingReadsResultsAsTheExecutorDoes(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	inner := executor.Intercept(func(ctx context.Context, r *executor.Request, next executor.Handler) tool.Result {
		switch r.Call.Name {
		case "slow":
			return tool.Result{Status: tool.StatusTimeout, ErrorCode: "too_slow"}
		case "quiet":
			return tool.Result{Content: []model.Part{model.TextPart("fine")}}
		}
		return next.Handle(ctx, r)
	})
	res, err := executor.Sequential(executor.WithMiddleware(middleware.Logging(logger), inner)).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "1", Name: "slow"}, {ID: "2", Name: "quiet"}},
		Tools: executor.Tools(newCounted(t, "slow", readOnly, ok("x")), newCounted(t, "quiet", readOnly, ok("x"))),
	})
	require.NoError(t, err)
	require.True(t, res[0].IsError)
	recs := logRecords(t, &buf)
	require.Len(t, recs, 2)
	assert.Equal(t, "WARN", recs[0]["level"])
	assert.Equal(t, string(tool.StatusTimeout), recs[0]["status"])
	assert.Equal(t, "too_slow", recs[0]["error_code"])
	assert.Equal(t, "INFO", recs[1]["level"])
	assert.Equal(t, string(tool.StatusSuccess), recs[1]["status"])
}
