// Package memory is a checkpoint store that keeps everything in the
// process's memory.
//
// It implements state.Saver for tests, examples and short-lived processes:
// nothing survives the process, and every checkpoint ever put stays in
// memory until DeleteThread or Prune removes it. Stored data is copied on the
// way in and on the way out, so callers may reuse or change their slices and
// maps freely.
//
// For durable runs use state/sqlite (one machine) or state/postgres (several
// replicas sharing threads).
package memory
