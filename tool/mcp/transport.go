package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
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

// headerTransport is the http.RoundTripper that adds the static headers and
// runs the header function.
type headerTransport struct {
	base   http.RoundTripper
	static map[string]string
	fn     HeaderFunc
}

// RoundTrip sets the headers on a copy of req and sends it.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.static) == 0 && t.fn == nil {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	for _, k := range slices.Sorted(maps.Keys(t.static)) {
		r.Header.Set(k, t.static[k])
	}
	if t.fn != nil {
		if err := t.fn(r.Context(), r.Header); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("%w: %w", ErrHeaderRefused, err)
		}
	}
	return t.base.RoundTrip(r)
}

// httpClient returns the client the toolset's HTTP transports use, and the
// transport it owns (to close its idle connections), if any.
func newHTTPClient(cfg Config, o *options) (*http.Client, *http.Transport) {
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
	client.Transport = &headerTransport{base: base, static: maps.Clone(cfg.Headers), fn: o.headerFunc}
	return client, owned
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
		return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client}, nil, nil
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
