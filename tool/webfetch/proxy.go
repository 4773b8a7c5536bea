package webfetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"

	"golang.org/x/net/idna"
)

// WithProxy sends the tool's requests through the proxy that proxy chooses
// for each of them, the first request and every redirect alike; without
// it the tool connects to every page directly. Pass http.ProxyFromEnvironment
// to use HTTPS_PROXY, HTTP_PROXY and NO_PROXY, or http.ProxyURL for one
// proxy. A nil URL from proxy means a direct connection for that request,
// checked as without the option; an error fails the fetch and is wrapped
// in the tool's.
//
// The proxy's address is the application's choice and is trusted: the
// tool connects to it even when it is a loopback or private address, as a
// company's proxy usually is. The page's host is still checked, unless
// WithAllowPrivateAddresses lifts the checks: before a request goes to the
// proxy, the tool resolves the host's name as a direct connection would
// and refuses the request when any of its addresses is one it does not
// connect to (an IP address in the URL is checked as it is; a name that
// some software would read as an address, such as 127.1, is refused). What
// remains out of the check's reach is that the proxy resolves the name
// again: a DNS server that answers the proxy with another address than the
// tool (DNS rebinding) can still lead the proxy to a private address. A
// host whose name the tool cannot resolve itself, as on some networks
// where only the proxy can, fails the fetch.
//
// Errors say which step failed: a refusal of the page's host is ErrRefused
// to errors.Is, a failure to connect to the proxy or a proxy's refusal to
// open a tunnel to an https page names the proxy (without its password).
// For an http page, what the proxy answers itself, such as 407 Proxy
// Authentication Required, is the page's *StatusError.
func WithProxy(proxy func(*http.Request) (*url.URL, error)) Option {
	return func(c *config) {
		if proxy == nil {
			c.problems = append(c.problems, "WithProxy: the proxy function is nil; leave the option out to connect directly")
		}
		c.proxy = proxy
	}
}

// proxyKey is the request context key of the proxy chosen for a request.
type proxyKey struct{}

// router is the tool's transport with WithProxy: it sends each request
// directly, through the guarded dialer, or through the proxy chosen for it
// once its host passed the checks.
type router struct {
	c       *config
	direct  *http.Transport // dials through the guard, no proxy
	proxied *http.Transport // dials only the proxies c.proxy chose
}

// RoundTrip sends req directly or through its proxy.
func (rt *router) RoundTrip(req *http.Request) (*http.Response, error) {
	pu, err := rt.c.proxy(req)
	if err != nil {
		closeBody(req)
		return nil, fmt.Errorf("choosing a proxy: %w", err)
	}
	if pu == nil {
		return rt.direct.RoundTrip(req)
	}
	if !rt.c.allowPrivate {
		if err := rt.c.checkTarget(req.Context(), req.URL); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	res, err := rt.proxied.RoundTrip(req.WithContext(context.WithValue(req.Context(), proxyKey{}, pu)))
	if err != nil {
		return nil, &proxyError{proxy: pu.Redacted(), err: err}
	}
	res.Request = req
	return res, nil
}

// CloseIdleConnections closes both transports' idle connections.
func (rt *router) CloseIdleConnections() {
	rt.direct.CloseIdleConnections()
	rt.proxied.CloseIdleConnections()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// chosenProxy is the proxied transport's Proxy: the proxy router chose.
// Without one it fails rather than dial the page unchecked.
func chosenProxy(req *http.Request) (*url.URL, error) {
	if pu, ok := req.Context().Value(proxyKey{}).(*url.URL); ok && pu != nil {
		return pu, nil
	}
	return nil, errors.New("webfetch: no proxy was chosen for the request")
}

// proxyError is the failure of a request sent through a proxy.
type proxyError struct {
	proxy string // the proxy's URL, without its password
	err   error
}

func (e *proxyError) Error() string { return "through the proxy " + e.proxy + ": " + e.err.Error() }
func (e *proxyError) Unwrap() error { return e.err }

// checkTarget is the check of a page's host before its request goes to a
// proxy, which dials the page itself: each address the host's name
// resolves to must be one the guard lets the tool connect to.
func (c *config) checkTarget(ctx context.Context, u *url.URL) error {
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return &refusedError{why: fmt.Sprintf("its port %q is not a port number", clipURL(port))}
	}
	check := func(a netip.Addr) *refusedError {
		if c.allowAddr != nil && c.allowAddr(netip.AddrPortFrom(a, uint16(p))) {
			return nil
		}
		if why := addressProblem(a); why != "" {
			shown := a.Unmap().WithZone("").String()
			if shown == host {
				return &refusedError{why: fmt.Sprintf("its address %s is %s, and the tool does not fetch from private or local networks, through a proxy or not", shown, why)}
			}
			return &refusedError{why: fmt.Sprintf("its host %s has the address %s, which is %s, and the tool does not fetch from private or local networks, through a proxy or not", clipURL(host), shown, why)}
		}
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if re := check(a); re != nil {
			return re
		}
		return nil
	}
	if looksLikeAddress(host) {
		return &refusedError{why: fmt.Sprintf("its host %s would be read as an IP address by some software, the proxy perhaps, and cannot be checked", clipURL(host))}
	}
	name := host
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			if name, err = idna.Lookup.ToASCII(host); err != nil {
				return &refusedError{why: fmt.Sprintf("its host %q is not a valid host name", clipURL(host))}
			}
			break
		}
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return fmt.Errorf("resolving %s to check its addresses before sending the request through the proxy: %w", clipURL(host), err)
	}
	if len(addrs) == 0 {
		return &refusedError{why: fmt.Sprintf("its host %s resolves to no address", clipURL(host))}
	}
	for _, a := range addrs {
		if re := check(a); re != nil {
			return re
		}
	}
	return nil
}
