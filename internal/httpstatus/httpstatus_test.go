package httpstatus

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTransient(t *testing.T) {
	for _, code := range []int{408, 429, 500, 502, 503, 529} {
		assert.True(t, Transient(code), code)
	}
	for _, code := range []int{200, 301, 400, 401, 403, 404, 409, 422} {
		assert.False(t, Transient(code), code)
	}
}

func TestTunnelRefused(t *testing.T) {
	req := &http.Request{Host: "example.test:443"}
	assert.NoError(t, TunnelRefused(context.Background(), nil, req, &http.Response{StatusCode: 200, Status: "200 OK"}))

	err := TunnelRefused(context.Background(), nil, req, &http.Response{StatusCode: 403, Status: "403 Forbidden"})
	assert.EqualError(t, err, "the proxy refused to open a tunnel to example.test:443: it answered 403 Forbidden")
	var tr interface{ Transient() bool }
	require.ErrorAs(t, err, &tr)
	assert.False(t, tr.Transient())

	err = TunnelRefused(context.Background(), nil, req, &http.Response{StatusCode: 503, Status: "503 Service Unavailable"})
	require.ErrorAs(t, err, &tr)
	assert.True(t, tr.Transient())
}

func TestProxyTransport(t *testing.T) {
	u := &url.URL{Scheme: "http", Host: "proxy.test:3128"}
	tr := ProxyTransport(http.ProxyURL(u))
	got, err := tr.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: "site.test"}})
	require.NoError(t, err)
	assert.Equal(t, u, got)
	require.NotNil(t, tr.OnProxyConnectResponse)
	assert.Error(t, tr.OnProxyConnectResponse(context.Background(), u, &http.Request{Host: "site.test:443"}, &http.Response{StatusCode: 403, Status: "403 Forbidden"}))
	assert.NotSame(t, http.DefaultTransport, tr, "the default transport is left as it is")
}
