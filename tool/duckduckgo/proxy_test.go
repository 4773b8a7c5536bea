package duckduckgo_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/proxytest"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/duckduckgo"
)

// newProxy is a test forward proxy that answers every request with body.
func newProxy(t *testing.T, body []byte) *proxytest.Proxy {
	return proxytest.New(t, proxytest.Body(body))
}

func TestSearchGoesThroughTheProxyWithWithProxy(t *testing.T) {
	p := newProxy(t, fixture(t, "golang.json"))
	// A name nothing resolves: only the proxy can answer for it.
	st, err := duckduckgo.NewTool(duckduckgo.WithBaseURL("http://api.duckduckgo.test"), duckduckgo.WithProxy(http.ProxyURL(p.URL)))
	require.NoError(t, err)
	r := search(t, context.Background(), st, "golang")
	require.False(t, r.IsError, r.Text())
	assert.True(t, strings.HasPrefix(r.Text(), "# Go (programming language)\n"), r.Text())
	got := p.Requests()
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], "GET http://api.duckduckgo.test/?"), got[0])
	assert.Contains(t, got[0], "q=golang")

	// A nil URL from the function: a direct connection.
	a := newAPI(t, http.StatusOK, fixture(t, "golang.json"))
	direct := func(*http.Request) (*url.URL, error) { return nil, nil }
	st, err = duckduckgo.NewTool(duckduckgo.WithBaseURL(a.URL), duckduckgo.WithProxy(direct))
	require.NoError(t, err)
	r = search(t, context.Background(), st, "golang")
	require.False(t, r.IsError, r.Text())
	assert.Len(t, a.requests(), 1, "the API got the request directly")
	assert.Len(t, p.Requests(), 1, "the proxy got nothing more")

	// Without WithProxy, nothing goes to this proxy either.
	st, err = duckduckgo.NewTool(duckduckgo.WithBaseURL(a.URL))
	require.NoError(t, err)
	require.False(t, search(t, context.Background(), st, "golang").IsError)
	assert.Len(t, a.requests(), 2)
	assert.Len(t, p.Requests(), 1)
}

func TestSearchThroughAProxyNamesWhatFailed(t *testing.T) {
	p := newProxy(t, nil)
	st, err := duckduckgo.NewTool(duckduckgo.WithBaseURL("https://api.duckduckgo.test"), duckduckgo.WithProxy(http.ProxyURL(p.URL)))
	require.NoError(t, err)
	r := search(t, context.Background(), st, "go")
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "the proxy refused to open a tunnel to api.duckduckgo.test:443: it answered 403 Forbidden")
	assert.False(t, middleware.IsTransient(r.Err))
	assert.Equal(t, []string{"CONNECT api.duckduckgo.test:443"}, p.Requests())

	p.SetConnect(http.StatusBadGateway)
	r = search(t, context.Background(), st, "go")
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "it answered 502 Bad Gateway")
	assert.True(t, middleware.IsTransient(r.Err), "a proxy's 502 may pass")

	errNoPAC := errors.New("no proxy configuration")
	st, err = duckduckgo.NewTool(duckduckgo.WithBaseURL("http://api.duckduckgo.test"), duckduckgo.WithProxy(func(*http.Request) (*url.URL, error) { return nil, errNoPAC }))
	require.NoError(t, err)
	r = search(t, context.Background(), st, "go")
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "no proxy configuration")
	assert.ErrorIs(t, r.Err, errNoPAC)
}

func TestWithProxySettings(t *testing.T) {
	for name, tt := range map[string]struct {
		opts []duckduckgo.Option
		want string
	}{
		"nil function": {[]duckduckgo.Option{duckduckgo.WithProxy(nil)}, "WithProxy: the proxy function is nil"},
		"with a client": {[]duckduckgo.Option{duckduckgo.WithHTTPClient(http.DefaultClient), duckduckgo.WithProxy(http.ProxyFromEnvironment)},
			"WithProxy: a client given by WithHTTPClient uses its own transport's proxy"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := duckduckgo.NewTool(tt.opts...)
			require.ErrorIs(t, err, tool.ErrInvalidTool)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
