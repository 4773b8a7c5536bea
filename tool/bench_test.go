package tool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trellis-go/trellis/model"
)

// benchArgs is the five-field struct of the pipeline benchmarks.
type benchArgs struct {
	Query  string   `json:"query" jsonschema:"description=What to search for,minLength=1"`
	Limit  int      `json:"limit" jsonschema:"minimum=1,maximum=100"`
	Exact  bool     `json:"exact"`
	Weight float64  `json:"weight"`
	Tags   []string `json:"tags"`
}

var benchRaw = json.RawMessage(`{"query":"weather in Berlin","limit":10,"exact":true,"weight":0.75,"tags":["news","weather","europe"]}`)

// BenchmarkTypedToolCall runs the whole typed pipeline for one call with
// JSON repair off: parse, coerce, validate, decode into the struct, call.
func BenchmarkTypedToolCall(b *testing.B) {
	ft := MustFunc("search", "Search", func(_ context.Context, in benchArgs) (string, error) {
		return in.Query, nil
	})
	iv := NewInvoker()
	call := model.ToolCall{ID: "call_1", Name: "search", Arguments: benchRaw}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r := iv.Invoke(ctx, ft, call)
		if r.IsError {
			b.Fatal(r.Text())
		}
	}
}

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
// on the arguments of BenchmarkTypedToolCall.
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
			if _, errs := decodeValue[benchArgs](ft.decode, parsed); errs != nil {
				b.Fatal(errs)
			}
		}
	})
}
