// Package sqlite is a checkpoint store in a single SQLite file, the embedded
// default for durable runs.
//
// It implements state.Saver on modernc.org/sqlite, a pure-Go build of SQLite,
// so it needs neither cgo nor a server: a file path is all it takes.
//
//	s, err := sqlite.Open("checkpoints.db")
//	if err != nil { ... }
//	defer s.Close()
//
// The store creates its tables on first use and records the schema version
// in a table of its own, so later versions can migrate the file in place.
// Open puts the database in write-ahead-log (WAL) mode with a busy timeout,
// so several goroutines and several processes can share one file: readers
// never block the writer, and writers wait their turn instead of failing.
//
// Every Put, PutWrites, DeleteThread and Prune is one transaction, so a
// process killed at any moment leaves the file holding exactly the calls
// that returned (plus possibly the one in flight, in full or not at all).
// By default the file is synchronized with synchronous=NORMAL, which in WAL
// mode loses nothing when the process dies; only a power cut or operating
// system crash can roll back the last few transactions. WithSynchronous(
// SynchronousFull) closes that gap too at the cost of an fsync per call.
//
// Callers who already manage a *sql.DB use New instead of Open.
package sqlite
