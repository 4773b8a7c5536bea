package wiretest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-go/trellis/model"
)

// Call is one request the server received.
type Call struct {
	Method string
	Path   string
	Header http.Header
	Body   string
}

// ReplyFunc answers a request; attempt counts the requests from 1.
type ReplyFunc func(w http.ResponseWriter, attempt int)

// Server is an httptest server that records requests and answers them with
// a ReplyFunc. Client is an HTTP client of its own, whose idle connections
// are closed with the server.
type Server struct {
	*httptest.Server
	Client *http.Client

	mu    sync.Mutex
	calls []Call
}

// NewServer starts a Server on 127.0.0.1, closed when the test ends.
func NewServer(t testing.TB, reply ReplyFunc) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body)})
		n := len(s.calls)
		s.mu.Unlock()
		reply(w, n)
	}))
	transport := &http.Transport{}
	s.Client = &http.Client{Transport: transport}
	t.Cleanup(func() {
		s.Close()
		transport.CloseIdleConnections()
	})
	return s
}

// Received returns the requests received so far.
func (s *Server) Received() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Waits records retry waits instead of sleeping; its Sleep fits
// model.Retry.Sleep.
type Waits struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d and returns at once (with ctx's error, if any).
func (w *Waits) Sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

// All returns the waits recorded so far.
func (w *Waits) All() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// WriteJSON answers with status and a JSON body, after setting the headers
// given as name, value pairs.
func WriteJSON(w http.ResponseWriter, status int, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// JSONReply answers every request with WriteJSON.
func JSONReply(status int, body string, headers ...string) ReplyFunc {
	return func(w http.ResponseWriter, _ int) { WriteJSON(w, status, body, headers...) }
}

// body is a reply body that can be changed between requests.
type body struct {
	mu   sync.Mutex
	text string
}

// Set makes text the answer to the next requests.
func (b *body) Set(text string) {
	b.mu.Lock()
	b.text = text
	b.mu.Unlock()
}

func (b *body) get() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.text
}

// StreamBody is an event-stream body that can be changed between requests,
// for fuzz targets that replay many streams against one server. Its zero
// value is an empty body; Reply is its ReplyFunc.
type StreamBody struct{ body }

// Reply answers with the current body as text/event-stream.
func (b *StreamBody) Reply(w http.ResponseWriter, _ int) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, b.get())
}

// JSONBody is a JSON reply that can be changed between requests, for fuzz
// targets that replay many replies against one server. Its zero value is an
// empty body; Reply is its ReplyFunc.
type JSONBody struct{ body }

// Reply answers with status 200 and the current body as application/json,
// whether or not the request asked for a stream.
func (b *JSONBody) Reply(w http.ResponseWriter, _ int) {
	WriteJSON(w, http.StatusOK, b.get())
}

// CheckStreamAgrees fails t unless m's Stream, collected, and its Generate
// agree on req: the same text, tool calls, finish reason and usage, or an
// error for both. A provider whose server answers streaming requests with a
// whole JSON reply (see JSONBody) must give the same answer either way.
func CheckStreamAgrees(t testing.TB, m model.Model, req *model.Request) {
	t.Helper()
	want, werr := m.Generate(context.Background(), req)
	got, gerr := model.Collect(m.Stream(context.Background(), req))
	if werr != nil {
		if gerr == nil {
			t.Fatalf("Generate failed with %v, Stream answered %+v", werr, got)
		}
		return
	}
	if gerr != nil {
		t.Fatalf("Generate answered %+v, Stream failed with %v", want, gerr)
	}
	if a, b := want.Message.Text(), got.Message.Text(); a != b {
		t.Fatalf("text: Generate %q, Stream %q", a, b)
	}
	if !reflect.DeepEqual(want.Message.ToolCalls, got.Message.ToolCalls) {
		t.Fatalf("tool calls: Generate %+v, Stream %+v", want.Message.ToolCalls, got.Message.ToolCalls)
	}
	if want.FinishReason != got.FinishReason || want.Usage != got.Usage {
		t.Fatalf("finish and usage: Generate %q %+v, Stream %q %+v", want.FinishReason, want.Usage, got.FinishReason, got.Usage)
	}
}

// Silent answers with the headers of an event stream and first, then
// sends nothing more until the test ends (or the client leaves), as a
// server that hangs mid-stream.
func Silent(t testing.TB, first string) ReplyFunc {
	release := make(chan struct{})
	var once sync.Once
	return func(w http.ResponseWriter, _ int) {
		// Registered once the server runs, so after its Close: cleanups
		// run last first, and Close waits for this handler.
		once.Do(func() { t.Cleanup(func() { close(release) }) })
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, first)
		w.(http.Flusher).Flush()
		<-release
	}
}

// Endless answers with an event stream whose last event never ends: head,
// then "data: " and bytes until the client leaves (at most 1 GiB).
func Endless(head string) ReplyFunc {
	return func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 32<<10)
		for i := range chunk {
			chunk[i] = 'x'
		}
		if _, err := io.WriteString(w, head+"data: "); err != nil {
			return
		}
		for range (1 << 30) / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// CountingClient returns a copy of c that counts, in n, the bytes of
// reply bodies read through it: what the client took off the wire.
func CountingClient(c *http.Client, n *atomic.Int64) *http.Client {
	cp := *c
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = roundTripper(func(req *http.Request) (*http.Response, error) {
		res, err := next.RoundTrip(req)
		if err == nil && res.Body != nil {
			res.Body = &countingBody{ReadCloser: res.Body, n: n}
		}
		return res, err
	})
	return &cp
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// Within runs fn and fails t when it has not returned after d.
func Within(t testing.TB, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still waiting after %v", d)
	}
}
