package broker

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

// serveHandler serves h on 127.0.0.1 until the test ends and returns its
// base URL.
func serveHandler(t testing.TB, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
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
	return "http://" + l.Addr().String()
}

// redirecting answers every request with a redirect of the given status to
// target.
func redirecting(code int, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, target, code)
	})
}

// headersSeen keeps the credential headers of every request a server got.
type headersSeen struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headersSeen) record(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, http.Header{
		"Authorization": r.Header.Values("Authorization"),
		"X-Api-Key":     r.Header.Values("X-Api-Key"),
	})
}

func (h *headersSeen) all() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.seen...)
}

var redirectCodes = []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}

// An allowed ad-hoc server that redirects to a host not on the allow-list
// does not get the call served there, even where the toolsets are let
// follow redirects to other origins.
func TestBrokerRedirectToUnlistedHostIsRefused(t *testing.T) {
	for _, cross := range []bool{false, true} {
		for _, code := range redirectCodes {
			t.Run(fmt.Sprintf("%d/cross-origin=%v", code, cross), func(t *testing.T) {
				var other headersSeen
				unlisted := serveSeeing(t, "other", other.record, adHocTools()...)
				allowed := serveHandler(t, redirecting(code, unlisted)) + "/mcp"
				opts := []Option{WithAllowedURLs(allowed)}
				want := mcp.CodeRefused // another origin: not followed
				if cross {
					opts = append(opts, WithToolsetOptions(mcp.WithCrossOriginRedirects()))
					want = CodeNotAllowed // followed only to what the list allows
				}
				b, err := New(opts...)
				require.NoError(t, err)
				defer b.Close()

				for _, args := range []struct{ tool, format string }{
					{ListToolsTool, `{"server":%q}`},
					{CallToolTool, `{"server":%q,"tool":"ping"}`},
				} {
					r := run(t, b, args.tool, fmt.Sprintf(args.format, allowed))
					require.True(t, r.IsError, r.Text())
					assert.Equal(t, want, r.ErrorCode, r.Text())
					assert.ErrorIs(t, r.Err, mcp.ErrURLRefused)
					assert.Contains(t, r.Text(), unlisted)
					if cross {
						assert.ErrorIs(t, r.Err, ErrNotAllowed)
					}
				}
				assert.Empty(t, other.all(), "the unlisted server was reached")
			})
		}
	}
}

// A redirect within the allowed server's host, to a path the allow-list
// does not cover, is refused too: every hop must match the list.
func TestBrokerRedirectToUnlistedPathIsRefused(t *testing.T) {
	srv, err := mcp.NewServer(context.Background(), tool.NewStatic("s", adHocTools()...))
	require.NoError(t, err)
	var admin headersSeen
	mux := http.NewServeMux()
	mux.Handle("/mcp/public", redirecting(http.StatusTemporaryRedirect, "/mcp/admin"))
	mux.Handle("/mcp/admin", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		admin.record(r)
		srv.Handler(nil).ServeHTTP(w, r)
	}))
	base := serveHandler(t, mux)
	b, err := New(WithAllowedURLs(base + "/mcp/public"))
	require.NoError(t, err)
	defer b.Close()

	r := run(t, b, CallToolTool, fmt.Sprintf(`{"server":%q,"tool":"ping"}`, base+"/mcp/public"))
	require.True(t, r.IsError, r.Text())
	assert.Equal(t, CodeNotAllowed, r.ErrorCode, r.Text())
	assert.ErrorIs(t, r.Err, ErrNotAllowed)
	assert.Contains(t, r.Text(), "matches no entry of the allow-list")
	assert.Empty(t, admin.all())
}

// A named server's credentials stay with it: a redirect to another origin
// is not followed, and where following is allowed, the other origin gets
// neither the target's token nor the static headers.
func TestBrokerNamedServerRedirectKeepsCredentials(t *testing.T) {
	for _, cross := range []bool{false, true} {
		t.Run(fmt.Sprintf("cross-origin=%v", cross), func(t *testing.T) {
			var other headersSeen
			elsewhere := serveSeeing(t, "other", other.record, calcTools()...)
			named := serveHandler(t, redirecting(http.StatusTemporaryRedirect, elsewhere)) + "/mcp"
			opts := []Option{
				WithServers(mcp.Config{Name: "calc", URL: named, Headers: map[string]string{"X-Api-Key": "static-secret"}}),
				WithTargetOptions(func(tg Target) []mcp.Option {
					return []mcp.Option{mcp.WithHeaderFunc(func(_ context.Context, h http.Header) error {
						h.Set("Authorization", "Bearer calc-token")
						return nil
					})}
				}),
			}
			if cross {
				opts = append(opts, WithToolsetOptions(mcp.WithCrossOriginRedirects()))
			}
			b, err := New(opts...)
			require.NoError(t, err)
			defer b.Close()

			r := run(t, b, CallToolTool, `{"server":"calc","tool":"add","arguments":{"a":1,"b":2}}`)
			if !cross {
				require.True(t, r.IsError, r.Text())
				assert.Equal(t, mcp.CodeRefused, r.ErrorCode, r.Text())
				assert.Empty(t, other.all(), "the other origin was reached")
				return
			}
			require.False(t, r.IsError, r.Text())
			require.NotEmpty(t, other.all())
			for i, h := range other.all() {
				assert.Empty(t, h.Get("Authorization"), "request %d", i)
				assert.Empty(t, h.Get("X-Api-Key"), "request %d", i)
			}
		})
	}
}
