package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/model"
)

// DefaultTimeout bounds one attempt of Generate unless WithTimeout says
// otherwise: 10 minutes, as a thinking model can work that long before it
// answers. Streams are bounded by their idle timeout instead (see
// WithStreamLimits), so a long reply that keeps coming is never cut.
const DefaultTimeout = 10 * time.Minute

// Model is a Gemini model served by the Gemini API, through the official
// google.golang.org/genai SDK. It is safe for concurrent use.
type Model struct {
	name     string
	client   *genai.Client
	retry    model.Retry
	settings model.Settings
	timeout  time.Duration
	thinking *genai.ThinkingConfig
	outputs  []string
}

var (
	_ model.Model     = (*Model)(nil)
	_ model.Describer = (*Model)(nil)
)

type config struct {
	apiKey       string
	baseURL      string
	apiVersion   string
	httpClient   *http.Client
	headers      http.Header
	retry        model.Retry
	settings     model.Settings
	timeout      time.Duration
	thinking     *genai.ThinkingConfig
	outputs      []string
	streamLimits model.StreamLimits
	dimensions   int           // WithDimensions
	embedBatch   int           // WithEmbedBatch
	embedTimeout time.Duration // WithEmbedTimeout
	taskType     string        // WithTaskType
	errs         []error
}

// Option configures a Model.
type Option func(*config)

// WithAPIKey sets the API key. It takes precedence over GEMINI_API_KEY and
// GOOGLE_API_KEY, which the SDK reads otherwise.
func WithAPIKey(key string) Option {
	return func(c *config) { c.apiKey = key }
}

// WithBaseURL sets the API's base URL, for a proxy or a test server. It
// takes precedence over GOOGLE_GEMINI_BASE_URL, which the SDK reads
// otherwise.
func WithBaseURL(baseURL string) Option {
	return func(c *config) {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.errs = append(c.errs, fmt.Errorf("WithBaseURL: invalid base URL %q: want an absolute http or https URL", baseURL))
			return
		}
		c.baseURL = baseURL
	}
}

// WithAPIVersion sets the API version in the request path ("v1beta" unless
// set, the SDK's default).
func WithAPIVersion(version string) Option {
	return func(c *config) { c.apiVersion = version }
}

// WithHTTPClient sets the HTTP client the model sends requests with. The
// model puts its stream limits on the client's transport, in a copy; the
// client's own Timeout, if any, bounds every request, streams included.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) {
		if client == nil {
			c.errs = append(c.errs, errors.New("WithHTTPClient: nil client"))
			return
		}
		c.httpClient = client
	}
}

// WithHeader sets an HTTP header on every request.
func WithHeader(key, value string) Option {
	return func(c *config) {
		if c.headers == nil {
			c.headers = http.Header{}
		}
		c.headers.Set(key, value)
	}
}

// WithTimeout bounds one attempt of Generate (DefaultTimeout unless set; a
// negative value waits for ever). A timed-out attempt is retried like a
// transient failure.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
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

// WithRetry sets the whole retry policy, replacing a count set by an
// earlier WithMaxRetries.
func WithRetry(r model.Retry) Option {
	return func(c *config) { c.retry = r }
}

// WithSettings sets default sampling settings. A request's own settings
// take precedence field by field.
func WithSettings(s model.Settings) Option {
	return func(c *config) { c.settings = s }
}

// WithThinkingBudget sets how many tokens the model may think with: 0
// turns thinking off where the model allows it, -1 lets the model decide.
// Thought summaries come back as reasoning parts when WithThoughts is set.
func WithThinkingBudget(tokens int) Option {
	return func(c *config) {
		if tokens < -1 {
			c.errs = append(c.errs, fmt.Errorf("WithThinkingBudget: %d is neither a budget nor -1 (dynamic)", tokens))
			return
		}
		c.thinkingConfig().ThinkingBudget = genai.Ptr(int32(tokens))
	}
}

// WithThinkingLevel sets how hard the model thinks, for models that take a
// level rather than a budget: "minimal", "low", "medium" or "high". The
// server judges the value.
func WithThinkingLevel(level string) Option {
	return func(c *config) {
		if strings.TrimSpace(level) == "" {
			c.errs = append(c.errs, errors.New("WithThinkingLevel: empty level"))
			return
		}
		c.thinkingConfig().ThinkingLevel = genai.ThinkingLevel(strings.ToUpper(level))
	}
}

// WithThoughts asks for summaries of the model's thoughts, which come back
// as reasoning parts (model.PartReasoning) before the answer.
func WithThoughts() Option {
	return func(c *config) { c.thinkingConfig().IncludeThoughts = true }
}

func (c *config) thinkingConfig() *genai.ThinkingConfig {
	if c.thinking == nil {
		c.thinking = &genai.ThinkingConfig{}
	}
	return c.thinking
}

// WithResponseModalities sets what the model may answer with, for models
// that draw: "TEXT" and "IMAGE". Images come back as image parts.
func WithResponseModalities(modalities ...string) Option {
	return func(c *config) { c.outputs = append(c.outputs, modalities...) }
}

// WithStreamLimits bounds replies: how long the server may send nothing
// (waiting for the headers included), and how large one event and the
// whole reply may be. Zero fields keep their defaults:
// model.DefaultStreamIdleTimeout, model.DefaultMaxStreamEventBytes and
// model.DefaultMaxStreamBytes. A reply past a limit fails with an error
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

// New returns a model that calls the named Gemini model, for example
// "gemini-2.5-flash", on the Gemini API.
//
// The API key comes from WithAPIKey, or else from GEMINI_API_KEY or
// GOOGLE_API_KEY (read by the SDK); New fails without one. New does no I/O.
func New(name string, opts ...Option) (*Model, error) {
	if name == "" {
		return nil, errors.New("gemini: model name is empty")
	}
	c := config{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&c)
	}
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("gemini: %w", errors.Join(c.errs...))
	}
	client, err := newClient(&c)
	if err != nil {
		return nil, err
	}
	return &Model{
		name:     name,
		client:   client,
		retry:    c.retry,
		settings: c.settings,
		timeout:  c.timeout,
		thinking: c.thinking,
		outputs:  c.outputs,
	}, nil
}

// newClient returns the SDK client c describes, its transport bounded by
// c's stream limits.
func newClient(c *config) (*genai.Client, error) {
	sl := c.streamLimits.WithDefaults()
	limits := streamlimit.Limits{Idle: sl.IdleTimeout, MaxEvent: sl.MaxEventBytes, MaxTotal: sl.MaxBytes}
	hc := &http.Client{}
	if c.httpClient != nil {
		cp := *c.httpClient
		hc = &cp
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = boundTransport{next: next, limits: limits}
	cc := &genai.ClientConfig{
		APIKey:     c.apiKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    c.baseURL,
			APIVersion: c.apiVersion,
			Headers:    c.headers,
		},
	}
	// NewClient does no I/O for the Gemini API: it reads the environment.
	client, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return client, nil
}

// boundTransport puts the stream limits on every request and its reply:
// the idle timeout covers the wait for the headers and each read, the caps
// the reply's events and its whole body.
type boundTransport struct {
	next   http.RoundTripper
	limits streamlimit.Limits
}

// RoundTrip sends req under the limits. A limit reached is also recorded
// in the request's limitHit, if its context has one: the SDK reports a
// body cut short by the limit as the JSON it could not decode, or as the
// partial event it read, before the error that says why.
func (t boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	hit, _ := req.Context().Value(limitKey{}).(*limitHit)
	res, err := streamlimit.Do(req, t.limits, t.next.RoundTrip)
	if err != nil {
		hit.record(err)
		return nil, err
	}
	if hit != nil && res.Body != nil {
		res.Body = &recordingBody{ReadCloser: res.Body, hit: hit}
	}
	return res, nil
}

// limitKey keys a request's *limitHit in its context.
type limitKey struct{}

// limitHit holds the stream limit one attempt reached, if any.
type limitHit struct {
	mu  sync.Mutex
	err error
}

// record keeps err if it is a stream limit's.
func (h *limitHit) record(err error) {
	if h == nil {
		return
	}
	if _, ok := errors.AsType[*streamlimit.Error](err); !ok {
		return
	}
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	h.mu.Unlock()
}

// or returns the limit reached, if any, else err.
func (h *limitHit) or(err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	return err
}

// attempt returns ctx with a new limitHit for one attempt.
func attempt(ctx context.Context) (context.Context, *limitHit) {
	h := &limitHit{}
	return context.WithValue(ctx, limitKey{}, h), h
}

type recordingBody struct {
	io.ReadCloser
	hit *limitHit
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.hit.record(err)
	}
	return n, err
}

// sdkPanic turns a panic of the SDK's decoder (it panics on some replies
// that are valid JSON, such as a null candidate) into an error.
func sdkPanic(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("gemini: the reply could not be decoded: %v", p)
	}
}

// generate is one call of GenerateContent, its panics made errors.
func (m *Model) generate(ctx context.Context, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig) (r *genai.GenerateContentResponse, err error) {
	defer sdkPanic(&err)
	return m.client.Models.GenerateContent(ctx, name, contents, cfg)
}

// pull is one step of a pulled stream, its panics made errors.
func pull(next func() (*genai.GenerateContentResponse, error, bool)) (r *genai.GenerateContentResponse, err error, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			r, err, ok = nil, fmt.Errorf("gemini: the reply could not be decoded: %v", p), true
		}
	}()
	return next()
}

// Info describes the model: provider "gemini", its name, and native
// structured output (a response JSON schema).
func (m *Model) Info() model.Info {
	return model.Info{Provider: "gemini", Name: m.name, StructuredOutput: true}
}

// Generate sends req to the generateContent endpoint and returns the reply.
// Transient failures are retried according to the model's retry policy;
// each attempt is bounded by the model's timeout.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	name, contents, cfg, err := m.request(req)
	if err != nil {
		return nil, err
	}
	var resp *genai.GenerateContentResponse
	err = m.retry.Do(ctx, func(ctx context.Context) error {
		if m.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, m.timeout)
			defer cancel()
		}
		ctx, hit := attempt(ctx)
		r, err := m.generate(ctx, name, contents, cfg)
		if err != nil {
			return convertError(hit.or(err))
		}
		resp = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return toResponse(resp)
}

// Stream sends req to the streamGenerateContent endpoint and yields the
// reply as it arrives. Until the first reasoning, text, tool-call or part
// chunk arrives, failures (an error event, a stream cut short) are retried
// like Generate's; once a chunk has been yielded, errors end the sequence.
// A stream that ends without a finish reason ends with an error wrapping
// io.ErrUnexpectedEOF.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		name, contents, cfg, err := m.request(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var (
			st    streamState
			first []model.Chunk
			next  func() (*genai.GenerateContentResponse, error, bool)
			stop  func()
			hit   *limitHit
		)
		defer func() {
			if stop != nil {
				stop()
			}
		}()
		err = m.retry.Do(ctx, func(ctx context.Context) error {
			st = streamState{}
			ctx, hit = attempt(ctx)
			n, s := iter.Pull2(m.client.Models.GenerateContentStream(ctx, name, contents, cfg))
			for {
				r, err, ok := pull(n)
				if !ok {
					break
				}
				if err != nil {
					s()
					return convertError(hit.or(err))
				}
				if out := st.add(r); len(out) > 0 {
					next, stop, first = n, s, out
					return nil
				}
			}
			s()
			if st.finish != "" {
				return nil // a complete reply with nothing in it
			}
			return fmt.Errorf("gemini: stream ended before the reply began: %w", io.ErrUnexpectedEOF)
		})
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		for _, c := range first {
			if !yield(c, nil) {
				return
			}
		}
		if next != nil {
			for {
				r, err, ok := pull(next)
				if !ok {
					break
				}
				if err != nil {
					yield(model.Chunk{}, convertError(hit.or(err)))
					return
				}
				for _, c := range st.add(r) {
					if !yield(c, nil) {
						return
					}
				}
			}
		}
		if st.finish == "" {
			yield(model.Chunk{}, fmt.Errorf("gemini: stream ended before the reply was complete: %w", io.ErrUnexpectedEOF))
			return
		}
		yield(st.final(), nil)
	}
}
