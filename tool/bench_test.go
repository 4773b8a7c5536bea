package tool

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/internal/arguments"
)

// benchArgs is the five-field struct of the pipeline benchmarks: one field
// of each JSON type, described but not constrained.
type benchArgs struct {
	Query  string   `json:"query" jsonschema:"description=What to search for"`
	Limit  int      `json:"limit" jsonschema:"description=How many results"`
	Exact  bool     `json:"exact" jsonschema:"description=Match the whole phrase"`
	Weight float64  `json:"weight" jsonschema:"description=Relevance weight"`
	Tags   []string `json:"tags" jsonschema:"description=Tags to filter by"`
}

// constrainedArgs is benchArgs with the constraints a real tool often has;
// each constraint is one more check for the validator.
type constrainedArgs struct {
	Query  string   `json:"query" jsonschema:"description=What to search for,minLength=1,maxLength=200"`
	Limit  int      `json:"limit" jsonschema:"description=How many results,minimum=1,maximum=100"`
	Exact  bool     `json:"exact" jsonschema:"description=Match the whole phrase"`
	Weight float64  `json:"weight" jsonschema:"description=Relevance weight,minimum=0,maximum=1"`
	Tags   []string `json:"tags" jsonschema:"description=Tags to filter by,maxItems=10"`
}

var benchRaw = json.RawMessage(`{"query":"weather in Berlin","limit":10,"exact":true,"weight":0.75,"tags":["news","weather","europe"]}`)

// benchCoercedRaw is benchRaw as a model that quotes numbers and booleans
// sends it: coercion has to fix three values, so the call takes the full
// pipeline.
var benchCoercedRaw = json.RawMessage(`{"query":"weather in Berlin","limit":"10","exact":"true","weight":"0.75","tags":["news","weather","europe"]}`)

func benchInvoke[In any](b *testing.B) { benchInvokeWith[In](b, benchRaw) }

func benchInvokeWith[In any](b *testing.B, raw json.RawMessage) {
	ft := MustFunc("search", "Search", func(_ context.Context, in In) (string, error) {
		return "ok", nil
	})
	iv := NewInvoker()
	call := model.ToolCall{ID: "call_1", Name: "search", Arguments: raw}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r := iv.Invoke(ctx, ft, call)
		if r.IsError {
			b.Fatal(r.Text())
		}
	}
}

// BenchmarkTypedToolCall runs the whole typed pipeline for one call with
// JSON repair off, through an Invoker: parse, coerce, validate, decode into
// the struct, call, build the result.
func BenchmarkTypedToolCall(b *testing.B) { benchInvoke[benchArgs](b) }

// BenchmarkTypedToolCallConstrained is BenchmarkTypedToolCall with
// constraints on four of the five fields.
func BenchmarkTypedToolCallConstrained(b *testing.B) { benchInvoke[constrainedArgs](b) }

// BenchmarkTypedToolCallCoerced is BenchmarkTypedToolCall with arguments
// that need coercion: the fast path declines them and the full pipeline
// (parse, coerce, validate, decode) runs.
func BenchmarkTypedToolCallCoerced(b *testing.B) { benchInvokeWith[benchArgs](b, benchCoercedRaw) }

// BenchmarkPlainUnmarshal decodes the same arguments with json.Unmarshal,
// the baseline the pipeline is measured against.
func BenchmarkPlainUnmarshal(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var in benchArgs
		if err := json.Unmarshal(benchRaw, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkArgumentStages measures each step of the typed pipeline alone,
// on the arguments of BenchmarkTypedToolCall, and the fast path that
// replaces all four for such arguments.
func BenchmarkArgumentStages(b *testing.B) {
	ft := MustFunc("search", "Search", func(_ context.Context, in benchArgs) (string, error) { return in.Query, nil })
	sch := ft.CompiledSchema()
	parsed, err := Parse(benchRaw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(benchRaw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("coerce", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sch.Coerce(parsed)
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := sch.Validate(parsed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, errs := arguments.Value[benchArgs](ft.plan, parsed); errs != nil {
				b.Fatal(errs)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := arguments.Fast[benchArgs](ft.plan, benchRaw); !ok {
				b.Fatal("the fast path declined")
			}
		}
	})
}

// BenchmarkTypedVsPlain alternates chunks of typed calls (as in
// BenchmarkTypedToolCall, and its constrained variant) and plain decodes (as
// in BenchmarkPlainUnmarshal) and reports the ratio of their times.
// Interleaving exposes both to the same machine load, so the ratio holds on
// a busy machine where two separate benchmarks drift apart.
func BenchmarkTypedVsPlain(b *testing.B) {
	b.Run("plain-fields", benchRatio[benchArgs])
	b.Run("constrained", benchRatio[constrainedArgs])
}

func benchRatio[In any](b *testing.B) {
	ft := MustFunc("search", "Search", func(_ context.Context, in In) (string, error) {
		return "ok", nil
	})
	iv := NewInvoker()
	call := model.ToolCall{ID: "call_1", Name: "search", Arguments: benchRaw}
	ctx := context.Background()
	const chunk = 32
	var typed, plain time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range chunk {
			if r := iv.Invoke(ctx, ft, call); r.IsError {
				b.Fatal(r.Text())
			}
		}
		t1 := time.Now()
		for range chunk {
			var in In
			if err := json.Unmarshal(benchRaw, &in); err != nil {
				b.Fatal(err)
			}
		}
		typed += t1.Sub(t0)
		plain += time.Since(t1)
	}
	calls := float64(b.N * chunk)
	b.ReportMetric(float64(typed.Nanoseconds())/calls, "typed-ns/call")
	b.ReportMetric(float64(plain.Nanoseconds())/calls, "plain-ns/call")
	b.ReportMetric(float64(typed)/float64(plain), "typed/plain")
}
