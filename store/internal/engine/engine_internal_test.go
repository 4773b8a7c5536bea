package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestInsertTopKeepsTheBestInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var all, top []scored
	for i := range 200 {
		h := scored{row: Row{NS: "n", Key: fmt.Sprint(i)}, score: float64(r.IntN(50))}
		all = append(all, h)
		top = insertTop(top, h, 7)
	}
	slices.SortFunc(all, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	assert.Equal(t, all[:7], top)
}

func TestIndexKeysSplitBackIntoTheirParts(t *testing.T) {
	for _, r := range []Row{{NS: "a\x1fb\x1f", Key: "k", Seq: 7}, {NS: "x\x1f", Key: "key with \x1f and 9", Seq: 12345}} {
		ns, key, seq := splitIndexKey(indexKey(r))
		assert.Equal(t, r.NS, ns)
		assert.Equal(t, r.Key, key)
		assert.Equal(t, r.Seq, seq)
	}
}

func TestNormalizeMakesUnitVectorsAndKeepsZero(t *testing.T) {
	v := normalize([]float32{3, 4})
	assert.InDelta(t, 0.6, v[0], 1e-6)
	assert.InDelta(t, 0.8, v[1], 1e-6)
	assert.InDelta(t, 1, dot(v, v), 1e-6)
	assert.Equal(t, []float32{0, 0}, normalize([]float32{0, 0}))
}
