package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

// TestSupervisorRunTrace checks the span tree of a supervisor run with two
// handoffs in one batch, a worker calling two tools in parallel, and the
// metrics recorded along the way.
func TestSupervisorRunTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	otelMW := middleware.OpenTelemetry(middleware.WithTracerProvider(tp), middleware.WithMeterProvider(mp))

	search := tool.MustFunc("search", "searches", func(_ context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		return "found " + in.Q, nil
	}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))

	usage := model.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	researcherModel := scripted.New(
		scripted.CallTools(scripted.Call("search", `{"q":"a"}`), scripted.Call("search", `{"q":"b"}`)).WithUsage(usage),
		echoLastTool("facts: ").WithUsage(usage),
	)
	researcherModel.Name = "researcher-model"
	writerModel := scripted.New(scripted.Reply("a title").WithUsage(usage))
	writerModel.Name = "writer-model"
	supModel := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("r", "researcher", `{"task":"research"}`),
			scripted.CallWithID("w", "writer", `{"task":"title"}`),
		).WithUsage(usage),
		echoLastTool("done: ").WithUsage(usage),
	)
	supModel.Name = "supervisor-model"

	researcher, err := agent.NewReAct(researcherModel, agent.WithName("researcher"), agent.WithTools(search), agent.WithMiddleware(otelMW))
	require.NoError(t, err)
	writer, err := agent.NewReAct(writerModel, agent.WithName("writer"))
	require.NoError(t, err)
	sup, err := agent.NewSupervisor(supModel, []agent.Worker{
		{Name: "researcher", Description: "finds facts", Agent: researcher},
		{Name: "writer", Description: "writes", Agent: writer},
	}, agent.WithMiddleware(otelMW), agent.WithCompileOptions(graph.WithTracerProvider(tp), graph.WithMeterProvider(mp)))
	require.NoError(t, err)

	out, err := sup.Invoke(context.Background(), agent.Ask("go"), graph.WithThread("t-1"))
	require.NoError(t, err)
	assert.Equal(t, "done: facts: found a | found b | a title", agent.FinalText(out.Messages))

	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	// chain returns the names from a span up to the root.
	chain := func(s tracetest.SpanStub) []string {
		var names []string
		for {
			names = append(names, s.Name)
			p, ok := byID[s.Parent.SpanID().String()]
			if !ok {
				return names
			}
			s = p
		}
	}
	find := func(name string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spans {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}

	require.Len(t, find("run supervisor"), 1)
	require.Len(t, find("execute_tool researcher"), 1)
	require.Len(t, find("execute_tool writer"), 1)
	// The two handoffs ran in one batch, under one ToolsNode span.
	r, w := find("execute_tool researcher")[0], find("execute_tool writer")[0]
	assert.Equal(t, r.Parent.SpanID(), w.Parent.SpanID())
	assert.Equal(t, []string{"execute_tool researcher", "node tools", "superstep 1", "run supervisor"}, chain(r))

	// The researcher's run nests under its handoff's span, its model call
	// under its node, and its two parallel tool calls under its ToolsNode.
	searches := find("execute_tool search")
	require.Len(t, searches, 2)
	assert.Equal(t, searches[0].Parent.SpanID(), searches[1].Parent.SpanID())
	assert.Equal(t, []string{"execute_tool search", "node tools", "superstep 1", "run researcher", "execute_tool researcher", "node tools", "superstep 1", "run supervisor"}, chain(searches[0]))
	chats := find("chat researcher-model")
	require.Len(t, chats, 2)
	assert.Equal(t, []string{"chat researcher-model", "node agent", "superstep 0", "run researcher", "execute_tool researcher", "node tools", "superstep 1", "run supervisor"}, chain(chats[0]))
	require.Len(t, find("chat writer-model"), 1)

	// Attributes: the graph's run carries the thread; the tool span the call.
	runAttrs := map[string]string{}
	for _, kv := range find("run supervisor")[0].Attributes {
		runAttrs[string(kv.Key)] = kv.Value.Emit()
	}
	assert.Equal(t, "t-1", runAttrs["trellis.thread.id"])
	toolAttrs := map[string]string{}
	for _, kv := range r.Attributes {
		toolAttrs[string(kv.Key)] = kv.Value.Emit()
	}
	assert.Equal(t, "execute_tool", toolAttrs["gen_ai.operation.name"])
	assert.Equal(t, "researcher", toolAttrs["gen_ai.tool.name"])
	assert.Equal(t, "r", toolAttrs["gen_ai.tool.call.id"])

	// Metrics: runs per graph, tool calls per tool, tokens per type.
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					for _, key := range []string{"trellis.graph.name", "gen_ai.tool.name"} {
						if v, ok := dp.Attributes.Value(attributeKey(key)); ok {
							sums[m.Name+"/"+v.AsString()] += dp.Value
						}
					}
				}
			case metricdata.Histogram[int64]:
				for _, dp := range data.DataPoints {
					if v, ok := dp.Attributes.Value("gen_ai.token.type"); ok {
						sums[m.Name+"/"+v.AsString()] += dp.Sum
					}
				}
			}
		}
	}
	assert.Equal(t, int64(1), sums["trellis.graph.runs/supervisor"])
	assert.Equal(t, int64(1), sums["trellis.graph.runs/researcher"])
	assert.Equal(t, int64(1), sums["trellis.graph.runs/writer"])
	assert.Equal(t, int64(2), sums["trellis.tool.calls/search"])
	assert.Equal(t, int64(1), sums["trellis.tool.calls/researcher"])
	// Five model calls; the three fixed replies report usage (the computed
	// ones report none).
	assert.Equal(t, int64(30), sums["gen_ai.client.token.usage/input"])
	assert.Equal(t, int64(15), sums["gen_ai.client.token.usage/output"])
}

func attributeKey(s string) attribute.Key { return attribute.Key(s) }
