package memory_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/memory"
)

// concepts is the vocabulary of the fake embedding model: each word adds
// one to the dimension of its concept, so words of one concept are
// similar without sharing a letter.
var concepts = map[string]int{
	"car": 0, "automobile": 0, "drive": 0, "vehicle": 0,
	"cat": 1, "kitten": 1, "pet": 1,
	"pizza": 2, "food": 2, "dinner": 2,
}

// conceptEmbedder is an Embedder over concepts; it counts its calls and
// texts.
type conceptEmbedder struct {
	calls, texts atomic.Int32
}

func (c *conceptEmbedder) embed(_ context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	c.texts.Add(int32(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 3)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			if d, ok := concepts[strings.Trim(w, ".,?!")]; ok {
				v[d]++
			}
		}
		out[i] = v
	}
	return out, nil
}

func TestEmbedderRanksByMeaning(t *testing.T) {
	ctx := context.Background()
	var emb conceptEmbedder
	s := newStore(t, memory.WithEmbedder(emb.embed))
	texts := []string{"I drive a car to work", "My kitten is a cat", "Pizza for dinner on Fridays", "The pet cat likes pizza"}
	ids := map[string]string{}
	for i, text := range texts {
		id, err := s.Add(ctx, memory.Entry{Text: text, CreatedAt: base.Add(timeMinutes(i))})
		require.NoError(t, err)
		ids[text] = id
	}
	assert.Equal(t, int32(4), emb.texts.Load(), "each entry embedded once")

	docs, err := s.Retrieve(ctx, "automobile", 2)
	require.NoError(t, err)
	require.Len(t, docs, 2)
	assert.Equal(t, ids["I drive a car to work"], docs[0].ID, "no shared word, the same meaning")
	assert.InDelta(t, 1.0, docs[0].Score, 1e-6)
	assert.InDelta(t, 0.0, docs[1].Score, 1e-6, "the rest follow, newest first")
	assert.Equal(t, ids["The pet cat likes pizza"], docs[1].ID)

	docs, err = s.Retrieve(ctx, "food", 4)
	require.NoError(t, err)
	require.Len(t, docs, 4)
	assert.Equal(t, ids["Pizza for dinner on Fridays"], docs[0].ID)
	assert.InDelta(t, 1.0, docs[0].Score, 1e-6)
	assert.Equal(t, ids["The pet cat likes pizza"], docs[1].ID)
	assert.InDelta(t, 1/math.Sqrt(5), docs[1].Score, 1e-6)

	calls := emb.calls.Load()
	docs, err = s.Retrieve(ctx, " ", 1)
	require.NoError(t, err)
	assert.Equal(t, ids["The pet cat likes pizza"], docs[0].ID, "an empty query gives the newest")
	assert.Equal(t, calls, emb.calls.Load(), "without embedding it")

	// Loading embeds the entries again, in one call.
	var buf strings.Builder
	require.NoError(t, s.Save(&buf))
	var emb2 conceptEmbedder
	loaded := newStore(t, memory.WithEmbedder(emb2.embed))
	require.NoError(t, loaded.Load(ctx, strings.NewReader(buf.String())))
	assert.Equal(t, int32(1), emb2.calls.Load())
	assert.Equal(t, int32(4), emb2.texts.Load())
	docs, err = loaded.Retrieve(ctx, "kitten", 1)
	require.NoError(t, err)
	assert.Equal(t, ids["My kitten is a cat"], docs[0].ID)
}

func TestEmbedderFailures(t *testing.T) {
	ctx := context.Background()
	fixed := func(vecs [][]float32, err error) memory.Embedder {
		return func(context.Context, []string) ([][]float32, error) { return vecs, err }
	}
	for _, c := range []struct {
		name string
		e    memory.Embedder
		want string
	}{
		{"error", fixed(nil, errors.New("model offline")), "memory: embedding failed: model offline"},
		{"count", fixed([][]float32{{1}, {2}}, nil), "the embedder gave 2 vectors for 1 texts"},
		{"empty", fixed([][]float32{{}}, nil), "an empty vector"},
		{"nan", fixed([][]float32{{1, float32(math.NaN())}}, nil), "not a finite number"},
		{"inf", fixed([][]float32{{float32(math.Inf(-1))}}, nil), "not a finite number"},
	} {
		s := newStore(t, memory.WithEmbedder(c.e))
		_, err := s.Add(ctx, memory.Entry{Text: "likes tea"})
		assert.ErrorIs(t, err, memory.ErrEmbedding, c.name)
		assert.ErrorContains(t, err, c.want, c.name)
		list, err := s.List(ctx, memory.Filter{})
		require.NoError(t, err)
		assert.Empty(t, list, "%s: nothing is stored", c.name)
	}

	// Vectors of another length than the query's never match: after the
	// embedding model changes, the entries it did not embed are not found
	// by meaning (the store.Store's rule), but stay listed.
	dim := 2
	s := newStore(t, memory.WithEmbedder(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = make([]float32, dim)
			out[i][0] = 1
		}
		return out, nil
	}))
	_, err := s.Add(ctx, memory.Entry{Text: "likes tea"})
	require.NoError(t, err)
	dim = 3
	_, err = s.Add(ctx, memory.Entry{Text: "likes coffee"})
	require.NoError(t, err)
	docs, err := s.Retrieve(ctx, "tea", 5)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "likes coffee", docs[0].Content, "only the vector of the query's length")
	dim = 2
	docs, err = s.Retrieve(ctx, "tea", 5)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "likes tea", docs[0].Content)
	list, err := s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 2)

	// A zero vector matches nothing, and divides by nothing.
	s = newStore(t, memory.WithEmbedder(fixed([][]float32{{0, 0}}, nil)))
	_, err = s.Add(ctx, memory.Entry{Text: "likes tea"})
	require.NoError(t, err)
	docs, err = s.Retrieve(ctx, "tea", 1)
	require.NoError(t, err)
	assert.Zero(t, docs[0].Score)
}
