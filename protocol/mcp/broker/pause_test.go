package broker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

func TestBrokeredCallPausesTheRunOnAServersQuestion(t *testing.T) {
	var mu sync.Mutex
	var actions []string
	ask := tool.MustFunc("confirm", "asks", func(ctx context.Context, _ noArgs) (string, error) {
		ans, err := tool.Elicit(ctx, tool.ElicitRequest{Message: "Sure?", Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)})
		if err != nil {
			return "", err
		}
		mu.Lock()
		actions = append(actions, ans.Action)
		mu.Unlock()
		if ans.Content["ok"] == true {
			return "confirmed", nil
		}
		return "not confirmed", nil
	})
	url := serve(t, "asker", ask)
	handled := 0
	b, err := New(WithServers(mcp.Config{Name: "asker", URL: url}),
		WithErrorHandler(func(_ context.Context, _ Target, err error) error {
			handled++
			return err
		}))
	require.NoError(t, err)
	defer b.Close()
	tools, err := b.Tools(t.Context())
	require.NoError(t, err)
	var callTool tool.Tool
	for _, x := range tools {
		if tool.Name(x) == CallToolTool {
			callTool = x
		}
	}
	require.NotNil(t, callTool)

	type state struct{ Out string }
	g, err := graph.New[state]().
		AddNode("call", func(ctx context.Context, s state) (state, error) {
			r := tool.Invoke(ctx, callTool, model.ToolCall{ID: "c1", Name: CallToolTool, Arguments: json.RawMessage(`{"server":"asker","tool":"confirm"}`)})
			if errors.Is(r.Err, graph.ErrInterrupted) {
				return s, r.Err
			}
			s.Out = r.Text()
			return s, nil
		}).
		AddEdge(graph.START, "call").
		Compile(graph.WithCheckpointer(memory.New()))
	require.NoError(t, err)

	_, err = g.Invoke(t.Context(), state{}, graph.WithThread("b"))
	ie, ok := errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "want an interrupt, got %v", err)
	q := ie.Interrupts[0].Payload.(mcp.Elicitation)
	assert.Equal(t, "asker", q.Server)
	assert.Equal(t, "Sure?", q.Message)
	assert.Zero(t, handled, "a pause is not an error of the server")

	out, err := g.Resume(t.Context(), "b", graph.WithResumeValue(tool.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}))
	require.NoError(t, err)
	assert.Equal(t, "confirmed", out.Out)
	mu.Lock()
	defer mu.Unlock()
	// The first question was dismissed (or the call cancelled before the
	// server read the answer): the server learns nothing of the run.
	require.NotEmpty(t, actions)
	assert.Equal(t, "accept", actions[len(actions)-1])
	for _, a := range actions[:len(actions)-1] {
		assert.Equal(t, "cancel", a)
	}
}
