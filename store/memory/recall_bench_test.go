package memory_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
)

// tableEmbedder embeds "v<i>" as vecs[i]: clustered vectors, as real
// embeddings of texts on a few topics are.
type tableEmbedder struct{ vecs [][]float32 }

func (e *tableEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "v"))
		if err != nil {
			return nil, err
		}
		out[i] = e.vecs[n]
	}
	return out, nil
}

func clustered(r *rand.Rand, n, dims, clusters int, spread float64) [][]float32 {
	centers := make([][]float64, clusters)
	for i := range centers {
		centers[i] = make([]float64, dims)
		for j := range centers[i] {
			centers[i][j] = r.NormFloat64() / math.Sqrt(float64(dims))
		}
	}
	out := make([][]float32, n)
	for i := range out {
		c := centers[r.IntN(clusters)]
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(c[j] + spread*r.NormFloat64()/math.Sqrt(float64(dims)))
		}
		out[i] = v
	}
	return out
}

// BenchmarkApproximateRecall measures what the approximate index gives up:
// the share of the exact ten nearest it returns (recall@10), its build
// time, and its search latency beside the exact scan's, on 10,000
// clustered 256-dimension vectors.
func BenchmarkApproximateRecall(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: builds an index of 10,000 items")
	}
	const n, queries = 10_000, 50
	r := rand.New(rand.NewPCG(1, 2))
	vecs := clustered(r, n+queries, 256, 100, 0.3)
	e := &tableEmbedder{vecs: vecs}
	exact := memory.New(store.WithEmbedder(e))
	approx := memory.New(store.WithEmbedder(e), store.WithExactLimit(1000))
	b.Cleanup(func() { _ = exact.Close(); _ = approx.Close() })
	ns := []string{"items"}
	for start := 0; start < n; start += 1000 {
		var ops []store.Op
		for i := start; i < start+1000; i++ {
			ops = append(ops, store.PutOp(ns, fmt.Sprint(i), []byte(fmt.Sprintf(`{"t":"v%d"}`, i)), store.WithIndexFields("t")))
		}
		_, err := exact.Apply(b.Context(), ops)
		require.NoError(b, err)
		_, err = approx.Apply(b.Context(), ops)
		require.NoError(b, err)
	}
	t := time.Now()
	_, err := approx.Search(b.Context(), ns, store.Query{Text: "v0"}) // builds the index
	require.NoError(b, err)
	build := time.Since(t)
	var hits, total int
	var te, ta time.Duration
	for b.Loop() {
		hits, total, te, ta = 0, 0, 0, 0
		for q := n; q < n+queries; q++ {
			query := store.Query{Text: fmt.Sprintf("v%d", q), Limit: 10}
			t := time.Now()
			want, err := exact.Search(b.Context(), ns, query)
			require.NoError(b, err)
			te += time.Since(t)
			t = time.Now()
			got, err := approx.Search(b.Context(), ns, query)
			require.NoError(b, err)
			ta += time.Since(t)
			found := map[string]bool{}
			for _, it := range got {
				found[it.Key] = true
			}
			for _, it := range want {
				total++
				if found[it.Key] {
					hits++
				}
			}
		}
	}
	b.ReportMetric(float64(hits)/float64(total), "recall@10")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(float64(te.Microseconds())/queries, "exact-µs/query")
	b.ReportMetric(float64(ta.Microseconds())/queries, "approx-µs/query")
}
