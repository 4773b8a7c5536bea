package knowledge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/lexrank"
	"github.com/trellis-go/trellis/store"
	storemem "github.com/trellis-go/trellis/store/memory"
	"github.com/trellis-go/trellis/tool"
)

// The knowledge base's settings unless options set others.
const (
	// DefaultChunkSize is the size, in runes, of the largest chunk.
	DefaultChunkSize = 1000
	// DefaultChunkOverlap is how many runes a chunk cut from a long
	// paragraph repeats of the one before.
	DefaultChunkOverlap = 100
	// DefaultMaxDocumentSize is the size, in bytes, of the largest
	// document's text the knowledge base takes (and of the largest file
	// AddDir reads).
	DefaultMaxDocumentSize = 4 << 20
	// DefaultMaxPerDocument is how many chunks of one document a search
	// returns while chunks of other documents match too.
	DefaultMaxPerDocument = 2
	// DefaultLimit is how many chunks a search returns when the query does
	// not say.
	DefaultLimit = tool.DefaultRetrievalLimit
	// MaxIDSize is the length, in bytes, of the longest document ID.
	MaxIDSize = 512
)

// Errors of the knowledge base. Each is wrapped in an error that says which
// document, limit or file it was about; test for them with errors.Is.
var (
	// ErrNotFound: no document has the ID.
	ErrNotFound = errors.New("knowledge: no such document")
	// ErrInvalidDocument: the document cannot be added as it is (no ID or
	// source, text that is not UTF-8, a reserved metadata key).
	ErrInvalidDocument = errors.New("knowledge: invalid document")
	// ErrTooLarge: the document's text is larger than
	// WithMaxDocumentSize.
	ErrTooLarge = errors.New("knowledge: document too large")
	// ErrCorrupt: a snapshot given to Load or LoadFile is not one Save
	// wrote.
	ErrCorrupt = errors.New("knowledge: corrupt snapshot")
	// ErrEmbedding: the Embedder failed or gave vectors the knowledge base
	// cannot use.
	ErrEmbedding = errors.New("knowledge: embedding failed")
)

// Metadata keys that Retrieve sets on the documents it returns; a
// document's own metadata may not use them.
const (
	// TitleKey holds the document's title.
	TitleKey = "title"
	// SourceKey holds the document's source, when it has one.
	SourceKey = "source"
	// HeadingsKey holds the chunk's heading path, a []string, when it has
	// one.
	HeadingsKey = "headings"
	// DocumentIDKey holds the document's ID.
	DocumentIDKey = "document_id"
	// LineKey holds the line, from 1, of the document the chunk starts on,
	// an int.
	LineKey = "line"
)

// reserved reports whether key is one of the keys Retrieve sets.
func reserved(key string) bool {
	switch key {
	case TitleKey, SourceKey, HeadingsKey, DocumentIDKey, LineKey:
		return true
	}
	return false
}

// Doc is a document to add: a page of a manual, a file, an article.
type Doc struct {
	// ID identifies the document: adding another with the same ID
	// replaces it. Without one, the source is the ID.
	ID string `json:"id"`
	// Title is the document's title, shown in citations. Without one,
	// AddDocument takes the "title" of its front matter, else its first
	// level-1 heading, else the base name of its source (or ID). A title
	// longer than 200 characters is cut to 200, with "…" after them.
	Title string `json:"title,omitempty"`
	// Source says where the document comes from, a path or a URL; citations
	// show it. Its extension tells the format: .md (and .markdown, .mdx) or
	// none is Markdown, whose headings and front matter are recognized;
	// anything else (.txt, .go, ...) is plain text.
	Source string `json:"source,omitempty"`
	// Text is the document's content, in UTF-8. Line endings are made "\n"
	// and a byte order mark is dropped.
	Text string `json:"text"`
	// Metadata holds the application's attributes (language, product,
	// version, ...) that searches filter by (Query.Filter); Retrieve passes
	// them on in the documents' metadata. For Markdown, the scalar fields
	// of the front matter are added to it, under keys it does not set
	// already. The keys TitleKey, SourceKey, HeadingsKey, DocumentIDKey and
	// LineKey are the knowledge base's.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// clone returns d with its own metadata.
func (d Doc) clone() Doc {
	d.Metadata = maps.Clone(d.Metadata)
	return d
}

// Chunk is a piece of a document that a search can return.
type Chunk struct {
	// DocumentID is the ID of the document the chunk is part of.
	DocumentID string `json:"document_id"`
	// Index is the chunk's position among the document's chunks, from 0.
	Index int `json:"index"`
	// Headings is the path of Markdown headings the chunk sits under,
	// outermost first; a heading longer than 200 characters is cut to 200,
	// with "…" after them.
	Headings []string `json:"headings,omitempty"`
	// Text is the chunk's text, as it is in the document.
	Text string `json:"text"`
	// Line is the line of the document the chunk starts on, from 1.
	Line int `json:"line"`
}

// DocumentInfo describes a document of the knowledge base.
type DocumentInfo struct {
	ID       string            `json:"id"`
	Title    string            `json:"title"`
	Source   string            `json:"source,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Chunks is how many chunks the document was cut into.
	Chunks int `json:"chunks"`
	// Size is the size of its text, in bytes.
	Size int `json:"size"`
}

// Embedder turns texts into vectors, one per text, in order: an embedding
// model. A knowledge base given one ranks by cosine similarity instead of
// words.
type Embedder func(ctx context.Context, texts []string) ([][]float32, error)

// Option configures a KB.
type Option func(*config)

type config struct {
	chunkSize      int
	overlap        int
	overlapSet     bool
	maxDocSize     int
	maxPerDocument int
	merge          bool
	embed          Embedder
	store          store.Store // WithStore, else the KB's own store/memory one
	namespace      []string
	ownStore       bool // store is the KB's own: no other process writes to it
	problems       []string
}

// WithChunkSize sets the size, in runes, of the largest chunk
// (DefaultChunkSize unless set); n must be at least 32. Paragraphs are
// packed into chunks up to this size; a longer paragraph is cut.
func WithChunkSize(n int) Option {
	return func(c *config) {
		if n < 32 {
			c.problems = append(c.problems, fmt.Sprintf("WithChunkSize: n must be at least 32, not %d", n))
		}
		c.chunkSize = n
	}
}

// WithChunkOverlap sets how many runes a chunk cut from a paragraph longer
// than the chunk size repeats of the one before, so that a sentence cut at
// a chunk's end is whole in the next one. Unless set, it is
// DefaultChunkOverlap, or a tenth of the chunk size when that is less.
// It must be at least 0 and at most half the chunk size. Chunks of whole
// paragraphs do not overlap.
func WithChunkOverlap(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithChunkOverlap: n must be at least 0, not %d", n))
		}
		c.overlap = n
		c.overlapSet = true
	}
}

// WithMaxDocumentSize sets the size, in bytes, of the largest document
// text the knowledge base takes (DefaultMaxDocumentSize unless set); n
// must be at least 1. AddDocument refuses a larger one with an error that
// matches ErrTooLarge; AddDir skips larger files and reports them.
func WithMaxDocumentSize(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxDocumentSize: n must be at least 1, not %d", n))
		}
		c.maxDocSize = n
	}
}

// WithMaxPerDocument sets how many chunks of one document a search returns
// while other documents have matching chunks to fill the limit
// (DefaultMaxPerDocument unless set), so that one long document does not
// fill every slot; 0 sets no such bound. A document gets more only when no
// other matches enough.
func WithMaxPerDocument(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxPerDocument: n must be at least 0, not %d", n))
		}
		c.maxPerDocument = n
	}
}

// WithMergeAdjacent sets whether a search joins chunks of one document
// that follow each other, under the same headings, into one result when
// both match (true unless set): the model reads one passage instead of two
// cut apart. Each merged chunk still counts toward the limit.
func WithMergeAdjacent(merge bool) Option {
	return func(c *config) { c.merge = merge }
}

// WithEmbedder makes the knowledge base rank by the cosine similarity of
// embedding vectors rather than by words: adding a document embeds each of
// its chunks (with its title and headings), Load embeds the loaded
// documents' chunks again (vectors are not saved), and a search embeds the
// query and returns the most similar chunks. Every vector must have one
// length. An Embedder's failure fails the operation with an error that
// matches ErrEmbedding.
func WithEmbedder(e Embedder) Option {
	return func(c *config) {
		if e == nil {
			c.problems = append(c.problems, "WithEmbedder: the embedder is nil")
		}
		c.embed = e
	}
}

// KB is a knowledge base: documents cut into chunks, searched by relevance
// to a query. It is safe for concurrent use. It implements tool.Retriever;
// SearchTool and Tools give a model a tool to search it.
type KB struct {
	cfg      config
	mu       sync.RWMutex
	docs     map[string]*document
	postings map[string]map[*chunk]struct{} // the chunks that hold each term
	chunks   int                            // how many chunks all documents have
	terms    int                            // how many terms all chunks have
	dim      int                            // the length of the vectors, with an embedder
	version  uint64                         // changes with every change of documents
	durable  durableState                   // with WithStore
}

var _ tool.Retriever = (*KB)(nil)

// document is a document as the knowledge base keeps it.
type document struct {
	doc    Doc // normalized, with its title found
	lines  lineIndex
	chunks []*chunk
}

// chunk is a chunk as the knowledge base keeps it.
type chunk struct {
	doc        *document
	index      int
	headings   []string
	start, end int
	tf         map[string]int // the terms of its text, headings and title
	length     int
	vec        []float32 // unit vector, with an embedder
}

func (c *chunk) text() string { return c.doc.doc.Text[c.start:c.end] }

func (c *chunk) public() Chunk {
	return Chunk{
		DocumentID: c.doc.doc.ID,
		Index:      c.index,
		Headings:   slices.Clone(c.headings),
		Text:       c.text(),
		Line:       c.doc.lines.line(c.start),
	}
}

// New returns an empty knowledge base.
func New(opts ...Option) (*KB, error) {
	c := config{
		chunkSize:      DefaultChunkSize,
		overlap:        DefaultChunkOverlap,
		maxDocSize:     DefaultMaxDocumentSize,
		maxPerDocument: DefaultMaxPerDocument,
		merge:          true,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if !c.overlapSet {
		c.overlap = min(DefaultChunkOverlap, c.chunkSize/10)
	}
	if c.overlap > c.chunkSize/2 && c.chunkSize >= 32 {
		c.problems = append(c.problems, fmt.Sprintf("WithChunkOverlap: the overlap of %d runes is more than half the chunk size of %d", c.overlap, c.chunkSize))
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("knowledge: invalid options: %s", strings.Join(c.problems, "; "))
	}
	if c.store == nil {
		c.store, c.namespace, c.ownStore = storemem.New(), defaultNamespace, true
	}
	return &KB{cfg: c, docs: map[string]*document{}, postings: map[string]map[*chunk]struct{}{},
		durable: durableState{versions: map[string]int64{}}}, nil
}

// AddDocument adds d, cut into chunks, replacing the document with its ID
// if there is one. The knowledge base keeps its own copy of d. It fails,
// changing nothing, when d has neither an ID nor a source, its text is not
// UTF-8, it is larger than WithMaxDocumentSize (ErrTooLarge), or its
// metadata uses a key of the knowledge base's. A document whose text is
// empty is added without chunks: no search finds it.
//
// Markdown is cut by its headings: a chunk never spans two sections, and
// keeps the path of headings it sits under (each cut to 200 characters). Within a section, paragraphs
// (and lists, tables, fenced code blocks) are packed whole into chunks of
// at most WithChunkSize runes; a longer one is cut at a sentence or a word,
// the pieces overlapping by WithChunkOverlap runes. Other text is cut the
// same way by its paragraphs, without headings.
func (kb *KB) AddDocument(ctx context.Context, d Doc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	doc, err := kb.prepare(d)
	if err != nil {
		return err
	}
	if err := kb.embedChunks(ctx, doc.chunks); err != nil {
		return err
	}
	kb.mu.RLock()
	err = kb.checkDim(doc.chunks, kb.docs[doc.doc.ID])
	kb.mu.RUnlock()
	if err != nil {
		return err
	}
	version, err := kb.storeDocument(ctx, doc)
	if err != nil {
		return err
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if err := kb.checkDim(doc.chunks, kb.docs[doc.doc.ID]); err != nil {
		return err
	}
	kb.insert(doc)
	kb.durable.versions[doc.doc.ID] = version
	return nil
}

// prepare checks and normalizes d and cuts it into chunks, indexed.
func (kb *KB) prepare(d Doc) (*document, error) {
	d = d.clone()
	if d.ID == "" {
		d.ID = d.Source
	}
	what := fmt.Sprintf("document %q", d.ID)
	switch {
	case d.ID == "":
		return nil, fmt.Errorf("%w: the document has neither an id nor a source", ErrInvalidDocument)
	case len(d.ID) > MaxIDSize:
		return nil, fmt.Errorf("%w: the id %.40q... is %d bytes, longer than %d", ErrInvalidDocument, d.ID, len(d.ID), MaxIDSize)
	case !utf8.ValidString(d.ID) || strings.TrimSpace(d.ID) != d.ID:
		return nil, fmt.Errorf("%w: the id %q is not valid UTF-8 or has spaces around it", ErrInvalidDocument, d.ID)
	case len(d.Text) > kb.cfg.maxDocSize:
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the limit of %d bytes (WithMaxDocumentSize)", ErrTooLarge, what, len(d.Text), kb.cfg.maxDocSize)
	case !utf8.ValidString(d.Text):
		return nil, fmt.Errorf("%w: the text of %s is not valid UTF-8", ErrInvalidDocument, what)
	case !utf8.ValidString(d.Title) || !utf8.ValidString(d.Source):
		return nil, fmt.Errorf("%w: the title or source of %s is not valid UTF-8", ErrInvalidDocument, what)
	}
	for k, v := range d.Metadata {
		switch {
		case reserved(k):
			return nil, fmt.Errorf("%w: the metadata of %s uses the key %q, which the knowledge base sets", ErrInvalidDocument, what, k)
		case k == "":
			return nil, fmt.Errorf("%w: the metadata of %s has an empty key", ErrInvalidDocument, what)
		case !utf8.ValidString(k) || !utf8.ValidString(v):
			return nil, fmt.Errorf("%w: the metadata of %s is not valid UTF-8", ErrInvalidDocument, what)
		}
	}
	d.Text = normalize(d.Text)
	name := cmp.Or(d.Source, d.ID)
	p := parse(d.Text, isMarkdown(name))
	for k, v := range p.fields {
		if k == TitleKey {
			continue
		}
		if _, set := d.Metadata[k]; !set && !reserved(k) && k != "" && utf8.ValidString(k) && utf8.ValidString(v) {
			if d.Metadata == nil {
				d.Metadata = map[string]string{}
			}
			d.Metadata[k] = v
		}
	}
	if len(d.Metadata) == 0 {
		d.Metadata = nil
	}
	d.Title = strings.TrimSpace(d.Title)
	if d.Title == "" {
		base := path.Base(strings.ReplaceAll(name, "\\", "/"))
		d.Title = cmp.Or(strings.TrimSpace(p.fields[TitleKey]), p.h1, strings.TrimSuffix(base, path.Ext(base)), base)
	}
	d.Title = clipTitle(d.Title)
	doc := &document{doc: d, lines: newLineIndex(d.Text)}
	titleTerms := lexrank.Tokenize(d.Title, nil)
	for i, pc := range chunkText(d.Text, p.sections, kb.cfg.chunkSize, kb.cfg.overlap) {
		terms := lexrank.Tokenize(d.Text[pc.start:pc.end], slices.Clone(titleTerms))
		for _, h := range pc.headings {
			terms = lexrank.Tokenize(h, terms)
		}
		doc.chunks = append(doc.chunks, &chunk{
			doc: doc, index: i, headings: pc.headings,
			start: pc.start, end: pc.end,
			tf: lexrank.Counts(terms), length: len(terms),
		})
	}
	return doc, nil
}

// embedText is what the embedder is given for a chunk: its title and
// headings, then its text.
func (c *chunk) embedText() string {
	head := append([]string{c.doc.doc.Title}, c.headings...)
	return strings.Join(head, " › ") + "\n\n" + c.text()
}

// embedBatch is how many texts the Embedder is given at a time.
const embedBatch = 256

// embedChunks gives chunks their vectors, when the knowledge base has an
// Embedder, all of one length.
func (kb *KB) embedChunks(ctx context.Context, chunks []*chunk) error {
	if kb.cfg.embed == nil {
		return nil
	}
	for start := 0; start < len(chunks); start += embedBatch {
		batch := chunks[start:min(start+embedBatch, len(chunks))]
		texts := make([]string, len(batch))
		for i, c := range batch {
			texts[i] = c.embedText()
		}
		vecs, err := kb.embed(ctx, texts)
		if err != nil {
			return err
		}
		for i, c := range batch {
			if len(vecs[i]) != len(chunks[0].vec) && start > 0 {
				return fmt.Errorf("%w: the embedder gave vectors of %d and %d dimensions", ErrEmbedding, len(chunks[0].vec), len(vecs[i]))
			}
			c.vec = vecs[i]
		}
	}
	return nil
}

// embed calls the Embedder and checks what it gives: one finite, non-empty
// vector per text, each made a unit vector.
func (kb *KB) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := kb.cfg.embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%w: the embedder gave %d vectors for %d texts", ErrEmbedding, len(vecs), len(texts))
	}
	out := make([][]float32, len(vecs))
	for i, v := range vecs {
		if len(v) == 0 {
			return nil, fmt.Errorf("%w: the embedder gave an empty vector", ErrEmbedding)
		}
		u, ok := lexrank.Unit(v)
		if !ok {
			return nil, fmt.Errorf("%w: the embedder gave a vector with a value that is not a finite number", ErrEmbedding)
		}
		if i > 0 && len(u) != len(out[0]) {
			return nil, fmt.Errorf("%w: the embedder gave vectors of %d and %d dimensions", ErrEmbedding, len(out[0]), len(u))
		}
		out[i] = u
	}
	return out, nil
}

// checkDim checks that the vectors of chunks have the length of those the
// knowledge base holds, less those of old, which they replace. kb.mu is
// held.
func (kb *KB) checkDim(chunks []*chunk, old *document) error {
	if kb.cfg.embed == nil || len(chunks) == 0 {
		return nil
	}
	others := kb.chunks
	if old != nil {
		others -= len(old.chunks)
	}
	if others > 0 && len(chunks[0].vec) != kb.dim {
		return fmt.Errorf("%w: the chunks' vectors have %d dimensions, those of the knowledge base have %d", ErrEmbedding, len(chunks[0].vec), kb.dim)
	}
	return nil
}

// insert adds doc, replacing the document with its ID. kb.mu is held.
func (kb *KB) insert(doc *document) {
	if old := kb.docs[doc.doc.ID]; old != nil {
		kb.remove(old)
	}
	kb.docs[doc.doc.ID] = doc
	for _, c := range doc.chunks {
		for t := range c.tf {
			set := kb.postings[t]
			if set == nil {
				set = map[*chunk]struct{}{}
				kb.postings[t] = set
			}
			set[c] = struct{}{}
		}
		kb.terms += c.length
		kb.chunks++
		if c.vec != nil {
			kb.dim = len(c.vec)
		}
	}
	kb.version++
}

// remove drops doc. kb.mu is held.
func (kb *KB) remove(doc *document) {
	delete(kb.docs, doc.doc.ID)
	for _, c := range doc.chunks {
		for t := range c.tf {
			set := kb.postings[t]
			delete(set, c)
			if len(set) == 0 {
				delete(kb.postings, t)
			}
		}
		kb.terms -= c.length
		kb.chunks--
	}
	kb.version++
}

// Delete removes the document with the given ID and its chunks. An ID no
// document has is an error that matches ErrNotFound.
//
// Deprecated: Delete takes no context, so it removes the document from the
// store only when the store is the knowledge base's own (no WithStore);
// from a store given with WithStore it removes it from the process only.
// Use Remove, which removes it from the store in every case.
func (kb *KB) Delete(id string) error {
	if kb.cfg.ownStore {
		// The in-process store does no I/O: no context bounds it.
		return kb.Remove(context.Background(), id)
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	doc := kb.docs[id]
	if doc == nil {
		return fmt.Errorf("%w: no document has the id %q", ErrNotFound, id)
	}
	kb.remove(doc)
	return nil
}

// Document returns a copy of the document with the given ID, as the
// knowledge base holds it: its text normalized, its title found, its front
// matter's fields in its metadata. An unknown ID is an error that matches
// ErrNotFound.
func (kb *KB) Document(id string) (Doc, error) {
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	doc := kb.docs[id]
	if doc == nil {
		return Doc{}, fmt.Errorf("%w: no document has the id %q", ErrNotFound, id)
	}
	return doc.doc.clone(), nil
}

// Chunks returns the chunks of the document with the given ID, in order.
// An unknown ID is an error that matches ErrNotFound.
func (kb *KB) Chunks(id string) ([]Chunk, error) {
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	doc := kb.docs[id]
	if doc == nil {
		return nil, fmt.Errorf("%w: no document has the id %q", ErrNotFound, id)
	}
	out := make([]Chunk, len(doc.chunks))
	for i, c := range doc.chunks {
		out[i] = c.public()
	}
	return out, nil
}

// Documents describes the knowledge base's documents, by ID.
func (kb *KB) Documents() []DocumentInfo {
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	out := make([]DocumentInfo, 0, len(kb.docs))
	for _, doc := range kb.docs {
		out = append(out, DocumentInfo{
			ID: doc.doc.ID, Title: doc.doc.Title, Source: doc.doc.Source,
			Metadata: maps.Clone(doc.doc.Metadata), Chunks: len(doc.chunks), Size: len(doc.doc.Text),
		})
	}
	slices.SortFunc(out, func(a, b DocumentInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}
