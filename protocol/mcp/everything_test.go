package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// The reference server @modelcontextprotocol/server-everything is installed
// from npm by .ci/run (cd .ci && npm ci); TRELLIS_MCP_EVERYTHING may name its
// executable instead.
const everythingEnv = "TRELLIS_MCP_EVERYTHING"

// everything returns the reference server's executable, or skips the test
// (fails it under CI=true) when Node.js or the package is missing.
func everything(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the MCP reference server, a Node.js process (skipped with -short)")
	}
	missing := func(why string) {
		msg := "MCP reference server unavailable: " + why +
			"; install Node.js and run `cd .ci && npm ci` in the repository, or set " + everythingEnv
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not in PATH")
	}
	if p := os.Getenv(everythingEnv); p != "" {
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

// loopbackEnv is the environment that makes the reference server listen on
// 127.0.0.1 only.
func loopbackEnv(t testing.TB) map[string]string {
	abs, err := filepath.Abs(filepath.Join("testdata", "loopback.cjs"))
	require.NoError(t, err)
	return map[string]string{"NODE_OPTIONS": "--require " + abs}
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// httpServer is the reference server running over HTTP on 127.0.0.1.
type httpServer struct {
	t    testing.TB
	bin  string
	mode string // "streamableHttp" or "sse"
	port int
	cmd  *exec.Cmd
}

// startHTTP starts the reference server in mode on a free port and stops it
// when the test ends.
func startHTTP(t testing.TB, mode string) *httpServer {
	s := &httpServer{t: t, bin: everything(t), mode: mode, port: freePort(t)}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *httpServer) url() string {
	if s.mode == "sse" {
		return fmt.Sprintf("http://127.0.0.1:%d/sse", s.port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", s.port)
}

// start runs the server and waits until it accepts connections.
func (s *httpServer) start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, s.mode)
	cmd.Env = os.Environ()
	for k, v := range loopbackEnv(s.t) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "PORT="+strconv.Itoa(s.port))
	require.NoError(s.t, cmd.Start())
	s.cmd = cmd
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.stop()
			s.t.Fatalf("the reference server did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the server and reaps it.
func (s *httpServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// restart kills the server and starts a new one on the same port.
func (s *httpServer) restart() {
	s.stop()
	s.start()
}

// alive reports whether a process with the given ID exists (a zombie that
// was not reaped counts as existing).
func alive(pid int) bool {
	return processAlive(pid)
}

func names(tools []tool.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = tool.Name(t)
	}
	return out
}

func find(t testing.TB, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, x := range tools {
		if tool.Name(x) == name {
			return x
		}
	}
	t.Fatalf("no tool %q among %v", name, names(tools))
	return nil
}

func call(ctx context.Context, t tool.Tool, args string) tool.Result {
	return tool.Invoke(ctx, t, model.ToolCall{ID: "call_1", Name: tool.Name(t), Arguments: json.RawMessage(args)})
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// exerciseEverything runs the checks shared by every transport: the tool
// list, metadata, get-sum, echo, structured content, images, resource links
// and tool errors.
func exerciseEverything(t *testing.T, ctx context.Context, ts *Toolset) {
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	assert.Subset(t, names(tools), []string{"echo", "get-sum", "get-structured-content", "get-tiny-image", "get-resource-links"})

	sum := find(t, tools, "get-sum")
	def := sum.Definition()
	assert.Equal(t, "Returns the sum of two numbers", def.Description)
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(def.InputSchema, &schema))
	assert.Equal(t, "object", schema.Type)
	assert.Contains(t, schema.Properties, "a")
	assert.Contains(t, schema.Properties, "b")
	assert.Equal(t, tool.Metadata{ReadOnly: true}, tool.MetadataOf(sum), "explicit false hints stay false")

	r := call(ctx, sum, `{"a": 2, "b": "40"}`) // "40" is coerced toward the schema
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, tool.StatusSuccess, r.Status)
	assert.Contains(t, r.Text(), "42")

	r = call(ctx, find(t, tools, "echo"), `{"message":"hello trellis"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "Echo: hello trellis", r.Text())

	r = call(ctx, find(t, tools, "get-structured-content"), `{"location":"Chicago"}`)
	require.False(t, r.IsError, r.Text())
	require.Len(t, r.Content, 1, "the text copy of the structured value is replaced, not repeated")
	require.Equal(t, model.PartJSON, r.Content[0].Type)
	var weather struct {
		Temperature float64 `json:"temperature"`
		Conditions  string  `json:"conditions"`
		Humidity    float64 `json:"humidity"`
	}
	require.NoError(t, json.Unmarshal(r.Content[0].JSON, &weather))
	assert.Equal(t, 36.0, weather.Temperature)
	assert.Equal(t, 82.0, weather.Humidity)
	assert.NotEmpty(t, find(t, tools, "get-structured-content").Definition().OutputSchema)

	r = call(ctx, find(t, tools, "get-tiny-image"), `{}`)
	require.False(t, r.IsError, r.Text())
	var images []model.Part
	for _, p := range r.Content {
		if p.Type == model.PartImage {
			images = append(images, p)
		}
	}
	require.Len(t, images, 1)
	assert.Equal(t, "image/png", images[0].MIMEType)
	assert.Equal(t, []byte("\x89PNG"), images[0].Data[:4])

	r = call(ctx, find(t, tools, "get-resource-links"), `{"count":2}`)
	require.False(t, r.IsError, r.Text())
	var links []map[string]any
	for _, p := range r.Content {
		if p.Type == model.PartJSON {
			var m map[string]any
			require.NoError(t, json.Unmarshal(p.JSON, &m))
			links = append(links, m)
		}
	}
	require.Len(t, links, 2)
	assert.Equal(t, "resource_link", links[0]["type"])
	assert.NotEmpty(t, links[0]["uri"])

	// Invoke validates the arguments against the server's schema first.
	r = call(ctx, find(t, tools, "get-resource-links"), `{"count":50}`)
	assert.True(t, r.IsError)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode)

	// Sent as they are, the server's own validation refuses them: the MCP
	// tool error becomes an error result with the server's text.
	r, err = sum.Call(ctx, "call_2", json.RawMessage(`{"a":"two","b":1}`))
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Equal(t, tool.StatusFailed, r.Status)
	assert.Equal(t, tool.CodeToolError, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrToolFailed)
	assert.NotEmpty(t, r.Text())
}

func TestEverythingStdio(t *testing.T) {
	bin := everything(t)
	ctx := ctxT(t, 60*time.Second)
	var changed atomic.Int32
	ts, err := New(Config{Name: "everything", Command: bin, Args: []string{"stdio"}},
		WithToolsChanged(func() { changed.Add(1) }))
	require.NoError(t, err)
	require.NoError(t, ts.Init(ctx))
	pid := ts.pid()
	require.NotZero(t, pid)

	exerciseEverything(t, ctx, ts)

	// The server registers tools that depend on the client's capabilities
	// (roots) after the handshake and announces them with
	// notifications/tools/list_changed.
	require.Eventually(t, func() bool { return changed.Load() > 0 }, 10*time.Second, 20*time.Millisecond,
		"no tools/list_changed notification arrived")
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	assert.Contains(t, names(tools), "get-roots-list")

	require.NoError(t, ts.Close())
	assert.False(t, alive(pid), "the server process %d is still there after Close", pid)
	_, err = ts.Tools(ctx)
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, ts.Close(), "Close is idempotent")
}

// sessions returns the number of sessions opened so far.
func (ts *Toolset) sessions() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.opened
}

// pid returns the process ID of the current stdio session's server, or 0.
func (ts *Toolset) pid() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.sess == nil {
		return 0
	}
	return ts.sess.proc.pid()
}

func TestEverythingStdioChildDies(t *testing.T) {
	bin := everything(t)
	ctx := ctxT(t, 60*time.Second)
	ts, err := New(Config{Command: bin, Args: []string{"stdio"}}, WithReconnectDelay(10*time.Millisecond))
	require.NoError(t, err)
	defer ts.Close()
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	echo := find(t, tools, "echo")

	first := ts.pid()
	require.NoError(t, killProcess(first))
	require.Eventually(t, func() bool { return !alive(first) }, 10*time.Second, 10*time.Millisecond,
		"the killed server was not reaped")

	// The next call relaunches the command on a new session.
	r := call(ctx, echo, `{"message":"again"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "Echo: again", r.Text())
	second := ts.pid()
	assert.NotEqual(t, first, second)
	assert.True(t, alive(second))

	require.NoError(t, ts.Close())
	assert.False(t, alive(second))
}

func TestEverythingStdioNoReconnect(t *testing.T) {
	bin := everything(t)
	ctx := ctxT(t, 60*time.Second)
	ts, err := New(Config{Command: bin, Args: []string{"stdio"}}, WithReconnect(0))
	require.NoError(t, err)
	defer ts.Close()
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	pid := ts.pid()
	require.NoError(t, killProcess(pid))
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 10*time.Millisecond)

	r := call(ctx, find(t, tools, "echo"), `{"message":"x"}`)
	require.True(t, r.IsError)
	assert.Equal(t, CodeUnavailable, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrTransport)
	ce, ok := errors.AsType[*CallError](r.Err)
	require.True(t, ok, "%T", r.Err)
	assert.True(t, ce.Transient())
}

func TestEverythingStreamableHTTP(t *testing.T) {
	srv := startHTTP(t, "streamableHttp")
	ctx := ctxT(t, 90*time.Second)
	ts, err := New(Config{URL: srv.url()}, WithReconnectDelay(50*time.Millisecond))
	require.NoError(t, err)
	defer ts.Close()
	require.NoError(t, ts.Init(ctx))
	exerciseEverything(t, ctx, ts)

	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	sum := find(t, tools, "get-sum")

	// The server restarts: the old session is unknown to the new process.
	before := ts.sessions()
	srv.restart()
	r := call(ctx, sum, `{"a":1,"b":2}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "3")
	assert.Greater(t, ts.sessions(), before, "the call was answered on a new session")

	// The server goes away for good: the call fails after the bounded
	// attempts, with an error that says so.
	srv.stop()
	r = call(ctx, sum, `{"a":1,"b":2}`)
	require.True(t, r.IsError)
	assert.Equal(t, CodeUnavailable, r.ErrorCode, r.Text())
	assert.ErrorIs(t, r.Err, ErrReconnectExhausted)
	assert.ErrorIs(t, r.Err, ErrTransport)
	assert.Contains(t, r.Text(), "gave up after")
}

func TestEverythingSSE(t *testing.T) {
	srv := startHTTP(t, "sse")
	ctx := ctxT(t, 60*time.Second)
	ts, err := New(Config{Transport: TransportSSE, URL: srv.url()})
	require.NoError(t, err)
	defer ts.Close()
	require.NoError(t, ts.Init(ctx))
	exerciseEverything(t, ctx, ts)
}
