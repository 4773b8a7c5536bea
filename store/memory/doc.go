// Package memory is a store.Store in the memory of one process: for tests,
// examples and programs whose memories need not outlive them. It passes
// the same conformance suite (store/storetest) as the SQLite and Postgres
// backends.
package memory
