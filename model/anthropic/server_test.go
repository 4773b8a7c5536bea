package anthropic_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
)

// call is one request the fake server received.
type call struct {
	Method string
	Path   string
	Header http.Header
	Body   string
}

// server is an httptest server that speaks the Chat Completions wire format
// from fixtures. reply is called with the 1-based attempt number.
type server struct {
	*httptest.Server
	client *http.Client

	mu    sync.Mutex
	calls []call
}

type replyFunc func(w http.ResponseWriter, attempt int)

func newServer(t testing.TB, reply replyFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls = append(s.calls, call{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body)})
		n := len(s.calls)
		s.mu.Unlock()
		reply(w, n)
	}))
	transport := &http.Transport{}
	s.client = &http.Client{Transport: transport}
	t.Cleanup(func() {
		s.Close()
		transport.CloseIdleConnections()
	})
	return s
}

func (s *server) received() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// waits records retry waits instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// newModel returns a model that talks to s, with fast, recorded retries.
func newModel(t testing.TB, s *server, opts ...anthropic.Option) (*anthropic.Model, *waits) {
	t.Helper()
	w := &waits{}
	base := []anthropic.Option{
		anthropic.WithBaseURL(s.URL),
		anthropic.WithAPIKey("sk-ant-test"),
		anthropic.WithHTTPClient(s.client),
		anthropic.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.sleep}),
	}
	m, err := anthropic.New("claude-sonnet-4-5", append(base, opts...)...)
	require.NoError(t, err)
	return m, w
}

func jsonReply(status int, body string, headers ...string) replyFunc {
	return func(w http.ResponseWriter, _ int) {
		writeJSON(w, status, body, headers...)
	}
}

func writeJSON(w http.ResponseWriter, status int, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// event is one server-sent event of the Messages API.
type event struct{ name, data string }

// sse writes events the way Anthropic does: "event: name\ndata: {json}\n\n".
func sse(w http.ResponseWriter, events []event) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, e := range events {
		_, _ = io.WriteString(w, "event: "+e.name+"\ndata: "+strings.TrimSpace(e.data)+"\n\n")
		if f != nil {
			f.Flush()
		}
	}
}

func sseReply(events []event) replyFunc {
	return func(w http.ResponseWriter, _ int) { sse(w, events) }
}

// sequence answers attempt n with replies[n-1], repeating the last one.
func sequence(replies ...replyFunc) replyFunc {
	return func(w http.ResponseWriter, n int) {
		replies[min(n, len(replies))-1](w, n)
	}
}
