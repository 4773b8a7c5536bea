package docker

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultHost is the daemon's address unless WithHost or the environment
// variable DOCKER_HOST says otherwise.
const DefaultHost = "unix:///var/run/docker.sock"

// The Engine API versions the client speaks. It speaks the daemon's own
// version (the Api-Version header of GET /_ping), lowered to maxAPIVersion
// when the daemon is newer; a daemon older than minAPIVersion is refused.
// Every request and field the package uses exists, unchanged, from 1.25
// (NanoCpus, Mounts, Init and AutoRemove came with it) to 1.52. Docker 29
// refuses versions below 1.44, which is why the client does not simply pin
// an old version.
const (
	minAPIVersion = "1.25"
	maxAPIVersion = "1.52"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// APIError is the error of a request the daemon answered with a status of
// 400 or more. Its message is the daemon's (the "message" of the JSON
// body), so it says what was wrong: "No such image: alpine:3.99",
// "container ... is not running".
type APIError struct {
	// Host is the daemon's address, as given (see WithHost).
	Host string
	// Method and Path are the request's, without the version prefix.
	Method, Path string
	// StatusCode is the response's status code.
	StatusCode int
	// Message is the daemon's message, or the body's start when the body
	// is not the usual JSON.
	Message string
}

// Error returns the error's message.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("docker: %s %s at %s: %d: %s", e.Method, e.Path, e.Host, e.StatusCode, msg)
}

// client speaks the Engine API to one daemon with net/http.
type client struct {
	host    string // the address as given, for messages
	base    string // scheme and authority of the URLs: "http://docker"
	version string // the negotiated API version, "1.47"
	tr      *http.Transport
	hc      *http.Client
}

// newClient returns a client of the daemon at host: unix:///path,
// tcp://host:port (in TLS when tlsCfg is not nil) or
// ssh://[user@]host[:port]. It does not connect.
func newClient(host string, tlsCfg *tls.Config) (*client, error) {
	// A unix address is the socket's path, verbatim, after "unix://", as
	// the docker command reads it: a URL parser would take the first
	// component of a relative path (unix://var/run/docker.sock) for a host
	// and drop it, and would decode escapes.
	if rest, ok := strings.CutPrefix(host, "unix:"); ok {
		path, ok := strings.CutPrefix(rest, "//")
		if !ok || path == "" {
			return nil, fmt.Errorf("docker: the daemon's address %q is not of the form unix:///path/to/docker.sock", host)
		}
		dialer := &net.Dialer{Timeout: 10 * time.Second}
		return newClientAt(host, "http://docker", func(ctx context.Context) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		}), nil
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("docker: the daemon's address %q: %w", host, err)
	}
	switch u.Scheme {
	case "tcp":
		if u.Host == "" || u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("docker: the daemon's address %q is not of the form tcp://host:port", host)
		}
		addr := u.Host
		if u.Port() == "" {
			port := "2375"
			if tlsCfg != nil {
				port = "2376"
			}
			addr = net.JoinHostPort(u.Hostname(), port)
		}
		dialer := &net.Dialer{Timeout: 10 * time.Second}
		if tlsCfg == nil {
			return newClientAt(host, "http://"+addr, func(ctx context.Context) (net.Conn, error) {
				return dialer.DialContext(ctx, "tcp", addr)
			}), nil
		}
		cfg := tlsCfg.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		td := &tls.Dialer{NetDialer: dialer, Config: cfg}
		return newClientAt(host, "https://"+addr, func(ctx context.Context) (net.Conn, error) {
			return td.DialContext(ctx, "tcp", addr)
		}), nil
	case "ssh":
		args, err := sshTarget(host, u)
		if err != nil {
			return nil, err
		}
		return newClientAt(host, "http://docker", func(ctx context.Context) (net.Conn, error) {
			return sshDial(ctx, args)
		}), nil
	case "npipe":
		return nil, fmt.Errorf("docker: the daemon's address %q: named pipes are the transport of Docker on Windows, which this package does not support", host)
	default:
		return nil, fmt.Errorf("docker: the daemon's address %q: only unix://, tcp:// and ssh:// are supported", host)
	}
}

// newClientAt returns a client that dials with dial for every request,
// whose URLs start with base.
func newClientAt(host, base string, dial func(context.Context) (net.Conn, error)) *client {
	tr := &http.Transport{
		// The address is fixed: the URL's host names no one. TLS, when
		// spoken, is the dialer's: the transport sees a connection ready
		// for HTTP.
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx)
		},
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx)
		},
		Proxy:               nil, // never through a proxy, whatever the environment says
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &client{host: host, base: base, tr: tr, hc: &http.Client{Transport: tr}}
}

// close drops the connections kept for reuse.
func (c *client) close() { c.tr.CloseIdleConnections() }

// daemonErr wraps the failure err of a request that did not get an answer.
func (c *client) daemonErr(err error) error {
	return fmt.Errorf("docker: the daemon at %s: %w", c.host, err)
}

// negotiate asks the daemon for its API version (GET /_ping, the only
// request without a version prefix) and settles on the one to speak.
func (c *client) negotiate(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/_ping", nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("docker: no Docker daemon answers at %s (start one, or name another with WithHost or DOCKER_HOST): %w", c.host, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("docker: the daemon at %s answered GET /_ping with %s", c.host, resp.Status)
	}
	v := strings.TrimSpace(resp.Header.Get("Api-Version"))
	if v == "" {
		return fmt.Errorf("docker: the daemon at %s gave no Api-Version header in its answer to GET /_ping; it is not a Docker Engine of API %s or later", c.host, minAPIVersion)
	}
	if _, _, ok := parseVersion(v); !ok {
		return fmt.Errorf("docker: the daemon at %s gave the malformed API version %q", c.host, v)
	}
	if versionLess(v, minAPIVersion) {
		return fmt.Errorf("docker: the daemon at %s speaks API %s; version %s or later is needed", c.host, v, minAPIVersion)
	}
	c.version = v
	if versionLess(maxAPIVersion, v) {
		c.version = maxAPIVersion
	}
	return nil
}

// parseVersion parses an API version, "1.47".
func parseVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || x < 0 || y < 0 {
		return 0, 0, false
	}
	return x, y, true
}

// versionLess reports whether API version a is older than b; both parse.
func versionLess(a, b string) bool {
	ax, ay, _ := parseVersion(a)
	bx, by, _ := parseVersion(b)
	return ax < bx || ax == bx && ay < by
}

// do sends a request to path (which gets the version prefix) with query q
// and in, when not nil, as its JSON body. A status of 400 or more is an
// *APIError; a request that got no answer is an error naming the host. The
// caller closes the body of the response returned.
func (c *client) do(ctx context.Context, method, path string, q url.Values, in any) (*http.Response, error) {
	u := c.base + "/v" + c.version + (&url.URL{Path: path}).EscapedPath()
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, ctxErr
		}
		return nil, c.daemonErr(err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := &APIError{Host: c.host, Method: method, Path: path, StatusCode: resp.StatusCode}
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &m) == nil && m.Message != "" {
			e.Message = m.Message
		} else {
			e.Message = strings.TrimSpace(string(bytes.ToValidUTF8(b[:min(len(b), 300)], []byte("?"))))
		}
		return nil, e
	}
	return resp, nil
}

// call sends a request and decodes the JSON answer into out, unless out is
// nil.
func (c *client) call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	resp, err := c.do(ctx, method, path, q, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("docker: the answer of the daemon at %s to %s %s: %w", c.host, method, path, err)
	}
	return nil
}

// isStatus reports whether err is an *APIError with one of the codes.
func isStatus(err error, codes ...int) bool {
	var e *APIError
	if !errors.As(err, &e) {
		return false
	}
	for _, c := range codes {
		if e.StatusCode == c {
			return true
		}
	}
	return false
}

// imageInfo is what the package reads of GET /images/{name}/json.
type imageInfo struct {
	ID     string `json:"Id"`
	Config struct {
		WorkingDir string `json:"WorkingDir"`
	} `json:"Config"`
}

// inspectImage returns the image's description; an image the daemon does
// not have is a 404 *APIError.
func (c *client) inspectImage(ctx context.Context, image string) (imageInfo, error) {
	var info imageInfo
	err := c.call(ctx, http.MethodGet, "/images/"+image+"/json", nil, nil, &info)
	return info, err
}

// pullImage pulls image (POST /images/create). The daemon answers 200 at
// once and reports progress, and failure, as a stream of JSON objects; a
// failure is an object with an "error" member.
func (c *client) pullImage(ctx context.Context, image string) error {
	q := url.Values{"fromImage": {image}}
	if !hasTagOrDigest(image) {
		// Without a tag the daemon would pull every tag of the repository.
		q.Set("tag", "latest")
	}
	resp, err := c.do(ctx, http.MethodPost, "/images/create", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			return c.daemonErr(fmt.Errorf("pulling %s: %w", image, err))
		}
		if msg := cmpOr(m.ErrorDetail.Message, m.Error); msg != "" {
			return fmt.Errorf("docker: the daemon at %s could not pull %s: %s", c.host, image, msg)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// hasTagOrDigest reports whether an image reference names a tag
// (name:tag) or a digest (name@sha256:...). A colon before the last slash
// belongs to a registry's port (localhost:5000/app).
func hasTagOrDigest(ref string) bool {
	if strings.Contains(ref, "@") {
		return true
	}
	return strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":")
}

// containerConfig is the body of POST /containers/create: the container's
// configuration with its host configuration inside.
type containerConfig struct {
	Image        string            `json:"Image"`
	Entrypoint   []string          `json:"Entrypoint"`
	Cmd          []string          `json:"Cmd"`
	WorkingDir   string            `json:"WorkingDir,omitempty"`
	Env          []string          `json:"Env,omitempty"`
	User         string            `json:"User,omitempty"`
	Labels       map[string]string `json:"Labels,omitempty"`
	Tty          bool              `json:"Tty"`
	OpenStdin    bool              `json:"OpenStdin"`
	AttachStdin  bool              `json:"AttachStdin"`
	AttachStdout bool              `json:"AttachStdout"`
	AttachStderr bool              `json:"AttachStderr"`
	HostConfig   hostConfig        `json:"HostConfig"`
}

// hostConfig is the part of a container's configuration that the host
// enforces: limits, network, mounts, privileges.
type hostConfig struct {
	Memory         int64             `json:"Memory,omitempty"`
	MemorySwap     int64             `json:"MemorySwap,omitempty"`
	NanoCPUs       int64             `json:"NanoCpus,omitempty"`
	PidsLimit      *int64            `json:"PidsLimit,omitempty"`
	NetworkMode    string            `json:"NetworkMode"`
	ReadonlyRootfs bool              `json:"ReadonlyRootfs"`
	Mounts         []mount           `json:"Mounts,omitempty"`
	Tmpfs          map[string]string `json:"Tmpfs,omitempty"`
	CapDrop        []string          `json:"CapDrop"`
	SecurityOpt    []string          `json:"SecurityOpt"`
	Init           bool              `json:"Init"`
	AutoRemove     bool              `json:"AutoRemove"`
}

// mount is a bind mount, in HostConfig.Mounts.
type mount struct {
	Type     string `json:"Type"`
	Source   string `json:"Source"`
	Target   string `json:"Target"`
	ReadOnly bool   `json:"ReadOnly"`
}

// createContainer creates a container named name and returns its ID and
// the daemon's warnings.
func (c *client) createContainer(ctx context.Context, name string, cfg containerConfig) (string, []string, error) {
	var out struct {
		ID       string   `json:"Id"`
		Warnings []string `json:"Warnings"`
	}
	if err := c.call(ctx, http.MethodPost, "/containers/create", url.Values{"name": {name}}, cfg, &out); err != nil {
		return "", nil, err
	}
	if out.ID == "" {
		return "", nil, fmt.Errorf("docker: the daemon at %s created a container without an ID", c.host)
	}
	return out.ID, out.Warnings, nil
}

// startContainer starts a created container; 304 (already started) is no
// error.
func (c *client) startContainer(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// removeContainer kills and removes a container with its anonymous
// volumes. A container that is gone already (404), or whose removal is
// under way (409, as AutoRemove does), is no error.
func (c *client) removeContainer(ctx context.Context, id string) error {
	err := c.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"true"}, "v": {"true"}}, nil, nil)
	if isStatus(err, http.StatusNotFound, http.StatusConflict) {
		return nil
	}
	return err
}

// execConfig is the body of POST /containers/{id}/exec.
type execConfig struct {
	AttachStdin  bool     `json:"AttachStdin"`
	AttachStdout bool     `json:"AttachStdout"`
	AttachStderr bool     `json:"AttachStderr"`
	Tty          bool     `json:"Tty"`
	Cmd          []string `json:"Cmd"`
	Env          []string `json:"Env,omitempty"`
}

// createExec sets up cmd to run in the container, with env added to the
// container's environment, and returns the exec's ID. The command's
// standard input is not attached: it reads end-of-file.
func (c *client) createExec(ctx context.Context, container string, cmd, env []string) (string, error) {
	var out struct {
		ID string `json:"Id"`
	}
	cfg := execConfig{AttachStdout: true, AttachStderr: true, Cmd: cmd, Env: env}
	if err := c.call(ctx, http.MethodPost, "/containers/"+container+"/exec", nil, cfg, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("docker: the daemon at %s created an exec without an ID", c.host)
	}
	return out.ID, nil
}

// startExec starts an exec and returns the response whose body is its
// output, multiplexed (see demux). The daemon takes the connection over
// and writes a response without a length, so the body ends when the
// command's output does and the daemon closes the connection; ending ctx
// closes it too. The caller closes the body.
func (c *client) startExec(ctx context.Context, id string) (*http.Response, error) {
	return c.do(ctx, http.MethodPost, "/exec/"+id+"/start", nil, struct {
		Detach bool `json:"Detach"`
		Tty    bool `json:"Tty"`
	}{})
}

// execState is what the package reads of GET /exec/{id}/json.
type execState struct {
	Running  bool `json:"Running"`
	ExitCode *int `json:"ExitCode"`
}

// inspectExec returns an exec's state.
func (c *client) inspectExec(ctx context.Context, id string) (execState, error) {
	var st execState
	err := c.call(ctx, http.MethodGet, "/exec/"+id+"/json", nil, nil, &st)
	return st, err
}
