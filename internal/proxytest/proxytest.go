package proxytest

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a test forward proxy. It records each request as "METHOD
// request-target", answers CONNECT with a status (403 Forbidden unless
// SetConnect says otherwise), refuses requests that are not in absolute
// form (400), and hands the others to its answer handler.
type Proxy struct {
	*httptest.Server
	// URL is the proxy's address, for http.ProxyURL.
	URL *url.URL

	answer  http.Handler
	mu      sync.Mutex
	connect int
	got     []string
}

// New starts a proxy that answers absolute-form requests with answer, and
// stops it when t ends.
func New(t testing.TB, answer http.Handler) *Proxy {
	t.Helper()
	p := &Proxy{answer: answer, connect: http.StatusForbidden}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	u, err := url.Parse(p.Server.URL)
	if err != nil {
		t.Fatalf("proxytest: the server's URL: %v", err)
	}
	p.URL = u
	return p
}

// Body returns a handler that answers every request with body.
func Body(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
}

// SetConnect sets the status with which the proxy answers CONNECT.
func (p *Proxy) SetConnect(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connect = status
}

// Requests returns what the proxy got so far, as "METHOD request-target".
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.got = append(p.got, r.Method+" "+r.RequestURI)
	connect := p.connect
	p.mu.Unlock()
	switch {
	case r.Method == http.MethodConnect:
		w.WriteHeader(connect)
	case !r.URL.IsAbs():
		http.Error(w, "not a proxy request", http.StatusBadRequest)
	default:
		p.answer.ServeHTTP(w, r)
	}
}
