// Package hashembed is a deterministic model.Embedder that needs no model
// and no network: it hashes a text's words and their three-letter pieces
// into a fixed number of dimensions (the "hashing trick"). Texts that share
// words or word stems come out near; it knows no synonyms. It is for tests,
// offline examples and demos of search by meaning, not for production
// recall.
package hashembed
