package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/internal/backoff"
	"github.com/trellis-go/trellis/internal/httpstatus"
	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/model"
)

// Client talks to one remote agent: it reads the agent's card and calls its
// JSON-RPC endpoint, in protocol 1.0 or, when the card offers nothing
// newer, 0.3. It is safe for concurrent use.
type Client struct {
	cfg     config
	cardURL *url.URL
	http    *http.Client
	ids     atomic.Int64

	mu       sync.Mutex
	card     *Card
	ep       endpoint
	fetching chan struct{} // closed when the fetch under way ends
}

// NewClient returns a client for the agent at baseURL, whose card is at
// baseURL + CardPath (or at baseURL itself when it ends in ".json"). It
// reads nothing yet: the card is fetched on first use (Card). Options that
// configure tools (WithName, ...) become the defaults of Client.Tool.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	cfg := newConfig(opts)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	u, err := cardURL(baseURL)
	if err != nil {
		return nil, err
	}
	hc := cfg.httpClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{cfg: cfg, cardURL: u, http: hc}, nil
}

// Card fetches the agent's card, the first time, and checks that the
// client can talk to the agent: the card is JSON, names the agent, and
// offers a JSON-RPC interface in protocol 1.x or 0.3. Its errors say what
// is wrong and match ErrCardNotFound, ErrInvalidCard, ErrNoJSONRPC,
// ErrUnsupportedVersion, or are a *StatusError. A card that was read is
// kept; a failure is not, so the next call tries again. The card
// returned is the client's: do not modify it.
//
// Calls made while the card is being fetched wait for that fetch (or for
// their own context's end), and try themselves if it fails.
func (c *Client) Card(ctx context.Context) (*Card, error) {
	for {
		c.mu.Lock()
		if c.card != nil {
			card := c.card
			c.mu.Unlock()
			return card, nil
		}
		if wait := c.fetching; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("a2a: waiting for the agent card %s: %w", c.cardURL, ctx.Err())
			}
		}
		done := make(chan struct{})
		c.fetching = done
		c.mu.Unlock()

		// The lock is not held over the request, so that other calls
		// honour their own contexts while it runs.
		card, ep, err := c.fetchCard(ctx)
		c.mu.Lock()
		c.fetching = nil
		if err == nil {
			c.card, c.ep = card, ep
		}
		c.mu.Unlock()
		close(done)
		if err != nil {
			return nil, err
		}
		return card, nil
	}
}

// endpoint returns the endpoint chosen from the card, reading it first if
// needed.
func (c *Client) endpoint(ctx context.Context) (endpoint, error) {
	if _, err := c.Card(ctx); err != nil {
		return endpoint{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ep, nil
}

func (c *Client) fetchCard(ctx context.Context) (*Card, endpoint, error) {
	where := c.cardURL.String()
	resp, err := c.do(ctx, c.http.Do, func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
		if err == nil {
			req.Header.Set("Accept", "application/json")
		}
		return req, err
	})
	if err != nil {
		return nil, endpoint{}, fmt.Errorf("a2a: fetching the agent card %s: %w", where, err)
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, c.cfg.maxBytes)
	if err != nil {
		return nil, endpoint{}, fmt.Errorf("a2a: reading the agent card %s: %w", where, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, endpoint{}, fmt.Errorf("%w at %s (404): is the base URL the agent's?", ErrCardNotFound, where)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, endpoint{}, &StatusError{URL: where, Status: resp.StatusCode, Body: snippet(body)}
	}
	var card Card
	if err := json.Unmarshal(body, &card); err != nil {
		ct := resp.Header.Get("Content-Type")
		return nil, endpoint{}, fmt.Errorf("%w: %s is not a JSON agent card (Content-Type %q, %w): %s", ErrInvalidCard, where, ct, err, snippet(body))
	}
	if err := card.check(); err != nil {
		return nil, endpoint{}, fmt.Errorf("%w (%s)", err, where)
	}
	ep, err := card.endpoint(c.cardURL)
	if err != nil {
		return nil, endpoint{}, fmt.Errorf("%w (agent %q, card %s)", err, card.Name, where)
	}
	return &card, ep, nil
}

// SendRequest is what SendMessage and SendStreamingMessage send.
type SendRequest struct {
	// Message is the message. Its MessageID is made when empty, and its
	// Role is RoleUser when empty.
	Message Message
	// ReturnImmediately asks the agent to answer as soon as the task
	// exists, rather than when it ends or waits for input (0.3: blocking
	// false).
	ReturnImmediately bool
	// HistoryLength caps the messages of the task's history in the answer;
	// nil leaves it to the agent.
	HistoryLength *int
	// AcceptedOutputModes are the media types the client accepts.
	AcceptedOutputModes []string
	// Metadata is the request's metadata.
	Metadata map[string]any
}

type sendParams struct {
	Message       Message         `json:"message"`
	Configuration *sendConfigJSON `json:"configuration,omitempty"`
	Metadata      map[string]any  `json:"metadata,omitempty"`
}

type sendConfigJSON struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
}

// params returns the params of the request in the endpoint's generation.
func (r *SendRequest) params(ep endpoint) any {
	msg := r.Message
	if msg.MessageID == "" {
		msg.MessageID = newID()
	}
	if msg.Role == "" {
		msg.Role = RoleUser
	}
	if ep.legacy {
		blocking := !r.ReturnImmediately
		return legacySendParams{
			Message: toLegacyMessage(&msg),
			Configuration: &legacySendConfigJSON{
				AcceptedOutputModes: r.AcceptedOutputModes, HistoryLength: r.HistoryLength, Blocking: &blocking,
			},
			Metadata: r.Metadata,
		}
	}
	p := sendParams{Message: msg, Metadata: r.Metadata}
	if r.ReturnImmediately || r.HistoryLength != nil || len(r.AcceptedOutputModes) > 0 {
		p.Configuration = &sendConfigJSON{AcceptedOutputModes: r.AcceptedOutputModes, HistoryLength: r.HistoryLength, ReturnImmediately: r.ReturnImmediately}
	}
	return p
}

func method(ep endpoint, v1, legacy string) string {
	if ep.legacy {
		return legacy
	}
	return v1
}

// request is one JSON-RPC request in both protocol generations.
type request struct {
	v1, legacy string                // the method's names
	params     func(ep endpoint) any // the params in ep's generation
}

// invoke sends r to the agent and returns the method it called and the
// result. An agent that answers a 1.0 method with -32601 (method not
// found) speaks only 0.3, whatever its card says: the request is sent
// again in 0.3, once, and the client speaks 0.3 to the agent from then on.
func (c *Client) invoke(ctx context.Context, r request) (string, json.RawMessage, error) {
	ep, err := c.endpoint(ctx)
	if err != nil {
		return "", nil, err
	}
	m := method(ep, r.v1, r.legacy)
	result, err := c.call(ctx, ep, m, r.params(ep))
	if old, ok := c.fallBack(ep, err); ok {
		m = r.legacy
		result, err = c.call(ctx, old, m, r.params(old))
	}
	return m, result, err
}

// invokeStream is invoke for a request answered with a stream: the
// request is sent again in 0.3 when the stream fails with -32601 before
// its first event.
func (c *Client) invokeStream(ctx context.Context, r request, yield func(Event, error) bool) {
	ep, err := c.endpoint(ctx)
	if err != nil {
		yield(Event{}, err)
		return
	}
	var (
		old      endpoint
		fallBack bool
		started  bool
	)
	c.stream(ctx, ep, method(ep, r.v1, r.legacy), r.params(ep), func(ev Event, err error) bool {
		if !started && err != nil {
			if old, fallBack = c.fallBack(ep, err); fallBack {
				return false
			}
		}
		started = true
		return yield(ev, err)
	})
	if fallBack {
		c.stream(ctx, old, r.legacy, r.params(old), yield)
	}
}

// fallBack reports whether err, the answer to a request sent to ep, says
// that the agent does not know the 1.0 methods (JSON-RPC -32601), and then
// returns ep in 0.3, which the client keeps for its next requests.
func (c *Client) fallBack(ep endpoint, err error) (endpoint, bool) {
	if ep.legacy {
		return ep, false
	}
	if rpcErr, ok := errors.AsType[*RPCError](err); !ok || rpcErr.Code != RPCMethodNotFound {
		return ep, false
	}
	ep.legacy = true
	c.mu.Lock()
	if c.ep.url == ep.url {
		c.ep.legacy = true
	}
	c.mu.Unlock()
	return ep, true
}

// SendMessage sends a message and returns the agent's answer: an Event
// holding a Task (whose state may still be working, when the agent answers
// before it is done) or a Message. A JSON-RPC error is an *RPCError.
func (c *Client) SendMessage(ctx context.Context, req SendRequest) (Event, error) {
	m, result, err := c.invoke(ctx, request{MethodSendMessage, LegacyMethodSend, req.params})
	if err != nil {
		return Event{}, err
	}
	ev, err := decodeEvent(m, result)
	if err != nil {
		return Event{}, err
	}
	if ev.Task == nil && ev.Message == nil {
		return Event{}, fmt.Errorf("%w: %s: the result is neither a task nor a message: %s", ErrInvalidResponse, m, snippet(result))
	}
	return ev, nil
}

// SendStreamingMessage sends a message and yields the events of the
// stream the agent answers with: a Task or a Message first, then status
// and artifact updates, until the task ends or waits for input. An error
// ends the sequence; breaking out of the loop closes the stream.
func (c *Client) SendStreamingMessage(ctx context.Context, req SendRequest) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		c.invokeStream(ctx, request{MethodSendStreamingMessage, LegacyMethodStream, req.params}, yield)
	}
}

// SubscribeToTask yields the events of a task that has not ended: the task
// as it is, then its updates, until it ends or waits for input.
func (c *Client) SubscribeToTask(ctx context.Context, id string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		params := func(endpoint) any { return map[string]any{"id": id} }
		c.invokeStream(ctx, request{MethodSubscribeToTask, LegacyMethodResubscribe, params}, yield)
	}
}

// GetTask returns the task with the given ID. historyLength, when not
// nil, caps the messages of its history.
func (c *Client) GetTask(ctx context.Context, id string, historyLength *int) (*Task, error) {
	params := map[string]any{"id": id}
	if historyLength != nil {
		params["historyLength"] = *historyLength
	}
	m, result, err := c.invoke(ctx, request{MethodGetTask, LegacyMethodGetTask, func(endpoint) any { return params }})
	if err != nil {
		return nil, err
	}
	return decodeTask(m, result)
}

// CancelTask asks the agent to cancel the task with the given ID and
// returns the task as the agent then reports it.
func (c *Client) CancelTask(ctx context.Context, id string) (*Task, error) {
	params := func(endpoint) any { return map[string]any{"id": id} }
	m, result, err := c.invoke(ctx, request{MethodCancelTask, LegacyMethodCancelTask, params})
	if err != nil {
		return nil, err
	}
	return decodeTask(m, result)
}

// call sends one JSON-RPC request and returns its result.
func (c *Client) call(ctx context.Context, ep endpoint, m string, params any) (json.RawMessage, error) {
	id := c.ids.Add(1)
	resp, err := c.post(ctx, ep, id, m, params, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, c.cfg.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: %w", m, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusFailure(ep.url, m, resp.StatusCode, body)
	}
	return decodeResponseTo(m, id, body)
}

// statusFailure is the error of a request answered with a status outside
// 2xx: the JSON-RPC error its body holds, if any, else a *StatusError.
func statusFailure(where, m string, status int, body []byte) error {
	if _, err := decodeResponse(m, body); err != nil {
		if rpcErr, ok := errors.AsType[*RPCError](err); ok {
			return rpcErr
		}
	}
	return &StatusError{URL: where, Status: status, Body: snippet(body)}
}

// stream sends one JSON-RPC request whose answer is a stream of events and
// yields them.
func (c *Client) stream(ctx context.Context, ep endpoint, m string, params any, yield func(Event, error) bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes the stream when the consumer stops early
	id := c.ids.Add(1)
	resp, err := c.post(ctx, ep, id, m, params, true)
	if err != nil {
		yield(Event{}, err)
		return
	}
	defer resp.Body.Close()
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode < 200 || resp.StatusCode > 299 || mediaType != "text/event-stream" {
		// An error, or an agent that answered with one JSON response.
		body, err := readLimited(resp.Body, c.cfg.maxBytes)
		switch {
		case err != nil:
			yield(Event{}, fmt.Errorf("a2a: %s: %w", m, err))
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			yield(Event{}, statusFailure(ep.url, m, resp.StatusCode, body))
		default:
			result, err := decodeResponseTo(m, id, body)
			if err != nil {
				yield(Event{}, err)
				return
			}
			yield(decodeEvent(m, result))
		}
		return
	}
	sse := newSSEReader(resp.Body, c.cfg.maxBytes)
	for {
		data, err := sse.next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			switch {
			case errors.Is(err, ErrResponseTooLarge):
				yield(Event{}, fmt.Errorf("a2a: %s: reading the stream: %w", m, err))
			case errors.Is(err, streamlimit.ErrTooLarge):
				yield(Event{}, fmt.Errorf("a2a: %s: reading the stream: %w: %w", m, ErrResponseTooLarge, err))
			case ctx.Err() == nil:
				yield(Event{}, fmt.Errorf("a2a: %s: reading the stream: %w", m, err))
			default:
				yield(Event{}, ctx.Err())
			}
			return
		}
		result, err := decodeResponseTo(m, id, data)
		if err != nil {
			yield(Event{}, err)
			return
		}
		ev, err := decodeEvent(m, result)
		if !yield(ev, err) || err != nil {
			return
		}
	}
}

// post sends one JSON-RPC request, again after a transient status within
// the retry budget, and returns the answer, whatever its status.
func (c *Client) post(ctx context.Context, ep endpoint, id int64, m string, params any, stream bool) (*http.Response, error) {
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: id, Method: m, Params: params})
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: encoding the request: %w", m, err)
	}
	send := c.http.Do
	if stream {
		// A stream may go on for as long as its task: it is bounded by
		// the agent's silence and its size, not by a deadline.
		// (One event is capped by the stream's reader, exactly.)
		limits := streamlimit.Limits{Idle: c.cfg.streamIdle, MaxTotal: int64(c.cfg.maxStream)}
		send = func(req *http.Request) (*http.Response, error) { return streamlimit.Do(req, limits, c.http.Do) }
	}
	resp, err := c.do(ctx, send, func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if stream {
			req.Header.Set("Accept", "text/event-stream")
		} else {
			req.Header.Set("Accept", "application/json")
		}
		req.Header.Set(VersionHeader, ep.version())
		return req, nil
	})
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: %w", m, err)
	}
	return resp, nil
}

// do sends the request newReq makes with send, with the client's headers,
// again after a transient status within the retry budget. It returns the
// last answer whatever its status; the caller closes its body.
func (c *Client) do(ctx context.Context, send func(*http.Request) (*http.Response, error), newReq func() (*http.Request, error)) (*http.Response, error) {
	policy := backoff.Policy{Initial: c.cfg.retryWait, Factor: 2, Max: c.cfg.maxRetryWait}
	for attempt := 0; ; attempt++ {
		req, err := newReq()
		if err != nil {
			return nil, err
		}
		for k, v := range maps.All(c.cfg.headers) {
			req.Header[k] = slices.Clone(v)
		}
		if c.cfg.headerFunc != nil {
			if err := c.cfg.headerFunc(ctx, req.Header); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrHeaderRefused, err)
			}
		}
		resp, err := send(req)
		if err != nil {
			return nil, err
		}
		if !httpstatus.Transient(resp.StatusCode) || attempt >= c.cfg.retries {
			return resp, nil
		}
		asked, _ := model.RetryAfter(resp.Header, time.Now())
		d, ok := policy.Next(attempt, asked)
		if !ok {
			return resp, nil // asked to wait too long: the caller reports the status
		}
		// Read a little of the body so that the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
		if err := pause.Sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// readLimited reads r to its end, failing with ErrResponseTooLarge past
// max bytes.
func readLimited(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: the answer exceeds %d bytes", ErrResponseTooLarge, max)
	}
	return b, nil
}
