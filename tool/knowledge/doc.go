// Package knowledge is a knowledge base for agents that answer from a
// corpus of documents: manuals, a project's docs, articles, source files.
// Documents are cut into chunks that keep their place (the headings they
// sit under, the line they start on), searched by relevance to a query,
// and given to the model with citations it can repeat.
//
//	kb, err := knowledge.New()
//	...
//	report, err := kb.AddDir(ctx, os.DirFS("docs")) // *.md, *.markdown, *.txt
//	...
//	search, err := knowledge.SearchTool(kb, knowledge.WithDescription("The product's user guide."))
//	...
//	a, err := agent.NewReAct(m, agent.WithTools(search))
//
// A KB implements tool.Retriever, so it is also the source of a
// tool.NewRetrieval tool and a run's memory (agent.WithMemory), searched
// with tool.SearchMemory.
//
// # Documents and chunks
//
// AddDocument adds a Doc (an ID, a title, a source, the text, metadata);
// adding one with an ID the knowledge base has replaces it, and Delete
// removes one. AddDir adds the matching files of an fs.FS (os.DirFS,
// embed.FS), each under its path, and reports the files it skipped:
// binary, larger than WithMaxDocumentSize, unreadable.
//
// Markdown (a source ending in .md, or without an extension) is cut by its
// headings, ATX ("## Install") and setext (underlined) alike: a chunk never
// spans two sections and keeps the path of headings it sits under. Front
// matter (at most 64 KiB of it) is not chunked; its title becomes the
// document's title when it has none, and its scalar fields join the
// document's metadata. Titles and headings are cut to 200 characters. Within a
// section, paragraphs, lists and fenced code blocks are packed whole into
// chunks of at most WithChunkSize runes; a longer one is cut at a sentence
// end or a space (at a line break in code), each piece repeating the last
// WithChunkOverlap runes of the one before. Other text (.txt, .go, ...) is
// cut the same way by its paragraphs. A chunk's text is exactly as it is in
// the document, with line endings made "\n".
//
// # Ranking
//
// Without an embedding model, Search ranks lexically, with the same
// tokenizer and BM25 scoring as package tool/memory: words are split at anything that
// is not a letter, digit or combining mark, lower-cased, stop words and
// one-letter words dropped, plurals folded; a chunk's words are those of
// its text, its headings and its document's title. Each chunk sharing a
// word with the query is scored with Okapi BM25 over all chunks. Lexical
// matching finds the words a query uses, not their meaning: "car" does not
// find "automobile". WithEmbedder ranks by the cosine similarity of
// embedding vectors instead.
//
// Ranking is deterministic: equal scores go to the document ID, then the
// chunk's position. The results are then diversified: a document gives at
// most WithMaxPerDocument chunks while chunks of other documents match (it
// gives more only when they do not fill the limit), and chunks of one
// document that follow each other in one section are joined into one
// passage (WithMergeAdjacent). Query.Filter selects documents by metadata
// values, Query.Sources by source: equal, under a directory ("docs/"), or
// matching a pattern ("docs/*.md").
//
// # Tools
//
// SearchTool gives a model knowledge_search: a query and a limit, answered
// with numbered passages, each headed by its citation, "[1] title —
// source#section", which the model can cite. WithAgentic adds a metadata
// filter and a list of sources to its arguments, and enumerates in its
// schema the keys and values and the sources the corpus has, so the model
// can narrow a search itself. Tools wraps the tool in a toolset that
// rebuilds that schema when documents change.
//
// # Where the documents live
//
// Every document is kept in a long-term store (package store) as an item
// under a namespace ("trellis", "knowledge" unless set), and indexed in
// the process: its chunks, their words and, with an embedder, their
// vectors. Without WithStore the knowledge base has a store of its own in
// the process (store/memory). WithStore(st) puts the documents in st
// instead — store/sqlite for one machine, store/postgres for replicas —
// so the corpus outlives the process, and every process on the same store
// searches the same documents: AddDocument and Remove write to the store,
// Sync reads what other processes added, changed or removed (Search does
// so by itself at most every SyncInterval).
//
// # Snapshots
//
// Save and Load write and read the documents as versioned JSON; SaveFile
// writes a file atomically and LoadFile reads one. Chunks and vectors are
// not saved: Load cuts the documents again with its own options, embeds
// them again, and makes them the store's documents in one batch. A
// snapshot that is cut short, is not JSON or holds documents the knowledge
// base would refuse is an error matching ErrCorrupt, and the knowledge
// base keeps what it had.
package knowledge
