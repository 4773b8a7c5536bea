package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/trellis-go/trellis/runs"
	statesqlite "github.com/trellis-go/trellis/state/sqlite"
)

// Option configures the Manager Open makes.
type Option func(*config)

type config struct {
	busyTimeout time.Duration
	runs        []runs.Option
}

// WithBusyTimeout sets how long a connection waits for the database's
// write lock, held by another connection or process (10 seconds by
// default).
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busyTimeout = d } }

// WithRuns passes options to the Manager (runs.WithLease and the others).
func WithRuns(opts ...runs.Option) Option {
	return func(c *config) { c.runs = append(c.runs, opts...) }
}

// Open opens, creating if needed, the SQLite database file at path and
// returns a Manager that keeps its runs, River's queue and the checkpoints
// of its graphs there; Close releases it. Several processes may open one
// file: each may start, work and stream runs. The database is opened in
// write-ahead-log mode, with write transactions that lock at their start.
// ":memory:" keeps everything in the process's memory, for tests and for
// a single process that needs no durability.
func Open(ctx context.Context, path string, opts ...Option) (*runs.Manager, error) {
	cfg := config{busyTimeout: 10 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" {
		return nil, errors.New("runs/sqlite: open: empty path")
	}
	inMemory := path == ":memory:" || strings.Contains(path, "mode=memory")
	if !strings.HasPrefix(path, "file:") && strings.Contains(path, "?") {
		return nil, errors.New(`runs/sqlite: open: a plain path must not contain "?"; use a "file:" URI`)
	}
	params := url.Values{}
	params.Set("_txlock", "immediate")
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.busyTimeout.Milliseconds()))
	if !inMemory {
		params.Add("_pragma", "journal_mode(WAL)")
	}
	params.Add("_pragma", "synchronous(NORMAL)")
	params.Add("_pragma", "foreign_keys(1)")
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", path+sep+params.Encode())
	if err != nil {
		return nil, fmt.Errorf("runs/sqlite: open %q: %w", path, err)
	}
	// One connection, shared by the runs layer, River and the
	// checkpoints: SQLite runs one writer at a time, and River's driver
	// asks for a single connection so that concurrent work queues in the
	// pool instead of failing with SQLITE_BUSY. It also keeps an in-memory
	// database alive (each connection would have its own).
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	saver, err := statesqlite.New(db, statesqlite.WithWriteGuard(runs.FenceStatement))
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("runs/sqlite: %w", err)
	}
	b := runs.Backend{
		Dialect: runs.DialectSQLite,
		DB:      db,
		Driver:  riversqlite.New(db),
		Saver:   saver,
		Close:   func() error { return errors.Join(saver.Close(), db.Close()) },
	}
	m, err := runs.New(ctx, b, cfg.runs...)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	return m, nil
}
