package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/store"
)

// Store is a store.Store over a Driver.
type Store struct {
	d      Driver
	cfg    store.Config
	closed atomic.Bool

	mu      sync.Mutex
	indexes map[string]*annIndex // by encoded search prefix
}

var _ store.Store = (*Store)(nil)

// New returns a store over d configured by cfg.
func New(d Driver, cfg store.Config) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{d: d, cfg: cfg, indexes: map[string]*annIndex{}}
}

// Driver returns the driver the store runs on.
func (s *Store) Driver() Driver { return s.d }

func (s *Store) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, ns []string, key string) (store.Item, error) {
	if err := s.check(ctx); err != nil {
		return store.Item{}, err
	}
	if err := store.ValidateNamespace(ns); err != nil {
		return store.Item{}, err
	}
	if err := store.ValidateKey(key); err != nil {
		return store.Item{}, err
	}
	row, ok, err := s.d.Get(ctx, store.EncodeNamespace(ns), key, s.now())
	if err != nil {
		return store.Item{}, fmt.Errorf("store: get %v/%s: %w", ns, key, err)
	}
	if !ok {
		return store.Item{}, fmt.Errorf("%w: %v/%s", store.ErrNotFound, ns, key)
	}
	return toItem(row, ns), nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, ns []string, key string, value json.RawMessage, opts ...store.PutOption) (store.Item, error) {
	return s.one(ctx, store.PutOp(ns, key, nonNil(value), opts...))
}

// PutIf implements store.Store.
func (s *Store) PutIf(ctx context.Context, ns []string, key string, value json.RawMessage, version int64, opts ...store.PutOption) (store.Item, error) {
	op := store.PutOp(ns, key, nonNil(value), opts...)
	op.Conditional, op.IfVersion = true, version
	return s.one(ctx, op)
}

// nonNil keeps a nil value from turning a put into a delete: it fails
// validation instead.
func nonNil(v json.RawMessage) json.RawMessage {
	if v == nil {
		return json.RawMessage{}
	}
	return v
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, ns []string, key string) error {
	_, err := s.one(ctx, store.DeleteOp(ns, key))
	return err
}

func (s *Store) one(ctx context.Context, op store.Op) (store.Item, error) {
	items, err := s.Apply(ctx, []store.Op{op})
	if err != nil {
		return store.Item{}, err
	}
	return items[0], nil
}

// Apply implements store.Store.
func (s *Store) Apply(ctx context.Context, ops []store.Op) ([]store.Item, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	now := s.now()
	ws := make([]Write, len(ops))
	var texts []string
	var embedAt []int
	for i, op := range ops {
		if err := store.ValidateOp(op); err != nil {
			return nil, fmt.Errorf("store: op %d: %w", i, err)
		}
		w := Write{NS: store.EncodeNamespace(op.Namespace), Key: op.Key, Conditional: op.Conditional, IfVersion: op.IfVersion}
		if op.Value != nil {
			w.Value = slices.Clone(op.Value)
			if op.TTL > 0 {
				w.ExpiresAt = now.Add(op.TTL)
			}
			if s.cfg.Embedder != nil {
				fields := op.Index
				if fields == nil {
					fields = s.cfg.Index
					if fields == nil {
						fields = []string{"$"}
					}
				}
				if text, ok := store.IndexText(op.Value, fields); ok {
					texts = append(texts, text)
					embedAt = append(embedAt, i)
				}
			}
		}
		ws[i] = w
	}
	if len(texts) > 0 {
		vecs, err := s.embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		for j, i := range embedAt {
			ws[i].Vector = vecs[j]
		}
	}
	rows, err := s.d.Apply(ctx, ws, now)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, err
		}
		return nil, fmt.Errorf("store: apply: %w", err)
	}
	items := make([]store.Item, len(rows))
	for i, r := range rows {
		if ops[i].Value != nil {
			items[i] = toItem(r, ops[i].Namespace)
		}
	}
	return items, nil
}

// embed embeds texts and normalizes the vectors to unit length.
func (s *Store) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := s.cfg.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("store: embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("store: embed: %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) == 0 {
			return nil, fmt.Errorf("store: embed: empty vector for text %d", i)
		}
		vecs[i] = normalize(v)
	}
	return vecs, nil
}

func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(-1)
	}
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

func toItem(r Row, ns []string) store.Item {
	if ns == nil {
		ns = store.DecodeNamespace(r.NS)
	}
	return store.Item{
		Namespace: slices.Clone(ns),
		Key:       r.Key,
		Value:     slices.Clone(r.Value),
		Version:   r.Version,
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
		ExpiresAt: r.ExpiresAt,
	}
}

// Search implements store.Store.
func (s *Store) Search(ctx context.Context, prefix []string, q store.Query) ([]store.Item, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	f, err := store.CompileFilter(q.Filter)
	if err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = store.DefaultLimit
	}
	p := store.EncodeNamespace(prefix)
	if q.Text != "" {
		if s.cfg.Embedder == nil {
			return nil, store.ErrNoEmbedder
		}
		return s.searchMeaning(ctx, p, q, f)
	}
	if _, ok := s.d.(Pager); ok {
		return s.searchNewest(ctx, p, q, f)
	}
	now, opts := s.now(), ScanOptions{Prefix: p, Filter: f.Conds()}
	n := 0
	if q.Offset > 0 {
		// Count first: a page past the end (a check whether a prefix
		// holds more than n items asks for the item at offset n) then
		// costs no copies of the rows.
		err = s.d.Scan(ctx, opts, now, func(r Row) error {
			if f.Match(r.Value) {
				n++
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: search: %w", err)
		}
		if n <= q.Offset {
			return nil, nil
		}
	}
	rows := make([]Row, 0, n)
	err = s.d.Scan(ctx, opts, now, func(r Row) error {
		if f.Match(r.Value) {
			rows = append(rows, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if len(rows) <= q.Offset {
		// Nothing on the page (a check whether a prefix holds more than
		// n items asks for the item at offset n): no order is needed.
		return nil, nil
	}
	// Newest first; ties by namespace and key, for a stable order. Rows
	// are large, so their pointers are sorted rather than the rows.
	order := make([]*Row, len(rows))
	for i := range rows {
		order[i] = &rows[i]
	}
	slices.SortFunc(order, func(a, b *Row) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(a.NS, b.NS); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	order = page(order, q.Offset, q.Limit)
	items := make([]store.Item, len(order))
	for i, r := range order {
		items[i] = toItem(*r, nil)
	}
	return items, nil
}

// errEnough stops a scan that has read what it needs.
var errEnough = errors.New("enough rows")

// searchNewest is Search without text on a Pager: the driver returns the
// rows newest first, at most a page of them (offset and limit), which are
// tested against the filter. When some fail it (the driver's filtering may
// keep rows the filter does not) and the driver may have had more, the
// scan runs again without a limit, and stops once the page is full.
func (s *Store) searchNewest(ctx context.Context, p string, q store.Query, f *store.Filter) ([]store.Item, error) {
	want := q.Offset + q.Limit
	now := s.now()
	conds := f.Conds()
	for limit := want; ; limit = 0 {
		var rows []Row
		n := 0
		err := s.d.Scan(ctx, ScanOptions{Prefix: p, Filter: conds, Newest: true, Limit: limit}, now, func(r Row) error {
			n++
			if f.Match(r.Value) {
				rows = append(rows, r)
			}
			if len(rows) == want {
				return errEnough
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return nil, fmt.Errorf("store: search: %w", err)
		}
		if len(rows) == want || limit == 0 || n < limit {
			rows = page(rows, q.Offset, q.Limit)
			items := make([]store.Item, len(rows))
			for i, r := range rows {
				items[i] = toItem(r, nil)
			}
			return items, nil
		}
	}
}

func page[T any](xs []T, offset, limit int) []T {
	if offset >= len(xs) {
		return nil
	}
	xs = xs[offset:]
	if limit < len(xs) {
		xs = xs[:limit]
	}
	return xs
}

// ListNamespaces implements store.Store.
func (s *Store) ListNamespaces(ctx context.Context, q store.NamespaceQuery) ([][]string, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	enc, err := s.d.Namespaces(ctx, store.EncodeNamespace(q.Prefix), s.now())
	if err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	seen := make(map[string]bool, len(enc))
	var out [][]string
	for _, e := range enc {
		ns := store.DecodeNamespace(e)
		if q.MaxDepth > 0 && len(ns) > q.MaxDepth {
			ns = ns[:q.MaxDepth]
		}
		k := store.EncodeNamespace(ns)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return page(out, q.Offset, q.Limit), nil
}

// Sweep implements store.Store.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	n, err := s.d.Sweep(ctx, s.now())
	if err != nil {
		return n, fmt.Errorf("store: sweep: %w", err)
	}
	return n, nil
}

// Close implements store.Store. Closing twice is not an error.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	s.indexes = nil
	s.mu.Unlock()
	return s.d.Close()
}
