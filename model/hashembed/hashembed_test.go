package hashembed_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/model/hashembed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

func TestSharedWordsAreNearAndOthersFar(t *testing.T) {
	e := hashembed.New(0)
	assert.Equal(t, hashembed.DefaultDimensions, e.Dimensions())
	v, err := e.Embed(t.Context(), []string{
		"the user prefers green tea",
		"The user prefers TEA, green!",
		"which tea does the user prefer",
		"deploy the kubernetes cluster",
	})
	require.NoError(t, err)
	require.Len(t, v, 4)
	assert.InDelta(t, 1, cosine(v[0], v[1]), 1e-6, "same words, other case and order")
	assert.Greater(t, cosine(v[0], v[2]), cosine(v[0], v[3])+0.2, "stems shared beat a stranger")
	again, err := e.Embed(t.Context(), []string{"the user prefers green tea"})
	require.NoError(t, err)
	assert.Equal(t, v[0], again[0], "deterministic")
}

func TestEmptyTextIsTheZeroVector(t *testing.T) {
	v, err := hashembed.New(8).Embed(t.Context(), []string{"", "  ,, "})
	require.NoError(t, err)
	assert.Equal(t, make([]float32, 8), v[0])
	assert.Equal(t, make([]float32, 8), v[1])
}

func TestCanceledContextIsReported(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := hashembed.New(8).Embed(ctx, []string{"x"})
	assert.ErrorIs(t, err, context.Canceled)
}
