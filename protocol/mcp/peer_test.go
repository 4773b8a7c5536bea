package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// connectClient connects a go-sdk client with opts to srv in memory, on
// protocol version 2025-11-25, where the server sends its requests to the
// client while it serves a call (serve_roundtrip_test.go covers 2026-07-28).
func connectClient(t *testing.T, srv *Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, opts).Connect(t.Context(), ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestServedToolLogsSamplesAndElicitsThroughItsContext(t *testing.T) {
	ask := tool.MustFunc("ask", "asks everything", func(ctx context.Context, _ struct{}) (string, error) {
		if err := tool.Log(ctx, tool.LogInfo, "started"); err != nil {
			return "", err
		}
		s, err := tool.Sample(ctx, tool.SamplingRequest{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Part{model.TextPart("2+2?")}}}})
		if err != nil {
			return "", err
		}
		e, err := tool.Elicit(ctx, tool.ElicitRequest{Message: "name?", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return "", err
		}
		return s.Message.Text() + " " + e.Action + " " + e.Content["name"].(string), nil
	})
	srv, err := NewServer(t.Context(), tool.NewStatic("s", ask))
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		logs []any
		got  = make(chan struct{}, 1)
	)
	cs := connectClient(t, srv, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, r.Params.Data)
			mu.Unlock()
			got <- struct{}{}
		},
		CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			assert.Equal(t, int64(DefaultSamplingMaxTokens), r.Params.MaxTokens)
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "4"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			assert.Equal(t, "name?", r.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	require.NoError(t, cs.SetLoggingLevel(t.Context(), &sdk.SetLoggingLevelParams{Level: "debug"}))
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "ask"})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", res.Content[0].(*sdk.TextContent).Text)
	assert.Equal(t, "4 accept Ada", res.Content[0].(*sdk.TextContent).Text)
	<-got
	mu.Lock()
	assert.Equal(t, []any{"started"}, logs)
	mu.Unlock()
}

func TestServedToolSamplingFailsCleanlyWithoutTheCapability(t *testing.T) {
	var gotErr error
	ask := tool.MustFunc("ask", "asks", func(ctx context.Context, _ struct{}) (string, error) {
		_, gotErr = tool.Sample(ctx, tool.SamplingRequest{})
		_, err := tool.Elicit(ctx, tool.ElicitRequest{Message: "?"})
		return "", errors.Join(gotErr, err)
	})
	srv, err := NewServer(t.Context(), tool.NewStatic("s", ask))
	require.NoError(t, err)
	cs := connectClient(t, srv, nil)
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "ask"})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.ErrorIs(t, gotErr, tool.ErrNoPeer)
}

func TestToolHelpersFailWithoutAPeer(t *testing.T) {
	ctx := context.Background()
	assert.ErrorIs(t, tool.Log(ctx, tool.LogInfo, "x"), tool.ErrNoPeer)
	_, err := tool.Sample(ctx, tool.SamplingRequest{})
	assert.ErrorIs(t, err, tool.ErrNoPeer)
	_, err = tool.Elicit(ctx, tool.ElicitRequest{})
	assert.ErrorIs(t, err, tool.ErrNoPeer)
}

func TestServedProgressCarriesTheTotal(t *testing.T) {
	work := tool.MustFunc("work", "works", func(ctx context.Context, _ struct{}) (string, error) {
		for _, p := range []float64{0, 50, 100} {
			tool.ReportProgress(ctx, tool.Update{Progress: p, Total: 100})
		}
		return "done", nil
	})
	srv, err := NewServer(t.Context(), tool.NewStatic("s", work))
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		got []float64
	)
	cs := connectClient(t, srv, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, r.Params.Progress, r.Params.Total)
			mu.Unlock()
		},
	})
	params := &sdk.CallToolParams{Name: "work"}
	params.SetProgressToken("p1")
	_, err = cs.CallTool(t.Context(), params)
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 6 }, 5e9, 1e7)
	mu.Lock()
	assert.Equal(t, []float64{0, 100, 50, 100, 100, 100}, got)
	mu.Unlock()
}
