package runs

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/state"
)

// A Manager starts, watches and cancels runs, and, in the processes that
// call Work, executes them. Any number of Managers, in any number of
// processes, share the runs of one database (and queue): a run started
// through one may be executed by another's Work and streamed from a third.
//
// A Manager is safe for concurrent use.
type Manager struct {
	b      Backend
	saver  *observedSaver
	t      tables
	cfg    config
	log    *slog.Logger
	river  *river.Client[*sql.Tx] // nil with a LocalQueue
	queue  jobQueue
	graphs sync.Map // name → *runner
	hub    *hub

	mu        sync.Mutex
	active    map[string]*activeRun // runs this process executes, by ID
	cancelled map[string]time.Time  // cancellations that found no active run here
	working   bool
	drainCh   chan struct{}   // closed when Work's context ends
	workCtx   context.Context // the context of runs begun here (runHere), while Work runs
	local     chan struct{}   // a slot per run begun here
	// localRuns counts the runs begun here, which River does not track.
	localRuns sync.WaitGroup

	queries    sync.Map       // query text → expanded text
	stmts      sync.Map       // query text → *sql.Stmt
	preparing  sync.Map       // query text → true, once its preparation began
	background sync.WaitGroup // statements being prepared
	closed     atomic.Bool
	deletions  deletions // DeleteThreadSoon's

	// The backend's notifications, followed from the first Work, Stream
	// or Wait until Close.
	listenOnce  sync.Once
	listening   chan struct{} // closed once the first LISTEN is in place
	stopListen  context.CancelFunc
	listenEnded chan struct{}
}

// New opens a Manager on b, creating or migrating its tables and River's.
// Applications call runs/postgres.Open or runs/sqlite.Open, which make the
// Backend.
func New(ctx context.Context, b Backend, opts ...Option) (*Manager, error) {
	if b.DB == nil || b.Driver == nil && b.Local == nil || b.Saver == nil {
		return nil, errors.New("runs: the backend lacks a database, a River driver or a checkpointer")
	}
	if b.Dialect != DialectPostgres && b.Dialect != DialectSQLite {
		return nil, fmt.Errorf("runs: unknown dialect %q (want %q or %q)", b.Dialect, DialectPostgres, DialectSQLite)
	}
	cfg := defaultConfig(b.Dialect)
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.id == "" {
		host, _ := os.Hostname()
		cfg.id = fmt.Sprintf("%s/%d/%s", cut(host, 40), os.Getpid(), randomHex(4))
	}
	prefix := b.Prefix
	if prefix == "" {
		prefix = "trellis_"
	}
	t := tables{dialect: b.Dialect, prefix: prefix}
	if b.Dialect == DialectPostgres && b.Schema != "" {
		t.schema = quoteIdent(b.Schema)
	}
	if err := t.migrate(ctx, b.DB); err != nil {
		return nil, err
	}
	m := &Manager{b: b, saver: &observedSaver{b.Saver}, t: t, cfg: cfg, log: cfg.logger, active: map[string]*activeRun{}, cancelled: map[string]time.Time{}}
	if m.log == nil {
		m.log = discard()
	}
	m.hub = newHub()
	if b.Local != nil {
		m.queue = b.Local.queue()
		return m, nil
	}
	migrator, err := rivermigrate.New(b.Driver, &rivermigrate.Config{Schema: b.Schema, Logger: discard()})
	if err != nil {
		return nil, fmt.Errorf("runs: river migrations: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("runs: river migrations: %w", err)
	}
	m.queue = riverQueue{m}
	workers := river.NewWorkers()
	river.AddWorker(workers, &runWorker{m: m})
	river.AddWorker(workers, &cronWorker{m: m})
	m.river, err = river.NewClient(b.Driver, &river.Config{
		Queues:            map[string]river.QueueConfig{cfg.queue: {MaxWorkers: cfg.concurrency}},
		Workers:           workers,
		FetchCooldown:     cfg.cooldown,
		FetchPollInterval: max(cfg.poll, cfg.cooldown),
		// A run's liveness is its lease, renewed while it runs: River's
		// own timeout would cancel long runs, and its rescue comes an hour
		// late. Jobs of dead workers are cancelled when their runs are
		// taken over, and the rescuer then finalizes them.
		JobTimeout:           -1,
		RescueStuckJobsAfter: time.Minute,
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(cfg.cronTick),
			func() (river.JobArgs, *river.InsertOpts) {
				return cronTick{}, &river.InsertOpts{Queue: cfg.queue}
			}, &river.PeriodicJobOpts{RunOnStart: true})},
		Logger:   m.log,
		Schema:   b.Schema,
		ID:       cut(strings.NewReplacer("/", "_", ".", "_").Replace(cfg.id), 100),
		TestOnly: false,
	})
	if err != nil {
		return nil, fmt.Errorf("runs: river client: %w", err)
	}
	return m, nil
}

// Register makes graphs runnable by the Manager: Start accepts runs of
// them, and Work executes them. Every Manager that starts or works a
// graph's runs registers it, under the same name. Registering a second
// graph under a name is an error.
func (m *Manager) Register(graphs ...Runnable) error {
	var errs []error
	for _, g := range graphs {
		r := g.runnable()
		if r.name == "" {
			errs = append(errs, errors.New("runs: a graph without a name (graph.WithName) cannot be registered"))
			continue
		}
		if s := r.saver(); s != state.Saver(m.saver) {
			errs = append(errs, fmt.Errorf("runs: graph %q is not compiled with the Manager's checkpointer: compile it with graph.WithCheckpointer(m.Saver())", r.name))
			continue
		}
		if _, taken := m.graphs.LoadOrStore(r.name, r); taken {
			errs = append(errs, fmt.Errorf("runs: a graph named %q is already registered", r.name))
		}
	}
	return errors.Join(errs...)
}

// Saver is the checkpointer to compile the Manager's graphs with
// (graph.WithCheckpointer): the backend's store, whose writes a worker
// makes conditional on holding the run's lease. Outside a worker it is
// an ordinary checkpointer.
func (m *Manager) Saver() state.ConditionalSaver { return m.saver }

// Close releases the Manager's database connections when it opened them.
// Runs it was executing must have been handed back first (Work returned).
func (m *Manager) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.listenOnce.Do(func() {}) // none starts from now on
	if m.stopListen != nil {
		m.stopListen()
		<-m.listenEnded
	}
	m.stopDeletions()
	m.closeStatements()
	if m.b.Close != nil {
		return m.b.Close()
	}
	return nil
}

func (m *Manager) graph(name string) (*runner, bool) {
	r, ok := m.graphs.Load(name)
	if !ok {
		return nil, false
	}
	return r.(*runner), true
}

// sql is q expanded for the Manager's dialect and tables.
func (m *Manager) sql(q string) string {
	if s, ok := m.queries.Load(q); ok {
		return s.(string)
	}
	s := m.t.expand(q)
	m.queries.Store(q, s)
	return s
}

// ownerKey is the context key of the owner of a request.
type ownerKey struct{}

// WithOwner scopes what a Manager does with ctx to owner: runs and threads
// are created for owner, and only owner's are found, listed, streamed,
// cancelled or deleted; another owner's look as if they did not exist
// (ErrNotFound). Authentication middleware sets it from the request. A
// context without an owner is the empty owner's, which is how a
// single-tenant application uses the Manager.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerOf returns the owner WithOwner put in ctx, "" when none.
func OwnerOf(ctx context.Context) string {
	s, _ := ctx.Value(ownerKey{}).(string)
	return s
}

// storedRequest is what a run keeps of its Request.
type storedRequest struct {
	Input     json.RawMessage `json:"input,omitempty"`
	Resume    *Resume         `json:"resume,omitempty"`
	Modes     uint16          `json:"modes"`
	StepLimit int             `json:"step_limit,omitempty"`
}

// Start accepts a run and queues it for a worker, or, when the Manager
// works runs (Work) and has room, stores it claimed by its own worker,
// which begins it at once. It returns as soon as the run is stored, as
// StatusPending: Wait or Stream follow it. When the thread has an
// active run, req.Strategy decides (see Strategy); with StrategyReject the
// error matches ErrThreadBusy and nothing was stored.
func (m *Manager) Start(ctx context.Context, req Request) (Run, error) {
	if m.closed.Load() {
		return Run{}, ErrClosed
	}
	r, err := m.check(&req)
	if err != nil {
		return Run{}, err
	}
	// With a worker of this Manager free, the run is claimed for it in the
	// transaction that stores it: one transaction, not two, and no job in
	// the queue (a worker that dies leaves the run to the reaper, as any).
	slot := m.takeSlot()
	var out Run
	err = m.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = m.start(ctx, tx, r, &req, OwnerOf(ctx), slot != nil)
		return err
	})
	if err != nil {
		slot.free()
		return Run{}, err
	}
	if out.claim != nil {
		m.runClaimed(slot, out.claim)
		out.claim = nil
		return out, nil
	}
	slot.free()
	if out.job != nil && m.b.Local == nil {
		m.runHere(*out.job, out.jobID)
		out.job = nil
	}
	return out, nil
}

// check validates req and fills its defaults.
func (m *Manager) check(req *Request) (*runner, error) {
	r, ok := m.graph(req.Graph)
	if !ok {
		return nil, fmt.Errorf("runs: %w %s: register it with the Manager (Manager.Register)", ErrUnknownGraph, quoteCut(req.Graph))
	}
	if !req.Strategy.valid() {
		return nil, fmt.Errorf("runs: %w: unknown strategy %s", ErrInvalid, quoteCut(string(req.Strategy)))
	}
	if req.Strategy == "" {
		req.Strategy = StrategyReject
	}
	switch req.IfNotExists {
	case "":
		req.IfNotExists = IfNotExistsCreate
	case IfNotExistsCreate, IfNotExistsReject:
	default:
		return nil, fmt.Errorf("runs: %w: unknown if_not_exists %s", ErrInvalid, quoteCut(string(req.IfNotExists)))
	}
	if in := strings.TrimSpace(string(req.Input)); in != "" && in != "null" {
		if in[0] != '{' || !json.Valid([]byte(in)) {
			return nil, fmt.Errorf("runs: %w: the input must be a JSON object of state fields", ErrInvalid)
		}
	}
	if req.Resume != nil {
		if req.Input != nil && strings.TrimSpace(string(req.Input)) != "null" && strings.TrimSpace(string(req.Input)) != "" {
			return nil, fmt.Errorf("runs: %w: a run either resumes a thread or gives it input, not both", ErrInvalid)
		}
		if !req.Resume.HasValue && len(req.Resume.ByID) == 0 && !req.Resume.Continue {
			return nil, fmt.Errorf("runs: %w: the resume answers nothing (set HasValue, ByID or Continue)", ErrInvalid)
		}
		if req.Resume.HasValue && !json.Valid(orNull(req.Resume.Value)) {
			return nil, fmt.Errorf("runs: %w: the resume value is not JSON", ErrInvalid)
		}
		for id, v := range req.Resume.ByID {
			if !json.Valid(orNull(v)) {
				return nil, fmt.Errorf("runs: %w: the answer to interrupt %s is not JSON", ErrInvalid, quoteCut(id))
			}
		}
	}
	if req.After < 0 {
		return nil, fmt.Errorf("runs: %w: negative delay %v", ErrInvalid, req.After)
	}
	if len(req.Thread) > 256 {
		return nil, fmt.Errorf("runs: %w: thread ID %s is longer than 256 bytes", ErrInvalid, quoteCut(req.Thread))
	}
	if req.Modes == 0 {
		req.Modes = DefaultModes
	}
	return r, nil
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// start stores a run in tx (see Start). With here, a run that may start
// at once is stored claimed by this Manager's worker (Run.claim), and no
// job is queued for it.
func (m *Manager) start(ctx context.Context, tx *sql.Tx, r *runner, req *Request, owner string, here bool) (Run, error) {
	id := uuid.Must(uuid.NewV7()).String()
	thread := req.Thread
	if thread == "" {
		thread = uuid.Must(uuid.NewV7()).String()
	}
	meta, err := json.Marshal(orEmpty(req.Metadata))
	if err != nil {
		return Run{}, fmt.Errorf("runs: %w: metadata: %w", ErrInvalid, err)
	}
	// The thread's row is the lock that orders its runs. A new thread is
	// stored busy with this run at once: no other run can be before it,
	// and the statements that would read it back and mark it busy are
	// saved (a stateless run's thread is always new).
	var (
		thOwner, active string
		now             int64
		created         bool
	)
	if req.IfNotExists != IfNotExistsReject {
		err := m.queryRow(ctx, tx, `INSERT INTO {threads} (thread_id, owner, graph, status, metadata, active_run, created_at, updated_at)
			VALUES ($1, $2, $3, 'busy', $4, $5, {now}, {now}) ON CONFLICT (thread_id) DO NOTHING RETURNING created_at`,
			thread, owner, r.name, string(meta), id).Scan(&now)
		switch {
		case err == nil:
			created, thOwner = true, owner
		case !errors.Is(err, sql.ErrNoRows):
			return Run{}, fmt.Errorf("runs: start: thread %s: %w", quoteCut(thread), err)
		}
	}
	if !created {
		err = m.queryRow(ctx, tx, `SELECT owner, active_run, {now} FROM {threads} WHERE thread_id = $1{lock}`, thread).
			Scan(&thOwner, &active, &now)
		if errors.Is(err, sql.ErrNoRows) {
			return Run{}, fmt.Errorf("runs: thread %s: %w", quoteCut(thread), ErrNotFound)
		}
		if err != nil {
			return Run{}, fmt.Errorf("runs: start: thread %s: %w", quoteCut(thread), err)
		}
	}
	if thOwner != owner {
		return Run{}, fmt.Errorf("runs: thread %s: %w", quoteCut(thread), ErrNotFound)
	}
	sr := storedRequest{Input: req.Input, Resume: req.Resume, Modes: uint16(req.Modes), StepLimit: req.StepLimit}
	body, err := json.Marshal(sr)
	if err != nil {
		return Run{}, fmt.Errorf("runs: %w: %w", ErrInvalid, err)
	}
	startAt := now + req.After.Microseconds()
	run := Run{ID: id, Thread: thread, Graph: r.name, Status: StatusPending, Strategy: req.Strategy, Metadata: req.Metadata,
		Input: req.Input, Resume: req.Resume, Modes: req.Modes,
		CreatedAt: fromMicros(now), StartAt: fromMicros(startAt), UpdatedAt: fromMicros(now)}
	if active != "" {
		switch req.Strategy {
		case StrategyReject:
			return Run{}, fmt.Errorf("runs: thread %s has run %s in progress: %w", quoteCut(thread), active, ErrThreadBusy)
		case StrategyInterrupt, StrategyRollback:
			action := CancelInterrupt
			if req.Strategy == StrategyRollback {
				action = CancelRollback
			}
			if err := m.requestCancel(ctx, tx, active, action, "displaced by run "+id); err != nil {
				return Run{}, err
			}
		}
	}
	var (
		job   runJob
		jobID int64
	)
	switch {
	case active == "" && here && startAt <= now:
		// Claimed at once: stored as claim would leave it, at its first
		// attempt under this worker's lease.
		if _, err := m.exec(ctx, tx, `INSERT INTO {runs}
			(run_id, thread_id, owner, graph, status, strategy, request, metadata, created_at, start_at, updated_at,
			epoch, lease_owner, lease_until, attempts)
			VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $8, $8, 1, $9, $10, 1)`,
			id, thread, owner, r.name, string(req.Strategy), string(body), string(meta), now,
			m.cfg.id, now+m.cfg.lease.Microseconds()); err != nil {
			return Run{}, fmt.Errorf("runs: start: %w", err)
		}
		run.claim = &claimed{id: id, thread: thread, graph: r.name, epoch: 1, attempt: 1, req: sr}
	default:
		if active == "" {
			// The run's job is queued first, so that the run's row is
			// stored with its ID in one statement.
			job = runJob{Run: id, Thread: thread, Graph: r.name}
			if jobID, err = m.queue.insert(ctx, tx, job, fromMicros(startAt)); err != nil {
				return Run{}, fmt.Errorf("runs: queue run %s: %w", id, err)
			}
		}
		if _, err := m.exec(ctx, tx, `INSERT INTO {runs}
			(run_id, thread_id, owner, graph, status, strategy, request, metadata, created_at, start_at, updated_at, job_id)
			VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, $9, $8, $10)`,
			id, thread, owner, r.name, string(req.Strategy), string(body), string(meta), now, startAt, jobID); err != nil {
			return Run{}, fmt.Errorf("runs: start: %w", err)
		}
	}
	if active == "" {
		if startAt <= now && run.claim == nil {
			run.job, run.jobID = &job, jobID
		}
		if !created {
			if _, err := m.exec(ctx, tx, `UPDATE {threads} SET active_run = $2, status = 'busy', graph = $3, updated_at = {now} WHERE thread_id = $1`,
				thread, id, r.name); err != nil {
				return Run{}, fmt.Errorf("runs: start: %w", err)
			}
		}
	}
	return run, nil
}

// runJob is the River job that carries a run to a worker.
type runJob struct {
	Run string `json:"run"`
	// Thread and Graph let the worker read the thread before it claims
	// the run (empty in jobs queued without them: it reads it after).
	Thread string `json:"thread,omitempty"`
	Graph  string `json:"graph,omitempty"`
}

// Kind names the job's kind to River.
func (runJob) Kind() string { return "trellis_run" }

// enqueue gives a run a River job in tx, to start no sooner than startAt
// (microseconds), and records the job as the run's.
func (m *Manager) enqueue(ctx context.Context, tx *sql.Tx, job runJob, startAt int64) error {
	_, err := m.enqueueJob(ctx, tx, job, startAt)
	return err
}

// enqueueJob is enqueue, returning the River job's ID.
func (m *Manager) enqueueJob(ctx context.Context, tx *sql.Tx, job runJob, startAt int64) (int64, error) {
	run := job.Run
	id, err := m.queue.insert(ctx, tx, job, fromMicros(startAt))
	if err != nil {
		return 0, fmt.Errorf("runs: queue run %s: %w", run, err)
	}
	if _, err := m.exec(ctx, tx, `UPDATE {runs} SET job_id = $2 WHERE run_id = $1`, run, id); err != nil {
		return 0, fmt.Errorf("runs: queue run %s: %w", run, err)
	}
	return id, nil
}

// tx runs fn in a transaction, committing when it returns nil.
func (m *Manager) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := m.b.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("runs: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		m.settleQueue(tx, false)
		return err
	}
	if err := tx.Commit(); err != nil {
		m.settleQueue(tx, false)
		return fmt.Errorf("runs: commit: %w", err)
	}
	m.settleQueue(tx, true)
	return nil
}

// settleQueue tells a LocalQueue how tx ended: the jobs queued in it are
// queued once it committed.
func (m *Manager) settleQueue(tx *sql.Tx, committed bool) {
	if m.b.Local != nil {
		m.b.Local.settle(tx, committed)
	}
}

// notifyTx queues the notification in tx: it goes out if tx commits.
func (m *Manager) notifyTx(ctx context.Context, tx *sql.Tx, kind, id string) error {
	if m.b.Dialect != DialectPostgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, m.t.channel(), kind+":"+id)
	return err
}

const runColumns = `run_id, thread_id, graph, status, strategy, request, metadata, error, interrupts, attempts, lease_owner,
	created_at, start_at, updated_at, ended_at`

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var (
		r                                  Run
		status, strategy, body, meta, ints string
		created, startAt, updated, endedAt int64
	)
	if err := row.Scan(&r.ID, &r.Thread, &r.Graph, &status, &strategy, &body, &meta, &r.Error, &ints, &r.Attempts, &r.Worker,
		&created, &startAt, &updated, &endedAt); err != nil {
		return Run{}, err
	}
	r.Status, r.Strategy = Status(status), Strategy(strategy)
	var sr storedRequest
	if err := json.Unmarshal([]byte(body), &sr); err != nil {
		return Run{}, fmt.Errorf("run %s: stored request: %w", r.ID, err)
	}
	r.Input, r.Resume, r.Modes = sr.Input, sr.Resume, graphMode(sr.Modes)
	if meta != "" && meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &r.Metadata); err != nil {
			return Run{}, fmt.Errorf("run %s: stored metadata: %w", r.ID, err)
		}
	}
	if ints != "" {
		if err := json.Unmarshal([]byte(ints), &r.Interrupts); err != nil {
			return Run{}, fmt.Errorf("run %s: stored interrupts: %w", r.ID, err)
		}
	}
	r.CreatedAt, r.StartAt, r.UpdatedAt = fromMicros(created), fromMicros(startAt), fromMicros(updated)
	if endedAt > 0 {
		r.EndedAt = fromMicros(endedAt)
	}
	return r, nil
}

// Get returns a run.
func (m *Manager) Get(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(m.queryRow(ctx, nil, `SELECT `+runColumns+` FROM {runs} WHERE run_id = $1 AND owner = $2`, id, OwnerOf(ctx)))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("runs: run %s: %w", quoteCut(id), ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("runs: get run %s: %w", quoteCut(id), err)
	}
	return r, nil
}

// Output returns the final state of a run that succeeded, as JSON (the
// State of its KindRunEnd event), read from whichever replica ran it. A
// run that has not ended, or ended otherwise, fails with ErrNoOutput; a
// run of another owner is not found.
func (m *Manager) Output(ctx context.Context, id string) (json.RawMessage, error) {
	r, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status != StatusSuccess {
		return nil, fmt.Errorf("runs: output of run %s (%s): %w", quoteCut(id), r.Status, ErrNoOutput)
	}
	end, err := m.lastEvent(ctx, id, "output")
	if err != nil {
		return nil, err
	}
	if len(end.State) == 0 {
		return nil, fmt.Errorf("runs: output of run %s: its end recorded no state: %w", quoteCut(id), ErrNoOutput)
	}
	return end.State, nil
}

// Usage returns the token usage of an ended run's model calls (the Usage
// of its KindRunEnd event): in all, per model and per agent. A run that
// made no model call reports the zero Report; one that has not ended
// fails with ErrNoOutput; a run of another owner is not found.
func (m *Manager) Usage(ctx context.Context, id string) (modelmw.Report, error) {
	r, err := m.Get(ctx, id)
	if err != nil {
		return modelmw.Report{}, err
	}
	if !r.Status.Final() {
		return modelmw.Report{}, fmt.Errorf("runs: usage of run %s (%s): %w", quoteCut(id), r.Status, ErrNoOutput)
	}
	end, err := m.lastEvent(ctx, id, "usage")
	if err != nil {
		return modelmw.Report{}, err
	}
	if end.Usage == nil {
		return modelmw.Report{}, nil
	}
	return *end.Usage, nil
}

// lastEvent reads the KindRunEnd event of an ended run; what names the
// caller's purpose in errors.
func (m *Manager) lastEvent(ctx context.Context, id, what string) (Event, error) {
	var data []byte
	err := m.queryRow(ctx, nil, `SELECT data FROM {events} WHERE run_id = $1 ORDER BY seq DESC LIMIT 1`, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return Event{}, fmt.Errorf("runs: %s of run %s: its events are gone (WithEventRetention): %w", what, quoteCut(id), ErrNoOutput)
	}
	if err != nil {
		return Event{}, fmt.Errorf("runs: %s of run %s: %w", what, quoteCut(id), err)
	}
	var end Event
	if err := json.Unmarshal(data, &end); err != nil {
		return Event{}, fmt.Errorf("runs: %s of run %s: %w", what, quoteCut(id), err)
	}
	if end.Kind != KindRunEnd {
		return Event{}, fmt.Errorf("runs: %s of run %s: its end is not recorded: %w", what, quoteCut(id), ErrNoOutput)
	}
	return end, nil
}

// Runs lists a thread's runs, newest first.
func (m *Manager) Runs(ctx context.Context, thread string, q RunQuery) ([]Run, error) {
	limit, err := limitOf(q.Limit)
	if err != nil {
		return nil, err
	}
	if q.Offset < 0 {
		return nil, fmt.Errorf("runs: %w: offset %d is negative", ErrInvalid, q.Offset)
	}
	if _, err := m.Thread(ctx, thread); err != nil {
		return nil, err
	}
	rows, err := m.query(ctx, nil, `SELECT `+runColumns+` FROM {runs}
		WHERE thread_id = $1 AND owner = $2 AND ($3 = '' OR status = $3) ORDER BY seq DESC LIMIT $4 OFFSET $5`,
		thread, OwnerOf(ctx), string(q.Status), limit, q.Offset)
	if err != nil {
		return nil, fmt.Errorf("runs: list runs of thread %s: %w", quoteCut(thread), err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("runs: list runs of thread %s: %w", quoteCut(thread), err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Wait waits for a run to end and returns it, or returns ctx's error.
func (m *Manager) Wait(ctx context.Context, id string) (Run, error) {
	m.follow(ctx)
	wake, stop := m.hub.subscribe(id)
	defer stop()
	r, err := m.Get(ctx, id)
	for {
		if err != nil || r.Status.Final() {
			return r, err
		}
		if err := m.sleep(ctx, wake); err != nil {
			return Run{}, err
		}
		err = m.refresh(ctx, &r)
	}
}

// refresh reads again the columns of r that change as it runs and ends:
// the rest (its request, its metadata) stays as it was stored, and reading
// and decoding it again was a third of Wait's CPU time.
func (m *Manager) refresh(ctx context.Context, r *Run) error {
	var (
		status, ints     string
		updated, endedAt int64
	)
	err := m.queryRow(ctx, nil, `SELECT status, error, interrupts, attempts, lease_owner, updated_at, ended_at FROM {runs} WHERE run_id = $1`, r.ID).
		Scan(&status, &r.Error, &ints, &r.Attempts, &r.Worker, &updated, &endedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("runs: run %s: %w", quoteCut(r.ID), ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("runs: get run %s: %w", quoteCut(r.ID), err)
	}
	r.Status, r.UpdatedAt, r.Interrupts = Status(status), fromMicros(updated), nil
	if ints != "" {
		if err := json.Unmarshal([]byte(ints), &r.Interrupts); err != nil {
			return fmt.Errorf("run %s: stored interrupts: %w", r.ID, err)
		}
	}
	if endedAt > 0 {
		r.EndedAt = fromMicros(endedAt)
	}
	return nil
}

// sleep waits for a signal on wake, the poll interval, or ctx.
func (m *Manager) sleep(ctx context.Context, wake <-chan struct{}) error {
	d := m.cfg.poll
	if m.b.Listen != nil && m.following() {
		d = 5 * m.cfg.poll // notifications wake it; polling is a fallback
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-t.C:
	}
	return nil
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
