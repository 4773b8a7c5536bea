package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// goClient connects a go-sdk client to srv in memory.
func goClient(t testing.TB, srv *Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, opts).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

func listAll(t testing.TB, cs *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	out := map[string]*sdk.Tool{}
	for mt, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		out[mt.Name] = mt
	}
	return out
}

func callGo(t testing.TB, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

func textOf(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// checkServed runs the go-sdk client checks against a served fixture.
func checkServed(t *testing.T, cs *sdk.ClientSession) {
	tools := listAll(t, cs)
	require.Len(t, tools, len(fixtureTools()))

	add := tools["add"]
	assert.Equal(t, "Adds two numbers", add.Description)
	schema, err := json.Marshal(add.InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, string(mustSchema[addArgs]()), string(schema))
	require.NotNil(t, add.Annotations)
	assert.True(t, add.Annotations.ReadOnlyHint)
	assert.Nil(t, add.Annotations.DestructiveHint, "no explicit hint: left to the MCP default")

	wipe := tools["wipe"].Annotations
	require.NotNil(t, wipe)
	assert.False(t, wipe.ReadOnlyHint)
	require.NotNil(t, wipe.DestructiveHint)
	assert.True(t, *wipe.DestructiveHint)
	require.NotNil(t, wipe.OpenWorldHint)
	assert.True(t, *wipe.OpenWorldHint)
	assert.Nil(t, tools["fail"].Annotations)
	assert.NotNil(t, tools["forecast"].OutputSchema)

	res := callGo(t, cs, "add", map[string]any{"a": 2, "b": "3"})
	assert.False(t, res.IsError)
	assert.Equal(t, "sum: 5", textOf(res))

	res = callGo(t, cs, "forecast", map[string]any{"city": "Oslo"})
	assert.False(t, res.IsError, textOf(res))
	assert.JSONEq(t, `{"city":"Oslo","celsius":21.5}`, textOf(res))
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	assert.JSONEq(t, `{"city":"Oslo","celsius":21.5}`, string(structured))

	res = callGo(t, cs, "picture", nil)
	require.Len(t, res.Content, 1)
	img, ok := res.Content[0].(*sdk.ImageContent)
	require.True(t, ok, "%T", res.Content[0])
	assert.Equal(t, "image/png", img.MIMEType)
	assert.Equal(t, pixel, img.Data)

	res = callGo(t, cs, "fail", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "disk on fire")

	res = callGo(t, cs, "boom", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "kaboom")

	res = callGo(t, cs, "add", map[string]any{"a": "x"})
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "$.a")
	assert.Contains(t, textOf(res), "$.b")

	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	assert.Error(t, err, "an unknown tool is a protocol error")
}

func TestServerListsTitles(t *testing.T) {
	titled := tool.MustFunc("search_docs", "Searches the documentation.", func(context.Context, struct{}) (string, error) { return "", nil },
		tool.WithTitle("Search the docs"))
	plain := tool.MustFunc("plain", "No title.", func(context.Context, struct{}) (string, error) { return "", nil })
	renamed := tool.Rename(titled, "find")
	srv, err := NewServer(context.Background(), tool.NewStatic("docs", titled, plain, renamed))
	require.NoError(t, err)
	tools := listAll(t, goClient(t, srv, nil))
	assert.Equal(t, "Search the docs", tools["search_docs"].Title)
	assert.Equal(t, "Search the docs", tools["find"].Title, "a renamed tool keeps its title")
	assert.Empty(t, tools["plain"].Title)
	assert.Equal(t, "Searches the documentation.", tools["search_docs"].Description, "the title does not replace the description")

	// A Trellis client sees the title again.
	ts, err := New(Config{Name: "docs"}, memTransport(srv))
	require.NoError(t, err)
	defer ts.Close()
	remote, err := ts.Tools(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	got := map[string]string{}
	for _, rt := range remote {
		got[tool.Name(rt)] = tool.TitleOf(rt)
	}
	assert.Equal(t, map[string]string{"search_docs": "Search the docs", "find": "Search the docs", "plain": ""}, got)
}

func TestResultMetadataCrossesTheProtocol(t *testing.T) {
	traced := tool.MustFunc("traced", "Answers with a trace ID.", func(context.Context, struct{}) (tool.Result, error) {
		r := tool.Text("done")
		r.Metadata = map[string]string{"trace": "t-42", "trellis.terminate": "true"}
		return r, nil
	})
	srv, err := NewServer(context.Background(), tool.NewStatic("traces", traced))
	require.NoError(t, err)
	ts, err := New(Config{Name: "traces"}, memTransport(srv))
	require.NoError(t, err)
	defer ts.Close()
	remote, err := ts.Tools(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, remote, 1)
	r := tool.Invoke(ctxT(t, 10*time.Second), remote[0], model.ToolCall{ID: "c1", Name: "traced", Arguments: json.RawMessage(`{}`)})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "done", r.Text())
	assert.Equal(t, map[string]string{"trace": "t-42"}, r.Metadata, "the application's metadata arrives, the framework's does not leave")
}

func TestServerInMemory(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	checkServed(t, goClient(t, srv, nil))
	assert.Equal(t, []string{"add", "boom", "fail", "forecast", "picture", "wipe"}, srv.Tools())
}

func TestServerStreamableHTTP(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	base := serveHTTP(t, srv.Handler(nil))
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base}, nil)
	require.NoError(t, err)
	defer cs.Close()
	checkServed(t, cs)
}

func TestServerSSE(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	base := serveHTTP(t, srv.SSEHandler(nil))
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).
		Connect(context.Background(), &sdk.SSEClientTransport{Endpoint: base}, nil)
	require.NoError(t, err)
	defer cs.Close()
	checkServed(t, cs)
}

func TestServerRunStdio(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	// The server's standard input and output, as pipes.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &sdk.IOTransport{Reader: inR, Writer: outW}) }()

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).
		Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	assert.Equal(t, "sum: 3", textOf(callGo(t, cs, "add", map[string]int{"a": 1, "b": 2})))
	require.NoError(t, cs.Close())
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestServerRefreshNotifiesClients(t *testing.T) {
	var mu sync.Mutex
	tools := fixtureTools()
	set := &mutableSet{tools: func() []tool.Tool { mu.Lock(); defer mu.Unlock(); return tools }}
	srv, err := NewServer(context.Background(), set)
	require.NoError(t, err)
	changed := make(chan struct{}, 8)
	cs := goClient(t, srv, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	require.NotContains(t, listAll(t, cs), "greet")

	mu.Lock()
	tools = append(tools[1:], tool.MustFunc("greet", "Greets", func(_ context.Context, in cityArgs) (string, error) {
		return "hello " + in.City, nil
	}))
	mu.Unlock()
	require.NoError(t, srv.Refresh(context.Background()))
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed notification")
	}
	now := listAll(t, cs)
	assert.Contains(t, now, "greet")
	assert.NotContains(t, now, "add")
	assert.Equal(t, "hello Rome", textOf(callGo(t, cs, "greet", map[string]string{"city": "Rome"})))
}

// mutableSet is a toolset whose tools a test changes.
type mutableSet struct {
	tools func() []tool.Tool
	err   error
}

func (m *mutableSet) Name() string { return "mutable" }
func (m *mutableSet) Tools(context.Context) ([]tool.Tool, error) {
	if m.err != nil {
		return nil, m.err
	}
	return m.tools(), nil
}
func (m *mutableSet) Close() error { return nil }

func TestNewServerRejectsUnservableTools(t *testing.T) {
	arrayTool, err := tool.New(model.ToolDefinition{Name: "list", InputSchema: json.RawMessage(`{"type":"array"}`)},
		func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Text("x"), nil })
	require.NoError(t, err)
	ok := tool.MustFunc("ok", "fine", func(context.Context, noArgs) (string, error) { return "", nil })
	tests := []struct {
		name  string
		tools []tool.Tool
		want  string
	}{
		{"array schema", []tool.Tool{ok, arrayTool}, `tool "list": the input schema's type is array`},
		{"duplicate", []tool.Tool{ok, ok}, `two tools are named "ok"`},
		{"nil", []tool.Tool{nil}, "tool 0 is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewServer(context.Background(), tool.NewStatic("bad", tt.tools...))
			require.ErrorIs(t, err, ErrServe)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err = NewServer(context.Background(), nil)
	assert.ErrorIs(t, err, ErrServe)
	_, err = NewServer(context.Background(), &mutableSet{err: errors.New("down")})
	assert.ErrorContains(t, err, "down")
}

func TestServerRefreshKeepsToolsOnError(t *testing.T) {
	tools := fixtureTools()
	set := &mutableSet{tools: func() []tool.Tool { return tools }}
	srv, err := NewServer(context.Background(), set)
	require.NoError(t, err)
	tools = append(tools, tools[0]) // a duplicate name
	require.ErrorIs(t, srv.Refresh(context.Background()), ErrServe)
	assert.Len(t, srv.Tools(), len(fixtureTools()), "nothing changed")
}

func TestServerPolicy(t *testing.T) {
	deny := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		if req.Metadata.Destructive {
			return tool.Deny("destructive tools are off"), nil
		}
		return tool.Allow(), nil
	})
	srv, _ := newFixtureServer(t, nil, WithPolicy(deny), WithImplementation("fixture-server", "v9"))
	cs := goClient(t, srv, nil)
	assert.Equal(t, "fixture-server", cs.InitializeResult().ServerInfo.Name)
	res := callGo(t, cs, "wipe", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "destructive tools are off")
	assert.False(t, callGo(t, cs, "add", map[string]int{"a": 1, "b": 1}).IsError)
}

func TestServerProgress(t *testing.T) {
	slow := tool.MustFunc("slow", "Reports progress", func(ctx context.Context, _ noArgs) (string, error) {
		tool.ReportProgress(ctx, tool.Update{Message: "half way"})
		tool.ReportProgress(ctx, tool.Update{Message: "done"})
		return "ok", nil
	})
	srv, _ := newFixtureServer(t, []tool.Tool{slow}, WithInstructions("use slow"))
	var mu sync.Mutex
	var got []string
	cs := goClient(t, srv, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req.Params.Message)
	}})
	assert.Equal(t, "use slow", cs.InitializeResult().Instructions)
	params := &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	assert.Equal(t, "ok", textOf(res))
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 2
	}, 5*time.Second, 10*time.Millisecond)
	mu.Lock()
	assert.Equal(t, []string{"half way", "done"}, got)
	mu.Unlock()
}

func TestServerNullArguments(t *testing.T) {
	// "arguments": null, or none at all, is a call without arguments.
	srv, _ := newFixtureServer(t, nil)
	cs := goClient(t, srv, nil)
	for _, args := range []any{nil, json.RawMessage(`null`), json.RawMessage(` null `), map[string]any{}} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wipe", Arguments: args})
		require.NoError(t, err)
		r := Result("fixture", "wipe", res)
		assert.False(t, r.IsError, "%s: %s", args, r.Text())
		assert.Equal(t, "wiped", r.Text())
	}
}
