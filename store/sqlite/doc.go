// Package sqlite is a store.Store in one SQLite file, on modernc.org/sqlite
// (pure Go, no cgo): the embedded default for memories that outlive the
// process.
//
//	s, err := sqlite.Open("memories.db", store.WithEmbedder(e))
//	if err != nil { ... }
//	defer s.Close()
//
// The store creates its tables on first use (prefixed "trellis_store_",
// beside the checkpointer's and the runs layer's when they share a file)
// and records their version in a table of its own, so later versions
// migrate the file in place. Open puts the database in write-ahead-log mode
// with a busy timeout, so several goroutines and processes share one file.
// Every Put, PutIf, Delete and Apply is one transaction.
package sqlite
