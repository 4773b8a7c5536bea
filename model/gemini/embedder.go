package gemini

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/trellis-go/trellis/model"
)

// DefaultEmbedTimeout bounds one embedding request unless WithEmbedTimeout
// says otherwise; a request that runs out of it is tried again like other
// transient failures.
const DefaultEmbedTimeout = time.Minute

// DefaultEmbedBatch is the most texts an Embedder sends in one request
// unless WithEmbedBatch says otherwise: the most the Gemini API's
// batchEmbedContents accepts.
const DefaultEmbedBatch = 100

// Embedder is a model.Embedder served by the Gemini API's embedding
// models ("gemini-embedding-001", ...), through the SDK's EmbedContent
// (the batchEmbedContents endpoint). It is safe for concurrent use.
type Embedder struct {
	name     string
	client   *genai.Client
	retry    model.Retry
	dims     int
	batch    int
	timeout  time.Duration
	taskType string
}

var _ model.Embedder = (*Embedder)(nil)

// NewEmbedder returns an embedder for the named model, for example
// "gemini-embedding-001". It takes the same options as New (API key, base
// URL, HTTP client, headers, retries, stream limits) plus WithDimensions,
// WithEmbedBatch, WithEmbedTimeout and WithTaskType, and reads the same
// environment. NewEmbedder does no I/O.
func NewEmbedder(name string, opts ...Option) (*Embedder, error) {
	if name == "" {
		return nil, errors.New("gemini: embedding model name is empty")
	}
	c := config{embedBatch: DefaultEmbedBatch, embedTimeout: DefaultEmbedTimeout}
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
	return &Embedder{name: name, client: client, retry: c.retry, dims: c.dimensions,
		batch: c.embedBatch, timeout: c.embedTimeout, taskType: c.taskType}, nil
}

// WithDimensions asks an embedding model for vectors of n dimensions (its
// outputDimensionality; gemini-embedding-001 gives 3072 unless asked for
// fewer). Chat models ignore it.
func WithDimensions(n int) Option {
	return func(c *config) {
		if n <= 0 || n > 1<<20 {
			c.errs = append(c.errs, fmt.Errorf("WithDimensions: %d is not a positive size", n))
			return
		}
		c.dimensions = n
	}
}

// WithEmbedBatch sets the most texts an Embedder sends in one request
// (DefaultEmbedBatch unless set).
func WithEmbedBatch(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithEmbedBatch: %d is not positive", n))
			return
		}
		c.embedBatch = n
	}
}

// WithEmbedTimeout bounds each request of an Embedder (DefaultEmbedTimeout
// unless set).
func WithEmbedTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithEmbedTimeout: %v is not positive", d))
			return
		}
		c.embedTimeout = d
	}
}

// WithTaskType tells an embedding model what its vectors are for:
// "SEMANTIC_SIMILARITY", "RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY",
// "CLASSIFICATION", "CLUSTERING", ... (the API's TaskType names; the
// server judges the value). Unset, the model's default. A store embeds
// items and queries with one embedder, which suits SEMANTIC_SIMILARITY.
func WithTaskType(taskType string) Option {
	return func(c *config) {
		if strings.TrimSpace(taskType) == "" {
			c.errs = append(c.errs, errors.New("WithTaskType: empty task type"))
			return
		}
		c.taskType = strings.ToUpper(taskType)
	}
}

// Dimensions returns the dimensions set with WithDimensions, or 0: the
// model's own, known after the first call.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns the texts' embeddings, sending them in batches and
// retrying transient failures by the embedder's retry policy, with the
// error classification of the chat models (model.ProviderError,
// model.IsTransient).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return model.EmbedBatches(ctx, texts, e.batch, e.embedBatch)
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	contents := make([]*genai.Content, len(texts))
	for i, t := range texts {
		contents[i] = &genai.Content{Parts: []*genai.Part{{Text: t}}}
	}
	cfg := &genai.EmbedContentConfig{TaskType: e.taskType}
	if e.dims > 0 {
		cfg.OutputDimensionality = genai.Ptr(int32(e.dims))
	}
	var resp *genai.EmbedContentResponse
	err := e.retry.Do(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, e.timeout)
		defer cancel()
		ctx, hit := attempt(ctx)
		r, err := e.embed(ctx, contents, cfg)
		if err != nil {
			return convertError(hit.or(err))
		}
		resp = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Embeddings) != len(texts) {
		return nil, fmt.Errorf("gemini: embeddings: %d vectors for %d texts", len(resp.Embeddings), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, emb := range resp.Embeddings {
		if emb == nil || len(emb.Values) == 0 {
			return nil, fmt.Errorf("gemini: embeddings: no vector for text %d", i)
		}
		out[i] = emb.Values
	}
	return out, nil
}

// embed is one call of EmbedContent, its panics made errors.
func (e *Embedder) embed(ctx context.Context, contents []*genai.Content, cfg *genai.EmbedContentConfig) (r *genai.EmbedContentResponse, err error) {
	defer sdkPanic(&err)
	return e.client.Models.EmbedContent(ctx, e.name, contents, cfg)
}
