package knowledge

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/internal/lexrank"
	"github.com/trellis-go/trellis/tool"
)

// Query is a search of the knowledge base.
type Query struct {
	// Text is what to search for.
	Text string `json:"text"`
	// Limit is how many chunks to return at most; zero or less is
	// DefaultLimit.
	Limit int `json:"limit,omitempty"`
	// Filter selects the documents whose metadata has all these pairs.
	Filter map[string]string `json:"filter,omitempty"`
	// Sources, when not empty, selects the documents whose source matches
	// one of them: equal to it, under it when it ends in "/" ("docs/"), or
	// matched by it as a path.Match pattern ("docs/*.md").
	Sources []string `json:"sources,omitempty"`
}

// Result is a passage a search found: a chunk, or chunks of one document
// that follow each other joined into one (see WithMergeAdjacent).
type Result struct {
	// DocumentID, Title, Source and Metadata are the document's.
	DocumentID string            `json:"document_id"`
	Title      string            `json:"title"`
	Source     string            `json:"source,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	// Headings is the path of headings the passage sits under.
	Headings []string `json:"headings,omitempty"`
	// Text is the passage's text, as it is in the document.
	Text string `json:"text"`
	// First and Last are the indexes of the passage's first and last
	// chunks: equal unless chunks were joined.
	First int `json:"first"`
	Last  int `json:"last"`
	// Line is the line of the document the passage starts on, from 1.
	Line int `json:"line"`
	// Score is the passage's relevance, that of its best chunk: BM25, or
	// cosine similarity with an Embedder. Higher is more relevant.
	Score float64 `json:"score"`
}

// Anchor returns the fragment that points into the document at the
// passage, without "#": for Markdown (see Doc.Source), the GitHub-style
// anchor of its innermost heading ("installing-on-linux"), "" when it has
// none; for other text, its line ("L42").
func (r Result) Anchor() string {
	if !isMarkdown(cmp.Or(r.Source, r.DocumentID)) {
		if r.Line < 1 {
			return ""
		}
		return "L" + strconv.Itoa(r.Line)
	}
	if len(r.Headings) == 0 {
		return ""
	}
	return slug(r.Headings[len(r.Headings)-1])
}

// Citation returns how a model cites the passage: its document's title, a
// dash, and where it is, the source (or, without one, the document's ID)
// and its anchor: "Install guide — docs/install.md#on-linux".
func (r Result) Citation() string {
	where := cmp.Or(r.Source, r.DocumentID)
	if a := r.Anchor(); a != "" {
		where += "#" + a
	}
	return r.Title + " — " + where
}

// slug returns the anchor GitHub gives a heading: lower case, spaces made
// "-", and punctuation other than "-" and "_" dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || !lexrank.IsSep(r) && r != '\'' && r != '\u2019':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sourceMatcher matches a document's source against Query.Sources.
type sourceMatcher []string

func newSourceMatcher(sources []string) (sourceMatcher, error) {
	for _, s := range sources {
		if s == "" {
			return nil, fmt.Errorf("knowledge: a source to search is empty")
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("knowledge: the source pattern %q is malformed: %w", s, err)
		}
	}
	return sourceMatcher(sources), nil
}

func (m sourceMatcher) match(source string) bool {
	if len(m) == 0 {
		return true
	}
	for _, s := range m {
		if s == source || strings.HasSuffix(s, "/") && strings.HasPrefix(source, s) {
			return true
		}
		if ok, _ := path.Match(s, source); ok {
			return true
		}
	}
	return false
}

// scored is a chunk and its relevance to a query.
type scored struct {
	c     *chunk
	score float64
}

// Search returns the passages of the knowledge base most relevant to q,
// most relevant first: at most q.Limit chunks, from the documents q's
// filter and sources select.
//
// Without an Embedder the ranking is lexical (see the package
// documentation): chunks that share a word with the query (in their text,
// headings or document title) are scored with BM25 over all chunks; a query
// with no word to match (empty, or only stop words) finds nothing. With an
// Embedder, every chunk is scored by cosine similarity. Ties go to the
// document ID, then the chunk's position, so the order is the same on every
// run.
//
// One document gives at most WithMaxPerDocument chunks while chunks of
// other documents match, and chunks of one document that follow each other
// are joined into one result (WithMergeAdjacent).
func (kb *KB) Search(ctx context.Context, q Query) ([]Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := kb.syncIfDue(ctx); err != nil {
		return nil, err
	}
	sources, err := newSourceMatcher(q.Sources)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	var qvec []float32
	if kb.cfg.embed != nil {
		if strings.TrimSpace(q.Text) == "" {
			return []Result{}, nil
		}
		vecs, err := kb.embed(ctx, []string{q.Text})
		if err != nil {
			return nil, err
		}
		qvec = vecs[0]
	}
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	selected := map[*document]bool{}
	keep := func(doc *document) bool {
		ok, seen := selected[doc]
		if !seen {
			ok = sources.match(doc.doc.Source) && matchFilter(doc.doc.Metadata, q.Filter)
			selected[doc] = ok
		}
		return ok
	}
	var hits []scored
	if qvec != nil {
		if kb.chunks > 0 && len(qvec) != kb.dim {
			return nil, fmt.Errorf("%w: the query's vector has %d dimensions, the chunks' have %d", ErrEmbedding, len(qvec), kb.dim)
		}
		for _, doc := range kb.docs {
			if keep(doc) {
				for _, c := range doc.chunks {
					hits = append(hits, scored{c, lexrank.Dot(c.vec, qvec)})
				}
			}
		}
	} else {
		ws := lexrank.Weights(lexrank.QueryTerms(q.Text), kb.chunks, func(t string) int { return len(kb.postings[t]) })
		avg := lexrank.AvgLen(kb.terms, kb.chunks)
		seen := map[*chunk]bool{}
		for _, w := range ws {
			for c := range kb.postings[w.Term] {
				if !seen[c] {
					seen[c] = true
					if keep(c.doc) {
						hits = append(hits, scored{c, lexrank.Score(ws, c.tf, c.length, avg)})
					}
				}
			}
		}
	}
	slices.SortFunc(hits, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := strings.Compare(a.c.doc.doc.ID, b.c.doc.doc.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.c.index, b.c.index)
	})
	return kb.pick(hits, limit), nil
}

// matchFilter reports whether meta has every pair of filter.
func matchFilter(meta, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := meta[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// group is the chunks of one result.
type group struct {
	first, last *chunk
	score       float64
}

// pick takes limit chunks of hits, best first, at most maxPerDocument of
// one document while others are left, joining neighbours, and makes them
// results. kb.mu is held.
func (kb *KB) pick(hits []scored, limit int) []Result {
	var groups []*group
	perDoc := map[*document]int{}
	taken := 0
	take := func(h scored) {
		taken++
		perDoc[h.c.doc]++
		if kb.cfg.merge {
			// The groups that end just before the chunk and start just
			// after it, in its section.
			before, after := -1, -1
			for i, g := range groups {
				if g.first.doc != h.c.doc || !slices.Equal(g.first.headings, h.c.headings) {
					continue
				}
				switch h.c.index {
				case g.last.index + 1:
					before = i
				case g.first.index - 1:
					after = i
				}
			}
			switch {
			case before >= 0 && after >= 0:
				g, o := groups[before], groups[after]
				g.last = o.last
				g.score = max(g.score, o.score)
				groups = slices.Delete(groups, after, after+1)
				return
			case before >= 0:
				groups[before].last = h.c
				return
			case after >= 0:
				groups[after].first = h.c
				return
			}
		}
		groups = append(groups, &group{first: h.c, last: h.c, score: h.score})
	}
	var skipped []scored
	for _, h := range hits {
		if taken == limit {
			break
		}
		if kb.cfg.maxPerDocument > 0 && perDoc[h.c.doc] >= kb.cfg.maxPerDocument {
			skipped = append(skipped, h)
			continue
		}
		take(h)
	}
	// When other documents could not fill the limit, a document gives more.
	for _, h := range skipped {
		if taken == limit {
			break
		}
		take(h)
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return cmp.Compare(b.score, a.score) })
	out := make([]Result, len(groups))
	for i, g := range groups {
		doc := g.first.doc
		out[i] = Result{
			DocumentID: doc.doc.ID,
			Title:      doc.doc.Title,
			Source:     doc.doc.Source,
			Metadata:   maps.Clone(doc.doc.Metadata),
			Headings:   slices.Clone(g.first.headings),
			Text:       doc.doc.Text[g.first.start:g.last.end],
			First:      g.first.index,
			Last:       g.last.index,
			Line:       doc.lines.line(g.first.start),
			Score:      g.score,
		}
	}
	return out
}

// Retrieve returns at most limit passages relevant to query, as Search
// finds them without a filter, as documents: the ID is the document's ID
// and "#" and the chunk's index ("guide.md#3", or "guide.md#3-4" for joined
// chunks), Content the passage's text, Score its relevance, and Metadata
// the document's metadata with TitleKey, SourceKey, HeadingsKey,
// DocumentIDKey and LineKey added. A limit of zero or less is DefaultLimit.
func (kb *KB) Retrieve(ctx context.Context, query string, limit int) ([]tool.Document, error) {
	results, err := kb.Search(ctx, Query{Text: query, Limit: limit})
	if err != nil {
		return nil, err
	}
	docs := make([]tool.Document, len(results))
	for i, r := range results {
		docs[i] = r.document()
	}
	return docs, nil
}

// document returns r as Retrieve gives it.
func (r Result) document() tool.Document {
	meta := make(map[string]any, len(r.Metadata)+5)
	for k, v := range r.Metadata {
		meta[k] = v
	}
	meta[TitleKey] = r.Title
	if r.Source != "" {
		meta[SourceKey] = r.Source
	}
	if len(r.Headings) > 0 {
		meta[HeadingsKey] = slices.Clone(r.Headings)
	}
	meta[DocumentIDKey] = r.DocumentID
	meta[LineKey] = r.Line
	id := r.DocumentID + "#" + strconv.Itoa(r.First)
	if r.Last != r.First {
		id += "-" + strconv.Itoa(r.Last)
	}
	return tool.Document{ID: id, Content: r.Text, Score: r.Score, Metadata: meta}
}
