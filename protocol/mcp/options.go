package mcp

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/tool"
)

// Defaults of the toolset's options.
const (
	// DefaultReconnectAttempts is how many new sessions a request may open
	// after its session was lost (see WithReconnect).
	DefaultReconnectAttempts = 3
	// DefaultReconnectDelay is the wait before the first reconnection; it
	// doubles for each further one, up to maxReconnectDelay.
	DefaultReconnectDelay = 200 * time.Millisecond

	maxReconnectDelay = 5 * time.Second
)

// Option configures a Toolset.
type Option func(*options)

type options struct {
	include, exclude map[string]bool
	filter           func(*sdk.Tool) bool
	headerFunc       HeaderFunc
	httpClient       *http.Client
	reconnect        int
	reconnectDelay   time.Duration
	stderr           io.Writer
	transportFunc    TransportFunc
	clientName       string
	clientVersion    string
	onToolsChanged   func()
	crossOrigin      bool
	urlChecks        []func(*url.URL) error
	elicit           ElicitationHandler
	elicitSet        bool
	singleUser       bool // WithSingleUser
	logLevel         tool.LogLevel
	resourceTools    bool
	sample           SamplingHandler
	logger           *slog.Logger
	oauth            *OAuth
	oauthHandler     auth.OAuthHandler
}

func defaultOptions() options {
	return options{
		reconnect:      DefaultReconnectAttempts,
		reconnectDelay: DefaultReconnectDelay,
		clientName:     "trellis",
		clientVersion:  "v0",
	}
}

// WithInclude keeps only the server's tools with the given names. Tools left
// out never become Trellis tools. It may be combined with WithExclude and
// WithFilter; a tool must pass all of them.
func WithInclude(names ...string) Option {
	return func(o *options) {
		if o.include == nil {
			o.include = map[string]bool{}
		}
		for _, n := range names {
			o.include[n] = true
		}
	}
}

// WithExclude leaves out the server's tools with the given names.
func WithExclude(names ...string) Option {
	return func(o *options) {
		if o.exclude == nil {
			o.exclude = map[string]bool{}
		}
		for _, n := range names {
			o.exclude[n] = true
		}
	}
}

// WithFilter keeps only the server's tools for which keep returns true. keep
// sees the tool as the server listed it (name, description, schemas,
// annotations).
func WithFilter(keep func(t *sdk.Tool) bool) Option {
	return func(o *options) { o.filter = keep }
}

// WithHeaderFunc sets a function that runs on every HTTP request of the
// streamable HTTP and SSE transports, after the static Config.Headers, and
// may add headers from the request's context (a user's token, a trace ID).
func WithHeaderFunc(fn HeaderFunc) Option {
	return func(o *options) { o.headerFunc = fn }
}

// WithHTTPClient sets the HTTP client of the streamable HTTP and SSE
// transports. The toolset uses a copy of it, whose Transport is wrapped to
// add headers and whose CheckRedirect applies the toolset's redirect rules
// (see WithCrossOriginRedirects) before the client's own. Without it the
// toolset uses a transport of its own, whose idle connections Close closes.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.httpClient = c }
}

// WithCrossOriginRedirects lets the toolset follow a redirect to another
// origin (scheme, host and port) than the Config's URL, and post to an SSE
// message endpoint on another origin. By default the toolset follows
// redirects within the server's origin only, at most 10 of them, and
// refuses any other with an error matching ErrURLRefused that names both
// URLs.
//
// Whether followed or not, nothing that authenticates the caller goes to
// another origin: the Config's Headers and the header function's are added
// only to requests to the server's own origin, and a redirect away from it
// drops Authorization, Proxy-Authorization, cookies and every header named
// in Config.Headers. (The MCP session ID follows: the server that answers
// there is the one that issued it.)
func WithCrossOriginRedirects() Option {
	return func(o *options) { o.crossOrigin = true }
}

// WithURLCheck adds a check that the URL of every HTTP request the toolset
// sends must pass, each redirect's included: a non-nil error stops the
// request, which then fails with an error matching ErrURLRefused and
// wrapping check's. Checks add up: one option never removes another's.
// The broker uses it to hold every request to an ad-hoc server to its
// allow-list.
func WithURLCheck(check func(u *url.URL) error) Option {
	return func(o *options) {
		if check != nil {
			o.urlChecks = append(o.urlChecks, check)
		}
	}
}

// WithReconnect sets how many new sessions one request (a tool call or a
// listing of tools) may open after its session was lost: the server
// restarted, the stdio process died, the server forgot the session, or the
// connection was refused or reset. Each request has its own budget; the
// waits between attempts grow from the reconnect delay. Zero turns
// reconnection off: once its session is lost the toolset fails every request
// until it is closed. The default is DefaultReconnectAttempts.
//
// A call whose connection broke while the server was running it is sent
// again on the new session, so it may run twice.
func WithReconnect(attempts int) Option {
	return func(o *options) { o.reconnect = max(attempts, 0) }
}

// WithReconnectDelay sets the wait before the first reconnection of a
// request; it doubles for each further one, up to five seconds.
func WithReconnectDelay(d time.Duration) Option {
	return func(o *options) { o.reconnectDelay = max(d, 0) }
}

// WithStderr copies what a stdio server writes to its standard error to w.
// The end of it is kept either way and quoted in connection errors. Errors
// of w are ignored: a failing writer never stops the server.
func WithStderr(w io.Writer) Option {
	return func(o *options) { o.stderr = w }
}

// WithTransportFunc makes the toolset open its sessions over the transports
// fn returns instead of building them from the Config. The Config then only
// names the server (Transport, Command and URL may be empty).
func WithTransportFunc(fn TransportFunc) Option {
	return func(o *options) { o.transportFunc = fn }
}

// WithClientInfo sets the name and version the toolset gives the server in
// the handshake (default "trellis").
func WithClientInfo(name, version string) Option {
	return func(o *options) { o.clientName, o.clientVersion = name, version }
}

// WithToolsChanged sets a function called, on a goroutine of its own, each
// time the server says its tool list changed (notifications/tools/list_changed).
// The toolset already re-lists the tools on the next call of Tools; fn lets
// an application react at once (rebuild a cached tool list, log).
// Close waits for fn to return, so fn must not call Close itself (hand that
// to another goroutine).
func WithToolsChanged(fn func()) Option {
	return func(o *options) { o.onToolsChanged = fn }
}
