package openai

import (
	"context"
	"errors"
	"fmt"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/trellis-go/trellis/model"
)

// DefaultEmbedTimeout bounds one embeddings request unless
// WithEmbedTimeout says otherwise; a request that runs out of it is tried
// again like other transient failures.
const DefaultEmbedTimeout = time.Minute

// DefaultEmbedBatch is the most texts an Embedder sends in one request
// unless WithEmbedBatch says otherwise (the API accepts up to 2048).
const DefaultEmbedBatch = 256

// Embedder is a model.Embedder served by the OpenAI embeddings endpoint
// or any server that speaks it (Ollama, vLLM, text-embeddings-inference).
// It is safe for concurrent use.
type Embedder struct {
	name    string
	client  oai.Client
	retry   model.Retry
	dims    int
	batch   int
	timeout time.Duration
}

var _ model.Embedder = (*Embedder)(nil)

// NewEmbedder returns an embedder for the named model
// ("text-embedding-3-small", "nomic-embed-text", ...). It takes the same
// options as New (base URL, API key, HTTP client, retries) plus
// WithDimensions and WithEmbedBatch, and reads the same environment.
func NewEmbedder(name string, opts ...Option) (*Embedder, error) {
	if name == "" {
		return nil, errors.New("openai: embedding model name is empty")
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	ro, err := clientOptions(&c)
	if err != nil {
		return nil, err
	}
	batch := c.embedBatch
	if batch == 0 {
		batch = DefaultEmbedBatch
	}
	timeout := c.embedTimeout
	if timeout == 0 {
		timeout = DefaultEmbedTimeout
	}
	return &Embedder{name: name, client: oai.NewClient(ro...), retry: c.retry, dims: c.dimensions, batch: batch, timeout: timeout}, nil
}

// WithDimensions asks an embedding model for vectors of n dimensions
// (models from text-embedding-3 on can shorten theirs). Other options
// ignore it.
func WithDimensions(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithDimensions: %d is not positive", n))
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

// Dimensions returns the dimensions set with WithDimensions, or 0: the
// model's own, known after the first call.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns the texts' embeddings, sending them in batches and
// retrying transient failures by the embedder's retry policy.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return model.EmbedBatches(ctx, texts, e.batch, e.embedBatch)
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	params := oai.EmbeddingNewParams{
		Input:          oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          oai.EmbeddingModel(e.name),
		EncodingFormat: oai.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.dims > 0 {
		params.Dimensions = oai.Int(int64(e.dims))
	}
	var resp *oai.CreateEmbeddingResponse
	err := e.retry.Do(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, e.timeout)
		defer cancel()
		r, err := e.client.Embeddings.New(ctx, params)
		if err != nil {
			return convertError(err)
		}
		resp = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("openai: embeddings: bad or repeated index %d for %d texts", d.Index, len(texts))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("openai: embeddings: no vector for text %d", i)
		}
	}
	return out, nil
}
