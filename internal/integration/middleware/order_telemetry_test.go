package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// The tests of middleware order (the rest are in the middleware package)
// where one of the pair is the OpenTelemetry middleware, whose spans an
// SDK records.

func TestOrderTelemetryAndRetry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		outermost bool
		spans     int
	}{
		{"telemetry outside retry: one span per call", true, 1},
		{"retry outside telemetry: one span per attempt", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newOtel(t)
			retry := middleware.Retry(middleware.WithClock(newFakeClock()))
			order := []executor.Middleware{retry, f.mw()}
			if tc.outermost {
				order = []executor.Middleware{f.mw(), retry}
			}
			flaky := newCounted(t, "api", readOnly, failTimes(2, errFlaky))
			require.Equal(t, tool.StatusSuccess, handler(order...).Handle(context.Background(), req(flaky, "1", "")).Status)
			assert.Len(t, f.spans.Ended(), tc.spans)
		})
	}
}

func TestOrderTelemetryAndCache(t *testing.T) {
	for _, tc := range []struct {
		name      string
		outermost bool
		spans     int
	}{
		{"telemetry outside cache: hits are traced", true, 2},
		{"cache outside telemetry: hits are not traced", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newOtel(t)
			cache := middleware.Cache()
			order := []executor.Middleware{cache, f.mw()}
			if tc.outermost {
				order = []executor.Middleware{f.mw(), cache}
			}
			lookup := newCounted(t, "lookup", readOnly, ok("v"))
			h := handler(order...)
			h.Handle(context.Background(), req(lookup, "1", ""))
			h.Handle(context.Background(), req(lookup, "2", ""))
			assert.EqualValues(t, 1, lookup.Runs())
			assert.Len(t, f.spans.Ended(), tc.spans)
		})
	}
}

// TestRecommendedChain runs the recommended order end to end.
func TestRecommendedChain(t *testing.T) {
	f := newOtel(t)
	var logs bytes.Buffer
	clock := newFakeClock()
	flaky := newCounted(t, "weather", readOnly, failTimes(2, middleware.Transient(errors.New("upstream reset"))))
	ex := executor.Parallel(executor.WithMiddleware(
		f.mw(),
		middleware.Logging(slog.New(slog.NewJSONHandler(&logs, nil))),
		middleware.Permission(nil),
		middleware.Cache(middleware.WithClock(clock)),
		middleware.Retry(middleware.WithClock(clock), middleware.WithJitter(0)),
		middleware.CircuitBreaker(),
		middleware.RateLimit(100, 10, middleware.WithClock(clock)),
		middleware.Timeout(time.Second),
	))
	batch := executor.Batch{Calls: []model.ToolCall{{ID: "a", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}}, Tools: executor.Tools(flaky)}
	res, err := ex.Execute(context.Background(), batch)
	require.NoError(t, err)
	assert.Equal(t, tool.StatusSuccess, res[0].Status, res[0].Text())
	assert.EqualValues(t, 3, flaky.Runs(), "two retries")
	assert.Equal(t, []time.Duration{middleware.DefaultInitialInterval, 2 * middleware.DefaultInitialInterval}, clock.Sleeps())

	batch.Calls[0].ID = "b"
	res, err = ex.Execute(context.Background(), batch)
	require.NoError(t, err)
	assert.Equal(t, tool.StatusSuccess, res[0].Status)
	assert.EqualValues(t, 3, flaky.Runs(), "the second call is served from the cache")
	assert.Len(t, f.spans.Ended(), 2, "one span per call, cache hits included")
	assert.Equal(t, 2, strings.Count(logs.String(), `"msg":"tool call"`))
}

// spanSeer is a slog handler that records whether records carry a span.
type spanSeer struct{ withSpan, without int }

func (s *spanSeer) Enabled(context.Context, slog.Level) bool { return true }
func (s *spanSeer) Handle(ctx context.Context, _ slog.Record) error {
	if trace.SpanContextFromContext(ctx).IsValid() {
		s.withSpan++
	} else {
		s.without++
	}
	return nil
}
func (s *spanSeer) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *spanSeer) WithGroup(string) slog.Handler      { return s }

func TestOrderLoggingAndTelemetry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		logInside bool
	}{
		{"logging inside telemetry: records carry the span", true},
		{"logging outside telemetry: they do not", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newOtel(t)
			seer := &spanSeer{}
			logging := middleware.Logging(slog.New(seer))
			order := []executor.Middleware{logging, f.mw()}
			if tc.logInside {
				order = []executor.Middleware{f.mw(), logging}
			}
			handler(order...).Handle(context.Background(), req(newCounted(t, "t", readOnly, ok("x")), "1", ""))
			if tc.logInside {
				assert.Equal(t, 2, seer.withSpan)
				assert.Zero(t, seer.without)
			} else {
				assert.Zero(t, seer.withSpan)
				assert.Equal(t, 2, seer.without)
			}
		})
	}
}
