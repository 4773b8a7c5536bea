package proxytest

import (
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestProxy(t *testing.T) {
	p := New(t, Body([]byte("hello")))
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(p.URL)}}
	defer c.CloseIdleConnections()

	res, err := c.Get("http://site.test/page?q=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, "hello", string(body))

	// Not in absolute form: not a proxy request.
	res, err = http.Get(p.Server.URL + "/direct")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)

	// CONNECT gets the status set.
	p.SetConnect(http.StatusServiceUnavailable)
	conn, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "CONNECT site.test:443 HTTP/1.1\r\nHost: site.test:443\r\n\r\n")
	require.NoError(t, err)
	buf := make([]byte, 12)
	_, err = io.ReadFull(conn, buf)
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 503", string(buf))

	assert.Equal(t, []string{"GET http://site.test/page?q=1", "GET /direct", "CONNECT site.test:443"}, p.Requests())
}
