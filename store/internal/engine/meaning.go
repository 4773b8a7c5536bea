package engine

import (
	"cmp"
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	// An HNSW graph (Malkov and Yashunin's hierarchical navigable small
	// worlds) for the approximate index; pure Go.
	"github.com/coder/hnsw"

	"github.com/trellis-go/trellis/store"
)

// scored is a row with its similarity to a query.
type scored struct {
	row   Row
	score float64
}

// searchMeaning returns the items under the encoded prefix p nearest to
// q.Text. Under ExactLimit embedded items it compares the query with each;
// above, it asks the prefix's approximate index for candidates and falls
// back to the exact scan when too few of them pass the filter.
func (s *Store) searchMeaning(ctx context.Context, p string, q store.Query, f *store.Filter) ([]store.Item, error) {
	vecs, err := s.embed(ctx, []string{q.Text})
	if err != nil {
		return nil, err
	}
	qv := vecs[0]
	want := q.Offset + q.Limit
	if idx := s.index(p); idx != nil {
		hits, ok, err := s.searchIndex(ctx, idx, qv, q, f, want)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.items(hits, q), nil
		}
	}
	var hits []scored
	var all []Row // kept to build an index when the prefix turns out large
	n := 0
	build := s.cfg.ExactLimit > 0
	var conds []store.Cond
	if !build {
		conds = f.Conds() // an index is built from every row
	}
	err = s.d.Scan(ctx, ScanOptions{Prefix: p, Vectors: true, Embedded: true, Filter: conds}, s.now(), func(r Row) error {
		n++
		if build {
			all = append(all, Row{NS: r.NS, Key: r.Key, Vector: r.Vector, Seq: r.Seq})
		}
		sc := dot(qv, r.Vector)
		if sc < q.MinScore || !f.Match(r.Value) {
			return nil
		}
		hits = insertTop(hits, scored{row: r, score: sc}, want)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if build && n > s.cfg.ExactLimit {
		slices.SortFunc(all, func(a, b Row) int { return cmp.Compare(a.Seq, b.Seq) })
		s.buildIndex(p, all)
	}
	return s.items(hits, q), nil
}

func (s *Store) items(hits []scored, q store.Query) []store.Item {
	hits = page(hits, q.Offset, q.Limit)
	items := make([]store.Item, len(hits))
	for i, h := range hits {
		items[i] = toItem(h.row, nil)
		items[i].Score = h.score
	}
	return items
}

// insertTop adds h to top, which it keeps sorted best first and at most n
// long.
func insertTop(top []scored, h scored, n int) []scored {
	if len(top) == n && !better(h, top[n-1]) {
		return top
	}
	i, _ := slices.BinarySearchFunc(top, h, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	if len(top) < n {
		top = append(top, scored{})
	}
	copy(top[i+1:], top[i:len(top)-1])
	top[i] = h
	return top
}

// better orders hits by score, then by namespace and key.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if c := cmp.Compare(a.row.NS, b.row.NS); c != 0 {
		return c < 0
	}
	return a.row.Key < b.row.Key
}

// annIndex is the approximate index of one search prefix: an HNSW graph
// of the prefix's embedded items, kept up to date by reading the rows
// written after seq before each search.
//
// The graph only grows: a row written anew is added as a new node (its key
// holds the row's Seq) and the old node stays, stale; a candidate whose
// Seq is not its row's is skipped. (The library's Delete leaves graphs
// that its Search can panic on.) When most nodes are stale the index is
// dropped and the next search rebuilds it.
type annIndex struct {
	prefix string
	mu     sync.Mutex
	g      *hnsw.Graph[string]
	seq    int64
	stale  int
	// recent holds the nodes added since the graph was built, up to
	// maxRecent, which every search also compares with the query: a greedy
	// walk of the graph can miss a new item far from the others, and the
	// item written last is the one a user most expects to be found.
	recent map[string]bool
}

// indexLinks is the most neighbours a node of the index links to (the
// graph's M), and minCandidates the fewest candidates a search asks the
// graph for. The library keeps each node's nearest neighbours without the
// HNSW paper's diversity heuristic, and its search keeps as many results
// as it is asked for, not EfSearch: on clustered vectors (10,000 in 100
// clusters, 256 dimensions) its default M of 16 found at best half of the
// true ten nearest whatever the candidates, while an M of 32 found 85% of
// them among 64 candidates and 92% among 128, for a build about three
// times as long. The candidates are read from the backend at once where it
// can (ManyGetter), else one read each.
const (
	indexLinks    = 32
	minCandidates = 128
)

// maxRecent bounds annIndex.recent; older additions are found through the
// graph alone.
const maxRecent = 1024

func indexKey(r Row) string { return r.NS + "\x00" + r.Key + "\x00" + strconv.FormatInt(r.Seq, 10) }

func splitIndexKey(k string) (ns, key string, seq int64) {
	ns, rest, _ := strings.Cut(k, "\x00")
	i := strings.LastIndexByte(rest, 0)
	seq, _ = strconv.ParseInt(rest[i+1:], 10, 64)
	return ns, rest[:i], seq
}

func (s *Store) index(p string) *annIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.indexes[p]
}

func (s *Store) dropIndex(idx *annIndex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexes[idx.prefix] == idx {
		delete(s.indexes, idx.prefix)
	}
}

// buildIndex makes the index of prefix p from its rows.
func (s *Store) buildIndex(p string, rows []Row) {
	g := hnsw.NewGraph[string]()
	g.Distance = hnsw.CosineDistance
	g.M = indexLinks
	g.EfSearch = 64
	g.Rng = rand.New(rand.NewSource(1)) // the same graph for the same rows
	idx := &annIndex{prefix: p, g: g, recent: map[string]bool{}}
	nodes := make([]hnsw.Node[string], 0, len(rows))
	for _, r := range rows {
		if len(r.Vector) != len(rows[0].Vector) {
			return // vectors of several sizes: the embedder changed; stay exact
		}
		nodes = append(nodes, hnsw.MakeNode(indexKey(r), r.Vector))
		idx.seq = max(idx.seq, r.Seq)
	}
	if err := guard(func() { g.Add(nodes...) }); err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexes != nil && s.indexes[p] == nil {
		s.indexes[p] = idx
	}
}

// guard runs f, turning a panic of the index library into an error.
func guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("approximate index: %v", r)
		}
	}()
	f()
	return nil
}

// searchIndex catches idx up with the rows written since it last looked,
// takes candidates from it and reads them. ok is false when too few of
// them are live and pass the filter, or the index failed: the caller then
// scans.
func (s *Store) searchIndex(ctx context.Context, idx *annIndex, qv []float32, q store.Query, f *store.Filter, want int) (hits []scored, ok bool, err error) {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	now := s.now()
	var added []hnsw.Node[string]
	err = s.d.Scan(ctx, ScanOptions{Prefix: idx.prefix, AfterSeq: idx.seq, Vectors: true}, now, func(r Row) error {
		idx.seq = max(idx.seq, r.Seq)
		idx.stale++ // the row's earlier node, if it had one
		if len(r.Vector) != 0 && len(r.Vector) == idx.g.Dims() {
			k := indexKey(r)
			added = append(added, hnsw.MakeNode(k, r.Vector))
			if len(idx.recent) < maxRecent {
				idx.recent[k] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: search: %w", err)
	}
	if len(qv) != idx.g.Dims() {
		return nil, false, nil
	}
	// Ask for more than wanted: some candidates may be stale, gone,
	// expired or filtered out, and the candidates are ranked again exactly.
	k := want * 2
	if !f.Empty() || q.MinScore > 0 {
		k = want * 8
	}
	k = max(k, minCandidates)
	var cands []hnsw.Node[string]
	if err := guard(func() {
		idx.g.Add(added...)
		cands = idx.g.Search(qv, k)
	}); err != nil {
		s.dropIndex(idx)
		return nil, false, nil
	}
	if idx.stale > idx.g.Len()/2 {
		s.dropIndex(idx) // the next search rebuilds it
	}
	check := make([]string, 0, len(cands)+len(idx.recent))
	for _, c := range cands {
		if !idx.recent[c.Key] {
			check = append(check, c.Key)
		}
	}
	for key := range idx.recent {
		check = append(check, key)
	}
	rows, err := s.getChecked(ctx, check, now)
	if err != nil {
		return nil, false, fmt.Errorf("store: search: %w", err)
	}
	for _, c := range check {
		ns, key, seq := splitIndexKey(c)
		r, live := rows[Key{ns, key}]
		if !live || r.Seq != seq || len(r.Vector) == 0 {
			delete(idx.recent, c)
			continue
		}
		sc := dot(qv, r.Vector)
		if sc < q.MinScore || !f.Match(r.Value) {
			continue
		}
		hits = insertTop(hits, scored{row: r, score: sc}, want)
	}
	return hits, len(hits) >= want || len(cands) >= idx.g.Len(), nil
}

// getChecked reads the live rows of the index keys check (their rows'
// namespaces and keys), at once when the driver can (ManyGetter), else
// one by one.
func (s *Store) getChecked(ctx context.Context, check []string, now time.Time) (map[Key]Row, error) {
	keys := make([]Key, len(check))
	for i, c := range check {
		ns, key, _ := splitIndexKey(c)
		keys[i] = Key{ns, key}
	}
	rows := make(map[Key]Row, len(keys))
	if mg, ok := s.d.(ManyGetter); ok {
		found, err := mg.GetMany(ctx, keys, now)
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			rows[Key{r.NS, r.Key}] = r
		}
		return rows, nil
	}
	for _, k := range keys {
		r, live, err := s.d.Get(ctx, k.NS, k.Key, now)
		if err != nil {
			return nil, err
		}
		if live {
			rows[k] = r
		}
	}
	return rows, nil
}
