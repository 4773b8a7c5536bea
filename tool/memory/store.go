package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/store"
	storemem "github.com/trellis-go/trellis/store/memory"
	"github.com/trellis-go/trellis/tool"
)

// The store's bounds unless options set others.
const (
	// DefaultMaxEntries is how many entries one scope keeps: adding one
	// more evicts the oldest.
	DefaultMaxEntries = 10_000
	// DefaultMaxEntrySize is the size, in bytes, of the largest entry the
	// store takes (its text, topics and metadata keys and values).
	DefaultMaxEntrySize = 16 << 10
	// MaxIDSize is the length, in bytes, of the longest ID an entry may be
	// given.
	MaxIDSize = 128
)

// Errors of the store. Each is wrapped in an error that says which entry,
// limit or file it was about; test for them with errors.Is.
var (
	// ErrNotFound: no entry of the context's scope has the ID.
	ErrNotFound = errors.New("memory: no such entry")
	// ErrTooLarge: the entry is larger than the store's WithMaxEntrySize.
	ErrTooLarge = errors.New("memory: entry too large")
	// ErrInvalidEntry: the entry cannot be stored as it is (empty text, a
	// duplicate ID, a reserved metadata key, a scope other than the
	// context's, text that is not UTF-8).
	ErrInvalidEntry = errors.New("memory: invalid entry")
	// ErrCorrupt: a snapshot given to Load or LoadFile is not one Save
	// wrote.
	ErrCorrupt = errors.New("memory: corrupt snapshot")
	// ErrEmbedding: the Embedder failed or gave vectors the store cannot
	// use.
	ErrEmbedding = errors.New("memory: embedding failed")
)

// Metadata keys the store sets on the documents Retrieve returns; an
// entry's own metadata may not use them.
const (
	// TopicsKey holds the entry's topics, a []string, when it has any.
	TopicsKey = "topics"
	// CreatedAtKey holds the entry's creation time, in RFC 3339 format.
	CreatedAtKey = "created_at"
)

// Entry is one memory: a piece of text worth keeping across runs (a fact,
// a preference, a decision), with topics that help find it again.
type Entry struct {
	// ID identifies the entry in its scope. Add makes one up when it is
	// empty.
	ID string `json:"id"`
	// Text is what is remembered. It must not be empty.
	Text string `json:"text"`
	// Topics are keywords or tags; they count in lexical ranking like
	// words of the text, and List can select by them. Add trims them and
	// drops empty and repeated ones (compared without case).
	Topics []string `json:"topics,omitempty"`
	// Metadata holds the application's attributes (source, author, ...);
	// Retrieve passes them on in the document's metadata. The keys
	// TopicsKey and CreatedAtKey are the store's.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Scope is the user, application or agent the entry belongs to (see
	// WithScope). Add sets it to the context's scope; an entry given to
	// Add with another scope is refused.
	Scope string `json:"scope,omitempty"`
	// CreatedAt is when the entry was made: the time of Add unless the
	// entry sets it. It orders entries for eviction and breaks ties in
	// ranking.
	CreatedAt time.Time `json:"created_at"`
}

// Size returns the size of e the store's limit applies to: the bytes of its
// text, its topics and its metadata keys and values.
func (e Entry) Size() int {
	n := len(e.Text)
	for _, t := range e.Topics {
		n += len(t)
	}
	for k, v := range e.Metadata {
		n += len(k) + len(v)
	}
	return n
}

// clone returns e with its own topics and metadata.
func (e Entry) clone() Entry {
	e.Topics = slices.Clone(e.Topics)
	e.Metadata = maps.Clone(e.Metadata)
	return e
}

// Filter selects the entries List returns. The zero Filter selects every
// entry of the scope.
type Filter struct {
	// Topic, when set, selects the entries that have it (without case).
	Topic string
	// Metadata selects the entries whose metadata has all these pairs.
	Metadata map[string]string
	// Since, when set, selects the entries created at or after it.
	Since time.Time
	// Limit, when positive, caps how many entries List returns (the
	// newest).
	Limit int
}

func (f *Filter) match(e *Entry) bool {
	if f.Topic != "" && !slices.ContainsFunc(e.Topics, func(t string) bool { return strings.EqualFold(t, f.Topic) }) {
		return false
	}
	for k, v := range f.Metadata {
		if got, ok := e.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return f.Since.IsZero() || !e.CreatedAt.Before(f.Since)
}

// Embedder turns texts into vectors, one per text, in order: an embedding
// model. A store given one ranks by cosine similarity instead of words.
type Embedder func(ctx context.Context, texts []string) ([][]float32, error)

// ScopeFunc gives the scope of the operation whose context is ctx: the
// user or application whose memories it reads and writes. An error refuses
// the operation (a context that names no user, say) and is passed on.
type ScopeFunc func(ctx context.Context) (string, error)

// Option configures a Store.
type Option func(*config)

type config struct {
	maxEntries   int
	maxEntrySize int
	scope        ScopeFunc
	embed        Embedder
	backend      store.Store // WithStore
	fromRun      bool        // WithRunStore
	namespace    []string    // WithNamespace
	problems     []string
}

// WithMaxEntries sets how many entries one scope keeps (DefaultMaxEntries
// unless set); n must be at least 1. When an Add or a Load brings a scope
// beyond it, its oldest entries (the earliest CreatedAt, then the first
// added) are evicted.
func WithMaxEntries(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxEntries: n must be at least 1, not %d", n))
		}
		c.maxEntries = n
	}
}

// WithMaxEntrySize sets the size, in bytes, of the largest entry the store
// takes (DefaultMaxEntrySize unless set; see Entry.Size); n must be at
// least 1. A larger entry is refused with an error that matches
// ErrTooLarge and names the limit.
func WithMaxEntrySize(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxEntrySize: n must be at least 1, not %d", n))
		}
		c.maxEntrySize = n
	}
}

// WithScopeFunc sets how the store finds the scope of an operation in its
// context; by default it is ScopeOf, the scope WithScope put there (the
// empty scope when none). Use it to take the user from what the
// application's own middleware put in the context.
func WithScopeFunc(fn ScopeFunc) Option {
	return func(c *config) {
		if fn == nil {
			c.problems = append(c.problems, "WithScopeFunc: the function is nil")
		}
		c.scope = fn
	}
}

// WithEmbedder gives the store's own in-process store.Store an embedder
// (store.WithEmbedder), which makes it rank by the cosine similarity of
// embedding vectors rather than by words: Add embeds each entry's text,
// Load embeds the loaded entries again (vectors are not saved), and
// Retrieve embeds the query and returns the most similar entries, ties
// broken by recency. An entry whose vector has another length than the
// query's is not found by meaning. An Embedder's failure fails the
// operation with an error that matches ErrEmbedding. It does not combine
// with WithStore or WithRunStore: give that store its embedder.
func WithEmbedder(e Embedder) Option {
	return func(c *config) {
		if e == nil {
			c.problems = append(c.problems, "WithEmbedder: the embedder is nil")
		}
		c.embed = e
	}
}

type scopeKey struct{}

// WithScope returns a context whose store operations work in scope: the
// user, application or agent whose memories they read and write. Stores
// built without WithScopeFunc take their scope from it.
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// ScopeOf returns the scope WithScope put in ctx, or "" (the default
// scope) when there is none.
func ScopeOf(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// contextScope is the ScopeFunc of a store built without WithScopeFunc.
func contextScope(ctx context.Context) (string, error) { return ScopeOf(ctx), nil }

// Store is a memory store for agents, safe for concurrent use. It keeps
// its entries in a store.Store: its own in-process one (store/memory)
// unless WithStore or WithRunStore gives another. It implements
// tool.Retriever, so it can be the memory of a run (tool.WithMemory,
// agent.WithMemory) and the source of a retrieval tool (tool.NewRetrieval);
// Tools gives a model tools to add, search and delete its entries.
//
// One store serves many users: every operation works in the scope its
// context names (see WithScope and WithScopeFunc), and sees nothing of
// other scopes, not even their word statistics.
type Store struct {
	cfg config
	// local keeps the entries when no other store.Store is given (and
	// when WithRunStore finds none in the context).
	local store.Store
	// load admits one Load at a time.
	load sync.Mutex
	// cache holds the entries parsed from items, by encoded namespace and
	// key (see parse).
	cacheMu sync.Mutex
	cache   map[string]parsed
}

var _ tool.Retriever = (*Store)(nil)

// scope holds one scope's entries and the statistics lexical ranking uses.
type scope struct {
	items    []*item        // oldest first: by CreatedAt, then seq
	df       map[string]int // how many entries hold each term
	totalLen int            // the terms of all entries
}

// item is an entry as lexical ranking reads it.
type item struct {
	entry  Entry
	seq    int64          // orders entries of one CreatedAt: the later added is higher
	tf     map[string]int // the entry's terms and their counts
	length int            // its number of terms
}

func older(a, b *item) int {
	if c := a.entry.CreatedAt.Compare(b.entry.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// New returns an empty store.
func New(opts ...Option) (*Store, error) {
	c := config{maxEntries: DefaultMaxEntries, maxEntrySize: DefaultMaxEntrySize, scope: contextScope}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.embed != nil && (c.backend != nil || c.fromRun) {
		c.problems = append(c.problems, "WithEmbedder does not combine with WithStore or WithRunStore: give the store.Store its embedder (store.WithEmbedder)")
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("memory: invalid options: %s", strings.Join(c.problems, "; "))
	}
	s := &Store{cfg: c, cache: map[string]parsed{}}
	if c.backend == nil {
		var sopts []store.Option
		if c.embed != nil {
			sopts = append(sopts, store.WithEmbedder(embedder{c.embed}))
		}
		s.local = storemem.New(sopts...)
	}
	return s, nil
}

// scopeOf returns the scope of ctx's operation.
func (s *Store) scopeOf(ctx context.Context) (string, error) {
	sc, err := s.cfg.scope(ctx)
	if err != nil {
		return "", fmt.Errorf("memory: finding the scope: %w", err)
	}
	return sc, nil
}

// Add stores e in the scope of ctx and returns its ID. The store keeps its
// own copy of e. It fails, storing nothing, when e's text is empty, e is
// larger than the store's limit (ErrTooLarge), its ID is taken, its
// metadata uses a key of the store's, or it names a scope other than
// ctx's. When the scope then holds more than its limit of entries, the
// oldest are evicted.
func (s *Store) Add(ctx context.Context, e Entry) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	sc, err := s.scopeOf(ctx)
	if err != nil {
		return "", err
	}
	if e.Scope != "" && e.Scope != sc {
		return "", fmt.Errorf("%w: the entry is for scope %q but the context's scope is %q", ErrInvalidEntry, e.Scope, sc)
	}
	e = e.clone()
	e.Scope = sc
	if err := s.check(&e, false); err != nil {
		return "", err
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = nowRounded()
	}
	return s.add(ctx, s.backend(ctx), e)
}

// check validates and normalizes e for storing; loading says whether it
// comes from a snapshot, where an ID is required.
func (s *Store) check(e *Entry, loading bool) error {
	what := "the entry"
	if e.ID != "" {
		what = fmt.Sprintf("entry %q", e.ID)
	}
	switch {
	case loading && e.ID == "":
		return fmt.Errorf("%w: an entry has no id", ErrInvalidEntry)
	case len(e.ID) > MaxIDSize:
		return fmt.Errorf("%w: the id %.20q... is %d bytes, longer than %d", ErrInvalidEntry, e.ID, len(e.ID), MaxIDSize)
	case !utf8.ValidString(e.ID) || strings.TrimSpace(e.ID) != e.ID:
		return fmt.Errorf("%w: the id %q is not valid UTF-8 or has spaces around it", ErrInvalidEntry, e.ID)
	case strings.TrimSpace(e.Text) == "":
		return fmt.Errorf("%w: %s has no text", ErrInvalidEntry, what)
	case !utf8.ValidString(e.Text):
		return fmt.Errorf("%w: the text of %s is not valid UTF-8", ErrInvalidEntry, what)
	}
	topics := e.Topics[:0]
	for _, t := range e.Topics {
		t = strings.TrimSpace(t)
		if !utf8.ValidString(t) {
			return fmt.Errorf("%w: a topic of %s is not valid UTF-8", ErrInvalidEntry, what)
		}
		if t != "" && !slices.ContainsFunc(topics, func(u string) bool { return strings.EqualFold(t, u) }) {
			topics = append(topics, t)
		}
	}
	e.Topics = slices.Clip(topics)
	if len(e.Topics) == 0 {
		e.Topics = nil
	}
	for k, v := range e.Metadata {
		if k == TopicsKey || k == CreatedAtKey {
			return fmt.Errorf("%w: the metadata of %s uses the key %q, which the store sets", ErrInvalidEntry, what, k)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("%w: the metadata of %s is not valid UTF-8", ErrInvalidEntry, what)
		}
	}
	if len(e.Metadata) == 0 {
		e.Metadata = nil
	}
	if n := e.Size(); n > s.cfg.maxEntrySize {
		return fmt.Errorf("%w: %s is %d bytes (text, topics and metadata), more than the limit of %d bytes (WithMaxEntrySize)", ErrTooLarge, what, n, s.cfg.maxEntrySize)
	}
	return nil
}

// newItem indexes e's terms: the words of its text and of its topics.
func newItem(e Entry, seq int64) *item {
	terms := tokenize(e.Text, nil)
	for _, t := range e.Topics {
		terms = tokenize(t, terms)
	}
	tf := make(map[string]int, len(terms))
	for _, t := range terms {
		tf[t]++
	}
	return &item{entry: e, seq: seq, tf: tf, length: len(terms)}
}

// Delete removes the entry with the given ID from the scope of ctx. An ID
// the scope has no entry with is an error that matches ErrNotFound.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := s.scopeOf(ctx)
	if err != nil {
		return err
	}
	return s.delete(ctx, s.backend(ctx), name, id)
}

// List returns copies of the entries of ctx's scope that f selects, newest
// first.
func (s *Store) List(ctx context.Context, f Filter) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := s.scopeOf(ctx)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, s.backend(ctx), name, f)
}

// Retrieve returns at most limit entries of ctx's scope relevant to query,
// most relevant first, as documents: the entry's ID, its text as Content,
// its relevance as Score, and its metadata with the store's TopicsKey and
// CreatedAtKey added. A limit of zero or less is
// tool.DefaultRetrievalLimit.
//
// Without an embedder (WithEmbedder, or the store.Store's) the ranking is
// lexical (see the package documentation): only entries that share a word
// with the query are returned, scored with BM25 over the scope's entries.
// A query with no word to match (empty, or only stop words) returns the
// newest entries, with a score of zero. Ties go to the newer entry. With
// an embedder, see WithEmbedder.
func (s *Store) Retrieve(ctx context.Context, query string, limit int) ([]tool.Document, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := s.scopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = tool.DefaultRetrievalLimit
	}
	return s.retrieve(ctx, s.backend(ctx), name, query, limit)
}

// document returns the entry as Retrieve gives it.
func (it *item) document(score float64) tool.Document {
	meta := make(map[string]any, len(it.entry.Metadata)+2)
	for k, v := range it.entry.Metadata {
		meta[k] = v
	}
	if len(it.entry.Topics) > 0 {
		meta[TopicsKey] = slices.Clone(it.entry.Topics)
	}
	meta[CreatedAtKey] = it.entry.CreatedAt.Format(time.RFC3339)
	return tool.Document{ID: it.entry.ID, Content: it.entry.Text, Score: score, Metadata: meta}
}

// embedder is a store.Embedder over an Embedder of this package: it
// splits the texts into batches of embedBatch and checks what it is given,
// one finite, non-empty vector per text; its errors match ErrEmbedding.
type embedder struct{ embed Embedder }

// embedBatch is how many texts one call of an Embedder gets at most.
const embedBatch = 256

func (e embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return model.EmbedBatches(ctx, texts, embedBatch, func(ctx context.Context, batch []string) ([][]float32, error) {
		vecs, err := e.embed(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
		}
		if len(vecs) != len(batch) {
			return nil, fmt.Errorf("%w: the embedder gave %d vectors for %d texts", ErrEmbedding, len(vecs), len(batch))
		}
		for _, v := range vecs {
			if len(v) == 0 {
				return nil, fmt.Errorf("%w: the embedder gave an empty vector", ErrEmbedding)
			}
			if _, ok := unit(v); !ok {
				return nil, fmt.Errorf("%w: the embedder gave a vector with a value that is not a finite number", ErrEmbedding)
			}
		}
		return vecs, nil
	})
}
