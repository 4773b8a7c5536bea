package lexrank_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/lexrank"
)

func TestTokenize(t *testing.T) {
	assert.Equal(t, []string{"ada", "favourite", "city", "lisbon"}, lexrank.Tokenize("Ada's favourite CITIES: Lisbon", nil))
	assert.Equal(t, []string{"old", "new"}, lexrank.Tokenize("the new", []string{"old"}), "it appends")
	assert.Equal(t, []string{"owns", "others", "cans", "tin"}, lexrank.Tokenize("owns others cans of tin", nil),
		"plurals of stop words stay plural")
	assert.True(t, lexrank.IsStopWord("which"))
	assert.False(t, lexrank.IsStopWord("tea"))
	assert.True(t, lexrank.IsSep('-'))
	assert.False(t, lexrank.IsSep('\''))
	assert.False(t, lexrank.IsSep('é'))
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"cities": "city", "seats": "seat", "glass": "glass", "status": "status",
		"paris": "paris", "bus": "bus", "boxes": "boxe", "its": "its", "flies": "fly",
	} {
		assert.Equal(t, want, lexrank.Fold(in), in)
	}
}

func TestQueryTerms(t *testing.T) {
	assert.Equal(t, []string{"tea", "green"}, lexrank.QueryTerms("tea, green teas and TEA"))
	assert.Empty(t, lexrank.QueryTerms("what is it?"))
}

func TestCounts(t *testing.T) {
	assert.Equal(t, map[string]int{"tea": 2, "cup": 1}, lexrank.Counts([]string{"tea", "cup", "tea"}))
	assert.Empty(t, lexrank.Counts(nil))
}

func TestBM25(t *testing.T) {
	df := map[string]int{"tea": 1, "cup": 3}
	ws := lexrank.Weights([]string{"tea", "missing", "cup"}, 4, func(term string) int { return df[term] })
	require.Len(t, ws, 2, "terms no text holds are left out")
	assert.Equal(t, "tea", ws[0].Term)
	assert.InDelta(t, math.Log(1+(4-1+0.5)/(1+0.5)), ws[0].IDF, 1e-12)
	assert.Greater(t, ws[0].IDF, ws[1].IDF, "rare terms weigh more")
	assert.Nil(t, lexrank.Weights([]string{"missing"}, 4, func(string) int { return 0 }))

	avg := lexrank.AvgLen(20, 4)
	assert.Equal(t, 5.0, avg)
	assert.Equal(t, 1.0, lexrank.AvgLen(0, 4))
	assert.Equal(t, 1.0, lexrank.AvgLen(0, 0))

	// One occurrence in a text of average length scores the idf exactly.
	assert.InDelta(t, ws[0].IDF, lexrank.Score(ws[:1], map[string]int{"tea": 1}, 5, avg), 1e-12)
	once := lexrank.Score(ws, map[string]int{"tea": 1}, 5, avg)
	twice := lexrank.Score(ws, map[string]int{"tea": 2}, 5, avg)
	longer := lexrank.Score(ws, map[string]int{"tea": 1}, 50, avg)
	assert.Greater(t, twice, once)
	assert.Less(t, twice, 2*once, "counts saturate")
	assert.Less(t, longer, once, "long texts are discounted")
	assert.Zero(t, lexrank.Score(ws, map[string]int{"other": 3}, 5, avg))
}

func TestVectors(t *testing.T) {
	u, ok := lexrank.Unit([]float32{3, 4})
	require.True(t, ok)
	assert.InDeltaSlice(t, []float32{0.6, 0.8}, u, 1e-7)
	assert.InDelta(t, 1, lexrank.Dot(u, u), 1e-6)
	assert.InDelta(t, 0.6, lexrank.Dot(u, []float32{1, 0}), 1e-7)
	z, ok := lexrank.Unit([]float32{0, 0})
	require.True(t, ok)
	assert.Equal(t, []float32{0, 0}, z)
	_, ok = lexrank.Unit([]float32{float32(math.Inf(1))})
	assert.False(t, ok)
}
