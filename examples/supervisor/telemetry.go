package main

import (
	"context"
	"io"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// setupTelemetry installs OpenTelemetry providers that print spans and
// metrics as JSON to w, when the environment asks for it with
// TRELLIS_OTEL_STDOUT=1. It returns a function that flushes and stops them.
//
// The graphs and the OpenTelemetry middleware use the global providers, so
// nothing else needs to change for a run to be traced.
func setupTelemetry(getenv func(string) string, w io.Writer) (func(context.Context) error, error) {
	if getenv("TRELLIS_OTEL_STDOUT") == "" {
		return func(context.Context) error { return nil }, nil
	}
	spans, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
	if err != nil {
		return nil, err
	}
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(w), stdoutmetric.WithPrettyPrint())
	if err != nil {
		return nil, err
	}
	// A syncer prints each span as it ends, which suits a demo; a service
	// exports in batches (sdktrace.WithBatcher).
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	return func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		if merr := mp.Shutdown(ctx); err == nil {
			err = merr
		}
		return err
	}, nil
}
