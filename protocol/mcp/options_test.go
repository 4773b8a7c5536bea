package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
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

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// recordedRequest is what recordingTransport saw of one request.
type recordedRequest struct {
	method, static, trace, cookie string
}

// recordingTransport is the RoundTripper of a caller's HTTP client: it
// records the requests it sends and marks them, so that the server can tell
// them from requests sent some other way.
type recordingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []recordedRequest
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.seen = append(rt.seen, recordedRequest{
		method: req.Method,
		static: req.Header.Get("X-Static"),
		trace:  req.Header.Get("X-Trace"),
		cookie: req.Header.Get("Cookie"),
	})
	rt.mu.Unlock()
	r := req.Clone(req.Context())
	r.Header.Set("X-Via-Client", "recording")
	return rt.base.RoundTrip(r)
}

func (rt *recordingTransport) requests() []recordedRequest {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]recordedRequest(nil), rt.seen...)
}

func TestWithHTTPClient(t *testing.T) {
	for _, tr := range []Transport{TransportStreamableHTTP, TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			srv, _ := newFixtureServer(t, nil)
			h := srv.Handler(nil)
			if tr == TransportSSE {
				h = srv.SSEHandler(nil)
			}
			var mu sync.Mutex
			var marked, unmarked, withCookie int
			base := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				if r.Header.Get("X-Via-Client") == "recording" {
					marked++
				} else {
					unmarked++
				}
				if c, err := r.Cookie("affinity"); err == nil && c.Value == "node-7" {
					withCookie++
				}
				mu.Unlock()
				http.SetCookie(w, &http.Cookie{Name: "affinity", Value: "node-7", Path: "/"})
				h.ServeHTTP(w, r)
			}))

			owned := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(owned.CloseIdleConnections)
			rec := &recordingTransport{base: owned}
			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			hc := &http.Client{Transport: rec, Jar: jar}

			ts, err := New(Config{Transport: tr, URL: base, Headers: map[string]string{"X-Static": "s1"}},
				WithHTTPClient(hc),
				WithHeaderFunc(func(_ context.Context, h http.Header) error {
					h.Set("X-Trace", "t-42")
					return nil
				}))
			require.NoError(t, err)
			defer ts.Close()
			ctx := ctxT(t, 10*time.Second)
			tools, err := ts.Tools(ctx)
			require.NoError(t, err)
			r := call(ctx, find(t, tools, "add"), `{"a":1,"b":2}`)
			require.False(t, r.IsError, r.Text())
			assert.Equal(t, "sum: 3", r.Text())

			seen := rec.requests()
			require.NotEmpty(t, seen, "no request went through the caller's client")
			posts := 0
			for i, s := range seen {
				assert.Equal(t, "s1", s.static, "request %d (%s) lacks Config.Headers", i, s.method)
				assert.Equal(t, "t-42", s.trace, "request %d (%s) lacks the header function's header", i, s.method)
				if s.method == http.MethodPost {
					posts++
				}
			}
			assert.GreaterOrEqual(t, posts, 3, "initialize, tools/list and tools/call are posted")

			mu.Lock()
			assert.Positive(t, marked)
			assert.Zero(t, unmarked, "every request reaches the server through the caller's transport")
			assert.Positive(t, withCookie, "the caller's client (and its cookie jar) sends the requests")
			mu.Unlock()
			assert.Same(t, rec, hc.Transport, "the caller's client is not modified")
		})
	}
}

// helperEnv makes the test binary run helperProcess instead of the tests:
// "serve" serves the fixture over stdio, writing to its standard error as
// it goes; "fail" writes to its standard error and exits without a word of
// MCP.
const helperEnv = "TRELLIS_MCP_TEST_HELPER"

// TestHelperProcess is not a test: it is the stdio server that the
// WithStderr tests run (a copy of the test binary, see helperConfig).
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	os.Exit(helperProcess(mode))
}

func helperProcess(mode string) int {
	fmt.Fprintln(os.Stderr, "helper: starting")
	if mode != "serve" {
		fmt.Fprintln(os.Stderr, "helper: cannot open database")
		return 3
	}
	note := tool.MustFunc("note", "Writes a note to standard error", func(_ context.Context, in cityArgs) (string, error) {
		fmt.Fprintln(os.Stderr, "helper: note about "+in.City)
		return "noted", nil
	})
	srv, err := NewServer(context.Background(), tool.NewStatic("helper", note))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	return 0
}

// helperConfig is the Config of the helper process in mode.
func helperConfig(t *testing.T, mode string) Config {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return Config{
		Name:          "helper",
		Command:       exe,
		Args:          []string{"-test.run=^TestHelperProcess$"},
		Env:           map[string]string{helperEnv: mode},
		TerminateWait: 5 * time.Second,
	}
}

func TestWithStderr(t *testing.T) {
	t.Run("serving", func(t *testing.T) {
		var stderr syncBuffer
		ts, err := New(helperConfig(t, "serve"), WithStderr(&stderr))
		require.NoError(t, err)
		defer ts.Close()
		ctx := ctxT(t, 30*time.Second)
		require.NoError(t, ts.Init(ctx))
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "helper: starting") },
			10*time.Second, 10*time.Millisecond, "standard error so far: %q", stderr.String())
		assert.NotContains(t, stderr.String(), "note about")

		tools, err := ts.Tools(ctx)
		require.NoError(t, err)
		r := call(ctx, find(t, tools, "note"), `{"city":"Kyiv"}`)
		require.False(t, r.IsError, r.Text())
		assert.Equal(t, "noted", r.Text())
		// What the server writes while it runs arrives too, not only what it
		// wrote at start.
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "helper: note about Kyiv") },
			10*time.Second, 10*time.Millisecond, "standard error so far: %q", stderr.String())

		require.NoError(t, ts.Close())
		assert.Contains(t, stderr.String(), "helper: starting\n")
	})

	t.Run("failing writer", func(t *testing.T) {
		// A writer that fails must not cut the server's standard error,
		// which would kill the server at its next write.
		ts, err := New(helperConfig(t, "serve"), WithStderr(failingWriter{}), WithReconnect(0))
		require.NoError(t, err)
		defer ts.Close()
		ctx := ctxT(t, 30*time.Second)
		tools, err := ts.Tools(ctx)
		require.NoError(t, err)
		for _, city := range []string{"Kyiv", "Oslo"} {
			r := call(ctx, find(t, tools, "note"), `{"city":"`+city+`"}`)
			require.False(t, r.IsError, r.Text())
			assert.Equal(t, "noted", r.Text())
		}
	})

	t.Run("failed handshake", func(t *testing.T) {
		var stderr syncBuffer
		ts, err := New(helperConfig(t, "fail"), WithStderr(&stderr))
		require.NoError(t, err)
		defer ts.Close()
		err = ts.Init(ctxT(t, 30*time.Second))
		require.ErrorIs(t, err, ErrConnect)
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "helper: cannot open database") },
			10*time.Second, 10*time.Millisecond, "standard error so far: %q", stderr.String())
		// The copy does not replace the tail quoted in the error.
		ce, ok := errors.AsType[*ConnectError](err)
		require.True(t, ok, "%T", err)
		assert.Contains(t, ce.Stderr, "helper: cannot open database")
	})
}

func TestWithClientInfo(t *testing.T) {
	tests := []struct {
		name                  string
		opts                  []Option
		wantName, wantVersion string
	}{
		{"default", nil, "trellis", "v0"},
		{"custom", []Option{WithClientInfo("acme-agent", "v1.2.3")}, "acme-agent", "v1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A go-sdk server whose tool says who called it.
			s := sdk.NewServer(&sdk.Implementation{Name: "who", Version: "v1"}, nil)
			s.AddTool(&sdk.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
				func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					info := req.ClientInfo()
					if info == nil {
						return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "anonymous"}}}, nil
					}
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: info.Name + " " + info.Version}}}, nil
				})
			var mu sync.Mutex
			var sessions []*sdk.ServerSession
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				for _, ss := range sessions {
					_ = ss.Wait()
				}
			})
			opts := append([]Option{WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
				ct, st := sdk.NewInMemoryTransports()
				ss, err := s.Connect(ctx, st, nil)
				if err != nil {
					return nil, err
				}
				mu.Lock()
				sessions = append(sessions, ss)
				mu.Unlock()
				return ct, nil
			})}, tt.opts...)
			ts, err := New(Config{Name: "who"}, opts...)
			require.NoError(t, err)
			defer ts.Close()
			ctx := ctxT(t, 10*time.Second)
			tools, err := ts.Tools(ctx)
			require.NoError(t, err)

			mu.Lock()
			require.Len(t, sessions, 1)
			params := sessions[0].InitializeParams()
			mu.Unlock()
			require.NotNil(t, params, "no handshake")
			require.NotNil(t, params.ClientInfo)
			assert.Equal(t, tt.wantName, params.ClientInfo.Name)
			assert.Equal(t, tt.wantVersion, params.ClientInfo.Version)

			r := call(ctx, find(t, tools, "whoami"), `{}`)
			require.False(t, r.IsError, r.Text())
			assert.Equal(t, tt.wantName+" "+tt.wantVersion, r.Text(), "what a tool handler sees of its caller")
		})
	}
}

// mcpTool is what the toolset's tools offer besides tool.Tool.
type mcpTool interface {
	MCPTool() *sdk.Tool
	Server() string
}

func TestRemoteToolAccessors(t *testing.T) {
	// A server whose tool has a title and no description: the Trellis
	// definition takes the title as description, MCPTool keeps the tool as
	// it was listed.
	s := sdk.NewServer(&sdk.Implementation{Name: "raw", Version: "v1"}, nil)
	destructive := true
	listed := &sdk.Tool{
		Name:  "shout",
		Title: "Shout a message",
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"message": map[string]any{"type": "string"}},
			"required":   []any{"message"},
		},
		Annotations: &sdk.ToolAnnotations{Title: "Shout", DestructiveHint: &destructive},
		Meta:        sdk.Meta{"vendor/tier": "gold"},
	}
	s.AddTool(listed, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Message string }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(in.Message)}}}, nil
	})

	srv, _ := newFixtureServer(t, nil)
	fixture := listAll(t, goClient(t, srv, nil))
	base := serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))

	tests := []struct {
		name   string
		cfg    Config
		opts   []Option
		server string
		want   map[string]*sdk.Tool
	}{
		{"named, in memory", Config{Name: "calc"}, []Option{memTransport(srv)}, "calc", fixture},
		{"name from the URL", Config{URL: base + "/mcp"}, nil, strings.TrimPrefix(base, "http://"), map[string]*sdk.Tool{"shout": listed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := New(tt.cfg, tt.opts...)
			require.NoError(t, err)
			defer ts.Close()
			ctx := ctxT(t, 10*time.Second)
			tools, err := ts.Tools(ctx)
			require.NoError(t, err)
			require.Len(t, tools, len(tt.want))
			for _, x := range tools {
				rt, ok := x.(mcpTool)
				require.True(t, ok, "%T has no MCPTool and Server methods", x)
				assert.Equal(t, tt.server, rt.Server())
				want, ok := tt.want[tool.Name(x)]
				require.True(t, ok, "unexpected tool %q", tool.Name(x))
				got := rt.MCPTool()
				require.NotNil(t, got)
				assert.Equal(t, want.Name, got.Name)
				assert.Equal(t, want.Title, got.Title)
				wantTitle := want.Title
				if wantTitle == "" && want.Annotations != nil {
					wantTitle = want.Annotations.Title
				}
				assert.Equal(t, wantTitle, tool.TitleOf(x), "the tool's title for user interfaces")
				assert.Equal(t, want.Description, got.Description)
				assert.Equal(t, want.Annotations, got.Annotations)
				assert.Equal(t, want.Meta, got.Meta)
				wantIn, err := json.Marshal(want.InputSchema)
				require.NoError(t, err)
				gotIn, err := json.Marshal(got.InputSchema)
				require.NoError(t, err)
				assert.JSONEq(t, string(wantIn), string(gotIn))
				wantOut, err := json.Marshal(want.OutputSchema)
				require.NoError(t, err)
				gotOut, err := json.Marshal(got.OutputSchema)
				require.NoError(t, err)
				assert.JSONEq(t, string(wantOut), string(gotOut))
			}
			if tt.want["shout"] != nil {
				shout := find(t, tools, "shout")
				assert.Equal(t, "Shout a message", shout.Definition().Description, "the definition falls back on the title")
				assert.Empty(t, shout.(mcpTool).MCPTool().Description, "MCPTool is the tool as listed")
				assert.Equal(t, "HEY", call(ctx, shout, `{"message":"hey"}`).Text())
			}
		})
	}
}

func TestServerWithInvokeOptions(t *testing.T) {
	t.Run("progress", func(t *testing.T) {
		// The tool says whether anything receives its progress.
		steps := tool.MustFunc("steps", "Reports progress", func(ctx context.Context, _ noArgs) (string, error) {
			a := tool.ReportProgress(ctx, tool.Update{Message: "one"})
			b := tool.ReportProgress(ctx, tool.Update{Message: "two"})
			return fmt.Sprintf("reported: %v %v", a, b), nil
		})

		srv, _ := newFixtureServer(t, []tool.Tool{steps})
		res := callGo(t, goClient(t, srv, nil), "steps", map[string]any{})
		require.False(t, res.IsError, textOf(res))
		assert.Equal(t, "reported: false false", textOf(res), "without the option (and no progress token) nothing listens")

		var mu sync.Mutex
		var got []tool.Update
		srv, _ = newFixtureServer(t, []tool.Tool{steps}, WithInvokeOptions(tool.WithProgress(func(u tool.Update) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, u)
		})))
		res = callGo(t, goClient(t, srv, nil), "steps", map[string]any{})
		require.False(t, res.IsError, textOf(res))
		assert.Equal(t, "reported: true true", textOf(res))
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, got, 2)
		assert.Equal(t, "one", got[0].Message)
		assert.Equal(t, "two", got[1].Message)
		assert.Equal(t, "steps", got[0].ToolName)
		assert.True(t, strings.HasPrefix(got[0].CallID, "mcp_"), "call ID %q", got[0].CallID)
	})

	t.Run("pending", func(t *testing.T) {
		ids := make(chan string, 1)
		report := tool.MustFunc("report", "Starts a report", func(ctx context.Context, in cityArgs) (tool.Result, error) {
			ids <- tool.CallID(ctx)
			return tool.PendingResult("report on " + in.City + " started"), nil
		}, tool.WithLongRunning())

		var pending tool.Pending
		srv, _ := newFixtureServer(t, []tool.Tool{report}, WithInvokeOptions(tool.WithPending(&pending)))
		res := callGo(t, goClient(t, srv, nil), "report", map[string]any{"city": "Oslo"})
		require.False(t, res.IsError, textOf(res))
		assert.Equal(t, "report on Oslo started", textOf(res))
		id := <-ids
		calls := pending.Calls()
		require.Len(t, calls, 1, "the served call is registered as pending")
		assert.Equal(t, id, calls[0].ID)
		assert.Equal(t, "report", calls[0].Name)
		assert.JSONEq(t, `{"city":"Oslo"}`, string(calls[0].Arguments))
		require.NoError(t, pending.Complete(id, tool.Text("report ready")))
		done := pending.Completed()
		require.Len(t, done, 1)
		assert.Equal(t, id, done[0].Call.ID)
		assert.Equal(t, "report ready", done[0].Result.Text())
	})
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestNilOptions(t *testing.T) {
	// A nil option (from a conditional option list, say) is ignored.
	ts, err := New(Config{Command: "server"}, nil, WithReconnect(1), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, ts.o.reconnect)
	require.NoError(t, ts.Close())

	srv, err := NewServer(context.Background(), tool.NewStatic("s", fixtureTools()...), nil,
		WithInvokeOptions(nil, tool.WithJSONRepair(true)), nil)
	require.NoError(t, err)
	r, err := goClient(t, srv, nil).CallTool(context.Background(), &sdk.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	require.NoError(t, err)
	assert.Equal(t, "sum: 3", Result("s", "add", r).Text())
}

func TestPartsNilContent(t *testing.T) {
	// Typed nil pointers are dropped like nil interfaces, not dereferenced.
	parts := Parts([]sdk.Content{(*sdk.TextContent)(nil), (*sdk.ImageContent)(nil), (*sdk.AudioContent)(nil),
		(*sdk.ResourceLink)(nil), (*sdk.EmbeddedResource)(nil), &sdk.TextContent{Text: "kept"}})
	assert.Equal(t, []model.Part{model.TextPart("kept")}, parts)
}
