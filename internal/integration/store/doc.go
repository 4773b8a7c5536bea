// Package store holds the tests of Trellis's store package that need more
// than store itself: its benchmarks on every backend (memory, SQLite,
// PostgreSQL). They live here, in the integration tests, so that a module
// requiring store does not take the SQLite and PostgreSQL drivers into its
// go.sum. It has no code of its own.
package store
