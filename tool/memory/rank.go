package memory

import (
	"github.com/trellis-go/trellis/internal/lexrank"
)

// MaxQueryTerms is how many distinct words of a query count in lexical
// ranking: the first ones; the rest are ignored.
const MaxQueryTerms = lexrank.MaxQueryTerms

// tokenize appends to dst the terms of text that lexical ranking matches
// (see lexrank.Tokenize).
func tokenize(text string, dst []string) []string { return lexrank.Tokenize(text, dst) }

// queryTerms returns the distinct terms of query, in order, at most
// MaxQueryTerms of them.
func queryTerms(query string) []string { return lexrank.QueryTerms(query) }

// unit returns v scaled to length 1 (a zero vector stays zero), or false
// when v holds a value that is not a finite number.
func unit(v []float32) ([]float32, bool) { return lexrank.Unit(v) }

// hit is an entry and its relevance to a query.
type hit struct {
	it    *item
	score float64
}

// bm25 scores the scope's entries against the query's terms with Okapi
// BM25 and returns those that hold any of them. Each term counts once, in
// the query's order, so that the sums, and the order, are the same on
// every run.
func (sc *scope) bm25(terms []string) []hit {
	ws := lexrank.Weights(terms, len(sc.items), func(t string) int { return sc.df[t] })
	if len(ws) == 0 {
		return nil
	}
	avg := lexrank.AvgLen(sc.totalLen, len(sc.items))
	var hits []hit
	for _, it := range sc.items {
		if score := lexrank.Score(ws, it.tf, it.length, avg); score > 0 {
			hits = append(hits, hit{it, score})
		}
	}
	return hits
}

// newest returns the scope's n newest entries with a score of zero.
func (sc *scope) newest(n int) []hit {
	items := sc.items[max(0, len(sc.items)-n):]
	hits := make([]hit, len(items))
	for i, it := range items {
		hits[i] = hit{it, 0}
	}
	return hits
}
