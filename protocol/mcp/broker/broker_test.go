package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// serve serves tools over streamable HTTP on 127.0.0.1 until the test ends
// and returns the endpoint's URL.
func serve(t testing.TB, name string, tools ...tool.Tool) string {
	return serveSeeing(t, name, nil, tools...)
}

// serveSeeing is serve, with seen (when not nil) called with every request
// the server receives.
func serveSeeing(t testing.TB, name string, seen func(*http.Request), tools ...tool.Tool) string {
	t.Helper()
	srv, err := mcp.NewServer(context.Background(), tool.NewStatic(name, tools...))
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mux := http.NewServeMux()
	var h http.Handler = srv.Handler(nil)
	if seen != nil {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen(r)
			inner.ServeHTTP(w, r)
		})
	}
	mux.Handle("/mcp/"+name, h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		<-done
	})
	return "http://" + l.Addr().String() + "/mcp/" + name
}

func calcTools() []tool.Tool {
	return []tool.Tool{
		tool.MustFunc("add", "Adds two integers.\nSecond line of detail.", func(_ context.Context, in addArgs) (string, error) {
			return fmt.Sprint(in.A + in.B), nil
		}, tool.WithMetadata(tool.Metadata{ReadOnly: true})),
		tool.MustFunc("reset", "Resets the memory", func(context.Context, noArgs) (string, error) {
			return "reset", nil
		}, tool.WithMetadata(tool.Metadata{Destructive: true})),
	}
}

func adHocTools() []tool.Tool {
	return []tool.Tool{tool.MustFunc("ping", "Answers pong", func(context.Context, noArgs) (string, error) {
		return "pong", nil
	})}
}

func run(t testing.TB, b *Broker, name, args string) tool.Result {
	t.Helper()
	tools, err := b.Tools(context.Background())
	require.NoError(t, err)
	for _, x := range tools {
		if tool.Name(x) == name {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// As an executor runs it: Invoke consults the tool's own
			// permission checker, which carries the broker's policy.
			call := model.ToolCall{ID: "call_1", Name: name, Arguments: json.RawMessage(args)}
			return tool.Invoke(ctx, x, call)
		}
	}
	t.Fatalf("no broker tool %q", name)
	return tool.Result{}
}

func decode[T any](t testing.TB, r tool.Result) T {
	t.Helper()
	require.False(t, r.IsError, r.Text())
	require.Len(t, r.Content, 1)
	var v T
	require.NoError(t, json.Unmarshal(r.Content[0].JSON, &v), r.Text())
	return v
}

func TestBrokerFlow(t *testing.T) {
	calc := serve(t, "calc", calcTools()...)
	other := serve(t, "other", adHocTools()...)
	host := other[:len(other)-len("/mcp/other")]
	b, err := New(
		WithServers(mcp.Config{Name: "calc", URL: calc, Description: "Arithmetic"}),
		WithAllowedURLs(host+"/mcp/*"),
	)
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, "mcp_broker", b.Name())

	tools, err := b.Tools(context.Background())
	require.NoError(t, err)
	var got []string
	for _, x := range tools {
		got = append(got, tool.Name(x))
	}
	assert.Equal(t, []string{ListServersTool, ListToolsTool, DescribeToolsTool, CallToolTool}, got)

	servers := decode[ServerList](t, run(t, b, ListServersTool, `{}`))
	assert.Equal(t, []ServerInfo{{Name: "calc", Transport: mcp.TransportStreamableHTTP, Description: "Arithmetic"}}, servers.Servers)
	assert.Equal(t, []string{host + "/mcp/*"}, servers.AllowedURLs)

	list := decode[ToolList](t, run(t, b, ListToolsTool, `{"server":"calc"}`))
	assert.Equal(t, []ToolSummary{
		{Name: "add", Description: "Adds two integers.", ReadOnly: true},
		{Name: "reset", Description: "Resets the memory", Destructive: true},
	}, list.Tools)

	desc := decode[ToolDescriptions](t, run(t, b, DescribeToolsTool, `{"server":"calc","tools":["add","ad"]}`))
	require.Len(t, desc.Tools, 1)
	assert.Equal(t, "Adds two integers.\nSecond line of detail.", desc.Tools[0].Description)
	assert.Contains(t, string(desc.Tools[0].InputSchema), `"a"`)
	assert.True(t, desc.Tools[0].Metadata.ReadOnly)
	assert.Equal(t, []UnknownTool{{Name: "ad", Suggestions: []string{"add"}}}, desc.Unknown)

	r := run(t, b, CallToolTool, `{"server":"calc","tool":"add","arguments":{"a":2,"b":"5"}}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "7", r.Text())

	r = run(t, b, CallToolTool, `{"server":"calc","tool":"add","arguments":"{\"a\":1,\"b\":1}"}`)
	assert.Equal(t, "2", r.Text(), "arguments sent as a JSON string are accepted")

	// Ad-hoc URL on the allow-list.
	r = run(t, b, CallToolTool, fmt.Sprintf(`{"server":%q,"tool":"ping"}`, other))
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "pong", r.Text())
}

func TestBrokerErrors(t *testing.T) {
	calc := serve(t, "calc", calcTools()...)
	other := serve(t, "other", adHocTools()...)
	host := other[:len(other)-len("/mcp/other")]
	b, err := New(WithServers(mcp.Config{Name: "calc", URL: calc}), WithAllowedURLs(host+"/mcp/other"), WithMaxAdHoc(1))
	require.NoError(t, err)
	defer b.Close()
	tests := []struct {
		name, tool, args, code, want string
	}{
		{"unknown server", ListToolsTool, `{"server":"clac"}`, CodeUnknownServer, `no server named "clac"; did you mean "calc"?`},
		{"URL off the list", ListToolsTool, fmt.Sprintf(`{"server":%q}`, host+"/mcp/calc"), CodeNotAllowed, "matches no entry of the allow-list"},
		{"user information", ListToolsTool, fmt.Sprintf(`{"server":%q}`, "http://evil.test@"+host[len("http://"):]+"/mcp/other"), CodeNotAllowed, "user information"},
		{"dot segments", ListToolsTool, fmt.Sprintf(`{"server":%q}`, host+"/mcp/x/../other"), CodeNotAllowed, "canonical"},
		{"not http", ListToolsTool, `{"server":"file:///etc/passwd"}`, CodeNotAllowed, "only http and https"},
		{"unknown tool", CallToolTool, `{"server":"calc","tool":"sub"}`, tool.CodeUnknownTool, `Server "calc" has no tool "sub"`},
		{"invalid remote arguments", CallToolTool, `{"server":"calc","tool":"add","arguments":{"a":"x"}}`, tool.CodeInvalidArguments, "$.b"},
		{"missing server", ListToolsTool, `{}`, tool.CodeInvalidArguments, "$.server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, b, tt.tool, tt.args)
			require.True(t, r.IsError, r.Text())
			assert.Equal(t, tt.code, r.ErrorCode, r.Text())
			assert.Contains(t, r.Text(), tt.want)
		})
	}

	// One ad-hoc server at most.
	r := run(t, b, ListToolsTool, fmt.Sprintf(`{"server":%q}`, other))
	require.False(t, r.IsError, r.Text())
	b.allow = append(b.allow, mustPattern(t, calc[:len(calc)-len("/mcp/calc")]+"/*"))
	r = run(t, b, ListToolsTool, fmt.Sprintf(`{"server":%q}`, calc))
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "already connected to 1 ad-hoc servers")
}

func mustPattern(t testing.TB, s string) pattern {
	p, err := parsePattern(s)
	require.NoError(t, err)
	return p
}

func TestBrokerNoAdHocByDefault(t *testing.T) {
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	r := run(t, b, ListToolsTool, `{"server":"http://127.0.0.1:1/mcp"}`)
	assert.Equal(t, CodeNotAllowed, r.ErrorCode)
	assert.Contains(t, r.Text(), "connects to its named servers only")
}

func TestBrokerPolicy(t *testing.T) {
	calc := serve(t, "calc", calcTools()...)
	var seen tool.PermissionRequest
	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		seen = req
		if req.Metadata.Destructive {
			return tool.Ask("reset the calculator's memory?"), nil
		}
		return tool.Allow(), nil
	})
	b, err := New(WithServers(mcp.Config{Name: "calc", URL: calc}), WithPolicy(policy))
	require.NoError(t, err)
	defer b.Close()

	r := run(t, b, CallToolTool, `{"server":"calc","tool":"reset"}`)
	assert.Equal(t, tool.StatusDenied, r.Status)
	assert.Equal(t, tool.CodeApprovalRequired, r.ErrorCode)
	assert.Equal(t, "reset", seen.Call.Name, "the policy sees the remote tool's call")
	assert.Equal(t, "reset", tool.Name(seen.Tool))

	r = run(t, b, CallToolTool, `{"server":"calc","tool":"add","arguments":{"a":1,"b":2}}`)
	assert.Equal(t, "3", r.Text())
	assert.JSONEq(t, `{"a":1,"b":2}`, string(seen.Call.Arguments))
	assert.True(t, seen.Metadata.ReadOnly)
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"bad server", []Option{WithServers(mcp.Config{Name: "x"})}, "set a command"},
		{"duplicate", []Option{WithServers(mcp.Config{Name: "x", Command: "a"}, mcp.Config{Name: "x", Command: "b"})}, `two servers are named "x"`},
		{"bad pattern", []Option{WithAllowedURLs("ftp://h/*")}, "scheme must be http or https"},
		{"inner star", []Option{WithAllowedURLs("https://*.example.com/")}, "only a final *"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts...)
			require.ErrorIs(t, err, ErrInvalidBroker)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestBrokerClosed(t *testing.T) {
	b, err := New(WithServers(mcp.Config{Name: "x", URL: "http://127.0.0.1:1/mcp"}))
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	_, err = b.Tools(context.Background())
	assert.True(t, errors.Is(err, mcp.ErrClosed))
}

func TestSummary(t *testing.T) {
	assert.Equal(t, "first", summary("  first\nsecond"))
	long := ""
	for range 100 {
		long += "ab€"
	}
	s := summary(long)
	assert.LessOrEqual(t, len(s), summaryLength+len("…"))
	assert.True(t, json.Valid([]byte(fmt.Sprintf("%q", s))))
	assert.NotContains(t, s, "\uFFFD")
}

// TestBrokerEverything brokers the MCP reference server over stdio.
func TestBrokerEverything(t *testing.T) {
	bin := everythingBin(t)
	b, err := New(WithServers(mcp.Config{Name: "everything", Command: bin, Args: []string{"stdio"},
		Description: "The MCP reference server", TerminateWait: 200 * time.Millisecond}))
	require.NoError(t, err)
	defer b.Close()
	list := decode[ToolList](t, run(t, b, ListToolsTool, `{"server":"everything"}`))
	var names []string
	for _, x := range list.Tools {
		names = append(names, x.Name)
	}
	assert.Contains(t, names, "get-sum")
	desc := decode[ToolDescriptions](t, run(t, b, DescribeToolsTool, `{"server":"everything","tools":["get-sum"]}`))
	require.Len(t, desc.Tools, 1)
	assert.Contains(t, string(desc.Tools[0].InputSchema), `"a"`)
	r := run(t, b, CallToolTool, `{"server":"everything","tool":"get-sum","arguments":{"a":20,"b":22}}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "42")
}

// everythingBin finds the reference server installed by .ci/run, or skips
// the test (fails it under CI=true).
func everythingBin(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the MCP reference server, a Node.js process (skipped with -short)")
	}
	missing := func(why string) {
		msg := "MCP reference server unavailable: " + why +
			"; install Node.js and run `cd .ci && npm ci` in the repository, or set TRELLIS_MCP_EVERYTHING"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not in PATH")
	}
	if p := os.Getenv("TRELLIS_MCP_EVERYTHING"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, ".ci", "run")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			missing("the repository root (a directory holding .ci/run) was not found")
		}
		dir = parent
	}
	bin := filepath.Join(dir, ".ci", "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		missing(bin + " does not exist")
	}
	return bin
}

func TestNewNilOption(t *testing.T) {
	b, err := New(nil, WithName("b"), nil)
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, "b", b.Name())
}

func TestBrokerAdHocFailuresFreeTheirSlot(t *testing.T) {
	// Nothing listens on dead: connecting to it fails at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + l.Addr().String() + "/mcp/gone"
	require.NoError(t, l.Close())
	other := serve(t, "other", adHocTools()...)
	b, err := New(WithAllowedURLs(dead, other), WithMaxAdHoc(1))
	require.NoError(t, err)
	defer b.Close()

	for range 2 {
		r := run(t, b, ListToolsTool, fmt.Sprintf(`{"server":%q}`, dead))
		require.True(t, r.IsError)
		assert.Equal(t, mcp.CodeUnavailable, r.ErrorCode, r.Text())
		assert.ErrorIs(t, r.Err, mcp.ErrConnect)
	}
	// A server the broker never connected to does not count against the
	// cap.
	r := run(t, b, CallToolTool, fmt.Sprintf(`{"server":%q,"tool":"ping"}`, other))
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "pong", r.Text())
	// The cap still holds for servers it is connected to.
	r = run(t, b, ListToolsTool, fmt.Sprintf(`{"server":%q}`, dead))
	assert.Contains(t, r.Text(), "already connected to 1 ad-hoc servers")
}

// Credentials given per target go to their server alone: the named
// server's token never reaches a URL the model chose.
func TestBrokerTargetOptionsKeepCredentialsToTheirServer(t *testing.T) {
	var mu sync.Mutex
	auth := map[string][]string{}
	record := func(server string) func(*http.Request) {
		return func(r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			auth[server] = append(auth[server], r.Header.Get("Authorization"))
		}
	}
	calc := serveSeeing(t, "calc", record("calc"), calcTools()...)
	other := serveSeeing(t, "other", record("other"), adHocTools()...)
	host := other[:len(other)-len("/mcp/other")]
	var targets []Target
	b, err := New(WithServers(mcp.Config{Name: "calc", URL: calc}), WithAllowedURLs(host+"/mcp/other"),
		WithTargetOptions(func(tg Target) []mcp.Option {
			mu.Lock()
			targets = append(targets, tg)
			mu.Unlock()
			if tg.AdHoc {
				return nil
			}
			return []mcp.Option{mcp.WithHeaderFunc(func(_ context.Context, h http.Header) error {
				h.Set("Authorization", "Bearer calc-token")
				return nil
			})}
		}))
	require.NoError(t, err)
	defer b.Close()

	r := run(t, b, CallToolTool, `{"server":"calc","tool":"add","arguments":{"a":1,"b":2}}`)
	require.Equal(t, "3", r.Text())
	r = run(t, b, CallToolTool, fmt.Sprintf(`{"server":%q,"tool":"ping"}`, other))
	require.Equal(t, "pong", r.Text())

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []Target{{Name: "calc", URL: calc}, {Name: other, URL: other, AdHoc: true}}, targets)
	require.NotEmpty(t, auth["calc"])
	for _, a := range auth["calc"] {
		assert.Equal(t, "Bearer calc-token", a)
	}
	require.NotEmpty(t, auth["other"])
	for _, a := range auth["other"] {
		assert.Empty(t, a, "the ad-hoc server got no credentials")
	}
}

// The error handler sees the errors met talking to a server, with the
// server, and may report others in their place.
func TestBrokerErrorHandler(t *testing.T) {
	guarded := serveSeeing(t, "vault", nil, tool.MustFunc("open", "opens", func(context.Context, noArgs) (string, error) {
		return "", errors.New("the vault is sealed")
	}))
	calc := serve(t, "calc", calcTools()...)
	// A server that refuses requests without a token, as a gateway does.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	locked := "http://" + l.Addr().String() + "/mcp"

	var mu sync.Mutex
	var seen []Target
	allowAll := tool.PolicyFunc(func(context.Context, tool.PermissionRequest) (tool.Decision, error) { return tool.Allow(), nil })
	b, err := New(WithServers(mcp.Config{Name: "vault", URL: guarded}, mcp.Config{Name: "locked", URL: locked}, mcp.Config{Name: "calc", URL: calc}),
		WithToolsetOptions(mcp.WithReconnect(0)), WithPolicy(allowAll),
		WithErrorHandler(func(_ context.Context, tg Target, err error) error {
			mu.Lock()
			seen = append(seen, tg)
			mu.Unlock()
			switch tg.Name {
			case "locked":
				return fmt.Errorf("the user must sign in to %s first: %w", tg.Name, err)
			case "vault":
				return fmt.Errorf("ask the keeper: %w", err)
			}
			return nil // keep it
		}))
	require.NoError(t, err)
	defer b.Close()

	r := run(t, b, ListToolsTool, `{"server":"locked"}`)
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "the user must sign in to locked first")
	assert.ErrorIs(t, r.Err, mcp.ErrConnect, "the original error is still there")

	// Through mcp_call_tool, whose permission check lists the server's
	// tools too: the handler hears of the failure once.
	r = run(t, b, CallToolTool, `{"server":"locked","tool":"x"}`)
	assert.Contains(t, r.Text(), "the user must sign in to locked first")

	r = run(t, b, CallToolTool, `{"server":"vault","tool":"open"}`)
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "ask the keeper: ")
	assert.Contains(t, r.Text(), "the vault is sealed")
	assert.Equal(t, tool.StatusFailed, r.Status, "the result keeps its status")
	assert.ErrorIs(t, r.Err, mcp.ErrToolFailed)

	r = run(t, b, CallToolTool, `{"server":"calc","tool":"add","arguments":{"a":"x"}}`)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "arguments refused before sending are not the server's")
	r = run(t, b, CallToolTool, `{"server":"calc","tool":"add","arguments":{"a":1,"b":2}}`)
	assert.Equal(t, "3", r.Text())

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []Target{{Name: "locked", URL: locked}, {Name: "locked", URL: locked}, {Name: "vault", URL: guarded}}, seen,
		"one report per failure; successes and refused arguments are not reported")
}
