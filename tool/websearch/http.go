package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/trellis-go/trellis/internal/httpstatus"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
)

// DefaultUserAgent is the User-Agent header of the backends' requests
// unless WithUserAgent says otherwise.
const DefaultUserAgent = "trellis-websearch/1.0 (+https://github.com/trellis-go/trellis)"

// DefaultTimeout bounds each request of a backend's default client.
const DefaultTimeout = 15 * time.Second

// maxBody is the most of a response a backend reads.
const maxBody = 4 << 20

// maxRedirects is how many redirects a backend's default client follows.
const maxRedirects = 5

// ErrInvalidBackend is what errors.Is finds in the error of NewSearXNG or
// NewBrave given settings they cannot use.
var ErrInvalidBackend = errors.New("websearch: invalid backend settings")

// BackendOption configures a backend of this package (NewSearXNG,
// NewBrave).
type BackendOption func(*backendConfig)

type backendConfig struct {
	baseURL   string
	apiKey    string
	keySet    bool
	userAgent string
	client    *http.Client
	proxy     func(*http.Request) (*url.URL, error)
	header    http.Header
	problems  []string
}

// WithBaseURL sets the service's address: a SearXNG instance's, such as
// "https://searx.example.org" or "http://localhost:8888/searxng" (required
// by NewSearXNG), or another address for Brave Search's API (a proxy, a
// test server). The search path is added to its path, and its query
// parameters are sent with every request.
func WithBaseURL(u string) BackendOption {
	return func(c *backendConfig) { c.baseURL = u }
}

// WithAPIKey sets Brave Search's subscription key, sent in the
// X-Subscription-Token header; without it NewBrave reads the environment
// variable BRAVE_SEARCH_API_KEY. SearXNG takes no key (WithHeader sends
// what an instance behind authentication needs).
func WithAPIKey(key string) BackendOption {
	return func(c *backendConfig) {
		if strings.TrimSpace(key) == "" || strings.ContainsAny(key, "\r\n\x00") {
			c.problems = append(c.problems, "WithAPIKey: the key is empty or holds a line break")
		}
		c.apiKey, c.keySet = strings.TrimSpace(key), true
	}
}

// WithUserAgent sets the User-Agent header of the requests
// (DefaultUserAgent unless set).
func WithUserAgent(ua string) BackendOption {
	return func(c *backendConfig) {
		if strings.TrimSpace(ua) == "" || !httpguts.ValidHeaderFieldValue(ua) {
			c.problems = append(c.problems, fmt.Sprintf("WithUserAgent: %q is not a usable User-Agent", ua))
		}
		c.userAgent = ua
	}
}

// WithHeader adds a header to every request, such as the Authorization a
// SearXNG instance behind a reverse proxy asks for. Calls add up.
func WithHeader(name, value string) BackendOption {
	return func(c *backendConfig) {
		if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(value) {
			c.problems = append(c.problems, fmt.Sprintf("WithHeader: %q is not a valid header name, or its value is not valid", name))
			return
		}
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Add(name, value)
	}
}

// WithHTTPClient sets the HTTP client of the requests. The default has a
// DefaultTimeout timeout, follows the environment's proxy settings as
// http.DefaultTransport does, and follows redirects only within the
// service's host, so that a key never goes elsewhere; a client given here
// follows its own redirect policy. The call's context bounds each request
// either way.
func WithHTTPClient(c *http.Client) BackendOption {
	return func(cfg *backendConfig) {
		if c == nil {
			cfg.problems = append(cfg.problems, "WithHTTPClient: the client is nil")
		}
		cfg.client = c
	}
}

// WithProxy sends the requests through the proxy that proxy chooses for
// each of them: http.ProxyURL for one proxy, http.ProxyFromEnvironment for
// HTTPS_PROXY, HTTP_PROXY and NO_PROXY; a nil URL means a direct
// connection, and an error fails the search and is wrapped in its error.
// Without it the default client follows the environment's proxy settings.
// A proxy's refusal to open a tunnel to an https address fails the search
// with an error that says so (transient for 408, 429 and 5xx). It cannot
// be combined with WithHTTPClient, whose client's transport decides on
// proxies.
func WithProxy(proxy func(*http.Request) (*url.URL, error)) BackendOption {
	return func(c *backendConfig) {
		if proxy == nil {
			c.problems = append(c.problems, "WithProxy: the proxy function is nil")
		}
		c.proxy = proxy
	}
}

// httpBackend is what the backends share: the requests to the service and
// the reading of its answers.
type httpBackend struct {
	name   string // the service's, for errors: "SearXNG"
	base   *url.URL
	client *http.Client
	header http.Header // sent with every request

	// errorBody is what a failed request's body says, cut short.
	errorBody func(body []byte) string
	// hint is what may fix a failure with status, "" for none.
	hint func(status int) string
}

// newHTTPBackend builds the backend named name from the settings of opts,
// with defaultBase as the base URL when none is given ("" when one must
// be); check adds the backend's own problems.
func newHTTPBackend(name, defaultBase string, opts []BackendOption, check func(c *backendConfig)) (*httpBackend, backendConfig, error) {
	c := backendConfig{baseURL: defaultBase, userAgent: DefaultUserAgent}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if check != nil {
		check(&c)
	}
	var base *url.URL
	switch {
	case strings.TrimSpace(c.baseURL) == "":
		c.problems = append(c.problems, "WithBaseURL: the service's address is required")
	default:
		u, err := url.Parse(strings.TrimSpace(c.baseURL))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			c.problems = append(c.problems, fmt.Sprintf("WithBaseURL: %q is not an http or https URL without user information", c.baseURL))
		} else {
			u.Fragment, u.RawFragment = "", ""
			base = u
		}
	}
	if c.proxy != nil && c.client != nil {
		c.problems = append(c.problems, "WithProxy: a client given by WithHTTPClient uses its own transport's proxy; set the proxy there, or leave WithHTTPClient out")
	}
	if len(c.problems) > 0 {
		return nil, c, fmt.Errorf("%w: %s: %s", ErrInvalidBackend, name, strings.Join(c.problems, "; "))
	}
	h := &httpBackend{name: name, base: base, client: c.client, header: http.Header{}}
	if h.client == nil {
		h.client = &http.Client{Timeout: DefaultTimeout, CheckRedirect: sameHost}
		if c.proxy != nil {
			h.client.Transport = httpstatus.ProxyTransport(c.proxy)
		}
	}
	for k, v := range c.header {
		h.header[k] = slices.Clone(v)
	}
	h.header.Set("User-Agent", c.userAgent)
	h.header.Set("Accept", "application/json")
	return h, c, nil
}

// sameHost is the default client's CheckRedirect: it follows at most
// maxRedirects redirects, each within the first request's host (http to
// https is fine), so that no key or header reaches another host.
func sameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if !strings.EqualFold(req.URL.Hostname(), via[0].URL.Hostname()) {
		return fmt.Errorf("not following a redirect to another host, %s: set WithBaseURL to the address that answers", req.URL.Host)
	}
	return nil
}

// get asks the service for path (below the base URL's) with params and
// returns the body of its 200 answer. Another status is a *StatusError.
func (h *httpBackend) get(ctx context.Context, path string, params url.Values) ([]byte, error) {
	u := h.base.JoinPath(path)
	q := u.Query() // what the base URL carries is kept
	for k, v := range params {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	for k, v := range h.header {
		req.Header[k] = slices.Clone(v)
	}
	res, err := h.client.Do(req)
	if err != nil {
		return nil, h.transportError(u, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		se := &StatusError{Backend: h.name, Status: res.StatusCode}
		if h.errorBody != nil {
			se.Body = h.errorBody(body)
		} else {
			se.Body = plainBody(body)
		}
		if ra, ok := model.RetryAfter(res.Header, time.Now()); ok && httpstatus.Transient(res.StatusCode) {
			se.RetryAfter = ra
		}
		if h.hint != nil {
			se.Hint = h.hint(res.StatusCode)
		}
		return nil, se
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the response: %w", h.name, err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("%s: the response is larger than %d bytes", h.name, maxBody)
	}
	return body, nil
}

// transportError is the error of a request to u that got no answer. Its
// message names the service and the address without its query, which
// holds the model's query and may hold a key of the base URL's; it wraps
// err for errors.Is and errors.As (and so for middleware.IsTransient).
func (h *httpBackend) transportError(u *url.URL, err error) error {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	where := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return &requestError{msg: fmt.Sprintf("%s: asking %s: %v", h.name, where.String(), cause), err: err}
}

// requestError is a request that got no answer.
type requestError struct {
	msg string
	err error
}

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return e.err }

// plainBody is the start of a failed request's body as text.
func plainBody(body []byte) string {
	return textcut.Clip(htmlText(string(body)), 200, "...")
}

// fields are the members of a JSON object, undecoded.
type fields map[string]json.RawMessage

// object reads raw as a JSON object; nil when it is not one.
func object(raw json.RawMessage) fields {
	var f fields
	if json.Unmarshal(raw, &f) != nil {
		return nil
	}
	return f
}

// array reads raw as a JSON array; nil when it is not one.
func array(raw json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return a
}

// str is the string member k, "" when it is absent or not a string.
func (f fields) str(k string) string {
	var s string
	if json.Unmarshal(f[k], &s) != nil {
		return ""
	}
	return s
}

// num is the number member k, 0 when it is absent or not a number.
func (f fields) num(k string) float64 {
	var n float64
	if json.Unmarshal(f[k], &n) != nil {
		return 0
	}
	return n
}

// boolean is the boolean member k, false when it is absent or not one.
func (f fields) boolean(k string) bool {
	var b bool
	if json.Unmarshal(f[k], &b) != nil {
		return false
	}
	return b
}

// notJSON is the error of a response that is not the JSON object a
// backend expects.
func notJSON(name, what string, body []byte, err error) error {
	if err == nil {
		err = errors.New("not an object")
	}
	return fmt.Errorf("%s: the response is not %s (%q): %w", name, what, textcut.Clip(string(body), 80, "..."), err)
}
