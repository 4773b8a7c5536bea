package storetest

import (
	"context"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"unicode"
)

// Embedder is a deterministic store.Embedder for tests: each word of a
// text (lowercased, split at anything but letters and digits) stands for a
// pseudo-random direction drawn from its hash, and a text's vector is the
// sum of its words'. Texts with the same words get the same vector, texts
// sharing words are near, and texts sharing none are nearly orthogonal, as
// with a real embedding model. It counts the texts it embedded.
type Embedder struct {
	// Dims is the vector length (64 when zero).
	Dims  int
	calls atomic.Int64
}

// Embed implements store.Embedder.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.calls.Add(int64(len(texts)))
	dims := e.Dims
	if dims == 0 {
		dims = 64
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, dims)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			h := fnv.New64a()
			h.Write([]byte(w))
			x := h.Sum64()
			for d := range v {
				// splitmix64 steps: a fixed sequence per word.
				x += 0x9e3779b97f4a7c15
				z := x
				z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
				z = (z ^ (z >> 27)) * 0x94d049bb133111eb
				z ^= z >> 31
				v[d] += float32(int64(z>>11))/float32(1<<52) - 1
			}
		}
		out[i] = v
	}
	return out, nil
}

// Embedded returns how many texts the embedder has embedded.
func (e *Embedder) Embedded() int64 { return e.calls.Load() }
