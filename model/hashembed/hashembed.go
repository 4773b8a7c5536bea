package hashembed

import (
	"context"
	"hash/fnv"
	"strings"
	"unicode"

	"github.com/trellis-go/trellis/model"
)

// DefaultDimensions is the vector length of New(0).
const DefaultDimensions = 256

// Embedder hashes texts into vectors. It is safe for concurrent use.
type Embedder struct {
	dims int
}

var _ model.Embedder = (*Embedder)(nil)

// New returns an embedder of dims dimensions (DefaultDimensions when not
// positive).
func New(dims int) *Embedder {
	if dims <= 0 {
		dims = DefaultDimensions
	}
	return &Embedder{dims: dims}
}

// Dimensions returns the vectors' length.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns a vector per text: each lowercased word adds one, and
// each of its three-letter pieces one half, at the dimension its hash
// picks, with a sign its hash picks too (so that collisions cancel out
// rather than pile up). The same text always gets the same vector.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, e.dims)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			e.add(v, w, 1)
			r := []rune("^" + w + "$")
			for j := 0; j+3 <= len(r); j++ {
				e.add(v, string(r[j:j+3]), 0.5)
			}
		}
		out[i] = v
	}
	return out, nil
}

func (e *Embedder) add(v []float32, feature string, weight float32) {
	h := fnv.New64a()
	h.Write([]byte(feature))
	x := h.Sum64()
	if x>>63 == 1 {
		weight = -weight
	}
	v[x%uint64(e.dims)] += weight
}
