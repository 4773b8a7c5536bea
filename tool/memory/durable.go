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
	"time"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/tool"
)

// defaultNamespace is the namespace under which a store on a store.Store
// keeps its scopes (see WithStore): the entries of scope s are the items
// of (defaultNamespace..., "scope:"+s).
var defaultNamespace = []string{"trellis", "memory"}

// ErrDurable is returned by Save, Load, SaveFile and LoadFile of a store
// whose entries live in a store.Store (WithStore, WithRunStore), which
// keeps them itself.
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

// durable returns the store.Store ctx's operations go to, nil for the
// process's memory.
func (s *Store) durable(ctx context.Context) store.Store {
	if s.cfg.backend != nil {
		return s.cfg.backend
	}
	if s.cfg.fromRun {
		if st, ok := store.FromContext(ctx); ok {
			return st
		}
	}
	return nil
}

func (s *Store) namespaceOf(scope string) []string {
	ns := s.cfg.namespace
	if ns == nil {
		ns = defaultNamespace
	}
	return append(slices.Clip(ns), "scope:"+scope)
}

// addDurable stores the checked entry e in st.
func (s *Store) addDurable(ctx context.Context, st store.Store, e Entry) (string, error) {
	ns := s.namespaceOf(e.Scope)
	newID := e.ID == ""
	for {
		if newID {
			var b [6]byte
			_, _ = rand.Read(b[:])
			e.ID = "mem-" + hex.EncodeToString(b[:])
		}
		value, err := json.Marshal(e)
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
		if err != nil {
			return "", fmt.Errorf("memory: %w", err)
		}
		break
	}
	// Evict what the limit leaves no room for: the oldest, which a search
	// lists last.
	extra, err := st.Search(ctx, ns, store.Query{Offset: s.cfg.maxEntries, Limit: 1000})
	if err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	for _, it := range extra {
		if err := st.Delete(ctx, ns, it.Key); err != nil {
			return "", fmt.Errorf("memory: %w", err)
		}
	}
	return e.ID, nil
}

func (s *Store) deleteDurable(ctx context.Context, st store.Store, scope, id string) error {
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

// entriesDurable returns the scope's entries in st, oldest first.
func (s *Store) entriesDurable(ctx context.Context, st store.Store, scope string) ([]*item, error) {
	items, err := st.Search(ctx, s.namespaceOf(scope), store.Query{Limit: s.cfg.maxEntries})
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	out := make([]*item, 0, len(items))
	for i, it := range items {
		var e Entry
		if err := it.Decode(&e); err != nil {
			return nil, fmt.Errorf("%w: item %q: %w", ErrCorrupt, it.Key, err)
		}
		x := newItem(e)
		x.seq = uint64(len(items) - i)
		out = append(out, x)
	}
	slices.SortFunc(out, older)
	return out, nil
}

func (s *Store) listDurable(ctx context.Context, st store.Store, scope string, f Filter) ([]Entry, error) {
	items, err := s.entriesDurable(ctx, st, scope)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, it := range slices.Backward(items) {
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		if f.match(&it.entry) {
			out = append(out, it.entry)
		}
	}
	return out, nil
}

func (s *Store) retrieveDurable(ctx context.Context, st store.Store, name, query string, limit int) ([]tool.Document, error) {
	if strings.TrimSpace(query) != "" {
		found, err := st.Search(ctx, s.namespaceOf(name), store.Query{Text: query, Limit: limit})
		switch {
		case err == nil:
			docs := make([]tool.Document, 0, len(found))
			for _, it := range found {
				var e Entry
				if err := it.Decode(&e); err != nil {
					return nil, fmt.Errorf("%w: item %q: %w", ErrCorrupt, it.Key, err)
				}
				docs = append(docs, newItem(e).document(it.Score))
			}
			return docs, nil
		case !errors.Is(err, store.ErrNoEmbedder):
			return nil, fmt.Errorf("memory: %w", err)
		}
	}
	// Lexical ranking over the scope's entries, as in memory.
	items, err := s.entriesDurable(ctx, st, name)
	if err != nil {
		return nil, err
	}
	sc := &scope{byID: map[string]*item{}, df: map[string]int{}}
	for _, it := range items {
		sc.items = append(sc.items, it)
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
