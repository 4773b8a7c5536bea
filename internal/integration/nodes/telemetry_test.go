package nodes_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
)

func TestModelCallsAreChatSpansWithGenAIAttributes(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	m := scripted.New(scripted.Reply("hi").WithUsage(model.Usage{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}))
	g, err := graph.New[agentState](graph.WithName("bot")).
		AddNode("llm", nodes.LLM[agentState](m, nodes.WithAgentName("greeter"), nodes.WithSettings(model.Settings{MaxTokens: 64}))).
		AddEdge(graph.START, "llm").
		Compile(graph.WithTracerProvider(tp), graph.WithMeterProvider(mp))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), user("hello"))
	require.NoError(t, err)

	var chat, node tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "chat scripted":
			chat = s
		case "node llm":
			node = s
		}
	}
	require.Equal(t, "chat scripted", chat.Name)
	assert.Equal(t, node.SpanContext.SpanID(), chat.Parent.SpanID(), "the model call nests under its node")
	assert.Equal(t, "client", chat.SpanKind.String())
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range chat.Attributes {
		got[kv.Key] = kv.Value
	}
	assert.Equal(t, "chat", got["gen_ai.operation.name"].AsString())
	assert.Equal(t, "scripted", got["gen_ai.provider.name"].AsString())
	assert.Equal(t, "scripted", got["gen_ai.request.model"].AsString())
	assert.Equal(t, int64(12), got["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, int64(3), got["gen_ai.usage.output_tokens"].AsInt64())
	assert.Equal(t, int64(64), got["gen_ai.request.max_tokens"].AsInt64())
	assert.Equal(t, "greeter", got["gen_ai.agent.name"].AsString())

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	tokens := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "gen_ai.client.token.usage" {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Histogram[int64]).DataPoints {
				typ, _ := dp.Attributes.Value("gen_ai.token.type")
				tokens[typ.AsString()] += dp.Sum
			}
		}
	}
	assert.Equal(t, map[string]int64{"input": 12, "output": 3}, tokens)
}

func TestChatSpanOfAModelThatDoesNotNameItself(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	m := &unnamedModel{reply: model.Assistant("hi")}
	g, err := graph.New[agentState]().
		AddNode("llm", nodes.LLM[agentState](m)).
		AddEdge(graph.START, "llm").
		Compile(graph.WithTracerProvider(tp))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), user("hello"))
	require.NoError(t, err)
	var names []string
	var chat tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		if s.Name == "chat" {
			chat = s
		}
	}
	require.Contains(t, names, "chat", "the operation alone names the span when the model is unknown")
	for _, kv := range chat.Attributes {
		assert.NotEqual(t, attribute.Key("gen_ai.request.model"), kv.Key, "no empty model name is reported")
	}
}

func TestFailedModelCallSpanNamesTheErrorType(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"provider status", &model.ProviderError{Provider: "openai", StatusCode: 503, Message: "overloaded"}, "503"},
		{"deadline", context.DeadlineExceeded, "timeout"},
		{"other", errors.New("boom"), "*errors.errorString"},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			m := scripted.New(scripted.Fail(c.err))
			g, err := graph.New[agentState]().
				AddNode("llm", nodes.LLM[agentState](m)).
				AddEdge(graph.START, "llm").
				Compile(graph.WithTracerProvider(tp))
			require.NoError(t, err)
			_, err = g.Invoke(context.Background(), user("hi"))
			require.Error(t, err)
			var chat tracetest.SpanStub
			for _, s := range exp.GetSpans() {
				if s.Name == "chat scripted" {
					chat = s
				}
			}
			require.Equal(t, "chat scripted", chat.Name)
			assert.Equal(t, codes.Error, chat.Status.Code)
			got := map[attribute.Key]attribute.Value{}
			for _, kv := range chat.Attributes {
				got[kv.Key] = kv.Value
			}
			assert.Equal(t, c.want, got["error.type"].AsString())
		})
	}
}
