package runs

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
)

// SchemaVersion is the version of the tables the runs layer keeps beside
// the checkpoints. New migrates older tables up to it and refuses newer ones.
const SchemaVersion = 1

// The two SQL dialects the runs layer speaks.
const (
	dialectPostgres = "postgres"
	dialectSQLite   = "sqlite"
)

// tables names the runs layer's tables in one dialect.
type tables struct {
	dialect string
	prefix  string // the tables' name prefix, e.g. "trellis_"
	schema  string // quoted Postgres schema, empty for the search_path's
}

// name is a table's name, qualified with the schema when there is one.
func (t tables) name(n string) string {
	if t.schema != "" {
		return t.schema + "." + t.prefix + n
	}
	return t.prefix + n
}

// placeholder turns PostgreSQL's $N into SQLite's ?N, which names the
// argument by position whatever order the placeholders come in.
var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// expand fills a query's table names and clock in, for the dialect.
func (t tables) expand(q string) string {
	now := `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`
	lock, skip := " FOR UPDATE", " FOR UPDATE SKIP LOCKED"
	if t.dialect == dialectSQLite {
		// SQLite's write transactions lock the whole database at BEGIN
		// (the backends open it with _txlock=immediate): rows need no lock.
		now = `CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)`
		lock, skip = "", ""
	}
	q = strings.NewReplacer(
		"{threads}", t.name("threads"),
		"{runs}", t.name("runs"),
		"{events}", t.name("run_events"),
		"{crons}", t.name("crons"),
		"{migrations}", t.name("runs_migrations"),
		"{fence}", t.name("run_fence"),
		"{ix}", t.prefix,
		"{now}", now,
		"{lock}", lock,
		"{skiplocked}", skip,
	).Replace(q)
	if t.dialect == dialectSQLite {
		q = placeholder.ReplaceAllString(q, "?$1")
	}
	return q
}

// Times are stored as microseconds since the Unix epoch (BIGINT in both
// dialects), read from the database's clock wherever leases are compared,
// so that workers on machines with different clocks agree on expiry.
const schemaPostgresV1 = `
CREATE TABLE {threads} (
	thread_id  TEXT   PRIMARY KEY,
	owner      TEXT   NOT NULL,
	graph      TEXT   NOT NULL DEFAULT '',
	status     TEXT   NOT NULL,
	metadata   JSONB  NOT NULL DEFAULT '{}',
	active_run TEXT   NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);
CREATE INDEX {ix}threads_by_update ON {threads} (owner, updated_at DESC);
CREATE INDEX {ix}threads_by_metadata ON {threads} USING gin (metadata jsonb_path_ops);
CREATE TABLE {runs} (
	seq              BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	run_id           TEXT    PRIMARY KEY,
	thread_id        TEXT    NOT NULL REFERENCES {threads} (thread_id) ON DELETE CASCADE,
	owner            TEXT    NOT NULL,
	graph            TEXT    NOT NULL,
	status           TEXT    NOT NULL,
	strategy         TEXT    NOT NULL,
	request          TEXT    NOT NULL,
	metadata         TEXT    NOT NULL DEFAULT '{}',
	error            TEXT    NOT NULL DEFAULT '',
	interrupts       TEXT    NOT NULL DEFAULT '',
	cancel           TEXT    NOT NULL DEFAULT '',
	job_id           BIGINT  NOT NULL DEFAULT 0,
	epoch            BIGINT  NOT NULL DEFAULT 0,
	lease_owner      TEXT    NOT NULL DEFAULT '',
	lease_until      BIGINT  NOT NULL DEFAULT 0,
	attempts         INTEGER NOT NULL DEFAULT 0,
	wrote            BOOLEAN NOT NULL DEFAULT false,
	start_checkpoint TEXT,
	created_at       BIGINT  NOT NULL,
	start_at         BIGINT  NOT NULL,
	updated_at       BIGINT  NOT NULL,
	ended_at         BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX {ix}runs_by_thread ON {runs} (thread_id, seq);
CREATE INDEX {ix}runs_by_lease ON {runs} (lease_until) WHERE status = 'running';
CREATE INDEX {ix}runs_by_end ON {runs} (ended_at) WHERE ended_at > 0;
CREATE TABLE {events} (
	run_id TEXT   NOT NULL REFERENCES {runs} (run_id) ON DELETE CASCADE,
	seq    BIGINT NOT NULL,
	data   BYTEA  NOT NULL,
	PRIMARY KEY (run_id, seq)
);
CREATE TABLE {crons} (
	cron_id    TEXT   PRIMARY KEY,
	owner      TEXT   NOT NULL,
	schedule   TEXT   NOT NULL,
	request    TEXT   NOT NULL,
	next_at    BIGINT NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE INDEX {ix}crons_by_next ON {crons} (next_at);
-- The fence of a worker's writes: it renews the lease of the run the
-- worker holds and records that the run wrote to its thread (at its first
-- write, where the thread stood before, p_head), or, when the worker no
-- longer holds the lease, fails the transaction it is part of.
CREATE FUNCTION {fence}(p_run TEXT, p_epoch BIGINT, p_lease BIGINT, p_head TEXT) RETURNS void LANGUAGE plpgsql AS $fence$
BEGIN
	UPDATE {runs} SET lease_until = {now} + p_lease,
		start_checkpoint = CASE WHEN wrote THEN start_checkpoint ELSE p_head END, wrote = true
		WHERE run_id = p_run AND epoch = p_epoch AND status = 'running';
	IF NOT FOUND THEN
		RAISE EXCEPTION 'run % lost its lease (epoch %): nothing was stored', p_run, p_epoch USING ERRCODE = 'TRL01';
	END IF;
END
$fence$;`

const schemaSQLiteV1 = `
CREATE TABLE {threads} (
	thread_id  TEXT    PRIMARY KEY,
	owner      TEXT    NOT NULL,
	graph      TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL,
	metadata   TEXT    NOT NULL DEFAULT '{}',
	active_run TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX {ix}threads_by_update ON {threads} (owner, updated_at DESC);
CREATE TABLE {runs} (
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id           TEXT    NOT NULL UNIQUE,
	thread_id        TEXT    NOT NULL REFERENCES {threads} (thread_id) ON DELETE CASCADE,
	owner            TEXT    NOT NULL,
	graph            TEXT    NOT NULL,
	status           TEXT    NOT NULL,
	strategy         TEXT    NOT NULL,
	request          TEXT    NOT NULL,
	metadata         TEXT    NOT NULL DEFAULT '{}',
	error            TEXT    NOT NULL DEFAULT '',
	interrupts       TEXT    NOT NULL DEFAULT '',
	cancel           TEXT    NOT NULL DEFAULT '',
	job_id           INTEGER NOT NULL DEFAULT 0,
	epoch            INTEGER NOT NULL DEFAULT 0,
	lease_owner      TEXT    NOT NULL DEFAULT '',
	lease_until      INTEGER NOT NULL DEFAULT 0,
	attempts         INTEGER NOT NULL DEFAULT 0,
	wrote            BOOLEAN NOT NULL DEFAULT false,
	start_checkpoint TEXT,
	created_at       INTEGER NOT NULL,
	start_at         INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	ended_at         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX {ix}runs_by_thread ON {runs} (thread_id, seq);
CREATE INDEX {ix}runs_by_lease ON {runs} (lease_until) WHERE status = 'running';
CREATE INDEX {ix}runs_by_end ON {runs} (ended_at) WHERE ended_at > 0;
CREATE TABLE {events} (
	run_id TEXT    NOT NULL REFERENCES {runs} (run_id) ON DELETE CASCADE,
	seq    INTEGER NOT NULL,
	data   BLOB    NOT NULL,
	PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE {crons} (
	cron_id    TEXT    PRIMARY KEY,
	owner      TEXT    NOT NULL,
	schedule   TEXT    NOT NULL,
	request    TEXT    NOT NULL,
	next_at    INTEGER NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE INDEX {ix}crons_by_next ON {crons} (next_at);`

// migrate brings the tables up to SchemaVersion, under a lock so that
// processes starting together migrate once.
func (t tables) migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("runs: migrate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if t.dialect == dialectPostgres {
		h := fnv.New64a()
		h.Write([]byte("trellis/runs:" + t.prefix))
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64())); err != nil {
			return fmt.Errorf("runs: migrate: lock: %w", err)
		}
		if t.schema != "" {
			if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+t.schema); err != nil {
				return fmt.Errorf("runs: migrate: create schema: %w", err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, t.expand(`CREATE TABLE IF NOT EXISTS {migrations} (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`)); err != nil {
		return fmt.Errorf("runs: migrate: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, t.expand(`SELECT COALESCE(MAX(version), 0) FROM {migrations}`)).Scan(&current); err != nil {
		return fmt.Errorf("runs: migrate: read version: %w", err)
	}
	if current > SchemaVersion {
		return fmt.Errorf("runs: the database's tables are at version %d, newer than this program knows (%d): upgrade the program", current, SchemaVersion)
	}
	steps := []string{schemaPostgresV1}
	if t.dialect == dialectSQLite {
		steps = []string{schemaSQLiteV1}
	}
	for v := current; v < SchemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, t.expand(steps[v])); err != nil {
			return fmt.Errorf("runs: migrate to version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, t.expand(`INSERT INTO {migrations} (version, applied_at) VALUES ($1, {now})`), v+1); err != nil {
			return fmt.Errorf("runs: migrate to version %d: %w", v+1, err)
		}
	}
	return tx.Commit()
}

// channel is the PostgreSQL notification channel of the tables' runs.
func (t tables) channel() string {
	c := t.prefix + "runs"
	if t.schema != "" {
		c = strings.Trim(t.schema, `"`) + "." + c
	}
	return c
}
