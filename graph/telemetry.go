package graph

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Instrumentation scope of the engine's spans and metrics.
const scope = "github.com/trellis-go/trellis/graph"

// Attribute keys of the engine's spans and metrics.
const (
	AttrGraph     = attribute.Key("trellis.graph.name")
	AttrThread    = attribute.Key("trellis.thread.id")
	AttrNode      = attribute.Key("trellis.node.name")
	AttrSuperstep = attribute.Key("trellis.superstep")
	AttrPath      = attribute.Key("trellis.path")
	AttrStatus    = attribute.Key("trellis.status")
)

// The global providers' types before anything is registered: a run that
// finds them knows telemetry is off without starting a span.
var (
	defaultTracerProvider = reflect.TypeOf(otel.GetTracerProvider())
	defaultMeterProvider  = reflect.TypeOf(otel.GetMeterProvider())
)

// WithTracerProvider traces the graph's runs with tp instead of the global
// provider (otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) CompileOption {
	return func(o *compileOptions) { o.tp = tp }
}

// WithMeterProvider records the graph's metrics with mp instead of the
// global provider (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) CompileOption {
	return func(o *compileOptions) { o.mp = mp }
}

// telemetry is a run's tracer and instruments; nil when both are off.
type telemetry struct {
	tp       trace.TracerProvider // nil when tracing is off
	mp       metric.MeterProvider // nil when metrics are off
	tracer   trace.Tracer
	runDur   metric.Float64Histogram
	nodeDur  metric.Float64Histogram
	runs     metric.Int64Counter
	nodeRuns metric.Int64Counter
}

func tracingOn(tp trace.TracerProvider) bool {
	if tp == nil {
		return false
	}
	if _, ok := tp.(tracenoop.TracerProvider); ok {
		return false
	}
	return reflect.TypeOf(tp) != defaultTracerProvider
}

func metricsOn(mp metric.MeterProvider) bool {
	if mp == nil {
		return false
	}
	if _, ok := mp.(metricnoop.MeterProvider); ok {
		return false
	}
	return reflect.TypeOf(mp) != defaultMeterProvider
}

// newTelemetry returns the run's telemetry, or nil when tracing and metrics
// are both off, which costs a run two type checks.
func (g *Graph[S]) newTelemetry() *telemetry {
	tp, mp := g.tp, g.mp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	traceOn, metricOn := tracingOn(tp), metricsOn(mp)
	if !traceOn && !metricOn {
		return nil
	}
	t := &telemetry{}
	if traceOn {
		t.tp, t.tracer = tp, tp.Tracer(scope)
	}
	if metricOn {
		t.mp = mp
		m := mp.Meter(scope)
		t.runDur, _ = m.Float64Histogram("trellis.graph.run.duration", metric.WithUnit("s"),
			metric.WithDescription("Duration of graph runs."))
		t.nodeDur, _ = m.Float64Histogram("trellis.graph.node.duration", metric.WithUnit("s"),
			metric.WithDescription("Duration of node executions."))
		t.runs, _ = m.Int64Counter("trellis.graph.runs", metric.WithDescription("Graph runs, by outcome."))
		t.nodeRuns, _ = m.Int64Counter("trellis.graph.node.executions", metric.WithDescription("Node executions, by outcome."))
	}
	return t
}

// status names an outcome with a bounded set of values.
func status(err error) string {
	switch {
	case err == nil:
		return "ok"
	case isInterrupt(err):
		return "interrupted"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "error"
}

func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && !isInterrupt(err) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	if isInterrupt(err) {
		span.SetAttributes(AttrStatus.String("interrupted"))
	}
	span.End()
}

// startRun opens the run's span.
func (t *telemetry) startRun(ctx context.Context, m *runMeta) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{AttrGraph.String(m.graph)}
	if t := m.thread(); t != "" {
		attrs = append(attrs, AttrThread.String(t))
	}
	if len(m.path) > 0 {
		attrs = append(attrs, AttrPath.StringSlice(m.path))
	}
	name := "run"
	if m.graph != "" {
		name += " " + m.graph
	}
	return t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

func (t *telemetry) endRun(ctx context.Context, m *runMeta, span trace.Span, start time.Time, err error) {
	endSpan(span, err)
	if t.runs != nil {
		attrs := metric.WithAttributes(AttrGraph.String(m.graph), AttrStatus.String(status(err)))
		t.runDur.Record(ctx, time.Since(start).Seconds(), attrs)
		t.runs.Add(ctx, 1, attrs)
	}
}

// startStep opens a superstep's span.
func (t *telemetry) startStep(ctx context.Context, m *runMeta, nodes []string) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, nil
	}
	return t.tracer.Start(ctx, "superstep "+strconv.Itoa(m.step), trace.WithAttributes(
		AttrGraph.String(m.graph), AttrSuperstep.Int(m.step), attribute.StringSlice("trellis.nodes", nodes)))
}

// startNode opens a node's span.
func (t *telemetry) startNode(ctx context.Context, m *runMeta, node string) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{AttrGraph.String(m.graph), AttrNode.String(node), AttrSuperstep.Int(m.step)}
	if t := m.thread(); t != "" {
		attrs = append(attrs, AttrThread.String(t))
	}
	return t.tracer.Start(ctx, "node "+node, trace.WithAttributes(attrs...))
}

func (t *telemetry) endNode(ctx context.Context, m *runMeta, node string, span trace.Span, start time.Time, err error) {
	endSpan(span, err)
	if t.nodeRuns != nil {
		attrs := metric.WithAttributes(AttrGraph.String(m.graph), AttrNode.String(node), AttrStatus.String(status(err)))
		t.nodeDur.Record(ctx, time.Since(start).Seconds(), attrs)
		t.nodeRuns.Add(ctx, 1, attrs)
	}
}

// TracerProvider returns the tracer provider of the run behind ctx, or nil
// when the run is not traced. Code that runs inside nodes (model calls, tool
// calls) uses it to report its own spans under the node's span, at no cost
// when tracing is off.
func TracerProvider(ctx context.Context) trace.TracerProvider {
	if m := metaFrom(ctx); m != nil && m.tel != nil && m.tel.tp != nil {
		return m.tel.tp
	}
	return nil
}

// MeterProvider returns the meter provider of the run behind ctx, or nil
// when the run records no metrics.
func MeterProvider(ctx context.Context) metric.MeterProvider {
	if m := metaFrom(ctx); m != nil && m.tel != nil && m.tel.mp != nil {
		return m.tel.mp
	}
	return nil
}
