package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-go/trellis/internal/sse"
	"github.com/trellis-go/trellis/internal/streamlimit"
)

// Event is an event of a run, as a Client decodes it. Type says which;
// the other fields are those the protocol gives that type (empty when it
// does not), and Raw is the whole event.
type Event struct {
	// Type is the event's type, for example EventTextMessageContent.
	Type EventType `json:"type"`
	// ThreadID and RunID identify the run of RUN_STARTED and RUN_FINISHED.
	ThreadID string `json:"threadId,omitempty"`
	RunID    string `json:"runId,omitempty"`
	// MessageID, Role and Name describe a message (text messages, tool
	// results, reasoning).
	MessageID string `json:"messageId,omitempty"`
	Role      string `json:"role,omitempty"`
	Name      string `json:"name,omitempty"`
	// Delta is a fragment of text or of a call's arguments.
	Delta string `json:"delta,omitempty"`
	// Patch is the JSON Patch of a STATE_DELTA (its delta member) or an
	// ACTIVITY_DELTA (its patch member).
	Patch json.RawMessage `json:"patch,omitempty"`
	// ToolCallID, ToolCallName and ParentMessageID describe a tool call.
	ToolCallID      string `json:"toolCallId,omitempty"`
	ToolCallName    string `json:"toolCallName,omitempty"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	// Content is a tool result's content: a string or content parts.
	Content json.RawMessage `json:"content,omitempty"`
	// StepName names a step.
	StepName string `json:"stepName,omitempty"`
	// SubagentRunID attributes the event to a subagent invocation.
	SubagentRunID string `json:"subagentRunId,omitempty"`
	// Messages is the conversation of a MESSAGES_SNAPSHOT.
	Messages []Message `json:"messages,omitempty"`
	// Snapshot is the state of a STATE_SNAPSHOT.
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	// Outcome is how a run ended (RUN_FINISHED); nil means success.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Message and Code describe a failure (RUN_ERROR, SUBAGENT_ERROR).
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
	// Raw is the event as it came.
	Raw json.RawMessage `json:"-"`
}

// Outcome is how a run ended: Type OutcomeSuccess (with the calls left to
// the client, if any), OutcomeInterrupt (with what the run waits for) or
// OutcomeCancelled.
type Outcome struct {
	// Type is OutcomeSuccess, OutcomeInterrupt or OutcomeCancelled.
	Type string `json:"type"`
	// PendingToolCallIDs are the calls of the client's tools the run left
	// to it.
	PendingToolCallIDs []string `json:"pendingToolCallIds,omitempty"`
	// Interrupts are what an interrupted run waits for.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// RefusedError is the error of a request the agent's server refused
// before the run started.
type RefusedError struct {
	// Status is the HTTP status.
	Status int
	// Body is the start of the server's answer.
	Body string
}

// Error says what the server answered.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("agui: the server refused the run: %d %s: %s", e.Status, http.StatusText(e.Status), e.Body)
}

// ErrTruncated is the error of a stream that ended before its run did.
var ErrTruncated = errors.New("agui: the stream ended before the run did")

// DefaultMaxEventBytes is the largest event a Client reads unless
// WithMaxEventBytes says otherwise.
const DefaultMaxEventBytes = 8 << 20

// DefaultIdleTimeout is how long a Client waits for the next bytes of a
// run's stream, or for its headers, unless WithIdleTimeout says otherwise:
// 5 minutes. Servers keep their streams alive while a run works (Handler
// sends a comment when it has been quiet for DefaultKeepAlive), so a
// stream silent that long has a server that stopped.
const DefaultIdleTimeout = 5 * time.Minute

// DefaultMaxStreamBytes is how much of one run's stream a Client reads
// unless WithMaxStreamBytes says otherwise: 256 MiB.
const DefaultMaxStreamBytes = 256 << 20

// DefaultMaxThreads is how many conversations a Client's tools remember
// unless WithMaxThreads says otherwise.
const DefaultMaxThreads = 1000

// ClientOption configures a Client.
type ClientOption func(*clientConfig)

type clientConfig struct {
	hc         *http.Client
	headers    http.Header
	maxEvent   int
	idle       time.Duration
	maxStream  int
	maxThreads int
	problems   []string
}

// WithHTTPClient sets the HTTP client. By default the client connects with
// http.DefaultTransport's settings and gives up on a server that has not
// begun its answer within DefaultHeaderTimeout (an AG-UI server answers
// with its stream's headers at once); the stream itself is bounded by
// WithIdleTimeout and WithMaxStreamBytes, not by a total time.
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *clientConfig) { c.hc = hc } }

// WithHeader adds a header to every request, for example credentials.
func WithHeader(key, value string) ClientOption {
	return func(c *clientConfig) { c.headers.Add(key, value) }
}

// WithMaxEventBytes caps the size of one event's data
// (DefaultMaxEventBytes); a larger one fails the run's stream with an
// error that names the cap and matches model.ErrStreamEventTooLarge.
func WithMaxEventBytes(n int) ClientOption {
	return func(c *clientConfig) {
		if n <= 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxEventBytes(%d): the cap must be positive", n))
		}
		c.maxEvent = n
	}
}

// WithIdleTimeout sets how long a run's stream may bring nothing, its
// headers included, before the client gives up on it (DefaultIdleTimeout;
// 0 waits for ever, which leaves a silent server holding the run until
// its context ends). Only the server's silence counts, not the time the
// caller spends between events. The stream then fails with an error that
// names the timeout and matches model.ErrStreamIdle.
func WithIdleTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) {
		if d < 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithIdleTimeout(%v): the timeout must not be negative", d))
		}
		c.idle = d
	}
}

// WithMaxStreamBytes caps the size of one run's stream, all its events
// together (DefaultMaxStreamBytes); a longer one fails with an error that
// names the cap and matches model.ErrStreamTooLarge.
func WithMaxStreamBytes(n int) ClientOption {
	return func(c *clientConfig) {
		if n <= 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxStreamBytes(%d): the cap must be positive", n))
		}
		c.maxStream = n
	}
}

// WithMaxThreads caps how many conversations the client's tools remember
// (DefaultMaxThreads); the least recently used is forgotten first.
func WithMaxThreads(n int) ClientOption {
	return func(c *clientConfig) {
		if n <= 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxThreads(%d): the cap must be positive", n))
		}
		c.maxThreads = n
	}
}

// Client runs an agent served over AG-UI (by this package's Handler, or
// any other server of the protocol). It is safe for concurrent use.
type Client struct {
	url string
	cfg clientConfig

	mu      sync.Mutex
	threads map[string]*remoteThread
	order   []string               // thread IDs, least recently used first
	busy    map[string]*threadLock // threads with calls running or waiting
}

// remoteThread is what a client's tools remember of a conversation with
// the agent: its messages, and the interrupts its last run ended with.
type remoteThread struct {
	messages   []Message
	interrupts []Interrupt
}

// DefaultHeaderTimeout is how long the default HTTP client waits for a
// server to begin its answer.
const DefaultHeaderTimeout = 30 * time.Second

func defaultHTTPClient() *http.Client {
	var t *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second}
	}
	t.ResponseHeaderTimeout = DefaultHeaderTimeout
	return &http.Client{Transport: t}
}

// NewClient returns a client of the agent at endpoint, the URL runs are
// POSTed to.
func NewClient(endpoint string, opts ...ClientOption) (*Client, error) {
	cfg := clientConfig{hc: defaultHTTPClient(), headers: http.Header{}, maxEvent: DefaultMaxEventBytes,
		idle: DefaultIdleTimeout, maxStream: DefaultMaxStreamBytes, maxThreads: DefaultMaxThreads}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		cfg.problems = append(cfg.problems, fmt.Sprintf("the endpoint %q is not an http or https URL", endpoint))
	}
	if cfg.hc == nil {
		cfg.problems = append(cfg.problems, "WithHTTPClient(nil)")
	}
	if len(cfg.problems) > 0 {
		return nil, fmt.Errorf("agui: NewClient: %s", strings.Join(cfg.problems, "; "))
	}
	return &Client{url: endpoint, cfg: cfg, threads: map[string]*remoteThread{}}, nil
}

// Run posts in and yields the run's events as they come. The sequence
// ends after the run's last event (RUN_FINISHED or RUN_ERROR), or with an
// error: a *RefusedError when the server refused the run, ErrTruncated
// when the stream ended first, or what went wrong reading it. Leaving the
// loop early closes the connection, which ends the run on servers that
// stop runs whose client is gone (as Handler does). in's protocol version,
// when empty, is this package's.
func (c *Client) Run(ctx context.Context, in *RunInput) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		body, runID, err := c.body(in)
		if err != nil {
			yield(Event{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
		if err != nil {
			yield(Event{}, fmt.Errorf("agui: %w", err))
			return
		}
		req.Header = c.cfg.headers.Clone()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		// The stream lasts as long as the run: it is bounded by the
		// server's silence and its size, not by a deadline (one event is
		// capped by readEvents, exactly).
		limits := streamlimit.Limits{Idle: c.cfg.idle, MaxTotal: int64(c.cfg.maxStream)}
		resp, err := streamlimit.Do(req, limits, c.cfg.hc.Do)
		if err != nil {
			// Without the URL, which may hold credentials in its query.
			if ue, ok := errors.AsType[*url.Error](err); ok {
				err = ue.Err
			}
			yield(Event{}, fmt.Errorf("agui: posting the run: %w", err))
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			yield(Event{}, &RefusedError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))})
			return
		}
		// A server may replay a thread's earlier runs before the one asked
		// for: the sequence ends with the requested run's end (a server
		// that leaves the runId out is taken at its word).
		other := false // a replayed run is open
		for ev, err := range readEvents(resp.Body, c.cfg.maxEvent) {
			if !yield(ev, err) || err != nil {
				return
			}
			if ev.SubagentRunID != "" {
				continue
			}
			switch ev.Type {
			case EventRunStarted:
				other = ev.RunID != "" && ev.RunID != runID
			case EventRunFinished:
				if ev.RunID == "" || ev.RunID == runID {
					return
				}
				other = false
			case EventRunError:
				if !other {
					return
				}
				other = false
			}
		}
		yield(Event{}, ErrTruncated)
	}
}

func (c *Client) body(in *RunInput) ([]byte, string, error) {
	if in == nil {
		return nil, "", errors.New("agui: Run needs an input")
	}
	cp := *in
	if cp.ThreadID == "" {
		cp.ThreadID = uuid.NewString()
	}
	if cp.RunID == "" {
		cp.RunID = uuid.NewString()
	}
	if cp.ProtocolVersion == "" {
		cp.ProtocolVersion = ProtocolVersion
	}
	if cp.Messages == nil {
		cp.Messages = []Message{}
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return nil, "", fmt.Errorf("agui: encoding the input: %w", err)
	}
	return b, cp.RunID, nil
}

// UnmarshalJSON decodes an event: delta is a string, except on a
// STATE_DELTA, whose delta is a JSON Patch (kept in Patch).
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var v struct {
		plain
		Delta json.RawMessage `json:"delta"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Event(v.plain)
	switch {
	case len(v.Delta) == 0:
	case e.Type == EventStateDelta:
		e.Patch = v.Delta
	default:
		if err := json.Unmarshal(v.Delta, &e.Delta); err != nil {
			return errors.New("delta: a string is needed")
		}
	}
	return nil
}

// readEvents decodes an SSE stream of AG-UI events: the data lines of each
// event, joined; comments and other fields are skipped. Lines end with
// LF, CRLF or CR. An event the stream ends before its blank line is
// incomplete and dropped, as SSE says. An event larger than max bytes, or
// data that is not a JSON object with a type, ends the sequence with an
// error.
func readEvents(r io.Reader, max int) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		events := sse.NewReader(r, max)
		for {
			e, err := events.Next()
			raw := e.Data
			switch {
			case errors.Is(err, io.EOF):
				return
			case errors.Is(err, streamlimit.ErrEventTooLarge):
				yield(Event{}, fmt.Errorf("agui: an event larger than %d bytes: %w", max, err))
				return
			case err != nil:
				yield(Event{}, fmt.Errorf("agui: reading the stream: %w", err))
				return
			case len(raw) == 0:
				continue // data lines without data
			}
			var ev Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				yield(Event{}, fmt.Errorf("agui: a malformed event: %v", jsonProblem(err)))
				return
			}
			if ev.Type == "" {
				yield(Event{}, errors.New("agui: an event without a type"))
				return
			}
			ev.Raw = raw
			if !yield(ev, nil) {
				return
			}
		}
	}
}
