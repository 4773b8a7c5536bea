package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/sse"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/memory"
	"github.com/trellis-go/trellis/runs/sqlite"
	"github.com/trellis-go/trellis/server"
	"github.com/trellis-go/trellis/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Chat is the state of the test graphs.
type Chat struct {
	Messages []string `json:"notes"`
	Turns    int      `json:"turns"`
}

// gate holds the "hold" graph's middle node until released; a release
// lets the nodes waiting go, and the next ones wait for the next release.
type gate struct {
	mu      sync.Mutex
	open    chan struct{}
	entered chan struct{}
	waiting map[string]int // nodes waiting, by thread
}

func newGate() *gate {
	return &gate{open: make(chan struct{}), entered: make(chan struct{}, 64), waiting: map[string]int{}}
}

// hold waits, for thread, until a release or ctx's end.
func (g *gate) hold(ctx context.Context, thread string) error {
	g.mu.Lock()
	open := g.open
	g.waiting[thread]++
	g.mu.Unlock()
	select {
	case g.entered <- struct{}{}:
	default:
	}
	defer func() {
		g.mu.Lock()
		g.waiting[thread]--
		g.mu.Unlock()
	}()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// holding says how many nodes of thread wait at the gate.
func (g *gate) holding(thread string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting[thread]
}

// releaseWaiting releases once a node waits (or the deadline passes), so
// that a release is not spent before the run it is meant for reached the
// gate.
func (g *gate) releaseWaiting(deadline time.Time) {
	for time.Now().Before(deadline) {
		g.mu.Lock()
		n := 0
		for _, k := range g.waiting {
			n += k
		}
		g.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.release()
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
	g.open = make(chan struct{})
}

func appendNode(name string) graph.NodeFunc[Chat] {
	return func(_ context.Context, s Chat) (Chat, error) {
		last := ""
		if len(s.Messages) > 0 {
			last = s.Messages[len(s.Messages)-1]
		}
		s.Messages = append(s.Messages, name+":"+last)
		return s, nil
	}
}

// env is a server over an in-memory backend with four graphs:
//   - "echo": a → b, each appending "<node>:<last note>";
//   - "ask": asks for a note (graph.Interrupt) and appends "note:<it>";
//   - "hold": a → hold → b, hold waiting for the gate;
//   - "chat": a ReAct agent on a scripted model that answers "echo: <the
//     user's last message>";
//   - "boom": a node that panics.
type env struct {
	m    *runs.Manager
	srv  *server.Server
	http *httptest.Server
	gate *gate
}

// The backends the tests' server runs on.
const (
	onMemory = "memory" // runs/memory, the default
	onSQLite = "sqlite" // runs/sqlite, in memory
)

func newEnv(t *testing.T, opts ...server.Option) *env {
	t.Helper()
	return newEnvOn(t, onMemory, opts...)
}

// newEnvOn is newEnv on the backend named backend.
func newEnvOn(t *testing.T, backend string, opts ...server.Option) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("the server's tests run graphs on a worker and take seconds (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		m   *runs.Manager
		err error
	)
	switch backend {
	case onMemory:
		m, err = memory.Open(ctx)
	case onSQLite:
		m, err = sqlite.Open(ctx, ":memory:", sqlite.WithRuns(runs.WithFetch(time.Millisecond, 10*time.Millisecond)))
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	require.NoError(t, err)
	e := &env{m: m, gate: newGate()}
	reducers := []graph.Option{
		graph.WithReducer(func(s *Chat) *[]string { return &s.Messages }, state.Append[string]()),
		graph.WithReducer(func(s *Chat) *int { return &s.Turns }, state.Sum[int]()),
	}
	compile := func(b *graph.Builder[Chat]) runs.Runnable {
		g, err := b.Compile(graph.WithCheckpointer(m.Saver()))
		require.NoError(t, err)
		return runs.Graph(g)
	}
	echo := compile(graph.New[Chat](append(reducers, graph.WithName("echo"))...).
		AddNode("a", appendNode("a")).AddNode("b", func(ctx context.Context, s Chat) (Chat, error) {
		graph.EmitCustom(ctx, "progress", map[string]int{"done": 1})
		return appendNode("b")(ctx, s)
	}).AddEdge(graph.START, "a").AddEdge("a", "b"))
	ask := compile(graph.New[Chat](append(reducers, graph.WithName("ask"))...).
		AddNode("ask", func(ctx context.Context, s Chat) (Chat, error) {
			note, err := graph.Interrupt[string](ctx, map[string]string{"question": "a note?"})
			if err != nil {
				return s, err
			}
			s.Messages = append(s.Messages, "note:"+note)
			return s, nil
		}).AddEdge(graph.START, "ask"))
	held := compile(graph.New[Chat](append(reducers, graph.WithName("hold"))...).
		AddNode("a", appendNode("a")).
		AddNode("hold", func(ctx context.Context, s Chat) (Chat, error) {
			if err := e.gate.hold(ctx, graph.ThreadID(ctx)); err != nil {
				return s, err
			}
			return appendNode("hold")(ctx, s)
		}).
		AddNode("b", appendNode("b")).
		AddEdge(graph.START, "a").AddEdge("a", "hold").AddEdge("hold", "b"))
	echoModel := scripted.Func(func(req *model.Request) (*model.Response, error) {
		last := ""
		for _, msg := range req.Messages {
			if msg.Role == model.RoleUser {
				last = msg.Text()
			}
		}
		return &model.Response{Message: model.Assistant("echo: " + last), Model: "echo-1",
			Usage: model.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}}, nil
	})
	mdl := scripted.New()
	mdl.Fallback = &echoModel
	chat, err := agent.NewReAct(mdl, agent.WithName("chat"), agent.WithCheckpointer(m.Saver()))
	require.NoError(t, err)
	boom := compile(graph.New[Chat](append(reducers, graph.WithName("boom"))...).
		AddNode("boom", func(_ context.Context, s Chat) (Chat, error) { panic("kaboom") }).AddEdge(graph.START, "boom"))
	require.NoError(t, m.Register(echo, ask, held, runs.Graph(chat), boom))
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Work(wctx) }()
	e.srv, err = server.New(m, opts...)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", e.srv)
	// The compatibility suite lets the "hold" graph's runs go on.
	mux.HandleFunc("POST /test/release", func(w http.ResponseWriter, r *http.Request) {
		e.gate.releaseWaiting(time.Now().Add(10 * time.Second))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /test/holding/{thread}", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(e.gate.holding(r.PathValue("thread")))
	})
	e.http = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.gate.release()
		e.http.Close()
		require.NoError(t, e.srv.Close())
		stop()
		require.NoError(t, <-done)
		require.NoError(t, m.Close())
	})
	return e
}

// call sends a JSON request and decodes the JSON answer into out (when not
// nil); it returns the status.
func (e *env) call(t *testing.T, method, path string, body any, out any, headers ...string) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.http.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.http.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		require.NoError(t, json.Unmarshal(b, out), "body: %s", b)
	}
	return resp.StatusCode
}

// event is a server-sent event.
type event struct {
	ID, Event string
	Data      json.RawMessage
}

// stream sends a request and reads its events until the stream ends.
func (e *env) stream(t *testing.T, method, path string, body any, headers ...string) []event {
	t.Helper()
	resp := e.open(t, method, path, body, headers...)
	defer resp.Body.Close()
	return readEvents(t, resp.Body, -1)
}

func (e *env) open(t *testing.T, method, path string, body any, headers ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.http.URL+path, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.http.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return resp
}

// readEvents reads up to n events (all when n < 0).
func readEvents(t *testing.T, r io.Reader, n int) []event {
	t.Helper()
	var out []event
	rd := sse.NewReader(r, 1<<20)
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		if ev.Type == "" {
			continue
		}
		out = append(out, event{ID: ev.ID, Event: ev.Type, Data: json.RawMessage(ev.Data)})
		if len(out) == n {
			return out
		}
	}
}

func names(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }
