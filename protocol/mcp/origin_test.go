package mcp

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends an initialize request to url with the given headers and
// returns the status.
func post(t *testing.T, url string, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodPost, url, strings.NewReader(initializeBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

// The server refuses requests from web pages of origins it was not told to
// allow, and serves requests without an Origin, as programs send them.
func TestServerRefusesBrowserOriginsNotAllowed(t *testing.T) {
	srv, _ := newFixtureServer(t, nil, WithAllowedOrigins("https://app.example.com", "http://localhost:5173/"))
	base := serveHTTP(t, srv.Handler(&sdk.StreamableHTTPOptions{Stateless: true}))
	tests := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"no origin", nil, http.StatusOK},
		{"allowed origin", map[string]string{"Origin": "https://app.example.com"}, http.StatusOK},
		{"allowed origin, default port written", map[string]string{"Origin": "https://app.example.com:443"}, http.StatusOK},
		{"allowed origin with port", map[string]string{"Origin": "http://localhost:5173"}, http.StatusOK},
		{"another site", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"another scheme", map[string]string{"Origin": "http://app.example.com"}, http.StatusForbidden},
		{"another port", map[string]string{"Origin": "http://localhost:5174"}, http.StatusForbidden},
		{"the server's own address (a rebound page)", map[string]string{"Origin": base}, http.StatusForbidden},
		{"null", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"not an origin", map[string]string{"Origin": "https://app.example.com/path"}, http.StatusForbidden},
		{"cross-site without origin", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site without origin", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"typed by the user", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, post(t, base, tt.headers))
		})
	}
	// Two Origin headers: refused.
	req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodPost, base, strings.NewReader(initializeBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Add("Origin", "https://app.example.com")
	req.Header.Add("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// Without WithAllowedOrigins, every browser origin is refused, over both
// HTTP transports.
func TestServerRefusesEveryBrowserOriginByDefault(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	streamable := serveHTTP(t, srv.Handler(&sdk.StreamableHTTPOptions{Stateless: true}))
	sse := serveHTTP(t, srv.SSEHandler(nil))
	assert.Equal(t, http.StatusForbidden, post(t, streamable, map[string]string{"Origin": "https://evil.example"}))
	assert.Equal(t, http.StatusOK, post(t, streamable, nil))

	get := func(origin string) int {
		req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodGet, sse, nil)
		require.NoError(t, err)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, get("https://evil.example"))
	// A client without an Origin: TestServerSSE.
}

func TestWithAllowedOriginsRejectsWhatIsNoOrigin(t *testing.T) {
	set := tool.NewStatic("fixture", fixtureTools()...)
	for _, bad := range []string{"app.example.com", "https://app.example.com/app", "ftp://x", "null", "*", "https://u@app.example.com"} {
		_, err := NewServer(context.Background(), set, WithAllowedOrigins(bad))
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, ErrServe)
		assert.ErrorContains(t, err, "want an origin, scheme://host[:port]")
	}
}

// Authentication goes in front of the handler as http.Handler middleware,
// as docs/mcp.md shows with the go-sdk's bearer-token middleware.
func TestServerBehindAuthentication(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "good" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Expiration: time.Now().Add(time.Hour)}, nil
	}
	base := serveHTTP(t, auth.RequireBearerToken(verify, nil)(srv.Handler(nil)))
	assert.Equal(t, http.StatusUnauthorized, post(t, base, nil))
	assert.Equal(t, http.StatusUnauthorized, post(t, base, map[string]string{"Authorization": "Bearer bad"}))

	ts, err := New(Config{URL: base, Headers: map[string]string{"Authorization": "Bearer good"}})
	require.NoError(t, err)
	defer ts.Close()
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	r := call(ctx, find(t, tools, "add"), `{"a":1,"b":2}`)
	require.False(t, r.IsError, r.Text())
}
