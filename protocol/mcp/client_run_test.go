package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// askingServer is a go-sdk server whose tools ask the client for input the
// way protocol 2026-07-28 does (multi round-trip requests, SEP-2322): the
// first answer to a call carries input requests, and the client calls
// again with the responses.
func askingServer(t *testing.T) *sdk.Server {
	t.Helper()
	return askingServerLogged(t, nil)
}

// askingServerLogged is askingServer whose tool "noisy" logs a message and
// then waits for logged, when not nil, to be closed.
func askingServerLogged(t *testing.T, logged <-chan struct{}) *sdk.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "v0"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}},
	})
	obj := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&sdk.Tool{Name: "book", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r, ok := req.Params.InputResponses["when"].(*sdk.ElicitResult)
		if !ok {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"when": &sdk.ElicitParams{
				Message: "Which time?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
					"time":   map[string]any{"type": "string", "default": "19:00"},
					"guests": map[string]any{"type": "integer"}}},
			}}}, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{
			Text: fmt.Sprintf("%s: %v for %v", r.Action, r.Content["time"], r.Content["guests"])}}}, nil
	})
	srv.AddTool(&sdk.Tool{Name: "summarize", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r, ok := req.Params.InputResponses["s"].(*sdk.CreateMessageWithToolsResult)
		if !ok {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"s": &sdk.CreateMessageParams{
				SystemPrompt: "Be brief.", MaxTokens: 50, Temperature: 0.2, StopSequences: []string{"\n\n"},
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "2+2?"}}},
			}}}, nil
		}
		var text string
		for _, c := range r.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text += tc.Text
			}
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "model " + r.Model + " says " + text}}}, nil
	})
	srv.AddTool(&sdk.Tool{Name: "noisy", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		// The message echoes the call's token: it relates to the call.
		meta := sdk.Meta{relatedCallMeta: req.Params.GetMeta()[relatedCallMeta]}
		if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Meta: meta, Level: "info", Logger: "db", Data: "connected"}); err != nil {
			return nil, err
		}
		if logged != nil {
			// The client handles notifications apart from answers: the
			// call must not end before the message is handled.
			select {
			case <-logged:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
	})
	return srv
}

// sdkToolset is a toolset over the go-sdk server srv, in memory.
func sdkToolset(t *testing.T, srv *sdk.Server, opts ...Option) *Toolset {
	t.Helper()
	ts, err := New(Config{Name: "asking"}, append([]Option{WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		client, server := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, server, nil); err != nil {
			return nil, err
		}
		return client, nil
	})}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Close() })
	return ts
}

func remote(t *testing.T, ts *Toolset, name string) tool.Tool {
	t.Helper()
	tools, err := ts.Tools(t.Context())
	require.NoError(t, err)
	for _, tl := range tools {
		if tl.Definition().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

type callState struct{ Out string }

// callGraph is a graph of one node that calls tl, with a checkpointer.
func callGraph(t *testing.T, tl tool.Tool) *graph.Graph[callState] {
	t.Helper()
	g, err := graph.New[callState]().
		AddNode("call", func(ctx context.Context, s callState) (callState, error) {
			res, err := tl.Call(ctx, "", json.RawMessage(`{}`))
			if err != nil {
				return s, err
			}
			s.Out = res.Text()
			return s, nil
		}).
		AddEdge(graph.START, "call").
		Compile(graph.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	return g
}

func TestElicitationPausesTheRunAndResumesWithTheAnswer(t *testing.T) {
	ts := sdkToolset(t, askingServer(t))
	g := callGraph(t, remote(t, ts, "book"))

	_, err := g.Invoke(t.Context(), callState{}, graph.WithThread("t1"))
	ie, ok := errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "want an interrupt, got %v", err)
	require.Len(t, ie.Interrupts, 1)
	q, ok := ie.Interrupts[0].Payload.(Elicitation)
	require.True(t, ok, "payload %T", ie.Interrupts[0].Payload)
	assert.Equal(t, "asking", q.Server)
	assert.Equal(t, "book", q.Tool)
	assert.Equal(t, "Which time?", q.Message)
	assert.Contains(t, string(q.Schema), `"default":"19:00"`)

	// The person gives the number of guests; the time's default is applied.
	out, err := g.Resume(t.Context(), "t1", graph.WithResumeValue(tool.ElicitResult{Action: "accept", Content: map[string]any{"guests": 4}}))
	require.NoError(t, err)
	assert.Equal(t, "accept: 19:00 for 4", out.Out)
}

func TestElicitationOutsideAGraphRunFailsTheCall(t *testing.T) {
	ts := sdkToolset(t, askingServer(t))
	res, err := remote(t, ts, "book").Call(t.Context(), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text(), "outside a graph run")
}

func TestElicitationOffDeclaresNoCapability(t *testing.T) {
	ts, err := New(Config{Name: "x", URL: "http://127.0.0.1:1/mcp"}, WithElicitation(nil))
	require.NoError(t, err)
	defer ts.Close()
	assert.Nil(t, ts.clientOptions().ElicitationHandler)
}

func TestSamplingAsksThePersonThenAnswersWithTheModel(t *testing.T) {
	m := scripted.New(scripted.Reply("4"))
	ts := sdkToolset(t, askingServer(t), WithSampling(SampleWith(m, nil)))
	g := callGraph(t, remote(t, ts, "summarize"))

	_, err := g.Invoke(t.Context(), callState{}, graph.WithThread("t2"))
	ie, ok := errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "want an interrupt, got %v", err)
	q, ok := ie.Interrupts[0].Payload.(SamplingApproval)
	require.True(t, ok, "payload %T", ie.Interrupts[0].Payload)
	assert.Equal(t, "summarize", q.Tool)
	assert.Equal(t, "2+2?", q.Request.Messages[0].Text())
	assert.Zero(t, m.Calls(), "the model is not asked before the person allows it")

	out, err := g.Resume(t.Context(), "t2", graph.WithResumeValue(true))
	require.NoError(t, err)
	assert.Contains(t, out.Out, "says 4")
	reqs := m.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "Be brief.", reqs[0].Messages[0].Text())
	assert.Equal(t, 50, reqs[0].Settings.MaxTokens)
	require.NotNil(t, reqs[0].Settings.Temperature)
	assert.Equal(t, 0.2, *reqs[0].Settings.Temperature)
	assert.Equal(t, []string{"\n\n"}, reqs[0].Settings.Stop)
}

func TestSamplingPolicyAllowsOrDenies(t *testing.T) {
	m := scripted.New(scripted.Reply("4"))
	allow := func(ctx context.Context, r tool.SamplingRequest) SamplingDecision {
		if ServerName(ctx) == "asking" {
			return SamplingAllow
		}
		return SamplingDeny
	}
	ts := sdkToolset(t, askingServer(t), WithSampling(SampleWith(m, allow)))
	res, err := remote(t, ts, "summarize").Call(t.Context(), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.False(t, res.IsError, res.Text())
	assert.Contains(t, res.Text(), "says 4")

	deny := func(context.Context, tool.SamplingRequest) SamplingDecision { return SamplingDeny }
	ts2 := sdkToolset(t, askingServer(t), WithSampling(SampleWith(m, deny)))
	res, err = remote(t, ts2, "summarize").Call(t.Context(), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, 1, m.Calls(), "a denied request never reaches the model")
}

// logBuffer is a concurrency-safe slog destination.
type logBuffer struct {
	mu     sync.Mutex
	b      strings.Builder
	wrote  chan struct{}
	closed bool
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.wrote)
	}
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServerLogsGoToSlogAndTheRunsStream(t *testing.T) {
	buf := logBuffer{wrote: make(chan struct{})}
	ts := sdkToolset(t, askingServerLogged(t, buf.wrote), WithLogLevel(tool.LogDebug),
		WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	g := callGraph(t, remote(t, ts, "noisy"))
	var logs []LogEvent
	for ev, err := range g.Stream(t.Context(), callState{}, graph.WithModes(graph.ModeCustom), graph.WithThread("t3")) {
		require.NoError(t, err)
		if ev.Name == LogEventName {
			logs = append(logs, ev.Payload.(LogEvent))
		}
	}
	require.Len(t, logs, 1)
	assert.Equal(t, LogEvent{Server: "asking", Level: tool.LogInfo, Logger: "db", Data: "connected"}, logs[0])
	assert.Contains(t, buf.String(), "connected")
	assert.Contains(t, buf.String(), "mcp_server=asking")
}

func TestRootsComeFromTheConfig(t *testing.T) {
	got := make(chan []*sdk.Root, 1)
	srv := sdk.NewServer(&sdk.Implementation{Name: "roots", Version: "v0"}, nil)
	srv.AddTool(&sdk.Tool{Name: "where", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r, ok := req.Params.InputResponses["roots"].(*sdk.ListRootsResult)
		if !ok {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"roots": &sdk.ListRootsParams{}}}, nil
		}
		got <- r.Roots
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	})
	ts, err := New(Config{Name: "roots", Roots: []Root{{URI: "file:///srv/project", Name: "project"}}},
		WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
			client, server := sdk.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, server, nil); err != nil {
				return nil, err
			}
			return client, nil
		}))
	require.NoError(t, err)
	defer ts.Close()
	res, err := remote(t, ts, "where").Call(t.Context(), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	require.False(t, res.IsError, res.Text())
	roots := <-got
	require.Len(t, roots, 1)
	assert.Equal(t, "file:///srv/project", roots[0].URI)
	assert.Equal(t, "project", roots[0].Name)

	_, err = New(Config{Name: "bad", Command: "x", Roots: []Root{{URI: "/srv/project"}}})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

func TestLogLevelIsSetOnSessionsOfEarlierProtocols(t *testing.T) {
	buf := logBuffer{wrote: make(chan struct{})}
	noisy := tool.MustFunc("noisy", "logs", func(ctx context.Context, _ struct{}) (string, error) {
		if err := tool.Log(ctx, tool.LogInfo, "warming up"); err != nil {
			return "", err
		}
		select { // until the client handled the message
		case <-buf.wrote:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "done", nil
	})
	srv, err := NewServer(t.Context(), tool.NewStatic("s", noisy))
	require.NoError(t, err)
	// Streamable HTTP on a stateful handler negotiates 2025-11-25.
	url := serveHTTP(t, srv.Handler(nil)) + "/"
	ts, err := New(Config{Name: "web", URL: url}, WithLogLevel(tool.LogInfo),
		WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	require.NoError(t, err)
	defer ts.Close()
	g := callGraph(t, remote(t, ts, "noisy"))
	var logs []LogEvent
	for ev, err := range g.Stream(t.Context(), callState{}, graph.WithModes(graph.ModeCustom), graph.WithThread("t4")) {
		require.NoError(t, err)
		if ev.Name == LogEventName {
			logs = append(logs, ev.Payload.(LogEvent))
		}
	}
	require.Len(t, logs, 1)
	assert.Equal(t, "warming up", logs[0].Data)
	assert.Equal(t, "web", logs[0].Server)
	assert.Contains(t, buf.String(), "warming up")
}
