package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
	"github.com/trellis-go/trellis/store/postgres"
	"github.com/trellis-go/trellis/store/sqlite"
	"github.com/trellis-go/trellis/store/storetest"
)

// backends opens an empty store of each backend; Postgres only when the
// test server answers.
func backends(b *testing.B) map[string]func(b *testing.B, opts ...store.Option) store.Store {
	return map[string]func(b *testing.B, opts ...store.Option) store.Store{
		"memory": func(b *testing.B, opts ...store.Option) store.Store {
			s := memory.New(opts...)
			b.Cleanup(func() { _ = s.Close() })
			return s
		},
		"sqlite": func(b *testing.B, opts ...store.Option) store.Store {
			s, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), opts...)
			require.NoError(b, err)
			b.Cleanup(func() { _ = s.Close() })
			return s
		},
		"postgres": func(b *testing.B, opts ...store.Option) store.Store {
			pool := pgtest.Pool(b)
			schema := pgtest.Schema(b, pool, "storebench_")
			s, err := postgres.New(b.Context(), pool, append(opts, store.WithSchema(schema))...)
			require.NoError(b, err)
			b.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

var benchNS = []string{"users", "u1", "memories"}

// fill puts n items in batches of 500: {"text": "...", "n": i, "kind": i%10}.
func fill(b *testing.B, s store.Store, n int) {
	b.Helper()
	for start := 0; start < n; start += 500 {
		ops := make([]store.Op, 0, 500)
		for i := start; i < min(start+500, n); i++ {
			v := fmt.Sprintf(`{"text":"note %d about topic%d and topic%d","n":%d,"kind":%d}`, i, i%97, i%13, i, i%10)
			ops = append(ops, store.PutOp(benchNS, fmt.Sprintf("k%d", i), []byte(v)))
		}
		_, err := s.Apply(b.Context(), ops)
		require.NoError(b, err)
	}
}

// latencies records each op's time and reports p50 and p99.
type latencies []time.Duration

func (l *latencies) time(f func()) {
	t := time.Now()
	f()
	*l = append(*l, time.Since(t))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkPut rewrites items of a store that holds n of them, spread
// over the keys so that each put finds its row among the others.
func BenchmarkPut(b *testing.B) {
	timeKeyed(b, func(ctx context.Context, s store.Store, key string) error {
		_, err := s.Put(ctx, benchNS, key, []byte(`{"text":"a note","n":1}`))
		return err
	})
}

// BenchmarkGet reads items of a store that holds n of them.
func BenchmarkGet(b *testing.B) {
	timeKeyed(b, func(ctx context.Context, s store.Store, key string) error {
		_, err := s.Get(ctx, benchNS, key)
		return err
	})
}

// timeKeyed times op on each backend over a store filled with each of
// searchSizes' counts, on keys spread over all of them, and reports the
// latencies.
func timeKeyed(b *testing.B, op func(ctx context.Context, s store.Store, key string) error) {
	sizes := searchSizes()
	for name, open := range backends(b) {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%dk", name, n/1000), func(b *testing.B) {
				s := open(b)
				fill(b, s, n)
				var lat latencies
				i := 0
				for b.Loop() {
					lat.time(func() { require.NoError(b, op(b.Context(), s, fmt.Sprintf("k%d", spread(i, n)))) })
					i++
				}
				lat.report(b)
			})
		}
	}
}

// spread maps the i-th operation to one of n keys, visiting them out of
// their order of insertion (7919 is a prime that divides neither 10,000
// nor 100,000).
func spread(i, n int) int { return i * 7919 % n }

// searchSizes are the item counts the benchmarks fill a store with:
// 10,000, and 100,000 without -short.
func searchSizes() []int {
	if testing.Short() {
		return []int{10_000}
	}
	return []int{10_000, 100_000}
}

// timeSearches times s.Search of q under "users", which must find ten
// items, and reports the latencies.
func timeSearches(b *testing.B, s store.Store, q store.Query) {
	var lat latencies
	for b.Loop() {
		lat.time(func() {
			items, err := s.Search(b.Context(), []string{"users"}, q)
			require.NoError(b, err)
			require.Len(b, items, 10)
		})
	}
	lat.report(b)
}

func BenchmarkSearchFilter(b *testing.B) {
	sizes := searchSizes()
	for name, open := range backends(b) {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%dk", name, n/1000), func(b *testing.B) {
				s := open(b)
				fill(b, s, n)
				q := store.Query{Filter: []store.Cond{store.Eq("kind", 3), store.Gte("n", n/2)}, Limit: 10}
				timeSearches(b, s, q)
			})
		}
	}
}

// BenchmarkSearchRange searches with range conditions alone, which the SQL
// backends evaluate in the database: a selective one on a number (one item
// in a hundred) and one on a string.
func BenchmarkSearchRange(b *testing.B) {
	sizes := searchSizes()
	for name, open := range backends(b) {
		for _, n := range sizes {
			s := open(b)
			fill(b, s, n)
			for what, q := range map[string]store.Query{
				"number": {Filter: []store.Cond{store.Gte("n", n/2), store.Lt("n", n/2+n/100)}, Limit: 10},
				"string": {Filter: []store.Cond{store.Gte("text", "note 5"), store.Lt("text", "note 6")}, Limit: 10},
			} {
				b.Run(fmt.Sprintf("%s/%dk/%s", name, n/1000, what), func(b *testing.B) {
					timeSearches(b, s, q)
				})
			}
		}
	}
}

// BenchmarkSearchMeaning compares the exact scan with the approximate
// index (WithExactLimit) on the same items. At 100,000 items (without
// -short) building the index takes minutes before the first search.
func BenchmarkSearchMeaning(b *testing.B) {
	sizes := searchSizes()
	for name, open := range backends(b) {
		for _, n := range sizes {
			for _, mode := range []string{"exact", "approximate"} {
				b.Run(fmt.Sprintf("%s/%dk/%s", name, n/1000, mode), func(b *testing.B) {
					opts := []store.Option{store.WithEmbedder(&storetest.Embedder{Dims: 256}), store.WithIndex("text")}
					if mode == "approximate" {
						opts = append(opts, store.WithExactLimit(1000))
					}
					s := open(b, opts...)
					fill(b, s, n)
					// The first search builds the index, when there is one.
					_, err := s.Search(b.Context(), []string{"users"}, store.Query{Text: "note about topic5", Limit: 10})
					require.NoError(b, err)
					var lat latencies
					i := 0
					for b.Loop() {
						lat.time(func() {
							items, err := s.Search(b.Context(), []string{"users"},
								store.Query{Text: fmt.Sprintf("note %d about topic%d", i%n, i%97), Limit: 10})
							require.NoError(b, err)
							require.Len(b, items, 10)
						})
						i++
					}
					lat.report(b)
				})
			}
		}
	}
}
