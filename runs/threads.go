package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ErrExists reports a thread that CreateThread was asked to create and
// that exists already.
var ErrExists = errors.New("already exists")

const threadColumns = `thread_id, graph, status, metadata, active_run, created_at, updated_at`

func scanThread(row interface{ Scan(...any) error }) (Thread, error) {
	var (
		t                Thread
		status, meta     string
		created, updated int64
	)
	if err := row.Scan(&t.ID, &t.Graph, &status, &meta, &t.ActiveRun, &created, &updated); err != nil {
		return Thread{}, err
	}
	t.Status = ThreadStatus(status)
	if meta != "" && meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &t.Metadata); err != nil {
			return Thread{}, fmt.Errorf("thread %s: stored metadata: %w", t.ID, err)
		}
	}
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	return t, nil
}

// Thread returns a thread's record (its state is the graph's: see
// graph.Graph.GetState).
func (m *Manager) Thread(ctx context.Context, id string) (Thread, error) {
	t, err := scanThread(m.queryRow(ctx, nil, `SELECT `+threadColumns+` FROM {threads} WHERE thread_id = $1 AND owner = $2`, id, OwnerOf(ctx)))
	if errors.Is(err, sql.ErrNoRows) {
		return Thread{}, fmt.Errorf("runs: thread %s: %w", quoteCut(id), ErrNotFound)
	}
	if err != nil {
		return Thread{}, fmt.Errorf("runs: thread %s: %w", quoteCut(id), err)
	}
	return t, nil
}

// CreateThread records a new thread with metadata; an empty id draws one.
// A thread that exists already is an error matching ErrExists (another
// owner's too, which it does not reveal otherwise).
func (m *Manager) CreateThread(ctx context.Context, id string, metadata map[string]any) (Thread, error) {
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	if len(id) > 256 {
		return Thread{}, fmt.Errorf("runs: %w: thread ID %s is longer than 256 bytes", ErrInvalid, quoteCut(id))
	}
	meta, err := json.Marshal(orEmpty(metadata))
	if err != nil {
		return Thread{}, fmt.Errorf("runs: %w: metadata: %w", ErrInvalid, err)
	}
	res, err := m.exec(ctx, nil, `INSERT INTO {threads} (thread_id, owner, status, metadata, created_at, updated_at)
		VALUES ($1, $2, 'idle', $3, {now}, {now}) ON CONFLICT (thread_id) DO NOTHING`, id, OwnerOf(ctx), string(meta))
	if err != nil {
		return Thread{}, fmt.Errorf("runs: create thread %s: %w", quoteCut(id), err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Thread{}, fmt.Errorf("runs: thread %s: %w", quoteCut(id), ErrExists)
	}
	return m.Thread(ctx, id)
}

// UpdateThread merges metadata into a thread's: keys with a nil value are
// removed, others set.
func (m *Manager) UpdateThread(ctx context.Context, id string, metadata map[string]any) (Thread, error) {
	err := m.tx(ctx, func(tx *sql.Tx) error {
		var meta string
		err := m.queryRow(ctx, tx, `SELECT metadata FROM {threads} WHERE thread_id = $1 AND owner = $2{lock}`, id, OwnerOf(ctx)).Scan(&meta)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("runs: thread %s: %w", quoteCut(id), ErrNotFound)
		}
		if err != nil {
			return err
		}
		cur := map[string]any{}
		if err := json.Unmarshal([]byte(meta), &cur); err != nil {
			return fmt.Errorf("thread %s: stored metadata: %w", quoteCut(id), err)
		}
		for k, v := range metadata {
			if v == nil {
				delete(cur, k)
			} else {
				cur[k] = v
			}
		}
		b, err := json.Marshal(cur)
		if err != nil {
			return fmt.Errorf("runs: %w: metadata: %w", ErrInvalid, err)
		}
		_, err = m.exec(ctx, tx, `UPDATE {threads} SET metadata = $2, updated_at = {now} WHERE thread_id = $1`, id, string(b))
		return err
	})
	if err != nil {
		return Thread{}, fmt.Errorf("runs: update thread %s: %w", quoteCut(id), err)
	}
	return m.Thread(ctx, id)
}

// DeleteThread deletes a thread: its record, its runs and their events,
// and its checkpoints. A thread with an active run is not deleted (an
// error matching ErrThreadBusy): cancel the run first.
func (m *Manager) DeleteThread(ctx context.Context, id string) error {
	err := m.tx(ctx, func(tx *sql.Tx) error { return m.deleteIdleThread(ctx, tx, id, OwnerOf(ctx)) })
	if err != nil {
		return fmt.Errorf("runs: delete thread %s: %w", quoteCut(id), err)
	}
	if err := m.b.Saver.DeleteThread(ctx, id); err != nil {
		return fmt.Errorf("runs: delete the checkpoints of thread %s: %w", quoteCut(id), err)
	}
	return nil
}

// deleteIdleThread deletes, in tx, the rows of owner's thread id, unless
// it has an active run (an error matching ErrThreadBusy) or there is no
// such thread (ErrNotFound).
func (m *Manager) deleteIdleThread(ctx context.Context, tx *sql.Tx, id, owner string) error {
	var active string
	err := m.queryRow(ctx, tx, `SELECT active_run FROM {threads} WHERE thread_id = $1 AND owner = $2{lock}`, id, owner).Scan(&active)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("runs: thread %s: %w", quoteCut(id), ErrNotFound)
	}
	if err != nil {
		return err
	}
	if active != "" {
		return fmt.Errorf("runs: thread %s has run %s in progress: %w", quoteCut(id), active, ErrThreadBusy)
	}
	return m.deleteThreadRows(ctx, tx, id)
}

// deleteThreadRows deletes, in tx, the rows of thread id: its record, its
// runs and their events.
func (m *Manager) deleteThreadRows(ctx context.Context, tx *sql.Tx, id string) error {
	if m.b.Dialect == DialectSQLite {
		// The children go first, by their indexes: runs/memory opens its
		// database without foreign keys (SQLite's cascades built a
		// temporary table at each level of each delete, about a tenth of a
		// stateless run's CPU time), and where they are on (runs/sqlite)
		// the cascades find nothing left.
		if _, err := m.exec(ctx, tx, `DELETE FROM {events} WHERE run_id IN (SELECT run_id FROM {runs} WHERE thread_id = $1)`, id); err != nil {
			return err
		}
		if _, err := m.exec(ctx, tx, `DELETE FROM {runs} WHERE thread_id = $1`, id); err != nil {
			return err
		}
	}
	_, err := m.exec(ctx, tx, `DELETE FROM {threads} WHERE thread_id = $1`, id)
	return err
}

// maxDeleteBatch bounds the threads DeleteThreadSoon deletes in one
// transaction.
const maxDeleteBatch = 100

// deletions are the threads DeleteThreadSoon was given and that are not
// deleted yet.
type deletions struct {
	mu      sync.Mutex
	pending []deletion
	running bool // a goroutine deletes the pending threads
	closed  bool // the Manager is closing: no more are taken
	wg      sync.WaitGroup
}

// deletion is a thread to delete, and its owner.
type deletion struct{ id, owner string }

// DeleteThreadSoon deletes a thread as DeleteThread does, in the
// background, soon after it returns: the threads given to it meanwhile are
// deleted together, in one transaction, which costs far less per thread
// than a DeleteThread each. It is for threads nobody reads any more, such
// as the thread of a stateless run once its output was read. A thread that
// does not exist (or is another owner's) is left alone, and so is one with
// an active run, which is logged. Close deletes the threads still pending
// before it returns. The error is ErrClosed after Close, or ErrInvalid for
// an ID no thread can have; failures of the deletion itself are logged.
func (m *Manager) DeleteThreadSoon(ctx context.Context, id string) error {
	if len(id) > 256 {
		return fmt.Errorf("runs: %w: thread ID %s is longer than 256 bytes", ErrInvalid, quoteCut(id))
	}
	d := &m.deletions
	d.mu.Lock()
	if d.closed || m.closed.Load() {
		d.mu.Unlock()
		return ErrClosed
	}
	d.pending = append(d.pending, deletion{id: id, owner: OwnerOf(ctx)})
	start := !d.running
	if start {
		d.running = true
		d.wg.Add(1)
	}
	d.mu.Unlock()
	if start {
		go m.deleteLoop()
	}
	return nil
}

// deleteLoop deletes the pending threads, in batches, until none is left.
func (m *Manager) deleteLoop() {
	d := &m.deletions
	defer d.wg.Done()
	for {
		d.mu.Lock()
		n := min(len(d.pending), maxDeleteBatch)
		if n == 0 {
			d.running = false
			d.pending = nil
			d.mu.Unlock()
			return
		}
		batch := slices.Clone(d.pending[:n])
		d.pending = d.pending[n:]
		d.mu.Unlock()
		m.deleteThreads(batch)
	}
}

// deleteThreads deletes the threads of batch, their rows in one
// transaction, and then their checkpoints. When the transaction fails,
// each thread is tried on its own.
func (m *Manager) deleteThreads(batch []deletion) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// In one order, so that two batches never wait for each other's locks.
	slices.SortFunc(batch, func(a, b deletion) int { return strings.Compare(a.id, b.id) })
	var deleted []string
	err := m.tx(ctx, func(tx *sql.Tx) error {
		deleted = deleted[:0]
		for _, p := range batch {
			switch err := m.deleteIdleThread(ctx, tx, p.id, p.owner); {
			case errors.Is(err, ErrNotFound):
			case errors.Is(err, ErrThreadBusy):
				m.log.Warn("runs: a thread to delete has a run in progress; it is kept", "thread", p.id, "error", err)
			case err != nil:
				return err
			default:
				deleted = append(deleted, p.id)
			}
		}
		return nil
	})
	if err != nil {
		if len(batch) == 1 {
			m.log.Warn("runs: deleting a thread failed", "thread", batch[0].id, "error", err)
			return
		}
		for _, p := range batch {
			m.deleteThreads([]deletion{p})
		}
		return
	}
	for _, id := range deleted {
		if err := m.b.Saver.DeleteThread(ctx, id); err != nil {
			m.log.Warn("runs: deleting the checkpoints of a thread failed", "thread", id, "error", err)
		}
	}
}

// stopDeletions deletes the threads still pending and takes no more.
func (m *Manager) stopDeletions() {
	d := &m.deletions
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
}

// SearchThreads lists the threads that match q, most recently updated
// first.
func (m *Manager) SearchThreads(ctx context.Context, q ThreadQuery) ([]Thread, error) {
	limit, err := limitOf(q.Limit)
	if err != nil {
		return nil, err
	}
	if q.Offset < 0 {
		return nil, fmt.Errorf("runs: %w: offset %d is negative", ErrInvalid, q.Offset)
	}
	meta, err := json.Marshal(orEmpty(q.Metadata))
	if err != nil {
		return nil, fmt.Errorf("runs: %w: metadata: %w", ErrInvalid, err)
	}
	if m.b.Dialect == DialectPostgres {
		rows, err := m.query(ctx, nil, `SELECT `+threadColumns+` FROM {threads}
			WHERE owner = $1 AND ($2 = '' OR status = $2) AND metadata @> $3::jsonb
			ORDER BY updated_at DESC, thread_id LIMIT $4 OFFSET $5`, OwnerOf(ctx), string(q.Status), string(meta), limit, q.Offset)
		if err != nil {
			return nil, fmt.Errorf("runs: search threads: %w", err)
		}
		return collectThreads(rows, nil, 0, limit)
	}
	// SQLite: metadata is matched here, on rows read in pages.
	rows, err := m.query(ctx, nil, `SELECT `+threadColumns+` FROM {threads}
		WHERE owner = $1 AND ($2 = '' OR status = $2) ORDER BY updated_at DESC, thread_id`, OwnerOf(ctx), string(q.Status))
	if err != nil {
		return nil, fmt.Errorf("runs: search threads: %w", err)
	}
	return collectThreads(rows, q.Metadata, q.Offset, limit)
}

func collectThreads(rows *sql.Rows, match map[string]any, skip, limit int) ([]Thread, error) {
	defer rows.Close()
	var out []Thread
	for rows.Next() && len(out) < limit {
		t, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("runs: search threads: %w", err)
		}
		if !contains(t.Metadata, match) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// contains reports whether have holds every key of want with an equal
// value (as JSON decodes them).
func contains(have, want map[string]any) bool {
	if len(want) == 0 {
		return true
	}
	norm := func(v any) any {
		b, _ := json.Marshal(v)
		var out any
		_ = json.Unmarshal(b, &out)
		return out
	}
	for k, v := range want {
		got, ok := have[k]
		if !ok || !reflect.DeepEqual(norm(got), norm(v)) {
			return false
		}
	}
	return true
}
