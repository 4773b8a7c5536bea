package lexrank

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BM25's parameters: how fast a term's weight saturates with its count (K1),
// and how much a text's length discounts it (B).
const (
	K1 = 1.2
	B  = 0.75
)

// MaxQueryTerms is how many distinct words of a query count: the first
// ones; QueryTerms drops the rest.
const MaxQueryTerms = 64

// stopWords are English words too common to tell texts apart.
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

// IsStopWord reports whether w, in lower case and without apostrophes, is
// one of the English words too common to count ("the", "which", "dont").
func IsStopWord(w string) bool { return stopWords[w] }

// apostrophes are dropped from words: "don't" is "dont", "Ada's" is
// "adas", which folds to "ada".
var apostrophes = strings.NewReplacer("'", "", "\u2019", "")

// IsSep reports whether r separates words: anything but letters, digits,
// combining marks and apostrophes.
func IsSep(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) && r != '\'' && r != '\u2019'
}

// Tokenize appends to dst the terms of text that lexical ranking matches:
// its words (runs of letters, digits and combining marks) in lower case and
// without apostrophes, less words of one character and stop words, with
// plurals folded (see Fold) unless that makes a stop word. Invalid UTF-8
// separates words.
func Tokenize(text string, dst []string) []string {
	for w := range strings.FieldsFuncSeq(text, IsSep) {
		w = apostrophes.Replace(w)
		if utf8.RuneCountInString(w) < 2 {
			continue
		}
		w = strings.ToLower(w)
		if stopWords[w] {
			continue
		}
		// A plural whose singular is a stop word ("others", "owns") stays
		// as it is: no term is a stop word.
		if f := Fold(w); !stopWords[f] {
			w = f
		}
		dst = append(dst, w)
	}
	return dst
}

// Fold maps a plural to its singular the simple way, so that "cities"
// finds "city" and "seats" finds "seat": a final "ies" becomes "y", and a
// final "s" goes, in words of four letters or more that do not end in
// "ss", "us" or "is". It is not a stemmer: "boxes" stays "boxe".
func Fold(w string) string {
	switch {
	case len(w) >= 5 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case utf8.RuneCountInString(w) >= 4 && strings.HasSuffix(w, "s") &&
		!strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

// QueryTerms returns the distinct terms of query (see Tokenize), in order,
// at most MaxQueryTerms of them.
func QueryTerms(query string) []string {
	terms := Tokenize(query, nil)
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

// Counts returns how many times each term occurs in terms: a text's term
// frequencies, which Score reads.
func Counts(terms []string) map[string]int {
	tf := make(map[string]int, len(terms))
	for _, t := range terms {
		tf[t]++
	}
	return tf
}

// Weight is a query term that occurs in the corpus, with its inverse
// document frequency.
type Weight struct {
	Term string
	IDF  float64
}

// Weights returns the terms of a query that occur in a corpus of n texts,
// each with BM25's inverse document frequency, in the query's order; df
// gives how many of the texts hold a term. Rare terms weigh more than
// common ones. It returns nil when no term occurs.
func Weights(terms []string, n int, df func(term string) int) []Weight {
	var ws []Weight
	nf := float64(n)
	for _, t := range terms {
		if d := df(t); d > 0 {
			ws = append(ws, Weight{t, math.Log(1 + (nf-float64(d)+0.5)/(float64(d)+0.5))})
		}
	}
	return ws
}

// AvgLen returns the average length, in terms, of a corpus of n texts
// holding total terms, as Score takes it: 1 for a corpus without terms.
func AvgLen(total, n int) float64 {
	avg := float64(total) / float64(n)
	if avg == 0 || math.IsNaN(avg) {
		avg = 1
	}
	return avg
}

// Score returns the Okapi BM25 score of a text, with term frequencies tf and
// length terms, for the weighted query terms ws, in a corpus whose texts
// have avg terms on average. Each weight adds once, in order, so the sum is
// the same on every run. Zero means the text holds none of the terms.
func Score(ws []Weight, tf map[string]int, length int, avg float64) float64 {
	score := 0.0
	for _, w := range ws {
		if f := float64(tf[w.Term]); f > 0 {
			score += w.IDF * f * (K1 + 1) / (f + K1*(1-B+B*float64(length)/avg))
		}
	}
	return score
}

// Unit returns v scaled to length 1 (a zero vector stays zero), or false
// when v holds a value that is not a finite number.
func Unit(v []float32) ([]float32, bool) {
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

// Dot returns the dot product of a and b, which have one length: the cosine
// similarity of two unit vectors.
func Dot(a, b []float32) float64 {
	dot := 0.0
	for i, x := range a {
		dot += float64(x) * float64(b[i])
	}
	return dot
}
