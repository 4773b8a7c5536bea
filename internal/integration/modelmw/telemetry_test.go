package modelmw_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

func TestTelemetryReportsAChatSpanPerCall(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	base := scripted.New(scripted.Reply("hi").WithUsage(model.Usage{InputTokens: 7, OutputTokens: 2}), scripted.Reply("again"))
	m := modelmw.Chain(base, modelmw.Telemetry(tp, nil))
	_, err := m.Generate(modelmw.WithAgent(t.Context(), "greeter"), userReq("x"))
	require.NoError(t, err)
	_, err = textOf(m.Stream(t.Context(), userReq("x")))
	require.NoError(t, err)
	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	assert.Equal(t, "chat scripted", spans[0].Name)
	attrs := map[string]any{}
	for _, kv := range spans[0].Attributes {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	assert.Equal(t, int64(7), attrs["gen_ai.usage.input_tokens"])
	assert.Equal(t, "greeter", attrs["gen_ai.agent.name"])
}

func TestLogWritesOneRecordPerCallWithItsErrorClass(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	base := scripted.New(scripted.Reply("hi"), scripted.Fail(&model.ProviderError{StatusCode: 429}))
	m := modelmw.Chain(base, modelmw.Log(logger))
	_, err := m.Generate(t.Context(), userReq("secret question"))
	require.NoError(t, err)
	_, err = m.Generate(t.Context(), userReq("secret question"))
	require.Error(t, err)
	out := buf.String()
	assert.Contains(t, out, `"msg":"model call"`)
	assert.Contains(t, out, `"msg":"model call failed"`)
	assert.Contains(t, out, `"error_class":"model: rate limited"`)
	assert.NotContains(t, out, "secret question", "the conversation is never logged")
}
