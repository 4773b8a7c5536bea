// Package postgres is a store.Store in PostgreSQL, on pgx: the store every
// replica of a service shares, so that a memory one replica writes is
// found by the others' searches.
//
//	pool, err := pgxpool.New(ctx, "postgres://...")
//	if err != nil { ... }
//	s, err := postgres.New(ctx, pool, store.WithEmbedder(e))
//
// The store creates its tables on first use (prefixed "trellis_store_", in
// the schema store.WithSchema names or the search_path's first) under an
// advisory lock, and records their version, so replicas starting together
// migrate once. Vectors are kept beside the items as bytes and compared in
// the process: no extension (pgvector) is needed. Writes take a one-row
// write clock in their transaction, so they commit one at a time and in
// order; values are kept as JSONB and come back in its normal form.
package postgres
