package middleware

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/tool"
)

// The instrumentation scope of the spans and metrics OpenTelemetry makes.
const instrumentationName = "github.com/trellis-go/trellis/middleware"

// The metrics OpenTelemetry records. Their attributes are of bounded
// cardinality: gen_ai.operation.name, gen_ai.tool.name (UnknownToolName
// for calls of unknown tools), trellis.tool.status and, for failures,
// error.type; never call IDs, arguments or error messages.
const (
	// MetricToolDuration is a histogram of call durations, in seconds.
	MetricToolDuration = "trellis.tool.duration"
	// MetricToolCalls counts calls.
	MetricToolCalls = "trellis.tool.calls"
	// MetricToolErrors counts calls answered with an error result.
	MetricToolErrors = "trellis.tool.errors"
	// AttrToolStatus is the attribute that holds a call's tool.Status.
	AttrToolStatus = attribute.Key("trellis.tool.status")
	// UnknownToolName stands for the name of an unknown tool in metric
	// attributes, since a model can make up any number of names.
	UnknownToolName = "_unknown"
)

type telemetryConfig struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// TelemetryOption configures OpenTelemetry.
type TelemetryOption interface{ applyTelemetry(*telemetryConfig) }

type telemetryOption func(*telemetryConfig)

func (o telemetryOption) applyTelemetry(c *telemetryConfig) { o(c) }

// WithTracerProvider sets where spans go (default: the global provider,
// otel.GetTracerProvider, read when the middleware is made; it follows a
// provider installed later).
func WithTracerProvider(tp trace.TracerProvider) TelemetryOption {
	return telemetryOption(func(c *telemetryConfig) { c.tp = tp })
}

// WithMeterProvider sets where metrics go (default: the global provider,
// otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) TelemetryOption {
	return telemetryOption(func(c *telemetryConfig) { c.mp = mp })
}

// OpenTelemetry traces and measures each call, following the OpenTelemetry
// semantic conventions for generative AI. Each call gets a span named
// "execute_tool {tool name}" (kind internal; "execute_tool" alone for a
// call of an unknown tool) with the attributes
// gen_ai.operation.name ("execute_tool"), gen_ai.tool.name,
// gen_ai.tool.call.id and gen_ai.tool.type, and, when the call fails,
// error.type (the result's ErrorCode) and an error status. The span is in
// the context the rest of the chain receives, so spans started inside the
// tool nest under it.
//
// It also records MetricToolDuration, MetricToolCalls and
// MetricToolErrors. With the no-op providers (OpenTelemetry not set up) it
// costs little: once a span shows that nothing records and there is no
// trace to join, the next calls make no span for a second (then it looks
// again, so a provider installed later is followed within a second); no
// attributes are built for spans that do not record, and metric attribute
// sets are built once per tool, status and error type.
func OpenTelemetry(opts ...TelemetryOption) executor.Middleware {
	var c telemetryConfig
	for _, o := range opts {
		if o != nil {
			o.applyTelemetry(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	t := &telemetry{
		tracer:    c.tp.Tracer(instrumentationName),
		startOpts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)},
	}
	meter := c.mp.Meter(instrumentationName)
	// The instruments of a well-formed name and unit cannot fail; an SDK
	// that refuses one anyway returns a working no-op instrument.
	t.duration, _ = meter.Float64Histogram(MetricToolDuration,
		metric.WithDescription("Duration of tool calls."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
	t.calls, _ = meter.Int64Counter(MetricToolCalls, metric.WithDescription("Tool calls."), metric.WithUnit("{call}"))
	t.errors, _ = meter.Int64Counter(MetricToolErrors, metric.WithDescription("Tool calls answered with an error."), metric.WithUnit("{call}"))
	return func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			return t.handle(ctx, next, req)
		})
	}
}

type telemetry struct {
	tracer trace.Tracer
	// dormantUntil is the time (Unix nanoseconds) until which calls make
	// no spans, because the last span made showed that no tracing is set
	// up (see handle).
	dormantUntil atomic.Int64
	duration     metric.Float64Histogram
	calls        metric.Int64Counter
	errors       metric.Int64Counter
	names        sync.Map // tool name -> span name
	sets         sync.Map // metricKey -> measurementOptions
	startOpts    []trace.SpanStartOption
}

// measurementOptions carry one attribute set, ready to pass.
type measurementOptions struct {
	record []metric.RecordOption
	add    []metric.AddOption
}

type metricKey struct{ tool, status, errType string }

// dormantFor is how long calls make no spans once a span showed that no
// tracing is set up: a provider installed later is followed within it.
var dormantFor = time.Second

func (t *telemetry) handle(ctx context.Context, next executor.Handler, req *executor.Request) tool.Result {
	name := req.Call.Name
	start := time.Now()
	var span trace.Span = noop.Span{}
	if start.UnixNano() >= t.dormantUntil.Load() {
		ctx, span = t.tracer.Start(ctx, t.spanName(name, req.Tool != nil), t.startOpts...)
		if !span.IsRecording() && !span.SpanContext().IsValid() {
			// No SDK behind the provider (OpenTelemetry's default, or a
			// no-op one), and no trace to join: the span is nothing, and
			// so, for a while, are the next ones. A span that does not
			// record but has a trace (an SDK's sampler said no, or a
			// parent's trace) is made every time.
			t.dormantUntil.Store(start.Add(dormantFor).UnixNano())
		}
	}
	if span.IsRecording() {
		span.SetAttributes(
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(name),
			semconv.GenAIToolCallID(req.Call.ID),
			semconv.GenAIToolTypeKey.String("function"),
		)
		if req.Tool != nil {
			if d := req.Tool.Definition().Description; d != "" {
				span.SetAttributes(semconv.GenAIToolDescription(d))
			}
		}
	}
	finished := false
	defer func() {
		if !finished { // a panic: the executor answers it; the span still ends
			span.SetAttributes(semconv.ErrorTypeKey.String(tool.CodePanic))
			span.SetStatus(codes.Error, "panic")
			span.End()
			t.measure(ctx, req, start, tool.StatusFailed, tool.CodePanic)
		}
	}()
	r := next.Handle(ctx, req)
	finished = true
	s := executor.Settle(r)
	et := errorType(s)
	if et != "" && span.IsRecording() {
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		msg := et
		if s.Err != nil {
			msg = s.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
	t.measure(ctx, req, start, s.Status, et)
	return r
}

// measure records the metrics of a call that started at start and ended
// with status and error type et ("" for a success).
func (t *telemetry) measure(ctx context.Context, req *executor.Request, start time.Time, status tool.Status, et string) {
	metricName := req.Call.Name
	if req.Tool == nil {
		metricName = UnknownToolName
	}
	opts := t.attributes(metricKey{tool: metricName, status: string(status), errType: et})
	t.duration.Record(ctx, time.Since(start).Seconds(), opts.record...)
	t.calls.Add(ctx, 1, opts.add...)
	if et != "" {
		t.errors.Add(ctx, 1, opts.add...)
	}
}

// spanName is "execute_tool {name}", built once per known tool, and
// "execute_tool" for a name the batch's tools do not have: a model can make
// up any number of names, and span names are meant to be few (the made-up
// name is in the span's gen_ai.tool.name).
func (t *telemetry) spanName(name string, known bool) string {
	if !known {
		return "execute_tool"
	}
	if s, ok := t.names.Load(name); ok {
		return s.(string)
	}
	s := "execute_tool " + name
	t.names.Store(name, s)
	return s
}

// attributes returns the metric options carrying the attributes of k,
// built once.
func (t *telemetry) attributes(k metricKey) measurementOptions {
	if s, ok := t.sets.Load(k); ok {
		return s.(measurementOptions)
	}
	kvs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(k.tool),
		AttrToolStatus.String(k.status),
	}
	if k.errType != "" {
		kvs = append(kvs, semconv.ErrorTypeKey.String(k.errType))
	}
	o := metric.WithAttributeSet(attribute.NewSet(kvs...))
	opts := measurementOptions{record: []metric.RecordOption{o}, add: []metric.AddOption{o}}
	t.sets.Store(k, opts)
	return opts
}

// errorType is the error.type of a settled result: its ErrorCode, else
// its status; "" for a result that is not an error.
func errorType(r tool.Result) string {
	switch {
	case !r.IsError:
		return ""
	case r.ErrorCode != "":
		return r.ErrorCode
	case r.Status != "":
		return string(r.Status)
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
