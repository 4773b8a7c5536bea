// Package store is the long-term memory of agents: JSON items kept under
// hierarchical namespaces, such as ("users", id, "memories"), that outlive
// runs and threads. Where a checkpointer (state.Saver) keeps one thread's
// state, a Store keeps what every thread of every replica may read:
// memories, profiles, documents.
//
// A Store puts, gets and deletes items by namespace and key, lists
// namespaces by prefix, and searches the items under a prefix by filter
// (equality and ranges on JSON fields) and, when it has an Embedder, by
// meaning: the text of a query is embedded and the nearest items come
// first. Items may expire (WithTTL) and Sweep removes expired ones. Apply
// writes a batch atomically, and PutIf writes only over the version the
// caller read, failing with an error that matches ErrConflict otherwise, so
// two replicas never overwrite each other silently.
//
// The backends live in sub-packages: store/memory (one process),
// store/sqlite (one file, pure Go) and store/postgres (shared by replicas).
// All of them pass the conformance suite in store/storetest. The runnable
// examples of this package's API are those of store/memory: this package's
// own tests use no backend, so that a module importing store (as graph
// does) does not take a backend's dependencies into its go.sum.
//
// The graph engine hands a compiled graph's store to its nodes and tools
// through the run's context (graph.WithStore); FromContext finds it there.
package store
