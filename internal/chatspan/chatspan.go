package chatspan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-go/trellis/model"
)

// GenAI semantic convention attributes of a model call.
const (
	attrOperation     = attribute.Key("gen_ai.operation.name")
	attrProvider      = attribute.Key("gen_ai.provider.name")
	attrRequestModel  = attribute.Key("gen_ai.request.model")
	attrResponseModel = attribute.Key("gen_ai.response.model")
	attrInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	attrFinish        = attribute.Key("gen_ai.response.finish_reasons")
	attrMaxTokens     = attribute.Key("gen_ai.request.max_tokens")
	attrTemperature   = attribute.Key("gen_ai.request.temperature")
	attrTokenType     = attribute.Key("gen_ai.token.type")
	attrErrorType     = attribute.Key("error.type")
	attrAgent         = attribute.Key("gen_ai.agent.name")
)

// Call names the model call a span reports.
type Call struct {
	// Provider and Model name the model ("unknown" stands for an empty
	// Provider).
	Provider, Model string
	// Agent is the agent the call is made for, or "".
	Agent string
}

// Span reports one model call as a "chat {model}" span and GenAI
// client metrics.// client metrics, when the run behind ctx is traced or measured.
type Span struct {
	span  trace.Span
	meter metric.Meter
	start time.Time
	base  []attribute.KeyValue
}

// Start begins the span of call under the instrumentation scope named
// scope, with the tracer and meter providers given (either may be nil). It
// returns nil, and ctx unchanged, when both are nil; a nil *Span ends
// without doing anything.
func Start(ctx context.Context, scope string, tp trace.TracerProvider, mp metric.MeterProvider, call Call, req *model.Request) (context.Context, *Span) {
	if tp == nil && mp == nil {
		return ctx, nil
	}
	provider := call.Provider
	if provider == "" {
		provider = "unknown"
	}
	ms := &Span{start: time.Now(), base: []attribute.KeyValue{
		attrOperation.String("chat"), attrProvider.String(provider),
	}}
	name := "chat" // the span's name: the operation, and the model when known
	if call.Model != "" {
		ms.base = append(ms.base, attrRequestModel.String(call.Model))
		name += " " + call.Model
	}
	if mp != nil {
		ms.meter = mp.Meter(scope)
	}
	if tp != nil {
		attrs := append([]attribute.KeyValue{}, ms.base...)
		if call.Agent != "" {
			attrs = append(attrs, attrAgent.String(call.Agent))
		}
		if req.Settings.MaxTokens > 0 {
			attrs = append(attrs, attrMaxTokens.Int(req.Settings.MaxTokens))
		}
		if req.Settings.Temperature != nil {
			attrs = append(attrs, attrTemperature.Float64(*req.Settings.Temperature))
		}
		ctx, ms.span = tp.Tracer(scope).Start(ctx, name,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	}
	return ctx, ms
}

// End closes the span and records the metrics of the call.
func (ms *Span) End(ctx context.Context, resp *model.Response, err error) {
	if ms == nil {
		return
	}
	var errType string
	if err != nil {
		errType = ErrorType(err)
	}
	if ms.span != nil {
		if resp != nil {
			attrs := []attribute.KeyValue{attrInputTokens.Int(resp.Usage.InputTokens), attrOutputTokens.Int(resp.Usage.OutputTokens)}
			if resp.Model != "" {
				attrs = append(attrs, attrResponseModel.String(resp.Model))
			}
			if resp.FinishReason != "" {
				attrs = append(attrs, attrFinish.StringSlice([]string{resp.FinishReason}))
			}
			ms.span.SetAttributes(attrs...)
		}
		if err != nil {
			ms.span.SetAttributes(attrErrorType.String(errType))
			ms.span.RecordError(err)
			ms.span.SetStatus(codes.Error, err.Error())
		}
		ms.span.End()
	}
	if ms.meter != nil {
		attrs := ms.base
		if resp != nil && resp.Model != "" {
			attrs = append(attrs[:len(attrs):len(attrs)], attrResponseModel.String(resp.Model))
		}
		if err != nil {
			attrs = append(attrs[:len(attrs):len(attrs)], attrErrorType.String(errType))
		}
		if d, e := ms.meter.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
			metric.WithDescription("Duration of model calls.")); e == nil {
			d.Record(ctx, time.Since(ms.start).Seconds(), metric.WithAttributes(attrs...))
		}
		if resp != nil {
			if u, e := ms.meter.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
				metric.WithDescription("Tokens used by model calls.")); e == nil {
				in := append(attrs[:len(attrs):len(attrs)], attrTokenType.String("input"))
				out := append(attrs[:len(attrs):len(attrs)], attrTokenType.String("output"))
				u.Record(ctx, int64(resp.Usage.InputTokens), metric.WithAttributes(in...))
				u.Record(ctx, int64(resp.Usage.OutputTokens), metric.WithAttributes(out...))
			}
		}
	}
}

// ErrorType names an error's kind with a bounded set of values: never the
// message.
func ErrorType(err error) string {
	var pe *model.ProviderError
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &pe) && pe.StatusCode > 0:
		return fmt.Sprint(pe.StatusCode)
	}
	return fmt.Sprintf("%T", err)
}
