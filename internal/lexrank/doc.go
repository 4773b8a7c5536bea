// Package lexrank ranks texts by the words they share with a query, and by
// embedding vectors: the tokenizer of lexical search (words in lower case,
// without stop words, plurals folded), Okapi BM25 scoring over a corpus's
// statistics, and the unit vectors and dot products of cosine similarity.
// The statistics stay with the caller (a store keeps its own document
// frequencies and lengths); the functions here are pure, and give the same
// numbers for the same input on every run.
package lexrank
