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
	tl := newCounted(t, "t", readOnly, ok("fine"))
	newHandler := func(started *atomic.Int32) func(id string) {
		h := handler(middleware.OpenTelemetry(middleware.WithTracerProvider(countingProvider{tracenoop.NewTracerProvider(), started})))
		return func(id string) {
			r := h.Handle(context.Background(), req(tl, id, ""))
			require.Equal(t, "fine", r.Text())
		}
	}

	// A while far longer than the calls take: none of them looks again.
	restore := middleware.SetDormantFor(time.Hour)
	var started atomic.Int32
	call := newHandler(&started)
	for i := range 3 {
		call(fmt.Sprint(i))
	}
	assert.EqualValues(t, 1, started.Load(), "one span showed there is no tracing")
	restore()

	// A short while: a call made after it looks again.
	defer middleware.SetDormantFor(50 * time.Millisecond)()
	var again atomic.Int32
	call = newHandler(&again)
	call("0")
	require.EqualValues(t, 1, again.Load())
	n := 0
	require.Eventually(t, func() bool {
		n++
		call(fmt.Sprint(n))
		return again.Load() == 2
	}, 10*time.Second, 10*time.Millisecond, "it looks again after a while")
}
