package a2a

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-go/trellis/tool"
)

// Defaults of the client and its tools.
const (
	// DefaultMaxResponseBytes is how much of an answer (a JSON body, one
	// event of a stream, or the text a tool assembles) the client reads
	// unless WithMaxResponseBytes says otherwise: 4 MiB.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultRetries is how many times a request answered with a
	// transient HTTP status is sent again unless WithRetries says
	// otherwise.
	DefaultRetries = 2
	// DefaultPollInterval is the first wait before a tool asks again
	// about a task still working, unless WithPollInterval says otherwise.
	// The wait grows by half each time, up to DefaultMaxPollInterval.
	DefaultPollInterval = 500 * time.Millisecond
	// DefaultMaxPollInterval is the longest wait between two polls.
	DefaultMaxPollInterval = 5 * time.Second
	// DefaultStreamIdleTimeout is how long the client waits for the next
	// bytes of a stream (or for its headers) unless
	// WithStreamIdleTimeout says otherwise: 5 minutes. Agents keep their
	// streams alive while they work (this package's server sends a
	// comment every 15 seconds), so a stream silent that long has a
	// server that stopped; a tool then follows the task by polling.
	DefaultStreamIdleTimeout = 5 * time.Minute
	// DefaultMaxStreamBytes is how much of one stream the client reads
	// unless WithMaxStreamBytes says otherwise: 256 MiB.
	DefaultMaxStreamBytes = 256 << 20
)

// HeaderFunc adds or changes the headers of a request the client is about
// to send. ctx is the request's context (for a tool, the call's), so the
// function can set a token for the user on whose behalf the agent is
// called. A non-nil error stops the request; its error matches
// ErrHeaderRefused.
type HeaderFunc func(ctx context.Context, h http.Header) error

// Option configures a Client, or a tool made from one (NewTool,
// Client.Tool). Options of the tool given to a client are kept as the
// defaults of the tools it makes.
type Option func(*config)

type config struct {
	httpClient   *http.Client
	headers      http.Header
	headerFunc   HeaderFunc
	maxBytes     int
	streamIdle   time.Duration
	maxStream    int
	retries      int
	retryWait    time.Duration
	maxRetryWait time.Duration
	pollFirst    time.Duration
	pollMax      time.Duration

	// Tool settings.
	name        string
	description string
	streaming   *bool
	hint        bool
	meta        *tool.Metadata
	toolOpts    []tool.Option

	problems []string
}

func newConfig(opts []Option) config {
	c := config{
		headers:      http.Header{},
		maxBytes:     DefaultMaxResponseBytes,
		streamIdle:   DefaultStreamIdleTimeout,
		maxStream:    DefaultMaxStreamBytes,
		retries:      DefaultRetries,
		retryWait:    500 * time.Millisecond,
		maxRetryWait: 30 * time.Second,
		pollFirst:    DefaultPollInterval,
		pollMax:      DefaultMaxPollInterval,
		hint:         true,
	}
	c.apply(opts)
	return c
}

func (c *config) apply(opts []Option) {
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
}

func (c *config) check() error {
	if len(c.problems) > 0 {
		return fmt.Errorf("a2a: %s", strings.Join(c.problems, "; "))
	}
	return nil
}

// WithHTTPClient sends the requests with client (a copy of
// http.DefaultClient's settings unless set). Its Timeout, if any, bounds
// every request, streams included; leave it zero and let the call's
// context bound a call.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) {
		if client == nil {
			c.problems = append(c.problems, "WithHTTPClient: the client is nil")
			return
		}
		c.httpClient = client
	}
}

// WithHeader sets a header on every request, the agent card's included,
// for example an Authorization header. Calls add up; a later call with the
// same key replaces the value.
func WithHeader(key, value string) Option {
	return func(c *config) {
		if strings.TrimSpace(key) == "" || strings.ContainsAny(key+value, "\r\n\x00") {
			c.problems = append(c.problems, fmt.Sprintf("WithHeader: %q: %q is not a usable header", key, value))
			return
		}
		c.headers.Set(key, value)
	}
}

// WithHeaderFunc sets a function that adds headers to each request from
// its context, after the static ones (WithHeader).
func WithHeaderFunc(fn HeaderFunc) Option {
	return func(c *config) { c.headerFunc = fn }
}

// WithMaxResponseBytes caps how many bytes of an answer the client reads:
// of a JSON body, of the data of one event of a stream, and of the text a
// tool assembles from a stream's artifacts (DefaultMaxResponseBytes unless
// set); n must be at least 1 KiB. A larger answer fails with
// ErrResponseTooLarge (for an event, also model.ErrStreamEventTooLarge).
func WithMaxResponseBytes(n int) Option {
	return func(c *config) {
		if n < 1<<10 {
			c.problems = append(c.problems, "WithMaxResponseBytes: n must be at least 1024")
		}
		c.maxBytes = n
	}
}

// WithStreamIdleTimeout sets how long a stream (SendStreamingMessage,
// SubscribeToTask) may bring nothing, its headers included, before the
// client gives up on it (DefaultStreamIdleTimeout unless set; 0 waits for
// ever, which leaves a silent agent holding the call until its context
// ends). Only the agent's silence counts, not the time the caller spends
// between events. The stream then fails with an error that names the
// timeout and matches model.ErrStreamIdle; a tool follows the task by
// polling, as after a dropped connection.
func WithStreamIdleTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.problems = append(c.problems, "WithStreamIdleTimeout: d must not be negative")
		}
		c.streamIdle = d
	}
}

// WithMaxStreamBytes caps how many bytes of one stream the client reads,
// all its events together (DefaultMaxStreamBytes unless set); n must be
// at least 1 KiB. A longer stream fails with ErrResponseTooLarge (and
// model.ErrStreamTooLarge).
func WithMaxStreamBytes(n int) Option {
	return func(c *config) {
		if n < 1<<10 {
			c.problems = append(c.problems, "WithMaxStreamBytes: n must be at least 1024")
		}
		c.maxStream = n
	}
}

// WithRetries sets how many times a request answered with 408, 429 or a
// 5xx status is sent again (DefaultRetries unless set; 0 for never),
// after the wait the agent asked for (Retry-After) or, without one, after
// a backoff from half a second, doubling. A wait longer than 30 seconds
// is not made: the status is returned instead. A message is sent again
// with the same messageId, so that an agent can tell a repeat.
func WithRetries(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.problems = append(c.problems, "WithRetries: n must not be negative")
		}
		c.retries = n
	}
}

// WithPollInterval sets the first wait before a tool asks again (GetTask)
// about a task that is still working (DefaultPollInterval unless set); the
// wait grows by half each time up to max (DefaultMaxPollInterval unless
// set). Both must be positive, and max at least first.
func WithPollInterval(first, max time.Duration) Option {
	return func(c *config) {
		if first <= 0 || max < first {
			c.problems = append(c.problems, "WithPollInterval: want 0 < first <= max")
		}
		c.pollFirst, c.pollMax = first, max
	}
}

// WithName names the tool (by default the agent's name from its card,
// made a valid tool name: "Currency Agent" becomes "currency_agent").
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithDescription sets the tool's description (by default the card's
// description and skills, with advice on the context_id argument).
func WithDescription(text string) Option { return func(c *config) { c.description = text } }

// WithStreaming chooses whether the tool streams (SendStreamingMessage) or
// sends and polls (SendMessage, then GetTask). By default it streams when
// the agent's card says the agent does.
func WithStreaming(on bool) Option { return func(c *config) { c.streaming = &on } }

// WithoutContextHint leaves out the line that ends each result of the tool
// with the conversation's context_id ("[context_id: ...]"). Without it the
// model cannot continue a conversation with the agent, unless it learns
// the ID elsewhere.
func WithoutContextHint() Option { return func(c *config) { c.hint = false } }

// WithMetadata replaces the tool's metadata (by default ConcurrencySafe
// and OpenWorld).
func WithMetadata(m tool.Metadata) Option { return func(c *config) { c.meta = &m } }

// WithToolOptions passes options to the underlying tool (an instruction
// for the system prompt, a permission checker, a title, ...).
func WithToolOptions(opts ...tool.Option) Option {
	return func(c *config) { c.toolOpts = append(c.toolOpts, opts...) }
}
