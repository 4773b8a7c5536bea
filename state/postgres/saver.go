package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	jitter "github.com/trellis-go/trellis/internal/backoff"
	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/state"
)

// Saver is a state.Saver in PostgreSQL. It is safe for concurrent use, and
// any number of processes may share its tables.
type Saver struct {
	pool  *pgxpool.Pool
	owned bool // Close closes pool
	t     tables
	q     queries
	guard state.WriteGuard
}

var _ state.Saver = (*Saver)(nil)

// New returns a store on a pool the caller owns; Close leaves the pool open.
// It creates or migrates the store's tables before it returns.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Saver, error) {
	if pool == nil {
		return nil, errors.New("postgres: New: nil *pgxpool.Pool")
	}
	return newSaver(ctx, pool, false, opts)
}

// Open connects to the database at connString (a URL or key=value DSN, as
// pgxpool.ParseConfig reads it) and returns a store that owns the pool;
// Close releases it. It creates or migrates the store's tables before it
// returns.
//
// The pool holds up to DefaultMaxConns connections (more if pgx's own
// default, the number of CPUs, is larger), unless connString sets
// pool_max_conns: pgx's default of 4 on a small machine makes concurrent
// runs queue for a connection. A pool given to New is used as it is.
func Open(ctx context.Context, connString string, opts ...Option) (*Saver, error) {
	cfg, err := poolConfig(connString)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s, err := newSaver(ctx, pool, true, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// DefaultMaxConns is the most connections the pool Open makes holds, when
// the connection string does not say (pool_max_conns) and pgx's default is
// smaller. Each checkpoint a run writes, and each read, holds a connection
// for one statement; with fewer connections than runs writing at once the
// runs wait for one. On a two-core machine with a local server, 200 agent
// turns at once (one thread each) ran 2–2.5 times as many turns per second
// on 16 connections as on pgx's default of 4, and fewer on 32 or 64 than on
// 16. Keep replicas × pool size under the server's max_connections (100 by
// default).
const DefaultMaxConns = 16

// poolConfig parses connString for Open, sizing the pool (DefaultMaxConns)
// unless connString sets pool_max_conns.
func poolConfig(connString string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err) // pgx keeps passwords out of this error
	}
	// pgxpool reads pool_max_conns from the URL's query or the DSN's
	// keys, and leaves no trace of whether it was set; a connection string
	// that names it sets it (or, if the name is in a password, keeps
	// pgx's default: harmless).
	if !strings.Contains(connString, "pool_max_conns") && cfg.MaxConns < DefaultMaxConns {
		cfg.MaxConns = DefaultMaxConns
	}
	return cfg, nil
}

func newSaver(ctx context.Context, pool *pgxpool.Pool, owned bool, opts []Option) (*Saver, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Saver{pool: pool, owned: owned, t: newTables(cfg), guard: cfg.guard}
	s.q = newQueries(s.t)
	if err := s.migrate(ctx, cfg); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}

// Close closes the pool if the store opened it (Open); a store made with New
// leaves the caller's pool open. It always returns nil; it returns an error
// so that the store is an io.Closer like the other stores.
func (s *Saver) Close() error {
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// queries are the store's statements with its table names filled in. pgx
// prepares and caches each one per connection.
type queries struct {
	put, putIfLatest, whyRefused, exists, upsertWrites, getLatest, getByID, list, listBefore, deleteThread, prune string
}

const checkpointColumns = `c.thread_id, c.namespace, c.checkpoint_id, c.parent_id, c.step, c.source, c.created_at, c.metadata, c.payload`

// writesOf selects a checkpoint's writes as three parallel arrays, in the
// order they were first written, in the same statement (and snapshot) as
// the checkpoint.
const writesOf = `,
	ARRAY(SELECT w.task_id FROM {writes} w WHERE w.checkpoint_seq = c.seq ORDER BY w.seq),
	ARRAY(SELECT w.node FROM {writes} w WHERE w.checkpoint_seq = c.seq ORDER BY w.seq),
	ARRAY(SELECT w.payload FROM {writes} w WHERE w.checkpoint_seq = c.seq ORDER BY w.seq)`

func newQueries(t tables) queries {
	return queries{
		put: t.expand(`INSERT INTO {checkpoints}
			(thread_id, namespace, checkpoint_id, parent_id, step, source, created_at, metadata, payload)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (thread_id, namespace, checkpoint_id) DO NOTHING`),
		// cp ($1-$9), if the latest checkpoint is $10 ('' for none).
		putIfLatest: t.expand(`INSERT INTO {checkpoints}
			(thread_id, namespace, checkpoint_id, parent_id, step, source, created_at, metadata, payload)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
			WHERE COALESCE((SELECT checkpoint_id FROM {checkpoints}
				WHERE thread_id = $1 AND namespace = $2 ORDER BY seq DESC LIMIT 1), '') = $10
			ON CONFLICT (thread_id, namespace, checkpoint_id) DO NOTHING`),
		whyRefused: t.expand(`SELECT
			COALESCE((SELECT checkpoint_id FROM {checkpoints}
				WHERE thread_id = $1 AND namespace = $2 ORDER BY seq DESC LIMIT 1), ''),
			EXISTS (SELECT 1 FROM {checkpoints} WHERE thread_id = $1 AND namespace = $2 AND checkpoint_id = $3)`),
		exists: t.expand(`SELECT EXISTS (SELECT 1 FROM {checkpoints}
			WHERE thread_id = $1 AND namespace = $2 AND checkpoint_id = $3)`),
		// Rows go in in array order, so new tasks take increasing seq values;
		// a task already stored keeps its seq and so its place.
		upsertWrites: t.expand(`INSERT INTO {writes} (checkpoint_seq, task_id, node, payload)
			SELECT c.seq, w.task_id, w.node, w.payload
			FROM {checkpoints} c,
				unnest($4::text[], $5::text[], $6::bytea[]) WITH ORDINALITY AS w(task_id, node, payload, ord)
			WHERE c.thread_id = $1 AND c.namespace = $2 AND c.checkpoint_id = $3
			ORDER BY w.ord
			ON CONFLICT (checkpoint_seq, task_id) DO UPDATE SET node = EXCLUDED.node, payload = EXCLUDED.payload`),
		getLatest: t.expand(`SELECT ` + checkpointColumns + writesOf + ` FROM {checkpoints} c
			WHERE c.thread_id = $1 AND c.namespace = $2 ORDER BY c.seq DESC LIMIT 1`),
		getByID: t.expand(`SELECT ` + checkpointColumns + writesOf + ` FROM {checkpoints} c
			WHERE c.thread_id = $1 AND c.namespace = $2 AND c.checkpoint_id = $3`),
		list: t.expand(`SELECT ` + checkpointColumns + ` FROM {checkpoints} c
			WHERE c.thread_id = $1 AND c.namespace = $2 ORDER BY c.seq DESC LIMIT $3`),
		listBefore: t.expand(`SELECT ` + checkpointColumns + ` FROM {checkpoints} c
			WHERE c.thread_id = $1 AND c.namespace = $2
			AND c.seq < (SELECT b.seq FROM {checkpoints} b WHERE b.thread_id = $1 AND b.namespace = $2 AND b.checkpoint_id = $4)
			ORDER BY c.seq DESC LIMIT $3`),
		deleteThread: t.expand(`DELETE FROM {checkpoints} WHERE thread_id = $1`),
		prune: t.expand(`DELETE FROM {checkpoints} WHERE seq IN (
			SELECT seq FROM (
				SELECT seq, row_number() OVER (PARTITION BY namespace ORDER BY seq DESC) AS age
				FROM {checkpoints} WHERE thread_id = $1
			) ranked WHERE age > $2)`),
	}
}

func checkContext(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	return nil
}

// Put stores cp. A zero CreatedAt is set to the current time. CreatedAt is
// kept to the microsecond. ThreadID, Namespace, ID, ParentID, Source and
// Metadata must be valid UTF-8 without NUL characters, which PostgreSQL
// cannot store; the error names the field that is not.
func (s *Saver) Put(ctx context.Context, cp state.Checkpoint) error {
	return s.put(ctx, cp, false, "")
}

// PutIfLatest stores cp, as Put does, provided that the latest checkpoint
// of cp's thread and namespace is the one with ID latest (none, with latest
// empty); otherwise it stores nothing and returns an error wrapping
// state.ErrNotLatest. It checks and inserts in one transaction holding a
// transaction-level advisory lock on the thread and namespace, so the
// condition holds against every replica's PutIfLatest on the same
// database. See state.ConditionalSaver.
func (s *Saver) PutIfLatest(ctx context.Context, cp state.Checkpoint, latest string) error {
	return s.put(ctx, cp, true, latest)
}

// put stores cp, when cond only if the thread's latest checkpoint in cp's
// namespace is latest.
func (s *Saver) put(ctx context.Context, cp state.Checkpoint, cond bool, latest string) error {
	if err := checkContext(ctx, "put"); err != nil {
		return err
	}
	if cp.ThreadID == "" {
		return errors.New("postgres: put: checkpoint has no thread ID")
	}
	if cp.ID == "" {
		return fmt.Errorf("postgres: put: thread %q: checkpoint has no ID", cp.ThreadID)
	}
	if err := checkText("thread ID", cp.ThreadID, "namespace", cp.Namespace, "checkpoint ID", cp.ID,
		"parent ID", cp.ParentID, "source", cp.Source); err != nil {
		return fmt.Errorf("postgres: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID, err))
	}
	metadata, err := checkMetadata(cp.Metadata)
	if err != nil {
		return fmt.Errorf("postgres: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID, err))
	}
	createdAt := cp.CreatedAt
	if createdAt.IsZero() {
		createdAt = time.Now()
	}
	args := []any{cp.ThreadID, cp.Namespace, cp.ID, cp.ParentID, cp.Step, cp.Source,
		createdAt, metadata, blob(cp.Payload)}
	if cond {
		return s.putIfLatest(ctx, cp, latest, args)
	}
	tag, err := s.write(ctx, s.q.put, args...)
	if err != nil {
		return fmt.Errorf("postgres: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID, err))
	}
	if tag.RowsAffected() == 0 {
		return describe(cp.ThreadID, cp.Namespace, cp.ID, state.ErrConflict)
	}
	return nil
}

// putIfLatest stores cp in one round trip: a batch, which PostgreSQL runs
// as one implicit transaction, that takes the advisory lock of cp's thread
// and namespace and then inserts cp if the latest checkpoint is latest, in
// a statement whose snapshot is taken after the lock. When nothing was
// inserted, a second statement finds out why. The batch runs again when
// PostgreSQL aborts it as transient.
func (s *Saver) putIfLatest(ctx context.Context, cp state.Checkpoint, latest string, args []any) error {
	key := s.threadLock(cp.ThreadID, cp.Namespace)
	var tag pgconn.CommandTag
	err := again(ctx, func() error {
		b := &pgx.Batch{}
		s.queueGuard(ctx, b)
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, key)
		b.Queue(s.q.putIfLatest, append(args, latest)...).Exec(func(t pgconn.CommandTag) error {
			tag = t
			return nil
		})
		return s.pool.SendBatch(ctx, b).Close()
	})
	switch {
	case err != nil:
		return fmt.Errorf("postgres: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID, err))
	case tag.RowsAffected() == 0:
		return s.refused(ctx, cp, latest)
	}
	return nil
}

// refused is the error of a conditional put that stored nothing: cp's ID
// was taken, or the thread's latest checkpoint was not latest.
func (s *Saver) refused(ctx context.Context, cp state.Checkpoint, latest string) error {
	var (
		found string
		dup   bool
	)
	if err := s.pool.QueryRow(ctx, s.q.whyRefused, cp.ThreadID, cp.Namespace, cp.ID).Scan(&found, &dup); err != nil {
		return fmt.Errorf("postgres: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID,
			fmt.Errorf("nothing stored, and finding out why failed: %w", err)))
	}
	if dup || found == latest {
		return describe(cp.ThreadID, cp.Namespace, cp.ID, state.ErrConflict)
	}
	return describe(cp.ThreadID, cp.Namespace, cp.ID, state.NotLatest(found, latest))
}

// threadLock is the key of the advisory lock that serializes conditional
// puts on one thread and namespace of the store's tables.
func (s *Saver) threadLock(threadID, namespace string) int64 {
	h := fnv.New64a()
	h.Write([]byte(s.t.checkpoints))
	h.Write([]byte{0})
	h.Write([]byte(threadID))
	h.Write([]byte{0})
	h.Write([]byte(namespace))
	return int64(h.Sum64())
}

// Statements that PostgreSQL aborts because they deadlocked with, or could
// not be serialized after, a concurrent one are run again: each is a single
// statement, all or none, so running it again is what the caller asked for.
const (
	maxAttempts  = 8
	firstBackoff = 2 * time.Millisecond
)

// exec runs one writing statement, again when it was aborted as a deadlock
// (40P01) or a serialization failure (40001), with a growing, randomized
// pause between attempts.
func (s *Saver) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := again(ctx, func() (err error) {
		tag, err = s.pool.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// write runs one writing statement as exec does, after the write guard's
// statement in the same transaction when the guard gives one.
func (s *Saver) write(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if s.guard == nil {
		return s.exec(ctx, sql, args...)
	}
	var tag pgconn.CommandTag
	err := again(ctx, func() error {
		b := &pgx.Batch{}
		s.queueGuard(ctx, b)
		b.Queue(sql, args...).Exec(func(t pgconn.CommandTag) error {
			tag = t
			return nil
		})
		return s.pool.SendBatch(ctx, b).Close()
	})
	return tag, err
}

// queueGuard queues the write guard's statement, if it gives one, as the
// first of b's: its failure fails the batch with an error wrapping
// state.ErrFenced.
func (s *Saver) queueGuard(ctx context.Context, b *pgx.Batch) {
	if s.guard == nil {
		return
	}
	q, args, ok := s.guard(ctx)
	if !ok {
		return
	}
	b.Queue(q, args...).Fn = func(br pgx.BatchResults) error {
		rows, _ := br.Query()
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("%w: %w", state.ErrFenced, err)
		}
		return nil
	}
}

// again runs attempt, and again, up to maxAttempts in all, while it fails
// with an error PostgreSQL aborted as transient, pausing between attempts.
// It returns the last attempt's error, joined with the context's cause
// when the context ended during a pause.
func again(ctx context.Context, attempt func() error) error {
	backoff := firstBackoff
	for n := 1; ; n++ {
		err := attempt()
		if err == nil || n == maxAttempts || !transient(err) {
			return err
		}
		if perr := backOff(ctx, backoff); perr != nil {
			return errors.Join(err, perr)
		}
		backoff *= 2
	}
}

// backOff waits half to all of backoff, so that the statements that collided
// do not collide again, or until ctx ends, returning its cause.
func backOff(ctx context.Context, backoff time.Duration) error {
	if err := pause.Sleep(ctx, jitter.Jitter(backoff, 0.5)); err != nil {
		return context.Cause(ctx)
	}
	return nil
}

// transient reports whether err is PostgreSQL aborting a statement for a
// conflict with a concurrent one, which may succeed when run again.
func transient(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// isForeignKeyViolation reports whether err is PostgreSQL refusing a row
// whose referenced row does not exist (any more).
func isForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

// blob keeps an empty payload from being stored as NULL.
func blob(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// PutWrites stores writes against an existing checkpoint in one statement,
// all or none. A write whose TaskID is already stored replaces the stored
// one in its place. Task IDs and nodes must be valid UTF-8 without NUL
// characters.
func (s *Saver) PutWrites(ctx context.Context, threadID, namespace, checkpointID string, writes []state.PendingWrite) error {
	if err := checkContext(ctx, "put writes"); err != nil {
		return err
	}
	// One statement may not update a row twice, so a task repeated within
	// the batch is merged first: its last write, in its first place.
	var (
		tasks, nodes []string
		payloads     [][]byte
		index        = make(map[string]int, len(writes))
	)
	for i, w := range writes {
		if w.TaskID == "" {
			return fmt.Errorf("postgres: put writes: %w",
				describe(threadID, namespace, checkpointID, fmt.Errorf("write %d (node %q) has no task ID", i, w.Node)))
		}
		if err := checkText("task ID", w.TaskID, "node", w.Node); err != nil {
			return fmt.Errorf("postgres: put writes: %w",
				describe(threadID, namespace, checkpointID, fmt.Errorf("write %d (node %q): %w", i, w.Node, err)))
		}
		if j, seen := index[w.TaskID]; seen {
			nodes[j], payloads[j] = w.Node, blob(w.Payload)
			continue
		}
		index[w.TaskID] = len(tasks)
		tasks, nodes, payloads = append(tasks, w.TaskID), append(nodes, w.Node), append(payloads, blob(w.Payload))
	}
	if !storable(threadID, namespace, checkpointID) {
		return describe(threadID, namespace, checkpointID, state.ErrNotFound)
	}

	var found bool
	if len(tasks) == 0 {
		if err := s.pool.QueryRow(ctx, s.q.exists, threadID, namespace, checkpointID).Scan(&found); err != nil {
			return fmt.Errorf("postgres: put writes: %w", describe(threadID, namespace, checkpointID, err))
		}
	} else {
		tag, err := s.write(ctx, s.q.upsertWrites, threadID, namespace, checkpointID, tasks, nodes, payloads)
		if isForeignKeyViolation(err) {
			// The checkpoint was deleted (DeleteThread, Prune) after the
			// statement found it: it is gone, and nothing was written.
			return describe(threadID, namespace, checkpointID, state.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("postgres: put writes: %w", describe(threadID, namespace, checkpointID, err))
		}
		found = tag.RowsAffected() > 0
	}
	if !found {
		return describe(threadID, namespace, checkpointID, state.ErrNotFound)
	}
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanCheckpoint(row rowScanner, extra ...any) (state.Checkpoint, error) {
	var cp state.Checkpoint
	dest := append([]any{&cp.ThreadID, &cp.Namespace, &cp.ID, &cp.ParentID, &cp.Step, &cp.Source,
		&cp.CreatedAt, &cp.Metadata, &cp.Payload}, extra...)
	if err := row.Scan(dest...); err != nil {
		return cp, err
	}
	cp.CreatedAt = cp.CreatedAt.UTC()
	return cp, nil
}

// Get returns a checkpoint and its writes, read in one statement; an empty
// checkpointID asks for the latest.
func (s *Saver) Get(ctx context.Context, threadID, namespace, checkpointID string) (state.Tuple, error) {
	if err := checkContext(ctx, "get"); err != nil {
		return state.Tuple{}, err
	}
	if !storable(threadID, namespace, checkpointID) {
		return state.Tuple{}, describe(threadID, namespace, checkpointID, state.ErrNotFound)
	}
	var row pgx.Row
	if checkpointID == "" {
		row = s.pool.QueryRow(ctx, s.q.getLatest, threadID, namespace)
	} else {
		row = s.pool.QueryRow(ctx, s.q.getByID, threadID, namespace, checkpointID)
	}
	var (
		tasks, nodes []string
		payloads     [][]byte
	)
	cp, err := scanCheckpoint(row, &tasks, &nodes, &payloads)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return state.Tuple{}, describe(threadID, namespace, checkpointID, state.ErrNotFound)
	case err != nil:
		return state.Tuple{}, fmt.Errorf("postgres: get: %w", describe(threadID, namespace, checkpointID, err))
	}
	tup := state.Tuple{Checkpoint: cp}
	if len(tasks) > 0 {
		tup.Writes = make([]state.PendingWrite, len(tasks))
		for i := range tasks {
			tup.Writes[i] = state.PendingWrite{TaskID: tasks[i], Node: nodes[i], Payload: payloads[i]}
		}
	}
	return tup, nil
}

// List returns a thread's checkpoints in a namespace, newest first. Before
// must name a checkpoint of that thread and namespace.
func (s *Saver) List(ctx context.Context, threadID, namespace string, opts state.ListOptions) ([]state.Checkpoint, error) {
	if err := checkContext(ctx, "list"); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("postgres: list: thread %q: limit must not be negative, got %d", threadID, opts.Limit)
	}
	if !storable(threadID, namespace, opts.Before) {
		if opts.Before != "" {
			return nil, fmt.Errorf("list before: %w", describe(threadID, namespace, opts.Before, state.ErrNotFound))
		}
		return nil, nil
	}
	var limit *int64 // NULL: no limit
	if opts.Limit > 0 {
		l := int64(opts.Limit)
		limit = &l
	}
	var (
		rows pgx.Rows
		err  error
	)
	if opts.Before == "" {
		rows, err = s.pool.Query(ctx, s.q.list, threadID, namespace, limit)
	} else {
		rows, err = s.pool.Query(ctx, s.q.listBefore, threadID, namespace, limit, opts.Before)
	}
	var cps []state.Checkpoint
	if err == nil {
		cps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (state.Checkpoint, error) {
			return scanCheckpoint(row)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", describe(threadID, namespace, "", err))
	}
	if len(cps) == 0 && opts.Before != "" {
		// Nothing older, or no such checkpoint to be older than?
		var found bool
		if err := s.pool.QueryRow(ctx, s.q.exists, threadID, namespace, opts.Before).Scan(&found); err != nil {
			return nil, fmt.Errorf("postgres: list: %w", describe(threadID, namespace, opts.Before, err))
		}
		if !found {
			return nil, fmt.Errorf("list before: %w", describe(threadID, namespace, opts.Before, state.ErrNotFound))
		}
	}
	return cps, nil
}

// DeleteThread removes a thread's checkpoints, and with them their writes,
// in all namespaces.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := checkContext(ctx, "delete thread"); err != nil {
		return err
	}
	if !storable(threadID) {
		return nil
	}
	if _, err := s.exec(ctx, s.q.deleteThread, threadID); err != nil {
		return fmt.Errorf("postgres: delete thread %q: %w", threadID, err)
	}
	return nil
}

// Prune keeps the newest keep checkpoints of each namespace of a thread and
// their writes, removing the rest.
func (s *Saver) Prune(ctx context.Context, threadID string, keep int) error {
	if err := checkContext(ctx, "prune"); err != nil {
		return err
	}
	if keep < 1 {
		return fmt.Errorf("postgres: prune: thread %q: keep must be at least 1, got %d", threadID, keep)
	}
	if !storable(threadID) {
		return nil
	}
	if _, err := s.exec(ctx, s.q.prune, threadID, keep); err != nil {
		return fmt.Errorf("postgres: prune thread %q: %w", threadID, err)
	}
	return nil
}

// checkMetadata returns md as the value to store: NULL when empty.
// PostgreSQL's jsonb holds only valid UTF-8 without NUL characters.
func checkMetadata(md map[string]string) (any, error) {
	if len(md) == 0 {
		return nil, nil
	}
	for k, v := range md {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("metadata %q: keys and values must be valid UTF-8", k)
		}
		if strings.IndexByte(k, 0) >= 0 || strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("metadata %q: keys and values must not contain NUL characters, which PostgreSQL cannot store", k)
		}
	}
	return md, nil
}

// textProblem says why PostgreSQL cannot store s in a text column, or
// returns "" if it can: text holds only valid UTF-8 without NUL characters.
func textProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character, which PostgreSQL cannot store"
	}
	return ""
}

// storable reports whether every one of names could have been stored. A
// name that could not names nothing in the store.
func storable(names ...string) bool {
	for _, n := range names {
		if textProblem(n) != "" {
			return false
		}
	}
	return true
}

// checkText checks fields, given as pairs of a field's name and its value,
// and names the first that PostgreSQL cannot store.
func checkText(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if p := textProblem(fields[i+1]); p != "" {
			return fmt.Errorf("%s %q %s", fields[i], fields[i+1], p)
		}
	}
	return nil
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
