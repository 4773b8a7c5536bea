package nodes

import (
	"context"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/chatspan"
	"github.com/trellis-go/trellis/model"
)

const scope = "github.com/trellis-go/trellis/nodes"

// startModelSpan reports one model call as a "chat {model}" span and
// GenAI client metrics, when the run behind ctx is traced or measured.
func startModelSpan(ctx context.Context, call ModelCall, req *model.Request) (context.Context, *chatspan.Span) {
	tp, mp := graph.TracerProvider(ctx), graph.MeterProvider(ctx)
	if tp == nil && mp == nil {
		return ctx, nil
	}
	return chatspan.Start(ctx, scope, tp, mp, chatspan.Call{Provider: call.Provider, Model: call.Model, Agent: call.Agent}, req)
}
