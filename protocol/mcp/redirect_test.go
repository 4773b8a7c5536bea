package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seenRequest is what a test server saw of one request: where it went and
// the headers that carry the caller's credentials.
type seenRequest struct {
	method, path       string
	auth, key, trace   string
	cookie, proxyAuthz string
}

// credentials reports whether the request carried any of them.
func (s seenRequest) credentials() bool {
	return s.auth != "" || s.key != "" || s.trace != "" || s.cookie != "" || s.proxyAuthz != ""
}

// recorder keeps the requests a handler received.
type recorder struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, seenRequest{
			method: r.Method, path: r.URL.Path,
			auth: r.Header.Get("Authorization"), key: r.Header.Get("X-Api-Key"), trace: r.Header.Get("X-Trace"),
			cookie: r.Header.Get("Cookie"), proxyAuthz: r.Header.Get("Proxy-Authorization"),
		})
		rec.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (rec *recorder) requests() []seenRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seenRequest(nil), rec.seen...)
}

// redirectTo answers every request with a redirect of the given status to
// target.
func redirectTo(code int, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, target, code)
	})
}

// credentialed returns a config for url with a static credential and the
// options of a header function that adds a user's token and a trace ID.
func credentialed(u string) (Config, []Option) {
	cfg := Config{Name: "a", URL: u, Headers: map[string]string{"X-Api-Key": "static-secret"}}
	return cfg, []Option{
		WithReconnect(0),
		WithHeaderFunc(func(_ context.Context, h http.Header) error {
			h.Set("Authorization", "Bearer user-token")
			h.Set("X-Trace", "t-1")
			return nil
		}),
	}
}

var redirectCodes = []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}

// A server that redirects to another origin (here: another port of the
// same host) does not get the toolset's requests served there.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	for _, code := range redirectCodes {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv, _ := newFixtureServer(t, nil)
			var b recorder
			other := serveHTTP(t, b.wrap(srv.Handler(nil))) + "/mcp"
			server := serveHTTP(t, redirectTo(code, other)) + "/mcp"

			cfg, opts := credentialed(server)
			ts, err := New(cfg, opts...)
			require.NoError(t, err)
			defer ts.Close()
			err = ts.Init(ctxT(t, 10*time.Second))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrURLRefused)
			assert.ErrorIs(t, err, ErrConnect)
			assert.ErrorContains(t, err, fmt.Sprintf("%q (redirected from %q) leads to another origin than the server's", other, server))
			assert.Empty(t, b.requests(), "the other origin was never reached")
		})
	}
}

// A server that answers the handshake itself and redirects a call
// elsewhere gets a refused result, and no request to the other origin.
func TestRedirectedCallToAnotherOriginIsRefused(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	var b recorder
	other := serveHTTP(t, b.wrap(srv.Handler(nil))) + "/mcp"
	h := srv.Handler(nil)
	server := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			http.Redirect(w, r, other, http.StatusTemporaryRedirect)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})) + "/mcp"

	cfg, opts := credentialed(server)
	ts, err := New(cfg, opts...)
	require.NoError(t, err)
	defer ts.Close()
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	r := call(ctx, find(t, tools, "add"), `{"a":1,"b":2}`)
	require.True(t, r.IsError)
	assert.Equal(t, CodeRefused, r.ErrorCode, r.Text())
	assert.ErrorIs(t, r.Err, ErrURLRefused)
	assert.Empty(t, b.requests(), "the other origin was never reached")
}

// Where cross-origin redirects are followed, the other origin gets none of
// the credentials: neither the static headers nor the header function's.
func TestCrossOriginRedirectCarriesNoCredentials(t *testing.T) {
	for _, code := range redirectCodes {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv, _ := newFixtureServer(t, nil)
			var a, b recorder
			other := serveHTTP(t, b.wrap(srv.Handler(nil))) + "/mcp"
			server := serveHTTP(t, a.wrap(redirectTo(code, other))) + "/mcp"

			cfg, opts := credentialed(server)
			ts, err := New(cfg, append(opts, WithCrossOriginRedirects())...)
			require.NoError(t, err)
			defer ts.Close()
			ctx := ctxT(t, 10*time.Second)
			err = ts.Init(ctx)
			if code != http.StatusFound {
				// 307 and 308 keep the method and body: the other server
				// serves the session.
				require.NoError(t, err)
				tools, err := ts.Tools(ctx)
				require.NoError(t, err)
				r := call(ctx, find(t, tools, "add"), `{"a":1,"b":2}`)
				require.False(t, r.IsError, r.Text())
			}
			// 302 turns the POST into a GET, which the server refuses:
			// what counts is what it received.
			require.NotEmpty(t, a.requests())
			for _, s := range a.requests() {
				assert.Equal(t, "Bearer user-token", s.auth, "the server itself gets the credentials")
				assert.Equal(t, "static-secret", s.key)
			}
			require.NotEmpty(t, b.requests(), "the redirect was followed")
			for i, s := range b.requests() {
				assert.False(t, s.credentials(), "request %d (%s) to the other origin carries credentials: %+v", i, s.method, s)
			}
		})
	}
}

// A redirect within the server's origin is followed, with the credentials.
func TestSameOriginRedirectKeepsCredentials(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	var rec recorder
	mux := http.NewServeMux()
	mux.Handle("/old", redirectTo(http.StatusPermanentRedirect, "/mcp"))
	mux.Handle("/mcp", srv.Handler(nil))
	base := serveHTTP(t, rec.wrap(mux))

	cfg, opts := credentialed(base + "/old")
	ts, err := New(cfg, opts...)
	require.NoError(t, err)
	defer ts.Close()
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	r := call(ctx, find(t, tools, "add"), `{"a":1,"b":2}`)
	require.False(t, r.IsError, r.Text())
	served := 0
	for _, s := range rec.requests() {
		assert.Equal(t, "Bearer user-token", s.auth)
		assert.Equal(t, "static-secret", s.key)
		if s.path == "/mcp" {
			served++
		}
	}
	assert.Positive(t, served)
}

var errOffLimits = errors.New("off limits")

// A URL check sees every request, each redirect's included, and stops
// those it refuses.
func TestURLCheckSeesEveryRedirect(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	var rec recorder
	mux := http.NewServeMux()
	mux.Handle("/mcp", redirectTo(http.StatusTemporaryRedirect, "/admin"))
	mux.Handle("/admin", srv.Handler(nil))
	base := serveHTTP(t, rec.wrap(mux))

	var mu sync.Mutex
	var checked []string
	ts, err := New(Config{URL: base + "/mcp"}, WithReconnect(0), WithURLCheck(func(u *url.URL) error {
		mu.Lock()
		checked = append(checked, u.Path)
		mu.Unlock()
		if u.Path != "/mcp" {
			return errOffLimits
		}
		return nil
	}), WithURLCheck(nil))
	require.NoError(t, err)
	defer ts.Close()
	err = ts.Init(ctxT(t, 10*time.Second))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrURLRefused)
	assert.ErrorIs(t, err, errOffLimits)
	assert.ErrorContains(t, err, fmt.Sprintf("%q (redirected from %q): off limits", base+"/admin", base+"/mcp"))
	mu.Lock()
	assert.Subset(t, []string{"/mcp", "/admin"}, checked)
	assert.Contains(t, checked, "/admin")
	mu.Unlock()
	for _, s := range rec.requests() {
		assert.NotEqual(t, "/admin", s.path)
	}
}

// An SSE server that names a message endpoint on another origin does not
// get the messages posted there.
func TestSSEEndpointOnAnotherOriginIsRefused(t *testing.T) {
	var b recorder
	other := serveHTTP(t, b.wrap(http.NotFoundHandler()))
	server := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?sessionid=1\n\n", other)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	cfg, opts := credentialed(server)
	cfg.Transport = TransportSSE
	ts, err := New(cfg, opts...)
	require.NoError(t, err)
	defer ts.Close()
	err = ts.Init(ctxT(t, 10*time.Second))
	require.Error(t, err)
	// The go-sdk reports the refused post as a closed connection, with its
	// message or, when the stream ends first, without.
	assert.ErrorIs(t, err, ErrConnect)
	assert.Empty(t, b.requests(), "the other origin was never reached")
}

func TestRedirectLimit(t *testing.T) {
	var rec recorder
	base := serveHTTP(t, rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, r.URL.Path+"x", http.StatusTemporaryRedirect)
	})))
	ts, err := New(Config{URL: base + "/"}, WithReconnect(0))
	require.NoError(t, err)
	defer ts.Close()
	err = ts.Init(ctxT(t, 10*time.Second))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrURLRefused)
	assert.ErrorContains(t, err, "stopped after 10 redirects")
	// The handshake tries two ways, each with a chain of 10 requests.
	seen := rec.requests()
	require.NotEmpty(t, seen)
	for _, s := range seen {
		assert.LessOrEqual(t, len(s.path), len("/")+9, "a request beyond the tenth: %s", s.path)
	}
}

func TestOriginOf(t *testing.T) {
	o := func(s string) origin {
		u, err := url.Parse(s)
		require.NoError(t, err)
		return originOf(u)
	}
	assert.Equal(t, o("http://Example.com/a"), o("http://example.com:80/b?c"))
	assert.Equal(t, o("https://example.com/"), o("HTTPS://example.com:443"))
	assert.Equal(t, o("http://[::1]:8080/"), o("http://[::1]:8080/x"))
	assert.NotEqual(t, o("http://example.com/"), o("https://example.com/"))
	assert.NotEqual(t, o("http://127.0.0.1:8080/"), o("http://127.0.0.1:8081/"))
	assert.NotEqual(t, o("http://example.com/"), o("http://sub.example.com/"))
}

func TestShowURLLeavesOutSecrets(t *testing.T) {
	u, err := url.Parse("https://user:pass@example.com/mcp?token=secret#frag")
	require.NoError(t, err)
	assert.Equal(t, `"https://example.com/mcp?…"`, showURL(u))
	long, err := url.Parse("https://example.com/" + strings.Repeat("a", 500))
	require.NoError(t, err)
	assert.Len(t, showURL(long), maxShownURL+len(`""…`))
}
