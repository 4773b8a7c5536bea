package memory

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/tool"
)

// defaultNamespace is the namespace under which a store on a store.Store
// keeps its scopes (see WithStore): the entries of scope s are the items
// of (defaultNamespace..., "scope:"+s).
var defaultNamespace = []string{"trellis", "memory"}

// ErrDurable is returned by Save, Load, SaveFile and LoadFile of a store
// whose entries live in a store.Store given to it (WithStore,
// WithRunStore), which keeps them itself.
var ErrDurable = errors.New("memory: entries are kept by a store.Store; there is no snapshot to save or load")

// WithStore keeps the entries in st instead of in the process: they are
// shared by every process that opens the same store (store/sqlite,
// store/postgres) and outlive the process. Scopes, limits, validation and
// the tools behave as in memory. Retrieve ranks by meaning when st has an
// embedder (store.WithEmbedder; the entry's text is embedded), and
// lexically (BM25 over the scope's entries) otherwise; the store's own
// WithEmbedder does not combine with it.
func WithStore(st store.Store) Option {
	return func(c *config) {
		if st == nil {
			c.problems = append(c.problems, "WithStore: the store is nil")
		}
		c.backend = st
	}
}

// WithRunStore keeps the entries in the store.Store of the run an
// operation's context belongs to (graph.WithStore; store.FromContext), and
// in the process when the context carries none.
func WithRunStore() Option {
	return func(c *config) { c.fromRun = true }
}

// WithNamespace sets the namespace under which a store on a store.Store
// keeps its scopes ("trellis", "memory" unless set).
func WithNamespace(labels ...string) Option {
	return func(c *config) {
		if err := store.ValidateNamespace(labels); err != nil {
			c.problems = append(c.problems, fmt.Sprintf("WithNamespace: %v", err))
		}
		c.namespace = labels
	}
}

// backend returns the store.Store ctx's operations go to.
func (s *Store) backend(ctx context.Context) store.Store {
	if s.cfg.backend != nil {
		return s.cfg.backend
	}
	if s.cfg.fromRun {
		if st, ok := store.FromContext(ctx); ok {
			return st
		}
	}
	return s.local
}

func (s *Store) namespace() []string {
	if s.cfg.namespace == nil {
		return defaultNamespace
	}
	return s.cfg.namespace
}

func (s *Store) namespaceOf(scope string) []string {
	return append(slices.Clip(s.namespace()), "scope:"+scope)
}

// stored is an entry as an item's value: the entry's fields and when it
// was added, which orders the entries of one CreatedAt.
type stored struct {
	Entry
	Added int64 `json:"added,omitempty"`
}

// lastAdded is the Added of the entry this process added last: each
// addition takes a later one, even within one clock tick.
var lastAdded atomic.Int64

func addedNow() int64 {
	for {
		last, now := lastAdded.Load(), time.Now().UnixNano()
		if now <= last {
			now = last + 1
		}
		if lastAdded.CompareAndSwap(last, now) {
			return now
		}
	}
}

// add stores the checked entry e in st and evicts what the scope's limit
// leaves no room for.
func (s *Store) add(ctx context.Context, st store.Store, e Entry) (string, error) {
	ns := s.namespaceOf(e.Scope)
	newID := e.ID == ""
	for {
		if newID {
			var b [6]byte
			_, _ = rand.Read(b[:])
			e.ID = "mem-" + hex.EncodeToString(b[:])
		}
		value, err := json.Marshal(stored{Entry: e, Added: addedNow()})
		if err != nil {
			return "", fmt.Errorf("memory: %w", err)
		}
		_, err = st.PutIf(ctx, ns, e.ID, value, 0, store.WithIndexFields("text"))
		if errors.Is(err, store.ErrConflict) {
			if newID {
				continue // an ID made up twice: make another
			}
			return "", fmt.Errorf("%w: scope %q has an entry with id %q already", ErrInvalidEntry, e.Scope, e.ID)
		}
		if errors.Is(err, ErrEmbedding) {
			return "", err
		}
		if err != nil {
			return "", fmt.Errorf("memory: %w", err)
		}
		break
	}
	return e.ID, s.evict(ctx, st, e.Scope)
}

// evict deletes the oldest entries of scope beyond the limit.
func (s *Store) evict(ctx context.Context, st store.Store, scope string) error {
	ns := s.namespaceOf(scope)
	over, err := st.Search(ctx, ns, store.Query{Offset: s.cfg.maxEntries, Limit: 1})
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if len(over) == 0 {
		return nil
	}
	items, err := s.entries(ctx, st, scope)
	if err != nil {
		return err
	}
	var ops []store.Op
	for _, it := range items[:max(0, len(items)-s.cfg.maxEntries)] {
		ops = append(ops, store.DeleteOp(ns, it.entry.ID))
	}
	if _, err := st.Apply(ctx, ops); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return nil
}

func (s *Store) delete(ctx context.Context, st store.Store, scope, id string) error {
	ns := s.namespaceOf(scope)
	if _, err := st.Get(ctx, ns, id); err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
			return fmt.Errorf("%w: no entry has the id %q", ErrNotFound, id)
		}
		return fmt.Errorf("memory: %w", err)
	}
	if err := st.Delete(ctx, ns, id); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return nil
}

// readLimit is the most items one read of a scope asks for: the limit of
// entries with room for additions that race with an eviction.
func (s *Store) readLimit() int { return s.cfg.maxEntries + 1024 }

// decode returns the entry an item holds.
func decode(it store.Item) (*item, error) {
	var e stored
	if err := it.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: item %q: %w", ErrCorrupt, it.Key, err)
	}
	return newItem(e.Entry, e.Added), nil
}

// maxCached bounds the entries the parse cache holds; past it the cache
// starts again empty.
const maxCached = 100_000

// parsed is a decoded, tokenized item and the write it was read from.
type parsed struct {
	version int64
	updated time.Time
	it      *item
}

// parse returns the entry an item holds, from the cache when the item has
// not been written since it was last parsed: an item read again (every
// listing, eviction and lexical search reads the whole scope) is not
// decoded and tokenized again. The *item is shared and must not be
// changed.
func (s *Store) parse(it store.Item) (*item, error) {
	k := store.EncodeNamespace(it.Namespace) + "\x00" + it.Key
	s.cacheMu.Lock()
	p, ok := s.cache[k]
	s.cacheMu.Unlock()
	if ok && p.version == it.Version && p.updated.Equal(it.UpdatedAt) {
		return p.it, nil
	}
	x, err := decode(it)
	if err != nil {
		return nil, err
	}
	s.cacheMu.Lock()
	if len(s.cache) >= maxCached {
		clear(s.cache)
	}
	s.cache[k] = parsed{version: it.Version, updated: it.UpdatedAt, it: x}
	s.cacheMu.Unlock()
	return x, nil
}

// entries returns the scope's entries in st, oldest first.
func (s *Store) entries(ctx context.Context, st store.Store, scope string) ([]*item, error) {
	items, err := st.Search(ctx, s.namespaceOf(scope), store.Query{Limit: s.readLimit()})
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	out := make([]*item, 0, len(items))
	for _, it := range items {
		x, err := s.parse(it)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	slices.SortStableFunc(out, older)
	return out, nil
}

func (s *Store) list(ctx context.Context, st store.Store, scope string, f Filter) ([]Entry, error) {
	items, err := s.entries(ctx, st, scope)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, it := range slices.Backward(items) {
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		if f.match(&it.entry) {
			out = append(out, it.entry.clone())
		}
	}
	return out, nil
}

// minScore keeps every entry in a search by meaning, those pointing away
// from the query included; only vectors of another length (a score of
// minus infinity) are left out.
const minScore = -2

func (s *Store) retrieve(ctx context.Context, st store.Store, name, query string, limit int) ([]tool.Document, error) {
	if strings.TrimSpace(query) != "" {
		found, err := st.Search(ctx, s.namespaceOf(name), store.Query{Text: query, Limit: s.readLimit(), MinScore: minScore})
		switch {
		case err == nil:
			hits := make([]hit, 0, len(found))
			for _, it := range found {
				x, err := s.parse(it)
				if err != nil {
					return nil, err
				}
				hits = append(hits, hit{x, it.Score})
			}
			return rankedDocs(hits, limit), nil
		case errors.Is(err, ErrEmbedding):
			return nil, err
		case !errors.Is(err, store.ErrNoEmbedder):
			return nil, fmt.Errorf("memory: %w", err)
		}
	}
	// Lexical ranking over the scope's entries.
	items, err := s.entries(ctx, st, name)
	if err != nil {
		return nil, err
	}
	sc := &scope{items: items, df: map[string]int{}}
	for _, it := range items {
		for t := range it.tf {
			sc.df[t]++
		}
		sc.totalLen += it.length
	}
	var hits []hit
	if terms := queryTerms(query); len(terms) > 0 {
		hits = sc.bm25(terms)
	} else {
		hits = sc.newest(limit)
	}
	return rankedDocs(hits, limit), nil
}

// rankedDocs sorts hits best first, newer first among equals, and returns
// the first limit as documents.
func rankedDocs(hits []hit, limit int) []tool.Document {
	slices.SortFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return older(b.it, a.it)
	})
	hits = hits[:min(limit, len(hits))]
	docs := make([]tool.Document, len(hits))
	for i, h := range hits {
		docs[i] = h.it.document(h.score)
	}
	return docs
}

// nowRounded is the CreatedAt of an entry added without one.
func nowRounded() time.Time { return time.Now().Round(0) }
