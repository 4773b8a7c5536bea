package httpstatus

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Transient reports whether a request answered with status code may succeed
// if sent again: 408 Request Timeout, 429 Too Many Requests and the 5xx
// server errors.
func Transient(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// TunnelRefused is an http.Transport OnProxyConnectResponse hook: it fails
// a tunnel (CONNECT) that the proxy would not open, with an error that
// names the target and the proxy's answer, and is transient (a Transient
// method) for the statuses Transient names.
func TunnelRefused(_ context.Context, _ *url.URL, req *http.Request, res *http.Response) error {
	if res.StatusCode != http.StatusOK {
		return &tunnelError{target: req.Host, status: res.StatusCode, text: res.Status}
	}
	return nil
}

// tunnelError is a proxy's refusal to open a tunnel.
type tunnelError struct {
	target string // host:port
	status int
	text   string // the status line's "403 Forbidden"
}

func (e *tunnelError) Error() string {
	return fmt.Sprintf("the proxy refused to open a tunnel to %s: it answered %s", e.target, e.text)
}

// Transient reports whether the proxy may open the tunnel if asked again.
func (e *tunnelError) Transient() bool { return Transient(e.status) }

// ProxyTransport is http.DefaultTransport's settings with the proxies proxy
// chooses, and TunnelRefused for tunnels the proxy refuses.
func ProxyTransport(proxy func(*http.Request) (*url.URL, error)) *http.Transport {
	var t *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	} else {
		t = &http.Transport{
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	t.Proxy = proxy
	t.OnProxyConnectResponse = TunnelRefused
	return t
}
