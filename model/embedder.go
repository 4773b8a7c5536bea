package model

import (
	"context"
	"fmt"
)

// Embedder turns texts into vectors (embeddings) whose directions are near
// for texts of near meaning. Implementations are safe for concurrent use.
//
// The providers' embedders (openai.Embedder, gemini's) split long inputs
// into batches the provider accepts and retry transient failures with the
// same Retry policy and error classification (IsTransient, ProviderError)
// as chat models. store.Store takes any Embedder for search by meaning.
type Embedder interface {
	// Embed returns one vector per text, in the texts' order, all of
	// Dimensions() length.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimensions is the length of the vectors; 0 when it is known only
	// after the first call.
	Dimensions() int
}

// EmbedBatches calls embed on consecutive batches of at most size texts
// (all of them at once when size is not positive) and joins the vectors it
// returns, checking that each batch got one vector per text. Embedders use
// it to split inputs into what their provider accepts.
func EmbedBatches(ctx context.Context, texts []string, size int, embed func(ctx context.Context, batch []string) ([][]float32, error)) ([][]float32, error) {
	if size <= 0 {
		size = max(len(texts), 1)
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += size {
		batch := texts[start:min(start+size, len(texts))]
		vecs, err := embed(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(batch) {
			return nil, fmt.Errorf("embed: %d vectors for %d texts", len(vecs), len(batch))
		}
		out = append(out, vecs...)
	}
	return out, nil
}
