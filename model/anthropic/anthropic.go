package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/internal/wholereply"
)

// DefaultMaxTokens is the max_tokens sent when neither the request's
// settings nor WithMaxTokens or WithSettings give one. The Messages API
// requires the field.
const DefaultMaxTokens = 4096

// defaultBaseURL is the API's base URL when neither WithBaseURL nor
// ANTHROPIC_BASE_URL gives one.
const defaultBaseURL = "https://api.anthropic.com/"

// Model is a Claude model served by the Anthropic Messages API. It is safe
// for concurrent use.
type Model struct {
	name             string
	limits           streamlimit.Limits // of streamed replies
	client           sdk.Client
	retry            model.Retry
	settings         model.Settings
	structuredOutput bool
	thinking         sdk.ThinkingConfigParamUnion
	serverTools      []sdk.ToolUnionParam
	// requestOptions are WithRequestOptions': a request timeout among them
	// lets Generate wait for a long reply without streaming.
	requestOptions []option.RequestOption
}

var (
	_ model.Model     = (*Model)(nil)
	_ model.Describer = (*Model)(nil)
)

type config struct {
	baseURL          *string
	apiKey           *string
	httpClient       *http.Client
	headers          [][2]string
	retry            model.Retry
	settings         model.Settings
	structuredOutput bool
	thinking         sdk.ThinkingConfigParamUnion
	serverTools      []sdk.ToolUnionParam
	requestOptions   []option.RequestOption
	streamLimits     model.StreamLimits
	errs             []error
}

// Option configures a Model.
type Option func(*config)

// WithBaseURL sets the API's base URL. It takes precedence over
// ANTHROPIC_BASE_URL.
func WithBaseURL(baseURL string) Option {
	return func(c *config) { c.baseURL = &baseURL }
}

// WithAPIKey sets the API key sent in the X-Api-Key header. It takes
// precedence over ANTHROPIC_API_KEY.
func WithAPIKey(key string) Option {
	return func(c *config) { c.apiKey = &key }
}

// WithHTTPClient sets the HTTP client the model sends requests with.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) {
		if client == nil {
			c.errs = append(c.errs, errors.New("WithHTTPClient: nil client"))
			return
		}
		c.httpClient = client
	}
}

// WithHeader sets an HTTP header on every request, for example
// "anthropic-beta".
func WithHeader(key, value string) Option {
	return func(c *config) { c.headers = append(c.headers, [2]string{key, value}) }
}

// WithMaxRetries sets how many times a request that failed with a transient
// error is sent again (see model.Retry). Zero disables retries; the default
// is model.DefaultMaxRetries.
func WithMaxRetries(n int) Option {
	return func(c *config) {
		switch {
		case n < 0:
			c.errs = append(c.errs, fmt.Errorf("WithMaxRetries: negative count %d", n))
		case n == 0:
			c.retry.MaxRetries = -1
		default:
			c.retry.MaxRetries = n
		}
	}
}

// WithRetry sets the whole retry policy, backoff delays included, replacing
// a count set by an earlier WithMaxRetries.
func WithRetry(r model.Retry) Option {
	return func(c *config) { c.retry = r }
}

// WithMaxTokens sets the max_tokens sent when a request does not set
// Settings.MaxTokens. Without it, DefaultMaxTokens is sent.
func WithMaxTokens(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithMaxTokens: %d is not positive", n))
			return
		}
		c.settings.MaxTokens = n
	}
}

// WithSettings sets default sampling settings. A request's own settings
// take precedence field by field, except that temperature and top_p go
// together: a request that sets either gets neither from the defaults,
// since recent Claude models refuse the two at once.
func WithSettings(s model.Settings) Option {
	return func(c *config) {
		if s.MaxTokens == 0 {
			s.MaxTokens = c.settings.MaxTokens
		}
		c.settings = s
	}
}

// WithStructuredOutput declares that the model supports native structured
// output (output_config.format with a JSON schema), so that Info reports it
// and callers send Request.ResponseFormat instead of using a
// set-model-response tool. Only recent Claude models support it.
func WithStructuredOutput() Option {
	return func(c *config) { c.structuredOutput = true }
}

// MinThinkingBudget is the smallest thinking budget the API accepts.
const MinThinkingBudget = 1024

// WithThinking turns on extended thinking with a budget of thinking tokens
// (at least MinThinkingBudget, and less than the request's max_tokens,
// which the thinking counts against). The model's thinking arrives as
// reasoning parts (model.PartReasoning) before the text of its reply, and
// as reasoning fragments in a stream; kept in the conversation, they are
// sent back with the assistant message, as the API requires when the model
// thought before calling tools. Recent models prefer WithAdaptiveThinking
// (the client warns on standard error when one is given a budget).
func WithThinking(budgetTokens int) Option {
	return func(c *config) {
		if budgetTokens < MinThinkingBudget {
			c.errs = append(c.errs, fmt.Errorf("WithThinking: budget %d is below the minimum of %d tokens", budgetTokens, MinThinkingBudget))
			return
		}
		c.thinking = sdk.ThinkingConfigParamOfEnabled(int64(budgetTokens))
	}
}

// WithAdaptiveThinking lets the model decide whether and how much to think,
// on the models that support it. Its thinking is handled as WithThinking
// describes.
func WithAdaptiveThinking() Option {
	return func(c *config) {
		c.thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	}
}

// WithStreamLimits bounds streamed replies: how long the server may send
// nothing (waiting for the headers included), and how large one event and
// the whole reply may be. Zero fields keep their defaults:
// model.DefaultStreamIdleTimeout (10 minutes, as a reasoning model may
// think that long without a word), model.DefaultMaxStreamEventBytes and
// model.DefaultMaxStreamBytes. A stream past a limit fails with an error
// that names it and matches model.ErrStreamIdle,
// model.ErrStreamEventTooLarge or model.ErrStreamTooLarge; it is not
// retried.
func WithStreamLimits(l model.StreamLimits) Option {
	return func(c *config) {
		if err := l.Check(); err != nil {
			c.errs = append(c.errs, fmt.Errorf("WithStreamLimits: %w", err))
			return
		}
		c.streamLimits = l
	}
}

// WithRequestOptions passes options of the anthropic-sdk-go client through,
// for needs this package does not cover. They are applied last.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.requestOptions = append(c.requestOptions, opts...) }
}

// New returns a model that calls the named Claude model.
//
// Settings not given as options are read from the environment by the
// anthropic-sdk-go client: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (or
// ANTHROPIC_AUTH_TOKEN). Options take precedence over the environment.
// Without a base URL (an empty ANTHROPIC_BASE_URL counts as none) the
// model calls https://api.anthropic.com.
func New(name string, opts ...Option) (*Model, error) {
	if name == "" {
		return nil, errors.New("anthropic: model name is empty")
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("anthropic: %w", errors.Join(c.errs...))
	}
	if c.settings.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: negative max tokens %d", c.settings.MaxTokens)
	}
	// The model retries on its own terms (model.Retry); the client must not.
	ro := []option.RequestOption{option.WithMaxRetries(0)}
	if c.baseURL != nil {
		u, err := url.Parse(*c.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic: invalid base URL %q: want an absolute http or https URL", *c.baseURL)
		}
		ro = append(ro, option.WithBaseURL(*c.baseURL))
	} else if v, ok := os.LookupEnv("ANTHROPIC_BASE_URL"); ok && strings.TrimSpace(v) == "" {
		// Set but empty means unset; the client would take it for a
		// relative URL.
		ro = append(ro, option.WithBaseURL(defaultBaseURL))
	} else if ok {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic: invalid ANTHROPIC_BASE_URL %q: want an absolute http or https URL", v)
		}
	}
	if c.apiKey != nil {
		ro = append(ro, option.WithAPIKey(*c.apiKey))
	}
	if c.httpClient != nil {
		ro = append(ro, option.WithHTTPClient(c.httpClient))
	}
	for _, h := range c.headers {
		ro = append(ro, option.WithHeader(h[0], h[1]))
	}
	ro = append(ro, c.requestOptions...)
	sl := c.streamLimits.WithDefaults()
	return &Model{
		limits:           streamlimit.Limits{Idle: sl.IdleTimeout, MaxEvent: sl.MaxEventBytes, MaxTotal: sl.MaxBytes},
		name:             name,
		client:           sdk.NewClient(ro...),
		retry:            c.retry,
		settings:         c.settings,
		structuredOutput: c.structuredOutput,
		thinking:         c.thinking,
		serverTools:      c.serverTools,
		requestOptions:   c.requestOptions,
	}, nil
}

// Info describes the model: provider "anthropic", its name, and whether it
// was declared to support native structured output (WithStructuredOutput).
func (m *Model) Info() model.Info {
	return model.Info{Provider: "anthropic", Name: m.name, StructuredOutput: m.structuredOutput}
}

// Generate sends req to the Messages API and returns the reply. Transient
// failures are retried according to the model's retry policy. A request
// whose max_tokens is too large for a reply without streaming (the client
// refuses to wait more than ten minutes for one, unless WithRequestOptions
// sets a request timeout) is streamed, and the stream collected into the
// reply.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	if _, err := sdk.CalculateNonStreamingTimeout(int(params.MaxTokens), params.Model, m.requestOptions); err != nil {
		// The client refuses to wait for a reply this long without a
		// stream (a large max_tokens, and no request timeout of the
		// caller's): collect a stream instead.
		return model.Collect(m.Stream(ctx, req))
	}
	var msg *sdk.Message
	err = m.retry.Do(ctx, func(ctx context.Context) error {
		r, err := m.client.Messages.New(ctx, params)
		if err != nil {
			return convertError(err)
		}
		msg = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return messageResponse(msg)
}

// messageResponse maps a reply to a Response, refusing one without the
// content array: it is not a message, and answering with an empty one would
// hide that.
func messageResponse(msg *sdk.Message) (*model.Response, error) {
	if msg == nil { // the body was JSON null
		return nil, errors.New("anthropic: the reply is not a message: it is null")
	}
	if !msg.JSON.Content.Valid() {
		raw := msg.RawJSON()
		if len(raw) > 200 {
			raw = raw[:200] + "…"
		}
		return nil, fmt.Errorf("anthropic: the reply is not a message: it has no content (received %s)", raw)
	}
	return toResponse(msg), nil
}

// Stream sends req to the Messages API with streaming on and yields the
// reply as it arrives: thinking as reasoning fragments, text, tool-call
// fragments, and the blocks of server tools (WithServerTools) as whole
// provider parts (Chunk.Part), each once it has ended. Until the first of those arrives, failures (an error event
// such as overloaded_error, or a stream cut short after opening events that
// carry nothing, such as message_start) are retried like Generate's; once a
// chunk has been yielded, errors end the sequence. A server that ignores
// streaming and answers with the whole message as JSON gets its reply
// yielded as chunks all the same: the thinking, the text, the provider
// parts, each tool call whole, then the final chunk.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var (
			stream *ssestream.Stream[sdk.MessageStreamEventUnion]
			st     *streamState
			first  []model.Chunk
			// wholeResp is the reply of a server that ignored streaming.
			wholeResp *model.Response
		)
		err = m.retry.Do(ctx, func(ctx context.Context) error {
			st, first, wholeResp = newStreamState(), nil, nil
			whole := wholereply.Capture{Provider: "anthropic"}
			s := m.client.Messages.NewStreaming(ctx, params, option.WithMiddleware(whole.Middleware), option.WithMiddleware(m.bound))
			for s.Next() {
				first = append(first, st.add(s.Current())...)
				if st.stopped || hasContent(first) {
					stream = s
					return nil
				}
			}
			_ = s.Close()
			if err := s.Err(); err != nil {
				return convertError(err)
			}
			if whole.Body != nil {
				// The server ignored "stream": true and sent the whole reply.
				msg, err := wholereply.Decode[sdk.Message](&whole, "a message")
				if err != nil {
					return err
				}
				wholeResp, err = messageResponse(msg)
				return err
			}
			return fmt.Errorf("anthropic: stream ended before the reply began: %w", io.ErrUnexpectedEOF)
		})
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if wholeResp != nil {
			for c := range model.ResponseChunks(wholeResp) {
				if !yield(c, nil) {
					return
				}
			}
			return
		}
		defer stream.Close()

		for _, c := range first {
			if !yield(c, nil) {
				return
			}
		}
		for !st.stopped && stream.Next() {
			for _, c := range st.add(stream.Current()) {
				if !yield(c, nil) {
					return
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(model.Chunk{}, convertError(err))
			return
		}
		if !st.stopped {
			yield(model.Chunk{}, fmt.Errorf("anthropic: stream ended before message_stop: %w", io.ErrUnexpectedEOF))
			return
		}
		yield(st.final(), nil)
	}
}

// hasContent reports whether chunks carry part of the reply itself:
// thinking, text, a tool call or a server tool's block.
func hasContent(chunks []model.Chunk) bool {
	for _, c := range chunks {
		if c.Text != "" || c.ToolCall != nil || c.Reasoning != nil || c.Part != nil {
			return true
		}
	}
	return false
}

// bound is the middleware of a streaming request, closest to the wire (so
// the whole-reply capture reads through it too): it puts the model's
// stream limits on the request and its reply.
func (m *Model) bound(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	return streamlimit.Do(req, m.limits, next)
}
