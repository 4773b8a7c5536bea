package modelmw_test

import (
	"context"
	"iter"
	"testing"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
)

// fixed answers every call with the same reply, so that a benchmark
// measures the chain and not a model.
type fixed struct{ resp *model.Response }

func (f fixed) Generate(context.Context, *model.Request) (*model.Response, error) { return f.resp, nil }
func (f fixed) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return model.ResponseChunks(f.resp)
}

func pass() modelmw.Middleware {
	return modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		return req, nil, nil
	})
}

// BenchmarkChain measures a model call through a chain of 0 and 5
// middlewares that pass the call on, so that the difference is the
// per-layer overhead.
func BenchmarkChain(b *testing.B) {
	base := fixed{resp: &model.Response{Message: model.Assistant("ok")}}
	req := userReq("x")
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		m    model.Model
	}{
		{"0", modelmw.Chain(base)},
		{"5", modelmw.Chain(base, pass(), pass(), pass(), pass(), pass())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.m.Generate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
