package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/trellis-go/trellis/graph"
)

func attrs(kvs []attribute.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

func TestRunsAreTracedAndMeasured(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	child := mustCompile(t, graph.New[doc](graph.WithName("child")).
		AddNode("inner", appendLog("inner")).AddEdge(graph.START, "inner"))
	g := mustCompile(t, graph.New[doc](graph.WithName("parent"), logReducer()).
		AddNode("a", appendLog("a")).
		AddNode("b", appendLog("b")).
		AddSubgraph("sub", child.AsSubgraph()).
		AddNode("fail", func(_ context.Context, s doc) (doc, error) {
			if s.Answer == "fail" {
				return s, errors.New("bad input")
			}
			return s, nil
		}).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddEdge("a", "sub").AddEdge("sub", "fail"),
		graph.WithTracerProvider(tp), graph.WithMeterProvider(mp))

	_, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)

	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{} // spans of the parent graph, and the child's run
	for _, s := range spans {
		if attrs(s.Attributes)["trellis.graph.name"] == "parent" || s.Name == "run child" || s.Name == "node inner" {
			byName[s.Name] = s
		}
	}
	for _, name := range []string{"run parent", "superstep 0", "superstep 1", "superstep 2", "node a", "node b", "node sub", "run child", "node inner", "node fail"} {
		require.Contains(t, byName, name)
	}
	parentOf := func(name string) string {
		id := byName[name].Parent.SpanID()
		for _, s := range spans {
			if s.SpanContext.SpanID() == id {
				return s.Name
			}
		}
		return ""
	}
	assert.Equal(t, "superstep 0", parentOf("node a"))
	assert.Equal(t, "superstep 0", parentOf("node b"))
	assert.Equal(t, "run parent", parentOf("superstep 0"))
	assert.Equal(t, "node sub", parentOf("run child"), "the subgraph's run nests under its node")
	assert.Equal(t, map[string]any{"trellis.graph.name": "parent", "trellis.node.name": "a", "trellis.superstep": int64(0)}, attrs(byName["node a"].Attributes))

	exp.Reset()
	_, err = g.Invoke(context.Background(), doc{Answer: "fail"}, graph.WithThread(""))
	require.Error(t, err)
	var failed tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "node fail" {
			failed = s
		}
	}
	assert.Equal(t, "Error", failed.Status.Code.String())
	assert.Contains(t, failed.Status.Description, "bad input")

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					a := attrs(dp.Attributes.ToSlice())
					counts[m.Name+"/"+a["trellis.graph.name"].(string)+"/"+a["trellis.status"].(string)] += dp.Value
				}
			}
		}
	}
	assert.Equal(t, int64(1), counts["trellis.graph.runs/parent/ok"])
	assert.Equal(t, int64(1), counts["trellis.graph.runs/parent/error"])
	assert.Equal(t, int64(2), counts["trellis.graph.runs/child/ok"])
	assert.Equal(t, int64(1), counts["trellis.graph.node.executions/parent/error"])
	for key := range counts {
		assert.NotContains(t, key, "bad input", "no error message in metric attributes")
	}
}

// BenchmarkChain3NoopTracer is BenchmarkChain3 with a no-op tracer provider
// configured: the cost of telemetry that is switched off.
func BenchmarkChain3NoopTracer(b *testing.B) {
	g := graph.New[counter]()
	prev := graph.START
	for _, n := range []string{"n0", "n1", "n2"} {
		g.AddNode(n, incr).AddEdge(prev, n)
		prev = n
	}
	c, err := g.Compile(graph.WithTracerProvider(noop.NewTracerProvider()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Invoke(ctx, counter{})
		if err != nil || out.N != 3 {
			b.Fatalf("got %d, %v", out.N, err)
		}
	}
}

func TestProvidersReachNodes(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var got, gotOff any
	traced := mustCompile(t, graph.New[doc]().AddNode("n", func(ctx context.Context, s doc) (doc, error) {
		got = graph.TracerProvider(ctx)
		return s, nil
	}).AddEdge(graph.START, "n"), graph.WithTracerProvider(tp))
	plain := mustCompile(t, graph.New[doc]().AddNode("n", func(ctx context.Context, s doc) (doc, error) {
		gotOff = graph.TracerProvider(ctx)
		return s, nil
	}).AddEdge(graph.START, "n"))
	_, err := traced.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	_, err = plain.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	assert.Same(t, tp, got)
	assert.Nil(t, gotOff)
	assert.Nil(t, graph.MeterProvider(context.Background()))
}

func TestAnUnnamedGraphsRunSpanIsRun(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	g := mustCompile(t, graph.New[doc]().AddNode("a", appendLog("a")).AddEdge(graph.START, "a"),
		graph.WithTracerProvider(tp))
	_, err := g.Invoke(context.Background(), doc{})
	require.NoError(t, err)
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
	}
	assert.Contains(t, names, "run")
	for _, n := range names {
		assert.Equal(t, strings.TrimSpace(n), n, "span names have no stray spaces")
	}
}
