package middleware_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/trellis-go/trellis/middleware"
)

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

// With no tracing set up (OpenTelemetry's default provider, a no-op one),
// the middleware stops making spans for a while once one shows it, and
// looks again after that, so that a provider installed later is followed.
func TestOpenTelemetryWithoutTracingMakesNoSpans(t *testing.T) {
	defer middleware.SetDormantFor(50 * time.Millisecond)()
	var started atomic.Int32
	h := handler(middleware.OpenTelemetry(middleware.WithTracerProvider(countingProvider{tracenoop.NewTracerProvider(), &started})))
	tl := newCounted(t, "t", readOnly, ok("fine"))
	for i := range 3 {
		r := h.Handle(context.Background(), req(tl, fmt.Sprint(i), ""))
		require.Equal(t, "fine", r.Text())
	}
	assert.EqualValues(t, 1, started.Load(), "one span showed there is no tracing")
	time.Sleep(60 * time.Millisecond)
	h.Handle(context.Background(), req(tl, "4", ""))
	assert.EqualValues(t, 2, started.Load(), "it looks again after a while")

}
