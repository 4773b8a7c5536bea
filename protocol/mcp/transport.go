package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HeaderFunc adds or changes the headers of an HTTP request the toolset is
// about to send. ctx is the request's context: for a tool call or a listing
// it carries the values of the caller's context, so the function can set a
// per-user token; for the background event stream it carries the values of
// the context the session was opened with. A non-nil error stops the request
// and becomes the request's error.
type HeaderFunc func(ctx context.Context, h http.Header) error

// TransportFunc opens a custom transport for a new session, for example an
// in-memory transport to a server in the same process. The toolset calls it
// once per session.
type TransportFunc func(ctx context.Context) (sdk.Transport, error)

// maxRedirects is how many redirects one request follows, as many as an
// http.Client without a CheckRedirect of its own does.
const maxRedirects = 10

// origin is the scheme, host and port of a URL: two URLs with equal
// origins reach the same server, as far as a browser (or a token) is
// concerned.
type origin struct{ scheme, host, port string }

// originOf returns the origin of u, the port filled in for http and https.
func originOf(u *url.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	if o.port == "" {
		switch o.scheme {
		case "http":
			o.port = "80"
		case "https":
			o.port = "443"
		}
	}
	return o
}

// credentialHeaders are the headers of a request that must not follow a
// redirect to another origin; the Config's static headers are added to
// them. net/http drops some of them itself, but not for another port of
// the same host. (The MCP session ID does follow: the server that answers
// the redirected requests is the one that issued it.)
var credentialHeaders = []string{"Authorization", "Cookie", "Cookie2", "Proxy-Authorization"}

// guard decides where the toolset's HTTP requests may go: to the origin of
// the server's URL, and elsewhere only when cross-origin redirects are
// allowed; every URL must pass the URL checks (WithURLCheck).
type guard struct {
	server      *url.URL // the Config's URL
	origin      origin   // its origin
	crossOrigin bool     // WithCrossOriginRedirects
	checks      []func(*url.URL) error
}

// allow returns nil when a request may be sent to u, which from (nil for a
// request the toolset made itself) redirected to, or an error matching
// ErrURLRefused that names the URLs. same reports whether u is on the
// server's origin.
func (g *guard) allow(u, from *url.URL) (same bool, err error) {
	same = originOf(u) == g.origin
	where := showURL(u)
	if from != nil {
		where += " (redirected from " + showURL(from) + ")"
	}
	if !same && !g.crossOrigin {
		how := "a request"
		if from != nil {
			how = "a redirect"
		}
		return false, fmt.Errorf("%w: %s leads to another origin than the server's (%s): %s is not followed; "+
			"mcp.WithCrossOriginRedirects allows it, without credentials", ErrURLRefused, where, showURL(g.server), how)
	}
	for _, check := range g.checks {
		if err := check(u); err != nil {
			return same, fmt.Errorf("%w: %s: %w", ErrURLRefused, where, err)
		}
	}
	return same, nil
}

// checkRedirect is the client's CheckRedirect: it follows at most
// maxRedirects redirects, each to a URL the guard allows, and strips the
// credentials from a request that leaves the server's origin. next is the caller's own CheckRedirect, if any, consulted after.
func (g *guard) checkRedirect(static map[string]string, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[len(via)-1].URL
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: %s (redirected from %s): stopped after %d redirects", ErrURLRefused, showURL(req.URL), showURL(from), maxRedirects)
		}
		same, err := g.allow(req.URL, from)
		if err != nil {
			return err
		}
		if !same {
			for _, k := range credentialHeaders {
				req.Header.Del(k)
			}
			for k := range static {
				req.Header.Del(k)
			}
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
}

// maxShownURL bounds how much of a URL an error shows.
const maxShownURL = 200

// showURL returns u for an error message: without user information, query
// or fragment, which may carry secrets, and cut to maxShownURL bytes.
func showURL(u *url.URL) string {
	if u == nil {
		return `""`
	}
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	s := v.String()
	if u.RawQuery != "" {
		s += "?…"
	}
	return quoteN(s, maxShownURL)
}

// headerTransport is the http.RoundTripper that adds the static headers and
// runs the header function, for requests to the server's origin only; a
// request to any other origin gets neither, and one the guard does not
// allow is not sent.
type headerTransport struct {
	base   http.RoundTripper
	guard  *guard
	static map[string]string
	fn     HeaderFunc
}

// RoundTrip checks where req goes, sets the headers on a copy of it when it
// goes to the server's origin, and sends it.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	closeBody := func() {
		if req.Body != nil {
			req.Body.Close()
		}
	}
	same, err := t.guard.allow(req.URL, nil)
	if err != nil {
		closeBody()
		return nil, err
	}
	if !same || (len(t.static) == 0 && t.fn == nil) {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	for _, k := range slices.Sorted(maps.Keys(t.static)) {
		r.Header.Set(k, t.static[k])
	}
	if t.fn != nil {
		if err := t.fn(r.Context(), r.Header); err != nil {
			closeBody()
			return nil, fmt.Errorf("%w: %w", ErrHeaderRefused, err)
		}
	}
	return t.base.RoundTrip(r)
}

// newHTTPClient returns the client the toolset's HTTP transports use, and
// the transport it owns (to close its idle connections), if any. cfg.URL
// has been validated.
func newHTTPClient(cfg Config, o *options) (*http.Client, *http.Transport, error) {
	server, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, nil, err
	}
	var owned *http.Transport
	base := http.RoundTripper(nil)
	client := &http.Client{}
	if o.httpClient != nil {
		*client = *o.httpClient
		base = o.httpClient.Transport
	}
	if base == nil {
		owned = http.DefaultTransport.(*http.Transport).Clone()
		base = owned
	}
	g := &guard{server: server, origin: originOf(server), crossOrigin: o.crossOrigin, checks: slices.Clone(o.urlChecks)}
	static := maps.Clone(cfg.Headers)
	client.Transport = &headerTransport{base: base, guard: g, static: static, fn: o.headerFunc}
	client.CheckRedirect = g.checkRedirect(static, client.CheckRedirect)
	return client, owned, nil
}

// tail keeps the last bytes written to it: the end of a stdio server's
// standard error, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// Write keeps the last t.max bytes of what was written.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// process is the child of a stdio session.
type process struct {
	cmd    *exec.Cmd
	stderr *tail
}

// pid returns the child's process ID, or 0 before it started.
func (p *process) pid() int {
	if p == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// newTransport builds the transport for one session of cfg. For stdio it
// also returns the process it will start.
func newTransport(cfg Config, o *options, client *http.Client) (sdk.Transport, *process, error) {
	switch cfg.transport() {
	case TransportStdio:
		path, err := exec.LookPath(cfg.Command)
		if err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(path, cfg.Args...)
		cmd.Dir = cfg.Dir
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
			cmd.Env = append(cmd.Env, k+"="+cfg.Env[k])
		}
		p := &process{cmd: cmd, stderr: &tail{max: 4 << 10}}
		var stderr io.Writer = p.stderr
		if o.stderr != nil {
			stderr = io.MultiWriter(p.stderr, lenientWriter{o.stderr})
		}
		cmd.Stderr = stderr
		// Output copying must not outlive the process for long when a
		// grandchild keeps the pipe open.
		cmd.WaitDelay = cfg.terminateWait()
		isolate(cmd)
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: cfg.terminateWait()}, p, nil
	case TransportStreamableHTTP:
		return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client, OAuthHandler: o.oauthHandler}, nil, nil
	case TransportSSE:
		return &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}, nil, nil
	}
	return nil, nil, errors.New("no transport")
}

// lenientWriter ignores its writer's errors: a WithStderr writer that fails
// must not stop the copy of the server's standard error, which would close
// the pipe and kill the server at its next write.
type lenientWriter struct{ w io.Writer }

func (l lenientWriter) Write(p []byte) (int, error) {
	_, _ = l.w.Write(p)
	return len(p), nil
}
