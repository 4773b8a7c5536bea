package memory

import (
	"context"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/lexrank"
)

func TestTokenize(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"The cat sat on a mat.", []string{"cat", "sat", "mat"}},
		{"Ada's favourite CITIES: Lisbon, Porto", []string{"ada", "favourite", "city", "lisbon", "porto"}},
		{"don't forget the user’s keys", []string{"forget", "user", "key"}},
		{"seats glass status Paris bus", []string{"seat", "glass", "status", "paris", "bus"}},
		{"flies series", []string{"fly", "sery"}},
		{"room 42, floor 3, x", []string{"room", "42", "floor"}},
		{"snake_case kebab-case e-mail", []string{"snake", "case", "kebab", "case", "mail"}},
		{"Café crème ÉTÉ", []string{"café", "crème", "été"}},
		{"東京 に 住んでいる", []string{"東京", "住んでいる"}},
		{"bad \xff\xfe bytes", []string{"bad", "byte"}},
	} {
		assert.Equal(t, c.want, tokenize(c.text, nil), "%q", c.text)
	}
	assert.Equal(t, []string{"old", "new"}, tokenize("new", []string{"old"}), "it appends")
}

func TestQueryTerms(t *testing.T) {
	assert.Equal(t, []string{"tea", "green"}, queryTerms("tea, green teas and TEA"))
	assert.Empty(t, queryTerms("what is it?"))
	var b strings.Builder
	for i := range 100 {
		b.WriteString("w")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(" ")
	}
	terms := queryTerms(b.String())
	assert.Len(t, terms, MaxQueryTerms, "the first words count")
	assert.Equal(t, "wx", terms[0])
}

func TestUnit(t *testing.T) {
	u, ok := unit([]float32{3, 4})
	require.True(t, ok)
	assert.InDeltaSlice(t, []float32{0.6, 0.8}, u, 1e-7)
	u, ok = unit([]float32{0, 0})
	require.True(t, ok)
	assert.Equal(t, []float32{0, 0}, u)
	u, ok = unit([]float32{math.MaxFloat32, math.MaxFloat32})
	require.True(t, ok, "large but finite")
	assert.InDelta(t, 1/math.Sqrt2, u[0], 1e-6)
	_, ok = unit([]float32{1, float32(math.NaN())})
	assert.False(t, ok)
}

// FuzzRetrieve feeds arbitrary text, as a model may write it, to the
// tokenizer and the ranker: they never panic, terms are clean, and the
// documents come back in order, with finite scores, at most the limit.
func FuzzRetrieve(f *testing.F) {
	for _, seed := range []string{"", "window seat", "Ada's CITIES", "\xff\xfe", "東京", strings.Repeat("tea ", 100), "e\u0301 \u2019s ''''", "0 00 000"} {
		f.Add(seed, "tea and window seats", 3)
	}
	f.Fuzz(func(t *testing.T, query, text string, limit int) {
		for _, term := range tokenize(query, nil) {
			if !utf8.ValidString(term) || utf8.RuneCountInString(term) < 1 || term != strings.ToLower(term) || lexrank.IsStopWord(term) {
				t.Fatalf("bad term %q of %q", term, query)
			}
			if strings.ContainsFunc(term, lexrank.IsSep) {
				t.Fatalf("term %q of %q holds a separator", term, query)
			}
		}
		if len(queryTerms(query)) > MaxQueryTerms {
			t.Fatalf("too many terms")
		}
		s, err := New(WithMaxEntries(8))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, e := range []string{text, query, "window seat", "green tea", text + " " + query} {
			if _, err := s.Add(ctx, Entry{Text: e}); err != nil && strings.TrimSpace(e) != "" && utf8.ValidString(e) && len(e) <= DefaultMaxEntrySize {
				t.Fatalf("add %q: %v", e, err)
			}
		}
		limit %= 20
		docs, err := s.Retrieve(ctx, query, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := limit
		if want <= 0 {
			want = 5
		}
		if len(docs) > want {
			t.Fatalf("%d documents for a limit of %d", len(docs), limit)
		}
		for i, d := range docs {
			if math.IsNaN(d.Score) || math.IsInf(d.Score, 0) || d.Score < 0 {
				t.Fatalf("score %v", d.Score)
			}
			if i > 0 && d.Score > docs[i-1].Score {
				t.Fatalf("out of order: %v after %v", d.Score, docs[i-1].Score)
			}
		}
		again, err := s.Retrieve(ctx, query, limit)
		if err != nil {
			t.Fatal(err)
		}
		assert.Equal(t, docs, again, "the same on every run")
	})
}
