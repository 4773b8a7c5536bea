package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// BenchmarkExecutorMiddleware runs batches of a typed tool's calls, with
// well-formed arguments, through each executor with one pass-through
// middleware: the path on which the executor prepares every call's
// arguments before its middleware sees them. ns/op is per batch.
func BenchmarkExecutorMiddleware(b *testing.B) {
	type args struct {
		Path  string `json:"path"`
		Depth int    `json:"depth"`
		All   bool   `json:"all"`
	}
	tl := tool.MustFunc("ls", "lists a directory", func(_ context.Context, in args) (string, error) { return in.Path, nil },
		tool.WithMetadata(safe))
	pass := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		return next.Handle(ctx, req)
	})
	for _, k := range kinds {
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/%d", k.name, n), func(b *testing.B) {
				cs := make([]model.ToolCall, n)
				for i := range cs {
					cs[i] = model.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "ls",
						Arguments: json.RawMessage(fmt.Sprintf(`{"path":"/srv/data/%d","depth":2,"all":true}`, i))}
				}
				batch := executor.Batch{Calls: cs, Tools: executor.Tools(tl)}
				ex := k.make(executor.WithMiddleware(pass))
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					res, err := ex.Execute(ctx, batch)
					if err != nil || len(res) != n || res[n-1].IsError {
						b.Fatal(err, res)
					}
				}
			})
		}
	}
}
