// Package postgres is a checkpoint store in PostgreSQL, for services whose
// replicas share threads: any replica can resume any thread.
//
// It implements state.Saver on github.com/jackc/pgx/v5. It lives in its own
// package so that programs which do not use it never compile a Postgres
// driver.
//
//	s, err := postgres.Open(ctx, "postgres://app@db:5432/app")
//	if err != nil { ... }
//	defer s.Close()
//
// Open's pool holds up to DefaultMaxConns connections unless the connection
// string sets pool_max_conns. New uses a *pgxpool.Pool the caller already
// has, as it is. Either way the store
// creates its tables on first use, under an advisory lock so that replicas
// starting together do not race, and records the schema version in a table
// of its own. WithSchema and WithTablePrefix choose where the tables live:
//
//	<prefix>checkpoints       one row per checkpoint (seq orders them)
//	<prefix>checkpoint_writes pending writes, deleted with their checkpoint
//	<prefix>schema_migrations the applied schema versions
//
// The default prefix is "trellis_" and the default schema is the first one
// on the connection's search_path.
//
// Every method is a single statement, so each is atomic, and Get reads a
// checkpoint and its writes from one snapshot. A writing statement that the
// server aborts as a deadlock or a serialization failure is run again after
// a short randomized pause, for up to eight attempts in all.
package postgres
