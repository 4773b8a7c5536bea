package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	driver "modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/state"
)

// Saver is a state.Saver in a SQLite database. It is safe for concurrent use
// by many goroutines, and several processes may use one file at once.
type Saver struct {
	db    *sql.DB
	owned bool // Close closes db

	// write admits one writer of this process at a time, so in-process
	// writers queue in Go instead of polling SQLite's lock.
	write chan struct{}

	// mu is held for reading by every call, and for writing while the
	// schema is brought up to date and while the store closes.
	mu     sync.RWMutex
	ready  bool // the schema is current and stmts are prepared
	closed bool
	stmts  statements
	guard  state.WriteGuard

	// guardStmts holds the write guard's statements, prepared on the
	// database by their text (query → *sql.Stmt), at most maxGuardStmts:
	// SQLite (pure Go) spends more time parsing a short statement than
	// running it, and a guard gives the same text for every write.
	guardStmts sync.Map
	guardCount atomic.Int32
}

// maxGuardStmts bounds the guard statements a Saver keeps prepared; a
// guard whose text changes with every write runs unprepared past it.
const maxGuardStmts = 16

var _ state.Saver = (*Saver)(nil)

// Open opens, creating if needed, the SQLite database file at path and
// returns a store that owns it; Close releases it. The path may also be a
// "file:" URI. ":memory:" gives a private in-memory database, for tests.
//
// Open sets write-ahead-log mode, the busy timeout and the synchronous mode
// on every connection, and creates or migrates the store's tables before it
// returns. Open is OpenContext with a context that never ends.
func Open(path string, opts ...Option) (*Saver, error) {
	return OpenContext(context.Background(), path, opts...)
}

// OpenContext is Open that gives up when ctx ends: while the schema is
// created or migrated, and while it waits for a database another process
// holds busy. The context bounds the opening only, not the store's later
// use.
func OpenContext(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	dsn, inMemory, err := buildDSN(path, cfg)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	if inMemory {
		db.SetMaxOpenConns(1) // each connection would get its own database
	}
	s := newSaver(db, true)
	s.guard = cfg.guard
	if err := s.initWaiting(ctx, cfg.busyTimeout); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return s, nil
}

// initWaiting readies a store Open made, trying again while the database
// is busy, until timeout has passed. A connection that switches a file
// several processes are creating at once to WAL can meet a lock SQLite
// answers with SQLITE_BUSY at once, without waiting for it. It stops, with
// the last error joined with ctx's, when ctx ends during a wait.
func (s *Saver) initWaiting(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		err := s.init(ctx)
		if err == nil || !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		if perr := pause.Sleep(ctx, wait); perr != nil {
			return errors.Join(err, perr)
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (in any of its
// extended forms).
func isBusy(err error) bool {
	var e *driver.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

// buildDSN adds the connection settings to path.
func buildDSN(path string, cfg config) (dsn string, inMemory bool, err error) {
	if path == "" {
		return "", false, errors.New("empty path")
	}
	isURI := strings.HasPrefix(path, "file:")
	if !isURI && strings.Contains(path, "?") {
		return "", false, errors.New(`a plain path must not contain "?"; use a "file:" URI`)
	}
	inMemory = path == ":memory:" || strings.HasPrefix(path, "file::memory:") || strings.Contains(path, "mode=memory")
	params := url.Values{}
	params.Set("_busy_timeout", strconv.FormatInt(cfg.busyTimeout.Milliseconds(), 10))
	params.Set("_journal_mode", "WAL")
	params.Set("_synchronous", cfg.synchronous.String())
	params.Set("_txlock", "immediate") // write transactions lock at BEGIN
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + params.Encode(), inMemory, nil
}

// New returns a store on a database the caller opened and keeps owning;
// Close releases only the store's prepared statements. The tables are
// created or migrated on first use.
//
// db should come from modernc.org/sqlite (driver name "sqlite"). Open sets
// the connection settings itself; with New they are the caller's: for
// several processes on one file use a DSN such as
// "app.db?_busy_timeout=5000&_journal_mode=WAL&_synchronous=NORMAL".
//
// Of the options, New takes WithWriteGuard only; the others configure the
// connections Open makes.
func New(db *sql.DB, opts ...Option) (*Saver, error) {
	if db == nil {
		return nil, errors.New("sqlite: New: nil *sql.DB")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	s := newSaver(db, false)
	s.guard = cfg.guard
	return s, nil
}

func newSaver(db *sql.DB, owned bool) *Saver {
	return &Saver{db: db, owned: owned, write: make(chan struct{}, 1)}
}

// Close releases the store's prepared statements and, if the store opened
// the database (Open), closes it. A store made with New leaves the caller's
// database open. Close waits for calls in progress; later calls fail.
func (s *Saver) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.stmts.close()
	s.guardStmts.Range(func(k, v any) bool {
		err = errors.Join(err, v.(*sql.Stmt).Close())
		s.guardStmts.Delete(k)
		return true
	})
	if s.owned {
		err = errors.Join(err, s.db.Close())
	}
	if err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// errClosed reports a call on a closed store.
var errClosed = errors.New("store is closed")

// init makes sure the schema is current and the statements prepared, once
// per store.
func (s *Saver) init(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errClosed
	case s.ready:
		return nil
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if err := s.stmts.prepare(ctx, s.db); err != nil {
		return err
	}
	s.ready = true
	return nil
}

// begin checks ctx and readies the store for a call; the caller must call
// the returned end when the call is over.
func (s *Saver) begin(ctx context.Context, op string) (end func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	for {
		s.mu.RLock()
		switch {
		case s.closed:
			s.mu.RUnlock()
			return nil, fmt.Errorf("sqlite: %s: %w", op, errClosed)
		case s.ready:
			return s.mu.RUnlock, nil
		}
		s.mu.RUnlock()
		if err := s.init(ctx); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
	}
}

// exclusive runs fn as this process's only writer.
func (s *Saver) exclusive(ctx context.Context, fn func() error) error {
	select {
	case s.write <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.write }()
	return fn()
}

// writeTx runs fn in a write transaction, committed if fn returns nil and
// rolled back otherwise. Open's connections begin it IMMEDIATE, taking the
// write lock (waiting up to the busy timeout) before anything is read; the
// first statement of every fn is a write anyway, so a deferred transaction on
// a caller's database behaves the same.
func (s *Saver) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.exclusive(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return errors.Join(err, ignoreDone(tx.Rollback()))
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}

// guarded runs fn as this process's only writer: in a write transaction
// that begins with the write guard's statement when the guard gives one,
// else (tx nil) on the database, as one statement commits by itself.
func (s *Saver) guarded(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.guard == nil {
		return s.exclusive(ctx, func() error { return fn(nil) })
	}
	q, _, ok := s.guard(ctx)
	if !ok {
		return s.exclusive(ctx, func() error { return fn(nil) })
	}
	// Prepared before the transaction begins: on a database of one
	// connection the transaction holds it.
	s.prepareGuard(ctx, q)
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := s.runGuard(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	})
}

// runGuard runs the write guard's statement in tx, if it gives one: an
// error, or no row changed, refuses the write (state.ErrFenced).
func (s *Saver) runGuard(ctx context.Context, tx *sql.Tx) error {
	if s.guard == nil {
		return nil
	}
	q, args, ok := s.guard(ctx)
	if !ok {
		return nil
	}
	var (
		res sql.Result
		err error
	)
	if st, ok := s.guardStmts.Load(q); ok {
		res, err = tx.StmtContext(ctx, st.(*sql.Stmt)).ExecContext(ctx, args...)
	} else {
		res, err = tx.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", state.ErrFenced, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%w: %w", state.ErrFenced, err)
	} else if n == 0 {
		return fmt.Errorf("%w: its statement changed no row", state.ErrFenced)
	}
	return nil
}

// prepareGuard prepares the guard statement q on the database and keeps
// it, unless it is kept already or maxGuardStmts are. A statement that
// fails to prepare is left to run unprepared, which reports its error.
func (s *Saver) prepareGuard(ctx context.Context, q string) {
	if _, ok := s.guardStmts.Load(q); ok || s.guardCount.Load() >= maxGuardStmts {
		return
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return
	}
	if _, loaded := s.guardStmts.LoadOrStore(q, st); loaded {
		_ = st.Close()
		return
	}
	s.guardCount.Add(1)
}

// ignoreDone drops the error of rolling back a transaction that database/sql
// already rolled back because its context ended.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// Put stores cp. A zero CreatedAt is set to the current time. CreatedAt is
// kept to the microsecond. Metadata keys and values must be valid UTF-8.
func (s *Saver) Put(ctx context.Context, cp state.Checkpoint) error {
	return s.put(ctx, cp, false, "")
}

// PutIfLatest stores cp, as Put does, provided that the latest checkpoint
// of cp's thread and namespace is the one with ID latest (none, with latest
// empty); otherwise it stores nothing and returns an error wrapping
// state.ErrNotLatest. The check and the insert are one statement, so the
// condition holds against writers in other processes sharing the file too.
// See state.ConditionalSaver.
func (s *Saver) PutIfLatest(ctx context.Context, cp state.Checkpoint, latest string) error {
	return s.put(ctx, cp, true, latest)
}

// put stores cp, when cond only if the thread's latest checkpoint in cp's
// namespace is latest.
func (s *Saver) put(ctx context.Context, cp state.Checkpoint, cond bool, latest string) error {
	end, err := s.begin(ctx, "put")
	if err != nil {
		return err
	}
	defer end()
	if cp.ThreadID == "" {
		return errors.New("sqlite: put: checkpoint has no thread ID")
	}
	if cp.ID == "" {
		return fmt.Errorf("sqlite: put: thread %q: checkpoint has no ID", cp.ThreadID)
	}
	metadata, err := encodeMetadata(cp.Metadata)
	if err != nil {
		return fmt.Errorf("sqlite: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID, err))
	}
	createdAt := cp.CreatedAt
	if createdAt.IsZero() {
		createdAt = time.Now()
	}

	var (
		n     int64
		found string // with cond and nothing stored: the latest checkpoint's ID
	)
	err = s.guarded(ctx, func(tx *sql.Tx) error {
		args := []any{cp.ThreadID, cp.Namespace, cp.ID, cp.ParentID, cp.Step, cp.Source,
			createdAt.UnixMicro(), metadata, blob(cp.Payload)}
		stmt := s.stmts.put
		if cond {
			stmt, args = s.stmts.putIfLatest, append(args, latest)
		}
		latestID := s.stmts.latestID
		if tx != nil {
			stmt, latestID = tx.StmtContext(ctx, stmt), tx.StmtContext(ctx, latestID)
		}
		res, err := stmt.ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n > 0 || !cond {
			return err
		}
		// Nothing stored: a checkpoint with cp's ID, or another latest.
		return latestID.QueryRowContext(ctx, cp.ThreadID, cp.Namespace).Scan(&found)
	})
	if err != nil {
		return fmt.Errorf("sqlite: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID, err))
	}
	if n == 0 {
		if cond && found != latest && !s.has(ctx, cp) {
			return describe(cp.ThreadID, cp.Namespace, cp.ID, state.NotLatest(found, latest))
		}
		return describe(cp.ThreadID, cp.Namespace, cp.ID, state.ErrConflict)
	}
	return nil
}

// has reports whether cp's ID is stored in its thread and namespace.
func (s *Saver) has(ctx context.Context, cp state.Checkpoint) bool {
	var seq int64
	return s.stmts.checkpointID.QueryRowContext(ctx, cp.ThreadID, cp.Namespace, cp.ID).Scan(&seq) == nil
}

// blob keeps an empty payload from being stored as NULL.
func blob(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// PutWrites stores writes against an existing checkpoint, all or none. A
// write whose TaskID is already stored replaces the stored one in its place.
func (s *Saver) PutWrites(ctx context.Context, threadID, namespace, checkpointID string, writes []state.PendingWrite) error {
	end, err := s.begin(ctx, "put writes")
	if err != nil {
		return err
	}
	defer end()
	for i, w := range writes {
		if w.TaskID == "" {
			return fmt.Errorf("sqlite: put writes: %w",
				describe(threadID, namespace, checkpointID, fmt.Errorf("write %d (node %q) has no task ID", i, w.Node)))
		}
	}
	if len(writes) == 0 {
		var seq int64
		err = s.stmts.checkpointID.QueryRowContext(ctx, threadID, namespace, checkpointID).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			err = state.ErrNotFound
		}
	} else {
		err = s.writeTx(ctx, func(tx *sql.Tx) error {
			if err := s.runGuard(ctx, tx); err != nil {
				return err
			}
			upsert := tx.StmtContext(ctx, s.stmts.upsertWrite)
			for _, w := range writes {
				res, err := upsert.ExecContext(ctx, threadID, namespace, checkpointID, w.TaskID, w.Node, blob(w.Payload))
				if err != nil {
					return fmt.Errorf("task %q: %w", w.TaskID, err)
				}
				if n, err := res.RowsAffected(); err != nil {
					return fmt.Errorf("task %q: %w", w.TaskID, err)
				} else if n == 0 {
					return state.ErrNotFound // no such checkpoint to write against
				}
			}
			return nil
		})
	}
	switch {
	case errors.Is(err, state.ErrNotFound):
		return describe(threadID, namespace, checkpointID, state.ErrNotFound)
	case err != nil:
		return fmt.Errorf("sqlite: put writes: %w", describe(threadID, namespace, checkpointID, err))
	}
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanCheckpoint(row rowScanner) (seq int64, cp state.Checkpoint, err error) {
	var (
		createdAt int64
		metadata  sql.NullString
	)
	if err := row.Scan(&seq, &cp.ThreadID, &cp.Namespace, &cp.ID, &cp.ParentID, &cp.Step, &cp.Source,
		&createdAt, &metadata, &cp.Payload); err != nil {
		return 0, cp, err
	}
	cp.CreatedAt = time.UnixMicro(createdAt).UTC()
	if metadata.Valid {
		if err := json.Unmarshal([]byte(metadata.String), &cp.Metadata); err != nil {
			return 0, cp, fmt.Errorf("checkpoint %q: decode metadata: %w", cp.ID, err)
		}
	}
	return seq, cp, nil
}

// Get returns a checkpoint and its writes, read in one transaction; an empty
// checkpointID asks for the latest.
func (s *Saver) Get(ctx context.Context, threadID, namespace, checkpointID string) (state.Tuple, error) {
	end, err := s.begin(ctx, "get")
	if err != nil {
		return state.Tuple{}, err
	}
	defer end()
	tup, err := s.get(ctx, threadID, namespace, checkpointID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return state.Tuple{}, describe(threadID, namespace, checkpointID, state.ErrNotFound)
	case err != nil:
		return state.Tuple{}, fmt.Errorf("sqlite: get: %w", describe(threadID, namespace, checkpointID, err))
	}
	return tup, nil
}

func (s *Saver) get(ctx context.Context, threadID, namespace, checkpointID string) (state.Tuple, error) {
	// A read transaction gives both queries one snapshot: no Prune or
	// DeleteThread can remove the writes between them.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return state.Tuple{}, err
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to commit

	var row *sql.Row
	if checkpointID == "" {
		row = tx.StmtContext(ctx, s.stmts.getLatest).QueryRowContext(ctx, threadID, namespace)
	} else {
		row = tx.StmtContext(ctx, s.stmts.getByID).QueryRowContext(ctx, threadID, namespace, checkpointID)
	}
	seq, cp, err := scanCheckpoint(row)
	if err != nil {
		return state.Tuple{}, err
	}
	tup := state.Tuple{Checkpoint: cp}

	rows, err := tx.StmtContext(ctx, s.stmts.writesOf).QueryContext(ctx, seq)
	if err != nil {
		return state.Tuple{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var w state.PendingWrite
		if err := rows.Scan(&w.TaskID, &w.Node, &w.Payload); err != nil {
			return state.Tuple{}, err
		}
		tup.Writes = append(tup.Writes, w)
	}
	if err := rows.Err(); err != nil {
		return state.Tuple{}, err
	}
	return tup, nil
}

// List returns a thread's checkpoints in a namespace, newest first. Before
// must name a checkpoint of that thread and namespace.
func (s *Saver) List(ctx context.Context, threadID, namespace string, opts state.ListOptions) ([]state.Checkpoint, error) {
	end, err := s.begin(ctx, "list")
	if err != nil {
		return nil, err
	}
	defer end()
	if opts.Limit < 0 {
		return nil, fmt.Errorf("sqlite: list: thread %q: limit must not be negative, got %d", threadID, opts.Limit)
	}
	limit := -1 // SQLite: no limit
	if opts.Limit > 0 {
		limit = opts.Limit
	}
	var rows *sql.Rows
	if opts.Before == "" {
		rows, err = s.stmts.list.QueryContext(ctx, threadID, namespace, limit)
	} else {
		rows, err = s.stmts.listBefore.QueryContext(ctx, threadID, namespace, opts.Before, limit)
	}
	var cps []state.Checkpoint
	if err == nil {
		cps, err = scanCheckpoints(rows)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", describe(threadID, namespace, "", err))
	}
	if len(cps) == 0 && opts.Before != "" {
		// Nothing older, or no such checkpoint to be older than?
		var seq int64
		err := s.stmts.checkpointID.QueryRowContext(ctx, threadID, namespace, opts.Before).Scan(&seq)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("list before: %w", describe(threadID, namespace, opts.Before, state.ErrNotFound))
		case err != nil:
			return nil, fmt.Errorf("sqlite: list: %w", describe(threadID, namespace, opts.Before, err))
		}
	}
	return cps, nil
}

func scanCheckpoints(rows *sql.Rows) ([]state.Checkpoint, error) {
	defer rows.Close()
	var cps []state.Checkpoint
	for rows.Next() {
		_, cp, err := scanCheckpoint(rows)
		if err != nil {
			return nil, err
		}
		cps = append(cps, cp)
	}
	return cps, rows.Err()
}

// DeleteThread removes a thread's checkpoints and writes in all namespaces,
// in one transaction.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	end, err := s.begin(ctx, "delete thread")
	if err != nil {
		return err
	}
	defer end()
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.StmtContext(ctx, s.stmts.deleteWrites).ExecContext(ctx, threadID); err != nil {
			return err
		}
		_, err := tx.StmtContext(ctx, s.stmts.deleteThread).ExecContext(ctx, threadID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete thread %q: %w", threadID, err)
	}
	return nil
}

// Prune keeps the newest keep checkpoints of each namespace of a thread and
// their writes, removing the rest in one transaction.
func (s *Saver) Prune(ctx context.Context, threadID string, keep int) error {
	end, err := s.begin(ctx, "prune")
	if err != nil {
		return err
	}
	defer end()
	if keep < 1 {
		return fmt.Errorf("sqlite: prune: thread %q: keep must be at least 1, got %d", threadID, keep)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.StmtContext(ctx, s.stmts.pruneWrites).ExecContext(ctx, threadID, keep); err != nil {
			return err
		}
		_, err := tx.StmtContext(ctx, s.stmts.pruneThread).ExecContext(ctx, threadID, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: prune thread %q: %w", threadID, err)
	}
	return nil
}

func encodeMetadata(md map[string]string) (any, error) {
	if len(md) == 0 {
		return nil, nil
	}
	for k, v := range md {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("metadata %q: keys and values must be valid UTF-8", k)
		}
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	return string(b), nil
}

// describe wraps err with the names of the thread, namespace and checkpoint
// it concerns, e.g. `thread "t1": checkpoint "abc": checkpoint not found`.
func describe(threadID, namespace, checkpointID string, err error) error {
	where := fmt.Sprintf("thread %q", threadID)
	if namespace != "" {
		where += fmt.Sprintf(" namespace %q", namespace)
	}
	if checkpointID != "" {
		where += fmt.Sprintf(": checkpoint %q", checkpointID)
	}
	return fmt.Errorf("%s: %w", where, err)
}
