package runs

import (
	"context"
	"database/sql"
	"time"
)

// The Manager's statements are prepared once and kept: SQLite (pure Go)
// spends more time parsing a statement than running it, measured at about
// two fifths of a run's CPU time on an in-memory database before this
// cache. PostgreSQL's driver keeps its own cache; there the prepared
// statements cost nothing more.

// prepared returns q, expanded for the dialect, as a statement prepared on
// the Manager's database, to run in tx when tx is not nil. A statement not
// prepared yet is prepared in tx for this once (the transaction may hold
// the database's only connection, as with SQLite), and on the database for
// later in the background.
func (m *Manager) prepared(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	if s, ok := m.stmts.Load(q); ok {
		if tx != nil {
			return tx.StmtContext(ctx, s.(*sql.Stmt)), nil
		}
		return s.(*sql.Stmt), nil
	}
	if tx != nil {
		m.prepareLater(q)
		return tx.PrepareContext(ctx, m.sql(q))
	}
	return m.prepare(ctx, q)
}

// prepare prepares q on the database and keeps it.
func (m *Manager) prepare(ctx context.Context, q string) (*sql.Stmt, error) {
	s, err := m.b.DB.PrepareContext(ctx, m.sql(q))
	if err != nil {
		return nil, err
	}
	if prev, loaded := m.stmts.LoadOrStore(q, s); loaded {
		_ = s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

// prepareLater prepares q on the database in the background, once.
func (m *Manager) prepareLater(q string) {
	if _, started := m.preparing.LoadOrStore(q, true); started || m.closed.Load() {
		return
	}
	m.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := m.prepare(ctx, q); err != nil {
			m.preparing.Delete(q) // another try next time
		}
	})
}

// exec runs q (in tx, when not nil) with args.
func (m *Manager) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	s, err := m.prepared(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

// query runs q (in tx, when not nil) with args.
func (m *Manager) query(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	s, err := m.prepared(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// scanner is what a row offers: *sql.Row, or a statement that failed.
type scanner interface{ Scan(dest ...any) error }

type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// queryRow runs q (in tx, when not nil) with args, for one row.
func (m *Manager) queryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) scanner {
	s, err := m.prepared(ctx, tx, q)
	if err != nil {
		return failedRow{err}
	}
	return s.QueryRowContext(ctx, args...)
}

// closeStatements closes the prepared statements, once those being
// prepared are.
func (m *Manager) closeStatements() {
	m.background.Wait()
	m.stmts.Range(func(k, v any) bool {
		_ = v.(*sql.Stmt).Close()
		m.stmts.Delete(k)
		return true
	})
}
