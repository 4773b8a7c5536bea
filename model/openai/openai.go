package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/internal/wholereply"
)

// Model is a chat model served by the OpenAI Chat Completions API or by any
// server that speaks it. It is safe for concurrent use.
type Model struct {
	name            string
	limits          streamlimit.Limits // of streamed replies
	client          oai.Client
	retry           model.Retry
	settings        model.Settings
	legacyMaxTokens bool
	effort          string
	responses       bool              // the Responses API rather than Chat Completions
	builtin         []json.RawMessage // the Responses API's own tools
	summary         string            // of reasoning, on the Responses API
}

var (
	_ model.Model     = (*Model)(nil)
	_ model.Describer = (*Model)(nil)
)

type config struct {
	baseURL         *string
	apiKey          *string
	httpClient      *http.Client
	organization    string
	project         string
	headers         [][2]string
	retry           model.Retry
	settings        model.Settings
	legacyMaxTokens bool
	effort          string
	requestOptions  []option.RequestOption
	streamLimits    model.StreamLimits
	dimensions      int // embedders only
	embedBatch      int // embedders only
	embedTimeout    time.Duration
	responses       bool
	builtin         []json.RawMessage
	summary         string
	errs            []error
}

// Option configures a Model.
type Option func(*config)

// WithBaseURL sets the API's base URL, for example
// "http://localhost:11434/v1" for Ollama or "http://localhost:8000/v1" for
// vLLM. It takes precedence over OPENAI_BASE_URL.
func WithBaseURL(baseURL string) Option {
	return func(c *config) { c.baseURL = &baseURL }
}

// WithAPIKey sets the API key sent as a bearer token. It takes precedence
// over OPENAI_API_KEY.
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

// WithOrganization sets the OpenAI-Organization header. It takes precedence
// over OPENAI_ORG_ID.
func WithOrganization(id string) Option {
	return func(c *config) { c.organization = id }
}

// WithProject sets the OpenAI-Project header. It takes precedence over
// OPENAI_PROJECT_ID.
func WithProject(id string) Option {
	return func(c *config) { c.project = id }
}

// WithHeader sets an HTTP header on every request, for example an API
// gateway's own credentials.
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

// WithSettings sets default sampling settings. A request's own settings
// take precedence field by field.
func WithSettings(s model.Settings) Option {
	return func(c *config) { c.settings = s }
}

// WithLegacyMaxTokens sends Settings.MaxTokens as "max_tokens" instead of
// "max_completion_tokens", for compatible servers that only know the older
// field.
func WithLegacyMaxTokens() Option {
	return func(c *config) { c.legacyMaxTokens = true }
}

// WithReasoningEffort sends "reasoning_effort" with every request, for
// reasoning models: "minimal", "low", "medium" or "high", and the other
// levels a model documents ("none", "xhigh"). The server judges the value.
func WithReasoningEffort(effort string) Option {
	return func(c *config) {
		if strings.TrimSpace(effort) == "" {
			c.errs = append(c.errs, errors.New("WithReasoningEffort: empty effort"))
			return
		}
		c.effort = effort
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

// WithRequestOptions passes options of the openai-go client through, for
// needs this package does not cover. They are applied last.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.requestOptions = append(c.requestOptions, opts...) }
}

// defaultBaseURL is the API's base URL when neither WithBaseURL nor
// OPENAI_BASE_URL gives one.
const defaultBaseURL = "https://api.openai.com/v1"

// New returns a model that calls the named model.
//
// Settings not given as options are read from the environment by the
// openai-go client: OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ORG_ID and
// OPENAI_PROJECT_ID. Options take precedence over the environment. Without
// a base URL (or with an empty OPENAI_BASE_URL) the model calls
// https://api.openai.com/v1.
func New(name string, opts ...Option) (*Model, error) {
	if name == "" {
		return nil, errors.New("openai: model name is empty")
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	ro, err := clientOptions(&c)
	if err != nil {
		return nil, err
	}
	sl := c.streamLimits.WithDefaults()
	return &Model{
		limits:          streamlimit.Limits{Idle: sl.IdleTimeout, MaxEvent: sl.MaxEventBytes, MaxTotal: sl.MaxBytes},
		name:            name,
		client:          oai.NewClient(ro...),
		retry:           c.retry,
		settings:        c.settings,
		legacyMaxTokens: c.legacyMaxTokens,
		effort:          c.effort,
		responses:       c.responses,
		builtin:         c.builtin,
		summary:         c.summary,
	}, nil
}

// clientOptions turns c into the openai-go client's options.
func clientOptions(c *config) ([]option.RequestOption, error) {
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("openai: %w", errors.Join(c.errs...))
	}
	// The model retries on its own terms (model.Retry); the client must not.
	ro := []option.RequestOption{option.WithMaxRetries(0), option.WithMiddleware(normalizeErrorBody)}
	if c.baseURL != nil {
		u, err := url.Parse(*c.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("openai: invalid base URL %q: want an absolute http or https URL", *c.baseURL)
		}
		ro = append(ro, option.WithBaseURL(*c.baseURL))
	} else if v, ok := os.LookupEnv("OPENAI_BASE_URL"); ok && strings.TrimSpace(v) == "" {
		// Set but empty means unset; the client would take it for a
		// relative URL.
		ro = append(ro, option.WithBaseURL(defaultBaseURL))
	} else if ok {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("openai: invalid OPENAI_BASE_URL %q: want an absolute http or https URL", v)
		}
	}
	if c.apiKey != nil {
		ro = append(ro, option.WithAPIKey(*c.apiKey))
	}
	if c.httpClient != nil {
		ro = append(ro, option.WithHTTPClient(c.httpClient))
	}
	if c.organization != "" {
		ro = append(ro, option.WithOrganization(c.organization))
	}
	if c.project != "" {
		ro = append(ro, option.WithProject(c.project))
	}
	for _, h := range c.headers {
		ro = append(ro, option.WithHeader(h[0], h[1]))
	}
	ro = append(ro, c.requestOptions...)
	return ro, nil
}

// Info describes the model: provider "openai", its name, and native
// structured output (response_format with a JSON schema).
func (m *Model) Info() model.Info {
	return model.Info{Provider: "openai", Name: m.name, StructuredOutput: true}
}

// Generate sends req to the Chat Completions endpoint (or the Responses
// API, see WithResponsesAPI) and returns the reply. Transient failures are
// retried according to the model's retry policy.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if m.responses {
		return m.generateResponses(ctx, req)
	}
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	var completion *oai.ChatCompletion
	err = m.retry.Do(ctx, func(ctx context.Context) error {
		c, err := m.client.Chat.Completions.New(ctx, params)
		if err != nil {
			return convertError(err)
		}
		completion = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return toResponse(completion)
}

// Stream sends req to the Chat Completions endpoint with streaming on and
// yields the reply as it arrives. Until the first reasoning, text or
// tool-call fragment arrives, failures (an error event or a stream cut
// short after the opening events that carry nothing, such as the assistant
// role) are retried like Generate's; once a chunk has been yielded, errors
// end the sequence. A server that ignores streaming and answers with the
// whole completion as JSON gets its reply yielded as chunks all the same:
// the reasoning, the text, each tool call whole, then the final chunk.
//
// With WithResponsesAPI the reply streams from the Responses API, with the
// same rules.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	if m.responses {
		return m.streamResponses(ctx, req)
	}
	return func(yield func(model.Chunk, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		params.StreamOptions.IncludeUsage = oai.Bool(true)

		var (
			stream *ssestream.Stream[oai.ChatCompletionChunk]
			st     streamState
			first  []model.Chunk
			// wholeResp is the reply of a server that ignored streaming.
			wholeResp *model.Response
		)
		err = m.retry.Do(ctx, func(ctx context.Context) error {
			st, wholeResp = streamState{}, nil
			whole := wholereply.Capture{Provider: "openai"}
			s := m.client.Chat.Completions.NewStreaming(ctx, params, option.WithMiddleware(whole.Middleware), option.WithMiddleware(m.bound))
			for s.Next() {
				if out := st.add(s.Current()); len(out) > 0 {
					stream, first = s, out
					return nil
				}
			}
			_ = s.Close()
			if err := s.Err(); err != nil {
				return convertError(err)
			}
			if whole.Body != nil {
				// The server ignored "stream": true and sent the whole reply.
				c, err := wholereply.Decode[oai.ChatCompletion](&whole, "a chat completion")
				if err != nil {
					return err
				}
				wholeResp, err = toResponse(c)
				return err
			}
			if st.finish != "" {
				return nil // a complete reply with no text and no calls
			}
			return fmt.Errorf("openai: stream ended before the reply began: %w", io.ErrUnexpectedEOF)
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
		if stream != nil {
			defer stream.Close()
			for _, c := range first {
				if !yield(c, nil) {
					return
				}
			}
			for stream.Next() {
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
		}
		if st.finish == "" {
			yield(model.Chunk{}, fmt.Errorf("openai: stream ended before the reply was complete: %w", io.ErrUnexpectedEOF))
			return
		}
		yield(st.final(), nil)
	}
}

// bound is the middleware of a streaming request, closest to the wire (so
// the whole-reply capture reads through it too): it puts the model's
// stream limits on the request and its reply.
func (m *Model) bound(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	return streamlimit.Do(req, m.limits, next)
}
