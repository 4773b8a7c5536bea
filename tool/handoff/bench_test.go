package handoff_test

import (
	"context"
	"encoding/json"
	"iter"
	"testing"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// policyModel answers with fn and records nothing, so that benchmarks
// measure the framework.
type policyModel func(req *model.Request) model.Message

func (p policyModel) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	return &model.Response{Message: p(req), FinishReason: "stop"}, nil
}

func (p policyModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	r, err := p.Generate(ctx, req)
	if err != nil {
		return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, err) }
	}
	return model.ResponseChunks(r)
}

var answer = policyModel(func(*model.Request) model.Message { return model.Assistant("42") })

// delegate calls the handoff once, then answers with its result.
var delegate = policyModel(func(req *model.Request) model.Message {
	if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
		return model.Assistant(last.Text())
	}
	return model.Assistant("", model.ToolCall{ID: "c1", Name: "worker", Arguments: json.RawMessage(`{"task":"compute"}`)})
})

// BenchmarkHandoff compares running a one-step agent directly, through its
// handoff tool outside a run, and as a worker of another agent (one handoff
// per run: the caller's two model calls and its ToolsNode included).
func BenchmarkHandoff(b *testing.B) {
	ctx := context.Background()
	worker, err := agent.NewReAct(answer, agent.WithName("worker"))
	if err != nil {
		b.Fatal(err)
	}
	h, err := handoff.New("worker", "computes", worker)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("agent alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := worker.Invoke(ctx, agent.Ask("compute")); err != nil {
				b.Fatal(err)
			}
		}
	})
	call := model.ToolCall{ID: "c1", Name: "worker", Arguments: json.RawMessage(`{"task":"compute"}`)}
	b.Run("handoff tool outside a run", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := tool.Invoke(ctx, h, call); r.IsError {
				b.Fatal(r.Text())
			}
		}
	})
	caller, err := agent.NewReAct(delegate, agent.WithTools(h))
	if err != nil {
		b.Fatal(err)
	}
	callerOnly, err := agent.NewReAct(delegate, agent.WithTools(tool.MustFunc("worker", "computes", func(context.Context, handoff.Args) (string, error) {
		return "42", nil
	})))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		g    *graph.Graph[agent.State]
		opts []graph.RunOption
	}{
		{"caller with a plain tool", callerOnly, nil},
		{"caller with the handoff", caller, nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := bc.g.Invoke(ctx, agent.Ask("go"), bc.opts...)
				if err != nil || agent.FinalText(out.Messages) != "42" {
					b.Fatal(err, out.Messages)
				}
			}
		})
	}
}
