// Package memory is a memory store for agents: what an application keeps
// for a user across runs (facts, preferences, decisions), found again by
// relevance to a query. The entries live in a long-term store
// (store.Store): the Store's own in the process unless WithStore or
// WithRunStore gives another.
//
//	store, err := memory.New(memory.WithMaxEntries(1000))
//	...
//	tools, err := memory.Tools(store) // memory_add, memory_search, memory_delete
//	...
//	a, err := agent.NewReAct(m, agent.WithToolsets(tools), agent.WithMemory(store))
//	out, err := a.Invoke(memory.WithScope(ctx, userID), agent.Ask("..."))
//
// A Store implements tool.Retriever, so it is also the run's memory that
// tools search with tool.SearchMemory (agent.WithMemory, nodes.WithMemory,
// tool.WithMemory) and the source of a tool.NewRetrieval tool. The
// application adds entries with Add, removes them with Delete and reads
// them with List; Tools gives a model the same (WithReadOnly: search
// alone).
//
// # Scopes
//
// One store serves many users. Every operation works in the scope its
// context names — WithScope(ctx, userID), or whatever a WithScopeFunc
// reads from the context (an error from it refuses the operation) — and
// sees no entry of another scope: Retrieve, List and Delete, the tools
// included, cannot reach them, and ranking uses the scope's own word
// statistics. Without a scope in the context an operation works in the
// empty scope, which is how a single-user program uses the store. A
// program that wants a user's entries apart in every respect (their own
// file, their own limits) can as well keep one store per user.
//
// # Ranking
//
// Without an embedding model, Retrieve ranks lexically: by the words a
// query shares with an entry, not by meaning ("car" does not find
// "automobile"). Text is split into words at anything that is not a
// letter, digit or combining mark; apostrophes are dropped; words are
// lower-cased; words of one character and common English stop words are
// dropped; plural endings are folded ("cities" matches "city", "seats"
// matches "seat"). An entry's topics count as words of its text. Each
// entry sharing a word with the query is scored with Okapi BM25 (k1 1.2,
// b 0.75) over the entries of the scope: rare words weigh more than common
// ones, repeated words saturate, long entries are discounted. Each
// distinct query word counts once, the first MaxQueryTerms of them. Equal
// scores go to the newer entry. The ranking is deterministic: the same
// entries and query give the same order on every run. A query with no word
// to match (empty, or stop words only) returns the newest entries.
//
// Retrieve ranks by meaning instead when the store.Store has an embedder
// (store.WithEmbedder; WithEmbedder gives one to the Store's own): entries
// are embedded when added (and again when loaded) and a query when
// searched, and Retrieve returns the entries whose vectors have the
// highest cosine similarity to the query's, whatever it is, newest first
// among equals. Vectors of another length than the query's never match.
//
// # Bounds
//
// A scope keeps at most WithMaxEntries entries (DefaultMaxEntries): adding
// one more evicts the oldest (the earliest CreatedAt, then the first
// added), silently. An entry larger than WithMaxEntrySize bytes
// (DefaultMaxEntrySize; its text, topics and metadata) is refused with an
// error that matches ErrTooLarge and names the limit; memory_add passes it
// to the model, which can save a shorter memory. The number of scopes is
// not bounded.
//
// # Where the entries live
//
// Each scope is a namespace of a store.Store ("trellis", "memory",
// "scope:"+scope; WithNamespace changes the first labels), each entry an
// item keyed by its ID. Without options that store is the Store's own, in
// the process (store/memory). WithStore(st) keeps the entries in st
// instead: store/sqlite for one machine, store/postgres for replicas that
// share what they remember, so the entries outlive the process and every
// replica sees every other's. WithRunStore takes the store from the run
// (graph.WithStore), so one memory.Store serves graphs with different
// stores, and uses its own when the context carries none. Scopes, limits,
// validation, the tools and the ranking are the same on every store.
//
// # Snapshots
//
// Save and Load write and read all scopes of the Store's own in-process
// store as versioned JSON on an io.Writer and io.Reader; SaveFile writes a
// file atomically (a temporary file, synced, renamed over the old one;
// mode 0600) and LoadFile reads one. Load checks the whole snapshot before
// replacing anything: a file that is cut short, is not JSON or holds
// entries the store would refuse is an error matching ErrCorrupt that says
// what is wrong and where, and the store keeps what it had. Nothing is
// saved by itself: call SaveFile when it suits the program (after a run,
// at exit, on a timer). With WithStore or WithRunStore the store.Store
// keeps the entries, and Save and Load return ErrDurable.
package memory
