package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the version of the tables this package creates and
// expects: the number of migrations. A database whose schema is newer is
// refused.
const SchemaVersion = 1

// tables holds the quoted, schema-qualified names of the store's tables.
type tables struct {
	schema      string // quoted schema, empty for the search_path's
	checkpoints string
	writes      string
	migrations  string
	history     string // index name, unqualified
}

func newTables(cfg config) tables {
	qualify := func(name string) string {
		if cfg.schema == "" {
			return pgx.Identifier{cfg.prefix + name}.Sanitize()
		}
		return pgx.Identifier{cfg.schema, cfg.prefix + name}.Sanitize()
	}
	t := tables{
		checkpoints: qualify("checkpoints"),
		writes:      qualify("checkpoint_writes"),
		migrations:  qualify("schema_migrations"),
		history:     pgx.Identifier{cfg.prefix + "checkpoints_history"}.Sanitize(),
	}
	if cfg.schema != "" {
		t.schema = pgx.Identifier{cfg.schema}.Sanitize()
	}
	return t
}

// expand replaces the table placeholders of a statement.
func (t tables) expand(query string) string {
	return strings.NewReplacer(
		"{checkpoints}", t.checkpoints,
		"{writes}", t.writes,
		"{migrations}", t.migrations,
		"{history}", t.history,
	).Replace(query)
}

// migrations returns the statements that create and evolve the store's
// tables: migrations()[i] brings the schema from version i to version i+1.
// Released migrations never change; new ones are appended.
func migrations() []string {
	return []string{schemaV1}
}

// schemaV1 creates the checkpoints and their pending writes. seq orders
// checkpoints by insertion and writes by first write; deleting a checkpoint
// deletes its writes.
const schemaV1 = `
CREATE TABLE {checkpoints} (
	seq           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	thread_id     TEXT        NOT NULL,
	namespace     TEXT        NOT NULL,
	checkpoint_id TEXT        NOT NULL,
	parent_id     TEXT        NOT NULL,
	step          BIGINT      NOT NULL,
	source        TEXT        NOT NULL,
	created_at    TIMESTAMPTZ NOT NULL,
	metadata      JSONB,
	payload       BYTEA       NOT NULL,
	UNIQUE (thread_id, namespace, checkpoint_id)
);
CREATE INDEX {history} ON {checkpoints} (thread_id, namespace, seq DESC);
CREATE TABLE {writes} (
	seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	checkpoint_seq BIGINT NOT NULL REFERENCES {checkpoints} (seq) ON DELETE CASCADE,
	task_id        TEXT   NOT NULL,
	node           TEXT   NOT NULL,
	payload        BYTEA  NOT NULL,
	UNIQUE (checkpoint_seq, task_id)
);`

// lockKey is the advisory lock that serializes migrations of one schema.
func lockKey(cfg config) int64 {
	h := fnv.New64a()
	h.Write([]byte("trellis/state/postgres:" + cfg.schema))
	return int64(h.Sum64())
}

// migrate brings the schema up to SchemaVersion in one transaction holding
// an advisory lock, so replicas starting together apply each migration
// exactly once (CREATE ... IF NOT EXISTS alone is not safe under
// concurrency in PostgreSQL). Tables that are already current are only
// read: a role that may read and write them, but not create anything, can
// open the store.
func (s *Saver) migrate(ctx context.Context, cfg config) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(cfg)); err != nil {
			return fmt.Errorf("lock for schema check: %w", err)
		}
		current, err := s.schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if current > SchemaVersion {
			return fmt.Errorf("database schema version %d is newer than this store supports (%d); upgrade the program", current, SchemaVersion)
		}
		if current == SchemaVersion {
			return nil
		}
		if s.t.schema != "" {
			// CREATE SCHEMA IF NOT EXISTS needs the right to create schemas
			// even when the schema exists: look first.
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, s.t.schema).Scan(&exists); err != nil {
				return fmt.Errorf("look up schema: %w", err)
			}
			if !exists {
				if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+s.t.schema); err != nil {
					return fmt.Errorf("create schema: %w", err)
				}
			}
		}
		if _, err := tx.Exec(ctx, s.t.expand(`CREATE TABLE IF NOT EXISTS {migrations} (
			version    INTEGER PRIMARY KEY,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`)); err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
		for v := current; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, s.t.expand(migrations()[v])); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, s.t.expand(`INSERT INTO {migrations} (version) VALUES ($1)`), v+1); err != nil {
				return fmt.Errorf("record schema version %d: %w", v+1, err)
			}
		}
		return nil
	})
}

// schemaVersion reads the version of the store's tables: 0 when there are
// none yet.
func (s *Saver) schemaVersion(ctx context.Context, tx pgx.Tx) (int, error) {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.t.migrations).Scan(&exists); err != nil {
		return 0, fmt.Errorf("look up migrations table: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var current int
	if err := tx.QueryRow(ctx, s.t.expand(`SELECT COALESCE(MAX(version), 0) FROM {migrations}`)).Scan(&current); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return current, nil
}
