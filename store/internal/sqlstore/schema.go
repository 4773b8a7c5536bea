package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"time"
)

// Dialect is the SQL spoken by a database.
type Dialect int

// The dialects.
const (
	SQLite Dialect = iota
	Postgres
)

// SchemaVersion is the version of the store's tables: the number of
// migrations. A database whose tables are newer is refused.
const SchemaVersion = 2

// tables names the store's tables in one dialect.
type tables struct {
	dialect Dialect
	schema  string // quoted Postgres schema, empty for the search_path's
	prefix  string
}

func (t tables) name(n string) string {
	q := `"` + t.prefix + n + `"`
	if t.schema != "" {
		return t.schema + "." + q
	}
	return q
}

var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// expand fills in table names and the dialect's types and placeholders.
func (t tables) expand(q string) string {
	json, blob, text := "JSONB", "BYTEA", `TEXT COLLATE "C"`
	gin := `CREATE INDEX {ix}store_items_value ON {items} USING GIN (value jsonb_path_ops)`
	if t.dialect == SQLite {
		json, blob, text, gin = "TEXT", "BLOB", "TEXT", ""
	}
	q = strings.ReplaceAll(q, "{gin}", gin)
	q = strings.NewReplacer(
		"{items}", t.name("store_items"),
		"{clock}", t.name("store_clock"),
		"{migrations}", t.name("store_migrations"),
		"{ix}", t.prefix,
		"{json}", json,
		"{blob}", blob,
		"{ctext}", text,
	).Replace(q)
	if t.dialect == SQLite {
		q = placeholder.ReplaceAllString(q, "?$1")
	}
	return q
}

// migrations()[i] brings the tables from version i to i+1. Released
// migrations never change; new ones are appended.
func migrations() []string {
	return []string{schemaV1, schemaV2}
}

// schemaV2 indexes the values for filters of equality (JSONB containment)
// in Postgres; SQLite has no such index and records the version alone.
const schemaV2 = `{gin}`

// schemaV1 creates the items and the write clock. Namespaces are kept
// encoded (store.EncodeNamespace) and compared bytewise, so the items
// under a prefix are one range of the primary key. Times are microseconds
// since the Unix epoch; vectors are little-endian float32s.
const schemaV1 = `
CREATE TABLE {items} (
	namespace  {ctext} NOT NULL,
	key        {ctext} NOT NULL,
	value      {json}  NOT NULL,
	version    BIGINT  NOT NULL,
	created_at BIGINT  NOT NULL,
	updated_at BIGINT  NOT NULL,
	expires_at BIGINT,
	vector     {blob},
	seq        BIGINT  NOT NULL,
	PRIMARY KEY (namespace, key)
);
CREATE INDEX {ix}store_items_seq ON {items} (seq);
CREATE INDEX {ix}store_items_expiry ON {items} (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE {clock} (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	seq BIGINT NOT NULL
);
INSERT INTO {clock} (id, seq) VALUES (1, 0);`

// migrate brings the tables up to SchemaVersion in one transaction that
// holds the database's write lock (SQLite) or an advisory lock
// (PostgreSQL), so processes starting together apply each migration once.
func (d *Driver) migrate(ctx context.Context) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	begin := "BEGIN"
	if d.t.dialect == SQLite {
		begin = "BEGIN IMMEDIATE"
	}
	if _, err := conn.ExecContext(ctx, begin); err != nil {
		return fmt.Errorf("lock for schema check: %w", err)
	}
	if err := d.migrateLocked(ctx, conn); err != nil {
		if _, rbErr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
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

func (d *Driver) migrateLocked(ctx context.Context, conn *sql.Conn) error {
	if d.t.dialect == Postgres {
		h := fnv.New64a()
		h.Write([]byte("trellis/store:" + d.t.schema + d.t.prefix))
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64())); err != nil {
			return fmt.Errorf("lock for schema check: %w", err)
		}
		if d.t.schema != "" {
			var exists bool
			if err := conn.QueryRowContext(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, d.t.schema).Scan(&exists); err != nil {
				return fmt.Errorf("look up schema: %w", err)
			}
			if !exists {
				if _, err := conn.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+d.t.schema); err != nil {
					return fmt.Errorf("create schema: %w", err)
				}
			}
		}
	}
	if _, err := conn.ExecContext(ctx, d.t.expand(`CREATE TABLE IF NOT EXISTS {migrations} (
		version    INTEGER PRIMARY KEY,
		applied_at BIGINT  NOT NULL
	)`)); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	var current int
	if err := conn.QueryRowContext(ctx, d.t.expand(`SELECT COALESCE(MAX(version), 0) FROM {migrations}`)).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > SchemaVersion {
		return fmt.Errorf("store schema version %d is newer than this program supports (%d); upgrade the program", current, SchemaVersion)
	}
	for v := current; v < SchemaVersion; v++ {
		for _, stmt := range strings.Split(d.t.expand(migrations()[v]), ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate store schema to version %d: %w", v+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx, d.t.expand(`INSERT INTO {migrations} (version, applied_at) VALUES ($1, $2)`),
			v+1, time.Now().UnixMicro()); err != nil {
			return fmt.Errorf("record store schema version %d: %w", v+1, err)
		}
	}
	return nil
}
