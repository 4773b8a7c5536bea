package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// migrations returns the statements that create and evolve the store's
// tables: migrations()[i] brings the schema from version i to version i+1.
// Released migrations never change; new ones are appended.
func migrations() []string {
	return []string{schemaV1}
}

// schemaV1 creates the checkpoints and their pending writes.
const schemaV1 = `CREATE TABLE trellis_checkpoints (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT, -- insertion order
		thread_id  TEXT    NOT NULL,
		namespace  TEXT    NOT NULL,
		id         TEXT    NOT NULL,
		parent_id  TEXT    NOT NULL,
		step       INTEGER NOT NULL,
		source     TEXT    NOT NULL,
		created_at INTEGER NOT NULL, -- microseconds since the Unix epoch
		metadata   TEXT,             -- JSON object, NULL when empty
		payload    BLOB    NOT NULL,
		UNIQUE (thread_id, namespace, id)
	);
	CREATE INDEX trellis_checkpoints_history ON trellis_checkpoints (thread_id, namespace, seq);
	CREATE TABLE trellis_writes (
		seq            INTEGER PRIMARY KEY AUTOINCREMENT, -- order first written
		checkpoint_seq INTEGER NOT NULL REFERENCES trellis_checkpoints (seq) ON DELETE CASCADE,
		task_id        TEXT    NOT NULL,
		node           TEXT    NOT NULL,
		payload        BLOB    NOT NULL,
		UNIQUE (checkpoint_seq, task_id)
	);`

// SchemaVersion is the version of the tables this package creates and
// expects: the number of migrations. A file whose schema is newer is refused.
const SchemaVersion = 1

// migrate brings the schema up to SchemaVersion in one transaction begun
// IMMEDIATE whatever the connection's settings, so concurrent first uses
// (from any number of processes) queue for the write lock and apply each
// migration exactly once.
func (s *Saver) migrate(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("lock database for schema check: %w", err)
	}
	if err := migrateLocked(ctx, conn); err != nil {
		if _, rbErr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
			// Never hand the pool a connection stuck in a transaction.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return err
	}
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		return fmt.Errorf("commit schema: %w", err)
	}
	return nil
}

func migrateLocked(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS trellis_schema (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL -- microseconds since the Unix epoch
	)`); err != nil {
		return fmt.Errorf("create schema table: %w", err)
	}
	var current int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM trellis_schema`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > SchemaVersion {
		return fmt.Errorf("database schema version %d is newer than this store supports (%d); upgrade the program", current, SchemaVersion)
	}
	for v := current; v < SchemaVersion; v++ {
		if _, err := conn.ExecContext(ctx, migrations()[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO trellis_schema (version, applied_at) VALUES (?, ?)`,
			v+1, time.Now().UnixMicro()); err != nil {
			return fmt.Errorf("record schema version %d: %w", v+1, err)
		}
	}
	return nil
}
