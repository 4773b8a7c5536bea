package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"stdio", Config{Command: "server"}, ""},
		{"streamable http", Config{URL: "http://127.0.0.1:1/mcp"}, ""},
		{"sse", Config{Transport: TransportSSE, URL: "https://example.test/sse"}, ""},
		{"nothing", Config{}, "set a command (stdio) or a URL"},
		{"stdio without command", Config{Transport: TransportStdio}, "the stdio transport needs a command"},
		{"http without URL", Config{Transport: TransportStreamableHTTP}, "the streamable_http transport needs a URL"},
		{"bad scheme", Config{URL: "ftp://host/mcp"}, "must use http or https"},
		{"no host", Config{URL: "http:///mcp"}, "has no host"},
		{"both", Config{Transport: TransportStdio, Command: "x", URL: "http://h/"}, "a stdio server takes no URL"},
		{"unknown transport", Config{Transport: "websocket", URL: "http://h/"}, `unknown transport "websocket"`},
		{"bad header", Config{URL: "http://h/", Headers: map[string]string{"X Bad": "1"}}, `invalid header name "X Bad"`},
		{"negative timeout", Config{Command: "x", CallTimeout: -time.Second}, "timeouts must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			_, nerr := New(tt.cfg)
			if tt.want == "" {
				assert.NoError(t, err)
				assert.NoError(t, nerr)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorIs(t, nerr, ErrInvalidConfig)
		})
	}
}

func TestConfigName(t *testing.T) {
	assert.Equal(t, "files", Config{Name: "files", Command: "/usr/bin/x"}.ServerName())
	assert.Equal(t, "mcp-server-git", Config{Command: "/opt/bin/mcp-server-git"}.ServerName())
	assert.Equal(t, "127.0.0.1:9000", Config{URL: "http://127.0.0.1:9000/mcp"}.ServerName())
}

func TestInitFailsFast(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "not-mcp.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho 'cannot open database' >&2\necho 'hello, not JSON'\nexit 3\n"), 0o755))
	tests := []struct {
		name  string
		cfg   Config
		stage string
		want  string
	}{
		{"missing command", Config{Command: "trellis-no-such-mcp-server"}, "start", "executable file not found"},
		{"refused connection", Config{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))}, "connect", "connection refused"},
		{"refused connection sse", Config{Transport: TransportSSE, URL: fmt.Sprintf("http://127.0.0.1:%d/sse", freePort(t))}, "connect", "connection refused"},
		{"failed handshake", Config{Command: script, TerminateWait: 100 * time.Millisecond}, "connect", "cannot open database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := New(tt.cfg)
			require.NoError(t, err)
			defer ts.Close()
			start := time.Now()
			err = ts.Init(ctxT(t, 30*time.Second))
			require.ErrorIs(t, err, ErrConnect)
			ce, ok := errors.AsType[*ConnectError](err)
			require.True(t, ok, "%T", err)
			assert.Equal(t, tt.stage, ce.Stage)
			assert.ErrorContains(t, err, tt.want)
			assert.Less(t, time.Since(start), 10*time.Second, "Init does not retry")
			// Tools fails the same way: a toolset that never connected does
			// not retry either.
			_, err = ts.Tools(ctxT(t, 30*time.Second))
			assert.ErrorIs(t, err, ErrConnect)
		})
	}
}

func TestInitTimesOut(t *testing.T) {
	// A command that reads its input and never answers.
	sleeper, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	ts, err := New(Config{Command: sleeper, Args: []string{"30"}, ConnectTimeout: 200 * time.Millisecond,
		TerminateWait: 50 * time.Millisecond})
	require.NoError(t, err)
	defer ts.Close()
	err = ts.Init(context.Background())
	require.ErrorIs(t, err, ErrConnect)
	assert.ErrorContains(t, err, "no answer within 200ms")
}

func TestToolsetOverServer(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	ts := memToolset(t, srv)
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, ts.Init(ctx))
	assert.Equal(t, "mem", ts.Name())
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"add", "forecast", "picture", "fail", "boom", "wipe"}, names(tools))

	add := find(t, tools, "add")
	assert.JSONEq(t, string(mustSchema[addArgs]()), string(add.Definition().InputSchema))
	assert.Equal(t, tool.Metadata{ReadOnly: true}, tool.MetadataOf(add), "only MCP's hints cross the wire")
	assert.Equal(t, tool.Metadata{Destructive: true, OpenWorld: true}, tool.MetadataOf(find(t, tools, "wipe")))
	sp, ok := tool.As[tool.SchemaProvider](add)
	require.True(t, ok)
	assert.NotNil(t, sp.CompiledSchema())

	r := call(ctx, add, `{"a":"4","b":5}`)
	assert.Equal(t, "sum: 9", r.Text())

	r = call(ctx, add, `{"a":1}`)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "validated here against the server's schema")

	r = call(ctx, find(t, tools, "forecast"), `{"city":"Lima"}`)
	require.Len(t, r.Content, 1)
	assert.Equal(t, model.PartJSON, r.Content[0].Type)
	assert.JSONEq(t, `{"city":"Lima","celsius":21.5}`, string(r.Content[0].JSON))
	assert.NotEmpty(t, find(t, tools, "forecast").Definition().OutputSchema)

	r = call(ctx, find(t, tools, "picture"), `{}`)
	require.Len(t, r.Content, 1)
	assert.Equal(t, model.ImagePart("image/png", pixel), r.Content[0])

	r = call(ctx, find(t, tools, "fail"), `{}`)
	assert.True(t, r.IsError)
	assert.Equal(t, tool.CodeToolError, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrToolFailed)
	assert.Contains(t, r.Text(), "disk on fire")
	te, ok := errors.AsType[*ToolError](r.Err)
	require.True(t, ok)
	assert.Equal(t, "fail", te.Tool)
	assert.Equal(t, "mem", te.Server)

	// Direct calls (without Invoke) treat missing arguments as {} and refuse
	// text that is not JSON.
	r, err = find(t, tools, "picture").Call(ctx, "c", nil)
	require.NoError(t, err)
	assert.False(t, r.IsError)
	r, err = add.Call(ctx, "c", json.RawMessage(`{"a":`))
	require.NoError(t, err)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode)
}

func TestToolsetPagination(t *testing.T) {
	var many []tool.Tool
	for i := range 7 {
		many = append(many, tool.MustFunc(fmt.Sprintf("t%d", i), "numbered", func(context.Context, noArgs) (string, error) {
			return fmt.Sprint(i), nil
		}))
	}
	srv, err := NewServer(context.Background(), tool.NewStatic("many", many...),
		WithServerOptions(sdk.ServerOptions{PageSize: 2}))
	require.NoError(t, err)
	// The server really pages.
	page, err := goClient(t, srv, nil).ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, page.Tools, 2)
	require.NotEmpty(t, page.NextCursor)

	tools, err := memToolset(t, srv).Tools(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Len(t, tools, 7, "every page is read")
}

func TestToolsetFilters(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	tests := []struct {
		name string
		opts []Option
		want []string
	}{
		{"include", []Option{WithInclude("add", "wipe", "missing")}, []string{"add", "wipe"}},
		{"exclude", []Option{WithExclude("boom", "fail")}, []string{"add", "forecast", "picture", "wipe"}},
		{"filter on annotations", []Option{WithFilter(func(t *sdk.Tool) bool {
			return t.Annotations == nil || t.Annotations.DestructiveHint == nil || !*t.Annotations.DestructiveHint
		})}, []string{"add", "forecast", "picture", "fail", "boom"}},
		{"all together", []Option{WithInclude("add", "wipe", "fail"), WithExclude("fail"), WithFilter(func(t *sdk.Tool) bool {
			return t.Name != "wipe"
		})}, []string{"add"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, err := memToolset(t, srv, tt.opts...).Tools(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.want, names(tools))
		})
	}
}

func TestToolsetListChanged(t *testing.T) {
	var mu sync.Mutex
	tools := fixtureTools()
	set := &mutableSet{tools: func() []tool.Tool { mu.Lock(); defer mu.Unlock(); return tools }}
	srv, err := NewServer(context.Background(), set)
	require.NoError(t, err)

	for _, transport := range []string{"memory", "streamable http"} {
		t.Run(transport, func(t *testing.T) {
			mu.Lock()
			tools = fixtureTools()
			mu.Unlock()
			require.NoError(t, srv.Refresh(context.Background()))
			changed := make(chan struct{}, 16)
			opts := []Option{WithToolsChanged(func() { changed <- struct{}{} })}
			var ts *Toolset
			if transport == "memory" {
				ts = memToolset(t, srv, opts...)
			} else {
				base := serveHTTP(t, srv.Handler(nil))
				ts, err = New(Config{URL: base}, opts...)
				require.NoError(t, err)
				defer ts.Close()
			}
			ctx := ctxT(t, 10*time.Second)
			before, err := ts.Tools(ctx)
			require.NoError(t, err)
			require.NotContains(t, names(before), "greet")

			mu.Lock()
			tools = append(fixtureTools()[1:], tool.MustFunc("greet", "Greets", func(_ context.Context, in cityArgs) (string, error) {
				return "hello " + in.City, nil
			}))
			mu.Unlock()
			require.NoError(t, srv.Refresh(context.Background()))
			// Each notification makes the toolset list again. One may be
			// stale: the server sends its notifications a moment after a
			// change, to the sessions open then, so the one for the refresh
			// at the start of this subtest can reach this new session too.
			var after []tool.Tool
			for deadline := time.After(5 * time.Second); ; {
				select {
				case <-changed:
				case <-deadline:
					t.Fatalf("the toolset was not told that the tools changed (it lists %v)", names(after))
				}
				after, err = ts.Tools(ctx)
				require.NoError(t, err)
				if slices.Contains(names(after), "greet") {
					break
				}
			}
			assert.NotContains(t, names(after), "add")
			assert.Equal(t, "hello Kyiv", call(ctx, find(t, after, "greet"), `{"city":"Kyiv"}`).Text())

			// A tool object from before the change whose tool is gone: the
			// server refuses the call, which is not a lost session.
			opened := ts.sessions()
			r := call(ctx, find(t, before, "add"), `{"a":1,"b":2}`)
			assert.True(t, r.IsError)
			assert.Equal(t, CodeProtocol, r.ErrorCode, r.Text())
			assert.Equal(t, opened, ts.sessions(), "no reconnection for an answer from the server")
		})
	}
}

func TestToolsetHeaders(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	type seenHeaders struct{ static, user, method string }
	var mu sync.Mutex
	var seen []seenHeaders
	handler := srv.Handler(nil)
	base := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, seenHeaders{r.Header.Get("X-Static"), r.Header.Get("X-User"), r.Method})
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	type userKey struct{}
	ts, err := New(Config{URL: base, Headers: map[string]string{"X-Static": "s1", "X-User": "static-default"}},
		WithHeaderFunc(func(ctx context.Context, h http.Header) error {
			if u, ok := ctx.Value(userKey{}).(string); ok {
				if u == "mallory" {
					return errors.New("mallory may not call tools")
				}
				h.Set("X-User", u)
			}
			return nil
		}))
	require.NoError(t, err)
	defer ts.Close()
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)

	mu.Lock()
	seen = nil
	mu.Unlock()
	r := call(context.WithValue(ctx, userKey{}, "alice"), find(t, tools, "add"), `{"a":1,"b":1}`)
	require.False(t, r.IsError, r.Text())
	mu.Lock()
	require.NotEmpty(t, seen)
	assert.Contains(t, seen, seenHeaders{"s1", "alice", http.MethodPost}, "the call's request carries the call's header")
	mu.Unlock()

	r = call(context.WithValue(ctx, userKey{}, "mallory"), find(t, tools, "add"), `{"a":1,"b":1}`)
	assert.True(t, r.IsError)
	assert.Equal(t, CodeRefused, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrHeaderRefused)
	assert.Contains(t, r.Text(), "mallory may not call tools")
}

func TestToolsetSessionExpires(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	base := serveHTTP(t, srv.Handler(&sdk.StreamableHTTPOptions{SessionTimeout: 150 * time.Millisecond}))
	ts, err := New(Config{URL: base}, WithReconnectDelay(10*time.Millisecond))
	require.NoError(t, err)
	defer ts.Close()
	ctx := ctxT(t, 20*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	add := find(t, tools, "add")
	for i := range 3 {
		opened := ts.sessions()
		require.Eventually(t, func() bool {
			for range srv.MCP().Sessions() {
				return false
			}
			return true
		}, 10*time.Second, 5*time.Millisecond, "round %d: the server forgets the idle session", i)
		r := call(ctx, add, `{"a":1,"b":2}`)
		require.False(t, r.IsError, "round %d: %s", i, r.Text())
		assert.Equal(t, "sum: 3", r.Text())
		assert.Greater(t, ts.sessions(), opened, "round %d: a new session answered", i)
	}
}

func TestToolsetConcurrentCalls(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	ts := memToolset(t, srv)
	ctx := ctxT(t, 20*time.Second)
	var wg sync.WaitGroup
	var failures atomic.Int32
	for i := range 16 {
		wg.Go(func() {
			tools, err := ts.Tools(ctx)
			if err != nil {
				failures.Add(1)
				return
			}
			for _, x := range tools {
				if tool.Name(x) == "add" {
					r := call(ctx, x, fmt.Sprintf(`{"a":%d,"b":1}`, i))
					if r.Text() != fmt.Sprintf("sum: %d", i+1) {
						failures.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, failures.Load())
	assert.Equal(t, 1, ts.sessions(), "concurrent first uses share one session")
}

func TestToolsetClosed(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	ts := memToolset(t, srv)
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	require.NoError(t, ts.Close())
	r := call(ctx, find(t, tools, "add"), `{"a":1,"b":2}`)
	assert.True(t, r.IsError)
	assert.Equal(t, CodeUnavailable, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrClosed)
	assert.ErrorIs(t, ts.Init(ctx), ErrClosed)
}

func TestToolsetCallCancelled(t *testing.T) {
	block := make(chan struct{})
	slow := tool.MustFunc("slow", "Waits", func(ctx context.Context, _ noArgs) (string, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return "late", nil
	})
	defer close(block)
	srv, _ := newFixtureServer(t, []tool.Tool{slow})
	ts := memToolset(t, srv)
	tools, err := ts.Tools(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := call(ctx, find(t, tools, "slow"), `{}`)
	assert.Equal(t, tool.StatusTimeout, r.Status, r.Text())

	// CallTimeout bounds calls too.
	ts2, err := New(Config{Name: "mem", CallTimeout: 100 * time.Millisecond}, memTransport(srv))
	require.NoError(t, err)
	defer ts2.Close()
	tools, err = ts2.Tools(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	r = call(context.Background(), find(t, tools, "slow"), `{}`)
	assert.Equal(t, tool.StatusTimeout, r.Status, r.Text())
}

func TestToolsetTransportFuncError(t *testing.T) {
	ts, err := New(Config{Name: "custom"}, WithTransportFunc(func(context.Context) (sdk.Transport, error) {
		return nil, errors.New("no route")
	}))
	require.NoError(t, err)
	defer ts.Close()
	err = ts.Init(ctxT(t, 5*time.Second))
	require.ErrorIs(t, err, ErrConnect)
	assert.ErrorContains(t, err, `server "custom" (custom): start: no route`)
}

func TestLost(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection closed", fmt.Errorf("x: %w", sdk.ErrConnectionClosed), true},
		{"session missing", fmt.Errorf("x: %w", sdk.ErrSessionMissing), true},
		{"connect error", &ConnectError{Err: errors.New("refused")}, true},
		{"plain transport error", errors.New("write |1: broken pipe"), true},
		{"rejected by transport", fmt.Errorf("post: %w: dial tcp: refused", errRejected), true},
		{"unknown session", fmt.Errorf("%w", &jsonrpc.Error{Code: -32000, Message: "Bad Request: No valid session ID provided"}), true},
		{"unknown tool", fmt.Errorf("calling: %w", &jsonrpc.Error{Code: -32602, Message: `unknown tool "x"`}), false},
		{"invalid params", &jsonrpc.Error{Code: -32602, Message: "invalid params"}, false},
		{"header function", fmt.Errorf("post: %w: %w", errRejected, fmt.Errorf("%w: no token", ErrHeaderRefused)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, lost(tt.err, nil))
		})
	}
}

func TestBackoff(t *testing.T) {
	ts := &Toolset{o: options{reconnectDelay: 100 * time.Millisecond}}
	assert.Equal(t, 100*time.Millisecond, ts.backoff(1))
	assert.Equal(t, 200*time.Millisecond, ts.backoff(2))
	assert.Equal(t, 400*time.Millisecond, ts.backoff(3))
	assert.Equal(t, maxReconnectDelay, ts.backoff(30))
}

func TestToolsetCloseDuringConnect(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	ts, err := New(Config{Name: "slow"}, WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("gave up")
	}))
	require.NoError(t, err)
	errs := make(chan error, 2)
	go func() { errs <- ts.Init(context.Background()) }()
	<-started
	// A second caller waits for the first attempt; Close must free both.
	go func() { _, err := ts.Tools(context.Background()); errs <- err }()
	// Close ends the attempt in progress: release is never closed.
	defer close(release)
	require.NoError(t, ts.Close())
	for range 2 {
		select {
		case err := <-errs:
			assert.Error(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("a caller was left waiting after Close")
		}
	}
}
