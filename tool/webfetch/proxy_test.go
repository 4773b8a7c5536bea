package webfetch_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/proxytest"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/tool/webfetch"
)

// publicHost stands for a web site on a public address: the test proxy
// answers for it, so that nothing leaves the machine. An IP address, so
// that the tool's check resolves nothing.
const publicHost = "93.184.215.14"

// forwardProxy is a test HTTP proxy on 127.0.0.1 (see proxytest). It
// answers requests for the pages in its routes (keyed by host and path)
// itself, and forwards other absolute-form requests for 127.0.0.1 (and no
// others, so that nothing leaves the machine).
type forwardProxy struct {
	*proxytest.Proxy
	routes map[string]http.HandlerFunc
	out    *http.Transport
}

func newProxy(t *testing.T, routes map[string]http.HandlerFunc) *forwardProxy {
	t.Helper()
	p := &forwardProxy{routes: routes, out: &http.Transport{}}
	p.Proxy = proxytest.New(t, http.HandlerFunc(p.serve))
	t.Cleanup(p.out.CloseIdleConnections)
	return p
}

func (p *forwardProxy) serve(w http.ResponseWriter, r *http.Request) {
	if h, ok := p.routes[r.URL.Host+r.URL.Path]; ok {
		h(w, r)
		return
	}
	if r.URL.Hostname() != "127.0.0.1" {
		http.Error(w, "the test proxy forwards only to 127.0.0.1", http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out.Header = r.Header.Clone()
	out.Header.Set("Via", "1.1 test-proxy")
	res, err := p.out.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

func TestFetchGoesThroughTheProxyOnlyWithWithProxy(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/page": serve("text/plain", "from the site")})
	p := newProxy(t, map[string]http.HandlerFunc{publicHost + "/page": serve("text/plain", "a public page")})

	// The proxy is on 127.0.0.1: its address is trusted, the page's is
	// checked and public.
	ft := newTool(t, webfetch.WithProxy(http.ProxyURL(p.URL)), webfetch.WithUserAgent("trellis-test/1.0"))
	r := fetch(t, ft, "http://"+publicHost+"/page")
	pg := page(t, r)
	assert.Equal(t, "a public page", pg.Text)
	assert.Equal(t, "http://"+publicHost+"/page", pg.URL)
	assert.Equal(t, []string{"GET http://" + publicHost + "/page"}, p.Requests())

	// With the checks lifted, a page on 127.0.0.1 goes through the proxy
	// too, which forwards it.
	ft = newTool(t, webfetch.WithProxy(http.ProxyURL(p.URL)), webfetch.WithAllowPrivateAddresses(), webfetch.WithUserAgent("trellis-test/1.0"))
	assert.Equal(t, "from the site", page(t, fetch(t, ft, s.URL+"/page")).Text)
	assert.Equal(t, []string{"GET http://" + publicHost + "/page", "GET " + s.URL + "/page"}, p.Requests())
	require.Len(t, s.requests(), 1)
	assert.Equal(t, "1.1 test-proxy", s.requests()[0].Header.Get("Via"), "the site got the request from the proxy")
	assert.Equal(t, "trellis-test/1.0", s.requests()[0].Header.Get("User-Agent"))

	// Without WithProxy the tool connects directly, whatever the
	// environment says.
	t.Setenv("HTTP_PROXY", p.Server.URL)
	t.Setenv("http_proxy", p.Server.URL)
	ft = newTool(t, webfetch.WithAllowPrivateAddresses())
	assert.Equal(t, "from the site", page(t, fetch(t, ft, s.URL+"/page")).Text)
	require.Len(t, s.requests(), 2)
	assert.Empty(t, s.requests()[1].Header.Get("Via"), "the site got the request directly")
	assert.Len(t, p.Requests(), 2, "the proxy got nothing more")
}

func TestFetchThroughAProxyRefusesPrivateHosts(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": serve("text/plain", "secret")})
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	require.NoError(t, err)
	p := newProxy(t, nil)
	ft := newTool(t, webfetch.WithProxy(http.ProxyURL(p.URL)))
	const rule = ", and the tool does not fetch from private or local networks, through a proxy or not"
	tests := []struct {
		url  string
		want string
	}{
		{s.URL + "/", "its address 127.0.0.1 is a loopback address" + rule},
		{"http://localhost:" + port + "/admin", "its host localhost has the address "},
		{"http://[::1]:" + port + "/", "its address ::1 is a loopback address" + rule},
		{"http://[::ffff:127.0.0.1]/", "its host ::ffff:127.0.0.1 has the address 127.0.0.1, which is a loopback address" + rule},
		{"http://169.254.169.254/latest/meta-data/", "its address 169.254.169.254 is a link-local address (such as a cloud metadata service's)" + rule},
		{"http://10.1.2.3:8080/", "its address 10.1.2.3 is a private address" + rule},
		{"http://[fd00::1]/", "its address fd00::1 is a private address" + rule},
		{"https://127.0.0.1/", "its address 127.0.0.1 is a loopback address" + rule},
		{"https://192.168.1.1:8443/", "its address 192.168.1.1 is a private address" + rule},
		{"http://127.1/", "its host 127.1 would be read as an IP address by some software, the proxy perhaps, and cannot be checked"},
		{"http://0x7f.1/", "its host 0x7f.1 would be read as an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			r := fetch(t, ft, tt.url)
			require.True(t, r.IsError)
			assert.Contains(t, r.Text(), failed+"webfetch: refusing to fetch "+tt.url+": "+tt.want)
			assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
			assert.False(t, middleware.IsTransient(r.Err), "a refusal is not retried")
		})
	}
	assert.Empty(t, p.Requests(), "nothing reached the proxy")
	assert.Empty(t, s.requests(), "nothing reached the site")
}

func TestFetchThroughAProxyChecksEveryRedirect(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": serve("text/plain", "secret")})
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	require.NoError(t, err)
	public := "http://" + publicHost
	p := newProxy(t, map[string]http.HandlerFunc{
		publicHost + "/to-private":   redirect(s.URL + "/secret"),
		publicHost + "/to-localhost": redirect("http://localhost:" + port + "/secret"),
		publicHost + "/to-metadata":  redirect("http://169.254.169.254/latest/meta-data/iam/"),
		publicHost + "/to-public":    redirect("http://93.184.215.15/page"),
		"93.184.215.15/page":         serve("text/plain", "the other public page"),
	})
	ft := newTool(t, webfetch.WithProxy(http.ProxyURL(p.URL)))

	r := fetch(t, ft, public+"/to-public")
	assert.Equal(t, "the other public page", page(t, r).Text)
	assert.Equal(t, []string{"GET " + public + "/to-public", "GET http://93.184.215.15/page"}, p.Requests())

	tests := []struct {
		path, want string
	}{
		{"/to-private", "refusing to fetch " + s.URL + "/secret (redirected from " + public + "/to-private): its address 127.0.0.1 is a loopback address, and the tool does not fetch from private or local networks, through a proxy or not"},
		{"/to-localhost", "refusing to fetch http://localhost:" + port + "/secret (redirected from " + public + "/to-localhost): its host localhost has the address "},
		{"/to-metadata", "refusing to fetch http://169.254.169.254/latest/meta-data/iam/ (redirected from " + public + "/to-metadata): its address 169.254.169.254 is a link-local address"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			before := len(p.Requests())
			r := fetch(t, ft, public+tt.path)
			require.True(t, r.IsError)
			assert.Contains(t, r.Text(), failed+"webfetch: "+tt.want)
			assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
			assert.Equal(t, []string{"GET " + public + tt.path}, p.Requests()[before:], "only the first request reached the proxy")
		})
	}
	assert.Empty(t, s.requests(), "no redirect reached the site")
}

func TestFetchConnectsDirectlyWhenTheProxyFuncSaysSo(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/page": serve("text/plain", "from the site")})
	p := newProxy(t, map[string]http.HandlerFunc{publicHost + "/page": serve("text/plain", "a public page")})
	// Like NO_PROXY=127.0.0.1: that host directly, the rest through the
	// proxy.
	choose := func(req *http.Request) (*url.URL, error) {
		if req.URL.Hostname() == "127.0.0.1" {
			return nil, nil
		}
		return p.URL, nil
	}

	// A direct connection goes through the guard as without WithProxy:
	// the dialled address is refused.
	ft := newTool(t, webfetch.WithProxy(choose))
	r := fetch(t, ft, s.URL+"/page")
	require.True(t, r.IsError)
	assert.Equal(t, failed+"webfetch: refusing to fetch "+s.URL+"/page: its address 127.0.0.1 is a loopback address, and the tool does not connect to private or local networks", r.Text())
	assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
	assert.Equal(t, "a public page", page(t, fetch(t, ft, "http://"+publicHost+"/page")).Text)

	ft = newTool(t, webfetch.WithProxy(choose), webfetch.WithAllowPrivateAddresses())
	assert.Equal(t, "from the site", page(t, fetch(t, ft, s.URL+"/page")).Text)
	require.Len(t, s.requests(), 1)
	assert.Empty(t, s.requests()[0].Header.Get("Via"), "the site got the request directly")
	assert.Equal(t, []string{"GET http://" + publicHost + "/page"}, p.Requests(), "the proxy got only the public page")
}

func TestFetchThroughAProxyNamesWhatFailed(t *testing.T) {
	p := newProxy(t, nil)

	// The proxy function's error.
	errNoPAC := errors.New("no proxy configuration")
	ft := newTool(t, webfetch.WithProxy(func(*http.Request) (*url.URL, error) { return nil, errNoPAC }))
	r := fetch(t, ft, "http://"+publicHost+"/")
	require.True(t, r.IsError)
	assert.Equal(t, failed+"webfetch: fetching http://"+publicHost+"/: choosing a proxy: no proxy configuration", r.Text())
	assert.ErrorIs(t, r.Err, errNoPAC)
	assert.NotErrorIs(t, r.Err, webfetch.ErrRefused)

	// The proxy refuses the tunnel to an https page; its password is not
	// shown.
	withPassword := *p.URL
	withPassword.User = url.UserPassword("me", "hunter2")
	ft = newTool(t, webfetch.WithProxy(http.ProxyURL(&withPassword)))
	r = fetch(t, ft, "https://"+publicHost+"/")
	require.True(t, r.IsError)
	assert.Equal(t, failed+"webfetch: fetching https://"+publicHost+"/ through the proxy http://me:xxxxx@"+p.URL.Host+": the proxy refused to open a tunnel to "+publicHost+":443: it answered 403 Forbidden", r.Text())
	assert.NotContains(t, r.Text(), "hunter2")
	assert.False(t, middleware.IsTransient(r.Err))
	assert.Equal(t, []string{"CONNECT " + publicHost + ":443"}, p.Requests())

	p.SetConnect(http.StatusServiceUnavailable)
	r = fetch(t, newTool(t, webfetch.WithProxy(http.ProxyURL(p.URL))), "https://"+publicHost+"/")
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "it answered 503 Service Unavailable")
	assert.True(t, middleware.IsTransient(r.Err), "a proxy that is busy may be asked again")

	// Nothing listens at the proxy's address.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := &url.URL{Scheme: "http", Host: l.Addr().String()}
	require.NoError(t, l.Close())
	r = fetch(t, newTool(t, webfetch.WithProxy(http.ProxyURL(gone))), "http://"+publicHost+"/")
	require.True(t, r.IsError)
	assert.True(t, strings.HasPrefix(r.Text(), failed+"webfetch: fetching http://"+publicHost+"/ through the proxy "+gone.String()+": "), r.Text())
	assert.Contains(t, r.Text(), "connection refused")
	assert.True(t, middleware.IsTransient(r.Err), "a proxy that does not answer may be tried again")
	assert.NotErrorIs(t, r.Err, webfetch.ErrRefused)
}
