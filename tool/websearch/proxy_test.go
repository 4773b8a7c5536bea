package websearch_test

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
	"github.com/trellis-go/trellis/tool/websearch"
)

// newProxy is a test forward proxy that answers every request with body.
func newProxy(t *testing.T, body []byte) *proxytest.Proxy {
	return proxytest.New(t, proxytest.Body(body))
}

func TestBackendsGoThroughTheProxyWithWithProxy(t *testing.T) {
	p := newProxy(t, fixture(t, "searxng.json"))
	// A name nothing resolves: only the proxy can answer for it.
	b := newSearXNG(t, websearch.WithBaseURL("http://searx.test"), websearch.WithProxy(http.ProxyURL(p.URL)))
	page, err := b.Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.NoError(t, err)
	assert.NotEmpty(t, page.Results)
	got := p.Requests()
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], "GET http://searx.test/search?"), got[0])

	// A proxy that will not open a tunnel to an https address.
	br := newBrave(t, websearch.WithBaseURL("https://api.search.test"), websearch.WithAPIKey(braveKey), websearch.WithProxy(http.ProxyURL(p.URL)))
	_, err = br.Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Brave Search: ")
	assert.Contains(t, err.Error(), "the proxy refused to open a tunnel to api.search.test:443: it answered 403 Forbidden")
	assert.False(t, middleware.IsTransient(err))
	assert.Equal(t, "CONNECT api.search.test:443", p.Requests()[1])

	p.SetConnect(http.StatusServiceUnavailable)
	_, err = br.Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.Error(t, err)
	assert.True(t, middleware.IsTransient(err), "a proxy's 503 may pass: %v", err)

	// DuckDuckGo's backend, whose address the application chose, goes
	// through it too.
	ddg := newDuckDuckGo(t, websearch.WithBaseURL("http://api.duckduckgo.test"), websearch.WithProxy(http.ProxyURL(p.URL)))
	_, err = ddg.Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.NoError(t, err, "the proxy answers with SearXNG's JSON, an object the API's reader takes")
	last := p.Requests()[len(p.Requests())-1]
	assert.True(t, strings.HasPrefix(last, "GET http://api.duckduckgo.test/?"), last)

	errNoPAC := errors.New("no proxy configuration")
	b = newSearXNG(t, websearch.WithBaseURL("http://searx.test"), websearch.WithProxy(func(*http.Request) (*url.URL, error) { return nil, errNoPAC }))
	_, err = b.Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	assert.ErrorIs(t, err, errNoPAC)
}
