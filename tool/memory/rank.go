package memory

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BM25's parameters: how fast a term's weight saturates with its count,
// and how much an entry's length discounts it.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// MaxQueryTerms is how many distinct words of a query count in lexical
// ranking: the first ones; the rest are ignored.
const MaxQueryTerms = 64

// stopWords are English words too common to tell entries apart.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a about above after again against all am an and any are as at be
		because been before being below between both but by can could did do
		does doing down during each few for from further had has have having he
		her here hers herself him himself his how if in into is it its itself
		just me more most my myself no nor not now of off on once only or other
		our ours ourselves out over own same she should so some such than that
		the their theirs them themselves then there these they this those
		through to too under until up very was we were what when where which
		while who whom why will with would you your yours yourself yourselves
		im ive youre theyre dont doesnt didnt isnt arent wasnt werent cant
		couldnt wouldnt shouldnt wont also get got let lets might must shall
		us`) {
		m[w] = true
	}
	return m
}()

// apostrophes are dropped from words: "don't" is "dont", "Ada's" is
// "adas", which folds to "ada".
var apostrophes = strings.NewReplacer("'", "", "\u2019", "")

// isSep reports whether r separates words: anything but letters, digits,
// combining marks and apostrophes.
func isSep(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) && r != '\'' && r != '\u2019'
}

// tokenize appends to dst the terms of text that lexical ranking matches:
// its words (runs of letters, digits and combining marks) in lower case and
// without apostrophes, less words of one character and stop words, with
// plurals folded (see fold).
func tokenize(text string, dst []string) []string {
	for w := range strings.FieldsFuncSeq(text, isSep) {
		w = apostrophes.Replace(w)
		if utf8.RuneCountInString(w) < 2 {
			continue
		}
		w = strings.ToLower(w)
		if stopWords[w] {
			continue
		}
		dst = append(dst, fold(w))
	}
	return dst
}

// fold maps a plural to its singular the simple way, so that "cities"
// finds "city" and "seats" finds "seat": a final "ies" becomes "y", and a
// final "s" goes, in words of four letters or more that do not end in
// "ss", "us" or "is". It is not a stemmer: "boxes" stays "boxe".
func fold(w string) string {
	switch {
	case len(w) >= 5 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case utf8.RuneCountInString(w) >= 4 && strings.HasSuffix(w, "s") &&
		!strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

// queryTerms returns the distinct terms of query, in order, at most
// MaxQueryTerms of them.
func queryTerms(query string) []string {
	terms := tokenize(query, nil)
	out := terms[:0]
	for _, t := range terms {
		if len(out) == MaxQueryTerms {
			break
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

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
	n := float64(len(sc.items))
	avg := float64(sc.totalLen) / n
	if avg == 0 {
		avg = 1
	}
	type weighted struct {
		term string
		idf  float64
	}
	var ws []weighted
	for _, t := range terms {
		if df := sc.df[t]; df > 0 {
			ws = append(ws, weighted{t, math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))})
		}
	}
	if len(ws) == 0 {
		return nil
	}
	var hits []hit
	for _, it := range sc.items {
		score := 0.0
		for _, w := range ws {
			if f := float64(it.tf[w.term]); f > 0 {
				score += w.idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(it.length)/avg))
			}
		}
		if score > 0 {
			hits = append(hits, hit{it, score})
		}
	}
	return hits
}

// cosine scores every entry of the scope by the cosine similarity of its
// vector with q; both are unit vectors.
func (sc *scope) cosine(q []float32) []hit {
	hits := make([]hit, 0, len(sc.items))
	for _, it := range sc.items {
		dot := 0.0
		for i, x := range it.vec {
			dot += float64(x) * float64(q[i])
		}
		hits = append(hits, hit{it, dot})
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

// unit returns v scaled to length 1 (a zero vector stays zero), or false
// when v holds a value that is not a finite number.
func unit(v []float32) ([]float32, bool) {
	sum := 0.0
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		sum += f * f
	}
	norm := math.Sqrt(sum)
	if math.IsInf(norm, 0) {
		return nil, false
	}
	out := make([]float32, len(v))
	if norm == 0 {
		return out, true
	}
	for i, x := range v {
		out[i] = float32(float64(x) / norm)
	}
	return out, true
}
