package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type otelFixture struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newOtel(t *testing.T) *otelFixture {
	f := &otelFixture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	f.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	t.Cleanup(func() {
		_ = f.tp.Shutdown(context.Background())
		_ = f.mp.Shutdown(context.Background())
	})
	return f
}

func (f *otelFixture) mw() executor.Middleware {
	return middleware.OpenTelemetry(middleware.WithTracerProvider(f.tp), middleware.WithMeterProvider(f.mp))
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func (f *otelFixture) metrics(t *testing.T) map[string]metricdata.Aggregation {
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, "github.com/trellis-go/trellis/middleware", sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func TestOpenTelemetrySpans(t *testing.T) {
	f := newOtel(t)
	var inner trace.SpanContext
	good := newCounted(t, "search", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		inner = trace.SpanContextFromContext(ctx)
		return tool.Text("hits"), nil
	})
	bad := newCounted(t, "fetch", readOnly, failWith(errors.New("404")))
	ex := executor.Sequential(executor.WithMiddleware(f.mw()))
	_, err := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "c1", Name: "search"}, {ID: "c2", Name: "fetch"}, {ID: "c3", Name: "nope"}},
		Tools: executor.Tools(good, bad),
	})
	require.NoError(t, err)
	spans := f.spans.Ended()
	require.Len(t, spans, 3)

	s := spans[0]
	assert.Equal(t, "execute_tool search", s.Name())
	assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
	a := attrs(s.Attributes())
	assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
	assert.Equal(t, "search", a["gen_ai.tool.name"])
	assert.Equal(t, "c1", a["gen_ai.tool.call.id"])
	assert.Equal(t, "function", a["gen_ai.tool.type"])
	assert.Equal(t, "test tool search", a["gen_ai.tool.description"])
	assert.NotContains(t, a, "error.type")
	assert.Equal(t, codes.Unset, s.Status().Code)
	assert.Equal(t, s.SpanContext().SpanID(), inner.SpanID(), "the tool runs inside the span")

	e := spans[1]
	assert.Equal(t, "execute_tool fetch", e.Name())
	assert.Equal(t, tool.CodeToolError, attrs(e.Attributes())["error.type"])
	assert.Equal(t, codes.Error, e.Status().Code)
	assert.Contains(t, e.Status().Description, "404")

	u := spans[2]
	assert.Equal(t, "execute_tool", u.Name(), "a made-up name stays out of span names")
	assert.Equal(t, "nope", attrs(u.Attributes())["gen_ai.tool.name"])
	assert.Equal(t, tool.CodeUnknownTool, attrs(u.Attributes())["error.type"])
}

func TestOpenTelemetryMetrics(t *testing.T) {
	f := newOtel(t)
	good := newCounted(t, "search", readOnly, ok("hits"))
	bad := newCounted(t, "fetch", readOnly, failWith(errors.New("secret detail 12345")))
	h := handler(f.mw())
	for _, r := range []*executor.Request{req(good, "1", ""), req(good, "2", ""), req(bad, "3", ""), req(nil, "4", "")} {
		h.Handle(context.Background(), r)
	}
	m := f.metrics(t)

	calls, ok := m[middleware.MetricToolCalls].(metricdata.Sum[int64])
	require.True(t, ok)
	byTool := map[string]int64{}
	for _, dp := range calls.DataPoints {
		a := attrs(dp.Attributes.ToSlice())
		byTool[a["gen_ai.tool.name"]+"/"+a["trellis.tool.status"]+"/"+a["error.type"]] += dp.Value
		assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
		for k, v := range a {
			assert.NotContains(t, v, "secret", "no error messages in metric attribute %s", k)
			assert.NotEqual(t, "gen_ai.tool.call.id", k, "no call IDs in metrics")
		}
	}
	assert.Equal(t, map[string]int64{
		"search/success/":                                   2,
		"fetch/failed/tool_error":                           1,
		middleware.UnknownToolName + "/failed/unknown_tool": 1,
	}, byTool)

	errs, ok := m[middleware.MetricToolErrors].(metricdata.Sum[int64])
	require.True(t, ok)
	var nerr int64
	for _, dp := range errs.DataPoints {
		nerr += dp.Value
	}
	assert.EqualValues(t, 2, nerr)

	dur, ok := m[middleware.MetricToolDuration].(metricdata.Histogram[float64])
	require.True(t, ok)
	var count uint64
	for _, dp := range dur.DataPoints {
		count += dp.Count
	}
	assert.EqualValues(t, 4, count)
}

func TestOpenTelemetryRecordsRetries(t *testing.T) {
	f := newOtel(t)
	clock := newFakeClock()
	flaky := newCounted(t, "api", readOnly, failTimes(2, errFlaky))
	h := handler(f.mw(), middleware.Retry(middleware.WithClock(clock), middleware.WithJitter(0)))
	r := h.Handle(context.Background(), req(flaky, "1", ""))
	require.Equal(t, tool.StatusSuccess, r.Status)
	spans := f.spans.Ended()
	require.Len(t, spans, 1, "one span for the call")
	var retries int
	for _, ev := range spans[0].Events() {
		if ev.Name == "retry" {
			retries++
		}
	}
	assert.Equal(t, 2, retries)
}

func TestOpenTelemetryPanicEndsTheSpan(t *testing.T) {
	f := newOtel(t)
	boom := executor.Intercept(func(context.Context, *executor.Request, executor.Handler) tool.Result { panic("bug") })
	res, err := executor.Sequential(executor.WithMiddleware(f.mw(), boom)).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "1", Name: "x"}},
	})
	require.NoError(t, err)
	assert.Equal(t, tool.CodePanic, res[0].ErrorCode)
	spans := f.spans.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.Equal(t, tool.CodePanic, attrs(spans[0].Attributes())["error.type"])
}

func TestOpenTelemetryDefaultsToGlobalProviders(t *testing.T) {
	f := newOtel(t)
	prevTP, prevMP := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(f.tp)
	otel.SetMeterProvider(f.mp)
	defer func() {
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
	}()
	h := handler(middleware.OpenTelemetry())
	r := h.Handle(context.Background(), req(newCounted(t, "t", readOnly, ok("fine")), "1", ""))
	assert.Equal(t, "fine", r.Text())
	require.Len(t, f.spans.Ended(), 1)
	assert.Equal(t, "execute_tool t", f.spans.Ended()[0].Name())
	assert.Contains(t, f.metrics(t), middleware.MetricToolCalls)
}

// TestOpenTelemetryPanicIsMeasured checks that a call whose chain panics
// is counted and timed as a failed call (error.type panic), as its span
// reports it, so the metrics count every call.
func TestOpenTelemetryPanicIsMeasured(t *testing.T) {
	f := newOtel(t)
	boom := executor.Intercept(func(context.Context, *executor.Request, executor.Handler) tool.Result { panic("bug") })
	api := newCounted(t, "api", readOnly, ok("unused"))
	res, err := executor.Sequential(executor.WithMiddleware(f.mw(), boom)).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "1", Name: "api"}},
		Tools: executor.Tools(api),
	})
	require.NoError(t, err)
	require.Equal(t, tool.CodePanic, res[0].ErrorCode)
	m := f.metrics(t)
	calls, ok := m[middleware.MetricToolCalls].(metricdata.Sum[int64])
	require.True(t, ok, "the call is counted")
	require.Len(t, calls.DataPoints, 1)
	a := attrs(calls.DataPoints[0].Attributes.ToSlice())
	assert.Equal(t, "api", a["gen_ai.tool.name"])
	assert.Equal(t, string(tool.StatusFailed), a["trellis.tool.status"])
	assert.Equal(t, tool.CodePanic, a["error.type"])
	errs, ok := m[middleware.MetricToolErrors].(metricdata.Sum[int64])
	require.True(t, ok, "the failure is counted")
	assert.EqualValues(t, 1, errs.DataPoints[0].Value)
	dur, ok := m[middleware.MetricToolDuration].(metricdata.Histogram[float64])
	require.True(t, ok, "the call is timed")
	assert.EqualValues(t, 1, dur.DataPoints[0].Count)
}

// TestOpenTelemetryReadsResultsAsTheExecutorDoes checks that a result a
// middleware inside OpenTelemetry makes without a consistent Status and
// IsError is traced and measured as the executor answers it: a denied
// status is a failure, an empty status of a success is "success", an error
// without a status is "failed".
func TestOpenTelemetryReadsResultsAsTheExecutorDoes(t *testing.T) {
	f := newOtel(t)
	inner := executor.Intercept(func(ctx context.Context, r *executor.Request, next executor.Handler) tool.Result {
		switch r.Call.Name {
		case "blocked":
			return tool.Result{Status: tool.StatusDenied, ErrorCode: "blocked_by_rule"}
		case "quiet":
			return tool.Result{Content: []model.Part{model.TextPart("fine")}}
		case "broken":
			return tool.Result{IsError: true}
		}
		return next.Handle(ctx, r)
	})
	lookup := executor.Tools(newCounted(t, "blocked", readOnly, ok("x")), newCounted(t, "quiet", readOnly, ok("x")),
		newCounted(t, "broken", readOnly, ok("x")))
	res, err := executor.Sequential(executor.WithMiddleware(f.mw(), inner)).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "1", Name: "blocked"}, {ID: "2", Name: "quiet"}, {ID: "3", Name: "broken"}},
		Tools: lookup,
	})
	require.NoError(t, err)
	require.True(t, res[0].IsError, "the executor answers the denied call as an error")
	require.Equal(t, tool.StatusSuccess, res[1].Status)
	require.Equal(t, tool.StatusFailed, res[2].Status)

	spans := f.spans.Ended()
	require.Len(t, spans, 3)
	assert.Equal(t, "blocked_by_rule", attrs(spans[0].Attributes())["error.type"])
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.NotContains(t, attrs(spans[1].Attributes()), "error.type")
	assert.Equal(t, codes.Unset, spans[1].Status().Code)
	assert.Equal(t, string(tool.StatusFailed), attrs(spans[2].Attributes())["error.type"])

	m := f.metrics(t)
	calls, isSum := m[middleware.MetricToolCalls].(metricdata.Sum[int64])
	require.True(t, isSum)
	got := map[string]int64{}
	for _, dp := range calls.DataPoints {
		a := attrs(dp.Attributes.ToSlice())
		got[a["gen_ai.tool.name"]+"/"+a["trellis.tool.status"]+"/"+a["error.type"]] += dp.Value
	}
	assert.Equal(t, map[string]int64{
		"blocked/denied/blocked_by_rule": 1,
		"quiet/success/":                 1,
		"broken/failed/failed":           1,
	}, got)
	errs, isSum := m[middleware.MetricToolErrors].(metricdata.Sum[int64])
	require.True(t, isSum)
	var nerr int64
	for _, dp := range errs.DataPoints {
		nerr += dp.Value
	}
	assert.EqualValues(t, 2, nerr)
}

// countingProvider counts the spans its tracers start.
type countingProvider struct {
	trace.TracerProvider
	started *atomic.Int32
}

func (p countingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return countingTracer{p.TracerProvider.Tracer(name, opts...), p.started}
}

type countingTracer struct {
	trace.Tracer
	started *atomic.Int32
}

func (t countingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.started.Add(1)
	return t.Tracer.Start(ctx, name, opts...)
}

// An SDK whose sampler drops every span still gets asked each time: its
// spans have a trace, and its sampler may change its mind. (Without an SDK,
// the middleware stops asking for a while: TestOpenTelemetryWithoutTracingMakesNoSpans
// in the middleware package.)
func TestOpenTelemetryWithADroppingSamplerAsksEveryTime(t *testing.T) {
	var started atomic.Int32
	tl := newCounted(t, "t", readOnly, ok("fine"))
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer func() { _ = sdk.Shutdown(context.Background()) }()
	h := handler(middleware.OpenTelemetry(middleware.WithTracerProvider(countingProvider{sdk, &started})))
	for i := range 3 {
		h.Handle(context.Background(), req(tl, fmt.Sprint(i), ""))
	}
	assert.EqualValues(t, 3, started.Load())
}
