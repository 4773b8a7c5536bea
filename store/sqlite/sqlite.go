package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/internal/engine"
	"github.com/trellis-go/trellis/store/internal/sqlstore"
)

// Open opens, creating if needed, the SQLite database at path and returns
// a store that owns it: Close closes it. The path may be a "file:" URI;
// ":memory:" gives a private in-memory database, for tests.
//
// Open sets write-ahead-log mode, a 5 second busy timeout, synchronous
// NORMAL (a commit survives the process being killed; a power cut may roll
// back the last few) and write transactions that lock at BEGIN, and
// creates or migrates the store's tables before it returns. Open is
// OpenContext with a context that never ends.
func Open(path string, opts ...store.Option) (store.Store, error) {
	return OpenContext(context.Background(), path, opts...)
}

// OpenContext is Open that gives up when ctx ends while the tables are
// created or migrated. The context bounds the opening only, not the
// store's later use.
func OpenContext(ctx context.Context, path string, opts ...store.Option) (store.Store, error) {
	dsn, inMemory, err := buildDSN(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %q: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %q: %w", path, err)
	}
	if inMemory {
		db.SetMaxOpenConns(1) // each connection would get its own database
	}
	s, err := open(ctx, db, true, opts)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite store: open %q: %w", path, err)
	}
	return s, nil
}

// New returns a store on a database the caller opened (with driver name
// "sqlite" of modernc.org/sqlite) and keeps owning: Close leaves it open.
// The tables are created or migrated before New returns. For several
// processes on one file use a DSN such as
// "app.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate".
func New(ctx context.Context, db *sql.DB, opts ...store.Option) (store.Store, error) {
	if db == nil {
		return nil, errors.New("sqlite store: New: nil *sql.DB")
	}
	s, err := open(ctx, db, false, opts)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	return s, nil
}

func open(ctx context.Context, db *sql.DB, owned bool, opts []store.Option) (store.Store, error) {
	cfg := store.NewConfig(opts...)
	d, err := sqlstore.Open(ctx, db, sqlstore.SQLite, "", cfg.TablePrefix, owned)
	if err != nil {
		return nil, err
	}
	return engine.New(d, cfg), nil
}

// buildDSN adds the connection settings to path.
func buildDSN(path string) (dsn string, inMemory bool, err error) {
	if path == "" {
		return "", false, errors.New("empty path")
	}
	isURI := strings.HasPrefix(path, "file:")
	if !isURI && strings.Contains(path, "?") {
		return "", false, errors.New(`a plain path must not contain "?"; use a "file:" URI`)
	}
	inMemory = path == ":memory:" || strings.HasPrefix(path, "file::memory:") || strings.Contains(path, "mode=memory")
	params := url.Values{}
	params.Add("_pragma", "busy_timeout(5000)")
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	params.Set("_txlock", "immediate")
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + params.Encode(), inMemory, nil
}
