package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/state"
)

// Work executes runs until ctx ends, then hands back the runs it holds and
// returns: with DrainAtBoundary each run stops after the superstep it is
// in (supersteps still running after the drain timeout are cancelled),
// and goes back to the queue at once, where another worker continues it
// from its last checkpoint. Call Work in each process that should execute
// runs, typically with a context that SIGTERM cancels
// (signal.NotifyContext). Work returns nil after a clean hand-back.
//
// While it works, the Manager also takes over the runs of workers that
// died (their leases expired), starts scheduled runs, and sweeps old
// events.
func (m *Manager) Work(ctx context.Context) error {
	m.mu.Lock()
	if m.working {
		m.mu.Unlock()
		return errors.New("runs: Work is already running on this Manager")
	}
	m.working = true
	m.drainCh = make(chan struct{})
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	m.workCtx = workCtx
	m.local = make(chan struct{}, m.cfg.concurrency)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.working = false
		m.mu.Unlock()
	}()
	if m.closed.Load() {
		return ErrClosed
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	m.follow(ctx)
	wg.Go(func() { m.reapLoop(bg) })
	wg.Go(func() { m.sweepLoop(bg) })
	if m.b.Local != nil {
		wg.Go(func() { m.dispatch(workCtx) })
		wg.Go(func() { m.cronLoop(bg) })
	} else if err := m.river.Start(bg); err != nil {
		stopBG()
		wg.Wait()
		return fmt.Errorf("runs: start workers: %w", err)
	}
	<-ctx.Done()

	// Drain: no new runs, runs stop at their next boundary (or at once),
	// and each hands itself back.
	close(m.drainCh)
	m.mu.Lock()
	holding := len(m.active)
	m.mu.Unlock()
	m.log.Info("runs: worker stopping: handing its runs back", "worker", m.cfg.id, "runs", holding, "drain", m.cfg.drain.String())
	if m.cfg.drain == DrainCancel {
		m.cancelAll(errDrain)
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.drainTimeout)
	var err error
	if m.river != nil {
		err = m.river.Stop(stopCtx)
	}
	if waitFor(stopCtx, &m.localRuns) != nil && err == nil {
		err = stopCtx.Err()
	}
	cancel()
	if err != nil {
		// Supersteps that outlived the drain timeout: cancel them, and
		// wait for their runs to be handed back.
		m.cancelAll(errDrain)
		stopWork()
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = nil
		if m.river != nil {
			err = m.river.StopAndCancel(hard)
		}
		if werr := waitFor(hard, &m.localRuns); err == nil {
			err = werr
		}
		cancel()
	}
	m.mu.Lock()
	m.workCtx = nil
	m.mu.Unlock()
	stopBG()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("runs: stop workers: %w", err)
	}
	return nil
}

// runHere begins a run this Manager just accepted and queued (it had no
// room when Start began; see Start for the run claimed at once), in this
// process, when it works runs and has room now: the run starts without
// waiting for River to hand its job to a worker. River keeps the job all
// the same: if another worker fetches it first, one of the two claims the
// run and the other finds it taken; if this process dies, the run is
// taken over as any.
func (m *Manager) runHere(job runJob, jobID int64) {
	slot := m.takeSlot()
	if slot == nil {
		return
	}
	go func() {
		defer slot.free()
		if err := m.work(slot.ctx, job, jobID); err != nil && slot.ctx.Err() == nil {
			m.log.Warn("runs: a run begun here failed to start; River will hand it to a worker", "run", job.Run, "error", err)
		}
	}()
}

// A slot is room for one more run among those this Manager executes,
// taken while it works and does not drain.
type slot struct {
	m   *Manager
	ctx context.Context // the context of the runs begun here
}

// takeSlot takes a slot, or returns nil when the Manager does not work
// runs, drains, or has no room.
func (m *Manager) takeSlot() *slot {
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx := m.workCtx
	if ctx == nil || m.drainCh == nil || len(m.local) >= cap(m.local) {
		return nil
	}
	select {
	case <-m.drainCh:
		return nil
	case m.local <- struct{}{}:
	default:
		return nil
	}
	m.localRuns.Add(1)
	return &slot{m: m, ctx: ctx}
}

// free gives the slot back; a nil slot does nothing.
func (s *slot) free() {
	if s == nil {
		return
	}
	<-s.m.local
	s.m.localRuns.Done()
}

// runClaimed executes c, which Start claimed for this Manager's worker, in
// slot s.
func (m *Manager) runClaimed(s *slot, c *claimed) {
	m.log.Debug("runs: run taken", "run", c.id, "thread", c.thread, "attempt", c.attempt, "worker", m.cfg.id)
	go func() {
		defer s.free()
		if err := m.execute(s.ctx, c); err != nil && s.ctx.Err() == nil {
			m.log.Warn("runs: a run failed to end", "run", c.id, "error", err)
		}
	}()
}

// errDrain stops a run whose worker is shutting down.
var errDrain = errors.New("the worker is shutting down")

// errCancelRequested stops a run that was asked to stop (Manager.Cancel,
// or a newer run's strategy).
var errCancelRequested = errors.New("cancelled")

func (m *Manager) draining() bool {
	m.mu.Lock()
	ch := m.drainCh
	m.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// activeRun is a run this process executes.
type activeRun struct {
	id, thread string
	epoch      int64
	cancel     context.CancelCauseFunc
	deadline   atomic.Int64  // local time (ns) until which the lease surely holds
	done       chan struct{} // closed when the attempt is over
	// storeFailed: the checkpointer failed during the attempt (not a
	// refusal: the store itself), so a failure of the run is the store's.
	storeFailed atomic.Bool
}

func (m *Manager) cancelAll(cause error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ar := range m.active {
		ar.cancel(cause)
	}
}

// cancelLocal stops run if this process executes it. A cancellation that
// comes while this process is taking the run (claimed, not yet running) is
// kept for a moment, and the run stops as soon as it starts.
func (m *Manager) cancelLocal(run string) {
	m.mu.Lock()
	ar := m.active[run]
	if ar == nil {
		now := time.Now()
		for id, at := range m.cancelled {
			if now.Sub(at) > time.Minute {
				delete(m.cancelled, id)
			}
		}
		m.cancelled[run] = now
	}
	m.mu.Unlock()
	if ar != nil {
		ar.cancel(errCancelRequested)
	}
}

type runWorker struct {
	river.WorkerDefaults[runJob]
	m *Manager
}

// Work executes the run the job carries.
func (w *runWorker) Work(ctx context.Context, job *river.Job[runJob]) error {
	return w.m.work(ctx, job.Args, job.ID)
}

// claimed is a run a worker took.
type claimed struct {
	id, thread, graph string
	epoch             int64
	attempt           int
	cancel            CancelAction
	req               storedRequest
	wrote             bool
	seq               int64
	// rest is the events the recorder left for the run's end to write
	// (recorder.keepLast).
	rest []*Event
}

func (m *Manager) work(ctx context.Context, args runJob, job int64) error {
	c, err := m.claim(ctx, args.Run, job)
	if err != nil || c == nil {
		return err
	}
	m.log.Debug("runs: run taken", "run", c.id, "thread", c.thread, "attempt", c.attempt, "worker", m.cfg.id)
	return m.execute(ctx, c)
}

// claim takes run's lease for the worker, unless the job is stale: the run
// ended, another job carries it now, or another worker holds it.
func (m *Manager) claim(ctx context.Context, run string, job int64) (*claimed, error) {
	var c *claimed
	err := m.tx(ctx, func(tx *sql.Tx) error {
		var (
			status, cancel, body string
			jobID, until, now    int64
			wrote                bool
			attempts             int
		)
		k := &claimed{id: run}
		if err := m.lockThreadOf(ctx, tx, run); err != nil {
			return fmt.Errorf("runs: claim run %s: %w", run, err)
		}
		err := m.queryRow(ctx, tx, `SELECT thread_id, graph, status, cancel, request, wrote, job_id, lease_until, attempts, {now}
			FROM {runs} WHERE run_id = $1{lock}`, run).
			Scan(&k.thread, &k.graph, &status, &cancel, &body, &wrote, &jobID, &until, &attempts, &now)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // deleted with its thread
		}
		if err != nil {
			return fmt.Errorf("runs: claim run %s: %w", run, err)
		}
		if Status(status).Final() || jobID != job || status == string(StatusRunning) && until > now {
			return nil
		}
		if err := json.Unmarshal([]byte(body), &k.req); err != nil {
			return fmt.Errorf("runs: claim run %s: stored request: %w", run, err)
		}
		k.cancel, k.wrote = CancelAction(cancel), wrote
		err = m.queryRow(ctx, tx, `UPDATE {runs} SET status = 'running', epoch = epoch + 1, lease_owner = $2,
			lease_until = {now} + $3, attempts = attempts + 1, updated_at = {now}
			WHERE run_id = $1 RETURNING epoch, attempts`,
			run, m.cfg.id, m.cfg.lease.Microseconds()).Scan(&k.epoch, &k.attempt)
		if err != nil {
			return fmt.Errorf("runs: claim run %s: %w", run, err)
		}
		if _, err := m.exec(ctx, tx, `UPDATE {threads} SET status = 'busy', updated_at = {now} WHERE thread_id = $1`, k.thread); err != nil {
			return fmt.Errorf("runs: claim run %s: %w", run, err)
		}
		// A run's events are its attempts': before its first, it has none.
		if attempts > 0 {
			if err := m.queryRow(ctx, tx, `SELECT COALESCE(MAX(seq), 0) FROM {events} WHERE run_id = $1`, run).Scan(&k.seq); err != nil {
				return fmt.Errorf("runs: claim run %s: %w", run, err)
			}
		}
		c = k
		return nil
	})
	return c, err
}

// fenceOf is the fence of c's writes. Its first write also records where
// the thread stood before the run (the head the run read it at), which a
// rollback returns the thread to.
func (m *Manager) fenceOf(c *claimed) *fence {
	if m.b.Dialect == DialectPostgres {
		return &fence{query: `SELECT ` + m.t.name("run_fence") + `($1, $2, $3, $4)`, args: []any{c.id, c.epoch, m.cfg.lease.Microseconds()}}
	}
	return &fence{query: m.sql(`UPDATE {runs} SET lease_until = {now} + $3,
		start_checkpoint = CASE WHEN wrote THEN start_checkpoint ELSE $4 END, wrote = true
		WHERE run_id = $1 AND epoch = $2 AND status = 'running'`),
		args: []any{c.id, c.epoch, m.cfg.lease.Microseconds()}}
}

// execute runs a claimed run to its end, or hands it back.
func (m *Manager) execute(jobCtx context.Context, c *claimed) error {
	runCtx, cancel := context.WithCancelCause(jobCtx)
	defer cancel(nil)
	ar := &activeRun{id: c.id, thread: c.thread, epoch: c.epoch, cancel: cancel, done: make(chan struct{})}
	f := m.fenceOf(c)
	f.attempt = ar
	fctx := context.WithValue(runCtx, fenceKey{}, f)
	// Writes after the run (rollback, hand-back) must not fail because the
	// run was cancelled, and keep the fence.
	after := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(fctx), 30*time.Second)
	}
	ar.deadline.Store(time.Now().Add(m.cfg.lease * 9 / 10).UnixNano())
	m.mu.Lock()
	prev := m.active[c.id]
	m.active[c.id] = ar
	_, cancelled := m.cancelled[c.id]
	delete(m.cancelled, c.id)
	m.mu.Unlock()
	if cancelled {
		// Asked while the run was being claimed: the claim read no
		// request, the notification found no run to stop.
		c.cancel = CancelInterrupt
	}
	defer func() {
		m.mu.Lock()
		if m.active[c.id] == ar {
			delete(m.active, c.id)
		}
		m.mu.Unlock()
		close(ar.done)
	}()
	if prev != nil {
		// This process still runs an earlier attempt, which lost the lease
		// to this one (its worker was presumed dead, yet lives): it is
		// fenced already; stop it, and let it end before this one starts.
		prev.cancel(ErrLeaseLost)
		<-prev.done
	}

	r, ok := m.graph(c.graph)
	if !ok {
		ctx, done := after()
		defer done()
		return m.finalize(ctx, c, outcome{status: StatusError,
			err: fmt.Errorf("graph %q is not registered on worker %s", c.graph, m.cfg.id)})
	}
	hbDone := make(chan struct{})
	hbStopped := make(chan struct{})
	go func() {
		defer close(hbStopped)
		m.heartbeat(ar, hbDone)
	}()
	rec := m.newRecorder(c.id, c.epoch, c.attempt, c.seq)
	var out outcome
	if c.cancel == "" {
		// Every model call of the run (through an LLM node, an agent or a
		// modelmw chain) records its usage here; the run's end reports it.
		ledger := modelmw.NewLedger()
		out = r.exec(modelmw.WithLedger(fctx, ledger), &execution{
			thread: c.thread, req: &c.req, continuing: c.wrote,
			gate: m.gate(ar), head: f.setHead,
			emit: func(ev graph.Event) { rec.add(encodeEvent(&ev)) },
		})
		if report := ledger.Report(); report.Calls > 0 {
			out.usage = &report
		}
	} else {
		cancel(errCancelRequested)
		out = outcome{status: StatusCancelled, err: errCancelRequested}
	}
	close(hbDone)
	<-hbStopped
	c.rest = rec.close()
	c.seq = rec.seq

	ctx, done := after()
	defer done()
	cause := context.Cause(runCtx)
	handBack := func(delay time.Duration) error {
		// The events left for the end are written before the run goes
		// back to the queue.
		if len(c.rest) > 0 {
			if err := rec.write(c.rest); err != nil {
				if errors.Is(err, ErrLeaseLost) {
					return nil
				}
				m.log.Warn("runs: recording events failed", "run", c.id, "events", len(c.rest), "error", err)
			}
		}
		return m.release(ctx, c, delay)
	}
	switch {
	case errors.Is(cause, ErrLeaseLost) || rec.fenced:
		m.log.Warn("runs: run's lease lost: the worker stopped it and stored nothing more", "run", c.id, "worker", m.cfg.id)
		return nil
	case errors.Is(out.err, errDrain) || errors.Is(cause, errDrain) || errors.Is(out.err, errLeaseExpiring) ||
		cause != nil && !errors.Is(cause, errCancelRequested) && out.status != StatusSuccess:
		// Shutting down (or the job's own context ended): hand it back.
		return handBack(0)
	case out.status == StatusError && ar.storeFailed.Load() && c.attempt < maxBusyAttempts:
		// The store failed under the run (a lost connection, say): the
		// graph did nothing wrong; try again from its last checkpoint.
		m.log.Warn("runs: the checkpointer failed during a run; it will be tried again", "run", c.id, "thread", c.thread, "attempt", c.attempt, "error", out.err)
		return handBack(time.Duration(c.attempt) * time.Second)
	case out.status == StatusError && errors.Is(out.err, graph.ErrThreadBusy) && c.attempt < maxBusyAttempts:
		// Something outside the runs layer wrote to the thread (or still
		// runs on it in this process) after the run read it: the run
		// stored nothing; it tries again, on the thread as it is then.
		m.log.Info("runs: the run's thread moved on under it; it will be tried again", "run", c.id, "thread", c.thread, "attempt", c.attempt)
		return handBack(time.Duration(c.attempt) * 100 * time.Millisecond)
	}
	return m.finalize(ctx, c, out)
}

// waitFor waits for wg, or for ctx.
func waitFor(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errLeaseExpiring stops a run whose worker could not renew its lease in
// time: it hands the run back rather than risk running a superstep
// another worker may also run.
var errLeaseExpiring = errors.New("the run's lease is about to expire")

// gate is asked by the engine before each superstep of ar's run.
func (m *Manager) gate(ar *activeRun) func(context.Context) error {
	return func(context.Context) error {
		if m.draining() {
			return errDrain
		}
		if time.Now().UnixNano() > ar.deadline.Load() {
			return errLeaseExpiring
		}
		return nil
	}
}

// heartbeat renews ar's lease every third of the lease until done closes,
// and stops the run when the lease is lost or a cancellation was asked
// for.
func (m *Manager) heartbeat(ar *activeRun, done <-chan struct{}) {
	t := time.NewTicker(m.cfg.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		start := time.Now()
		var cancel string
		ctx, stop := context.WithTimeout(context.Background(), m.cfg.lease/3)
		err := m.queryRow(ctx, nil, `UPDATE {runs} SET lease_until = {now} + $3
			WHERE run_id = $1 AND epoch = $2 AND status = 'running' RETURNING cancel`,
			ar.id, ar.epoch, m.cfg.lease.Microseconds()).Scan(&cancel)
		stop()
		switch {
		case errors.Is(err, sql.ErrNoRows):
			ar.cancel(ErrLeaseLost)
			return
		case err != nil:
			m.log.Warn("runs: renewing a lease failed", "run", ar.id, "error", err)
			continue
		}
		ar.deadline.Store(start.Add(m.cfg.lease * 9 / 10).UnixNano())
		if cancel != "" {
			ar.cancel(errCancelRequested)
		}
	}
}

// maxBusyAttempts bounds the attempts of a run that keeps finding its
// thread moved on by writers outside the runs layer.
const maxBusyAttempts = 20

// release hands c back to the queue, to start again after delay: another
// worker continues it.
func (m *Manager) release(ctx context.Context, c *claimed, delay time.Duration) error {
	err := m.tx(ctx, func(tx *sql.Tx) error {
		res, err := m.exec(ctx, tx, `UPDATE {runs} SET status = 'pending', lease_owner = '', lease_until = 0, updated_at = {now}
			WHERE run_id = $1 AND epoch = $2 AND status = 'running'`, c.id, c.epoch)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrLeaseLost
		}
		return m.enqueue(ctx, tx, runJob{Run: c.id, Thread: c.thread, Graph: c.graph}, time.Now().Add(delay).UnixMicro())
	})
	if errors.Is(err, ErrLeaseLost) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("runs: hand back run %s: %w", c.id, err)
	}
	m.log.Info("runs: run handed back", "run", c.id, "worker", m.cfg.id)
	return nil
}

// finalize records how c ended, starts the next run of its thread, and
// records the run's last event, in one transaction.
func (m *Manager) finalize(ctx context.Context, c *claimed, out outcome) error {
	msg := ""
	if out.err != nil {
		msg = out.err.Error()
	}
	rolledBack := false
	for {
		err := m.tx(ctx, func(tx *sql.Tx) error {
			if err := m.lockThread(ctx, tx, c.thread); err != nil {
				return err
			}
			if !rolledBack {
				// Most runs are not asked to stop: their end is stored
				// unless one was, without reading the run first.
				switch err := m.setEnded(ctx, tx, c, out, msg, true); {
				case err == nil:
					return m.recordEnd(ctx, tx, c, out, msg)
				case !errors.Is(err, errNotEnded):
					return err
				}
			}
			var (
				cancel string
				wrote  bool
			)
			err := m.queryRow(ctx, tx, `SELECT cancel, wrote FROM {runs} WHERE run_id = $1 AND epoch = $2 AND status = 'running'{lock}`,
				c.id, c.epoch).Scan(&cancel, &wrote)
			if errors.Is(err, sql.ErrNoRows) {
				return ErrLeaseLost
			}
			if err != nil {
				return err
			}
			switch {
			case rolledBack:
			case CancelAction(cancel) == CancelRollback && wrote:
				return errRollBackFirst
			case CancelAction(cancel) == CancelRollback:
				out, msg = outcome{status: StatusCancelled, usage: out.usage}, "cancelled before it wrote anything to its thread"
			case cancel != "" && out.status != StatusSuccess:
				out, msg = outcome{status: StatusCancelled, usage: out.usage}, "cancelled"
			}
			return m.end(ctx, tx, c, out, msg)
		})
		switch {
		case errors.Is(err, errRollBackFirst):
			if err := m.rollback(ctx, c); err != nil {
				if errors.Is(err, ErrLeaseLost) || errors.Is(err, state.ErrFenced) {
					return nil
				}
				return fmt.Errorf("runs: roll back run %s: %w", c.id, err)
			}
			rolledBack = true
			out, msg = outcome{status: StatusCancelled, usage: out.usage}, "cancelled; the thread was rolled back to where the run began"
			continue
		case errors.Is(err, ErrLeaseLost):
			return nil
		case err != nil:
			return fmt.Errorf("runs: finish run %s: %w", c.id, err)
		}
		m.hub.signal(c.id)
		return nil
	}
}

// errRollBackFirst sends finalize to roll the run back before it ends it.
var errRollBackFirst = errors.New("roll back first")

// rollback returns c's thread to where it stood before c wrote to it.
func (m *Manager) rollback(ctx context.Context, c *claimed) error {
	var start sql.NullString
	err := m.queryRow(ctx, nil, `SELECT start_checkpoint FROM {runs} WHERE run_id = $1 AND epoch = $2 AND status = 'running'`,
		c.id, c.epoch).Scan(&start)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrLeaseLost
	}
	if err != nil {
		return err
	}
	if !start.Valid {
		return errors.New("where the thread stood before the run is not recorded")
	}
	r, ok := m.graph(c.graph)
	if !ok {
		return fmt.Errorf("graph %q is not registered", c.graph)
	}
	return r.rollback(ctx, c.thread, start.String)
}

// The statements of setEnded.
const (
	setEndedQuery = `UPDATE {runs} SET status = $3, error = $4, interrupts = $5, cancel = '',
		ended_at = {now}, updated_at = {now}, lease_until = 0
		WHERE run_id = $1 AND epoch = $2 AND status = 'running'`
	setEndedUncancelledQuery = setEndedQuery + ` AND cancel = ''`
)

// errNotEnded: setEnded found no run to end under its conditions.
var errNotEnded = errors.New("the run was not ended")

// end records, in tx, that c ended with out: its status, its last event,
// and its thread's next run.
func (m *Manager) end(ctx context.Context, tx *sql.Tx, c *claimed, out outcome, msg string) error {
	if err := m.setEnded(ctx, tx, c, out, msg, false); err != nil {
		if errors.Is(err, errNotEnded) {
			return ErrLeaseLost
		}
		return err
	}
	return m.recordEnd(ctx, tx, c, out, msg)
}

// setEnded stores, in tx, c's status after out, if c's worker still holds
// it, and, with uncancelled, if no cancellation was asked for; else it
// changes nothing and returns errNotEnded.
func (m *Manager) setEnded(ctx context.Context, tx *sql.Tx, c *claimed, out outcome, msg string, uncancelled bool) error {
	ints := ""
	if len(out.interrupts) > 0 {
		b, err := json.Marshal(out.interrupts)
		if err != nil {
			return err
		}
		ints = string(b)
	}
	q := setEndedQuery
	if uncancelled {
		q = setEndedUncancelledQuery
	}
	res, err := m.exec(ctx, tx, q, c.id, c.epoch, string(out.status), msg, ints)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errNotEnded
	}
	return nil
}

// recordEnd records, in tx, the last event of c, which setEnded ended, and
// hands its thread to its next run.
func (m *Manager) recordEnd(ctx context.Context, tx *sql.Tx, c *claimed, out outcome, msg string) error {
	end := Event{Seq: c.seq + 1, Run: c.id, Attempt: c.attempt, Kind: KindRunEnd, Time: time.Now(),
		Status: out.status, Error: msg, Interrupts: out.interrupts, Usage: out.usage}
	if out.status == StatusSuccess {
		end.State = out.state
	}
	seqs, datas := make([]int64, 0, len(c.rest)+1), make([][]byte, 0, len(c.rest)+1)
	for _, ev := range c.rest {
		data, _ := json.Marshal(ev)
		seqs, datas = append(seqs, ev.Seq), append(datas, data)
	}
	data, _ := json.Marshal(&end)
	if err := insertEvents(ctx, tx, m, c.id, append(seqs, end.Seq), append(datas, data)); err != nil {
		return err
	}
	if err := m.advance(ctx, tx, c.thread, out.status); err != nil {
		return err
	}
	return m.notifyTx(ctx, tx, "e", c.id)
}

// advance hands thread to its next pending run, or leaves it idle with the
// status its last run gives it. The caller holds the thread's lock
// (lockThread): a Start that queues a run behind the ending one holds it
// until it commits, and the update below must see that run. Waiting inside
// the update is not enough: PostgreSQL would re-check only the thread's
// row after the wait, and judge "no run waiting" by what the statement saw
// before it.
func (m *Manager) advance(ctx context.Context, tx *sql.Tx, thread string, last Status) error {
	status := ThreadIdle
	switch last {
	case StatusError:
		status = ThreadError
	case StatusInterrupted:
		status = ThreadInterrupted
	}
	// Most threads have no run waiting: one statement leaves them idle.
	res, err := m.exec(ctx, tx, `UPDATE {threads} SET active_run = '', status = $2, updated_at = {now}
		WHERE thread_id = $1 AND NOT EXISTS (SELECT 1 FROM {runs} WHERE thread_id = $1 AND status = 'pending')`, thread, string(status))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var (
		next, graphName string
		startAt         int64
	)
	err = m.queryRow(ctx, tx, `SELECT run_id, graph, start_at FROM {runs} WHERE thread_id = $1 AND status = 'pending'
		ORDER BY seq LIMIT 1`, thread).Scan(&next, &graphName, &startAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil // the thread is gone
	case err != nil:
		return err
	}
	if err := m.enqueue(ctx, tx, runJob{Run: next, Thread: thread, Graph: graphName}, startAt); err != nil {
		return err
	}
	_, err = m.exec(ctx, tx, `UPDATE {threads} SET active_run = $2, status = 'busy', updated_at = {now} WHERE thread_id = $1`, thread, next)
	return err
}

// lockThread takes, in tx, the lock of thread's row on PostgreSQL, where
// every transaction that writes a thread's row and one of its runs' rows
// locks the thread first (Start, Cancel, a run's claim and its end): the
// other order would deadlock against a Start that cancels the thread's
// active run. SQLite's write transactions hold the whole database.
func (m *Manager) lockThread(ctx context.Context, tx *sql.Tx, thread string) error {
	if m.b.Dialect != dialectPostgres {
		return nil
	}
	_, err := m.exec(ctx, tx, `SELECT 1 FROM {threads} WHERE thread_id = $1{lock}`, thread)
	return err
}

// lockThreadOf is lockThread for the thread of run.
func (m *Manager) lockThreadOf(ctx context.Context, tx *sql.Tx, run string) error {
	if m.b.Dialect != dialectPostgres {
		return nil
	}
	_, err := m.exec(ctx, tx, `SELECT 1 FROM {threads} WHERE thread_id = (SELECT thread_id FROM {runs} WHERE run_id = $1){lock}`, run)
	return err
}

// reapLoop takes over the runs of dead workers: runs whose lease expired.
func (m *Manager) reapLoop(ctx context.Context) {
	for {
		if pause.Sleep(ctx, m.cfg.lease/4+rand.N(m.cfg.lease/4)) != nil {
			return
		}
		if err := m.reap(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("runs: taking over expired runs failed", "error", err)
		}
	}
}

// reap re-queues the runs whose leases expired, fencing their old holders
// (a new epoch) and cancelling their River jobs.
func (m *Manager) reap(ctx context.Context) error {
	var taken []string
	err := m.tx(ctx, func(tx *sql.Tx) error {
		rows, err := m.query(ctx, tx, `SELECT run_id, thread_id, job_id FROM {runs} WHERE status = 'running' AND lease_until < {now}
			ORDER BY lease_until LIMIT 20{skiplocked}`)
		if err != nil {
			return err
		}
		type expired struct {
			run, thread string
			job         int64
		}
		var list []expired
		for rows.Next() {
			var e expired
			if err := rows.Scan(&e.run, &e.thread, &e.job); err != nil {
				rows.Close()
				return err
			}
			list = append(list, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, e := range list {
			res, err := m.exec(ctx, tx, `UPDATE {runs} SET status = 'pending', epoch = epoch + 1, lease_owner = '', lease_until = 0,
				updated_at = {now} WHERE run_id = $1 AND status = 'running' AND lease_until < {now}`, e.run)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			if err := m.enqueue(ctx, tx, runJob{Run: e.run}, 0); err != nil {
				return err
			}
			if err := m.queue.cancel(ctx, tx, e.job); err != nil {
				return fmt.Errorf("cancel the job of run %s: %w", e.run, err)
			}
			taken = append(taken, e.run+" "+e.thread)
		}
		return nil
	})
	for _, t := range taken {
		run, thread, _ := strings.Cut(t, " ")
		m.log.Info("runs: took over a run whose worker stopped renewing its lease; it will be tried again", "run", run, "thread", thread, "worker", m.cfg.id)
	}
	if err != nil {
		return err
	}
	return m.reapFetched(ctx)
}

// reapFetched re-queues the pending runs whose River job a worker fetched
// and never began: the worker died between River's fetch and its claim on
// the run (the job stays running in River, which rescues no job of ours).
func (m *Manager) reapFetched(ctx context.Context) error {
	var requeued []string
	err := m.tx(ctx, func(tx *sql.Tx) error {
		rows, err := m.query(ctx, tx, `SELECT run_id, job_id FROM {runs} WHERE status = 'pending' AND job_id <> 0
			AND updated_at < {now} - $1 ORDER BY updated_at LIMIT 20{skiplocked}`, m.cfg.lease.Microseconds())
		if err != nil {
			return err
		}
		type pending struct {
			run string
			job int64
		}
		var list []pending
		for rows.Next() {
			var p pending
			if err := rows.Scan(&p.run, &p.job); err != nil {
				rows.Close()
				return err
			}
			list = append(list, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, p := range list {
			stuck, err := m.queue.lost(ctx, tx, p.job, m.cfg.lease)
			if err != nil {
				return err
			}
			if !stuck {
				continue
			}
			res, err := m.exec(ctx, tx, `UPDATE {runs} SET updated_at = {now} WHERE run_id = $1 AND status = 'pending' AND job_id = $2`, p.run, p.job)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			if err := m.enqueue(ctx, tx, runJob{Run: p.run}, 0); err != nil {
				return err
			}
			if err := m.queue.cancel(ctx, tx, p.job); err != nil {
				return fmt.Errorf("cancel the job of run %s: %w", p.run, err)
			}
			requeued = append(requeued, p.run)
		}
		return nil
	})
	for _, run := range requeued {
		m.log.Info("runs: re-queued a run whose job was fetched by a worker that never began it", "run", run, "worker", m.cfg.id)
	}
	return err
}

// sweepLoop deletes the events of runs that ended longer ago than the
// retention.
func (m *Manager) sweepLoop(ctx context.Context) {
	every := min(max(m.cfg.retention/10, time.Second), 5*time.Minute)
	for {
		if pause.Sleep(ctx, every) != nil {
			return
		}
		_, err := m.exec(ctx, nil, `DELETE FROM {events} WHERE run_id IN (
			SELECT run_id FROM {runs} WHERE ended_at > 0 AND ended_at < {now} - $1 LIMIT 500)`, m.cfg.retention.Microseconds())
		if err != nil && ctx.Err() == nil {
			m.log.Warn("runs: sweeping old events failed", "error", err)
		}
	}
}

// follow starts following the backend's notifications, once, and waits
// (up to a second, or ctx) until they are in place, so that what happens
// next is not missed. Close stops it.
func (m *Manager) follow(ctx context.Context) {
	if m.b.Listen == nil {
		return
	}
	m.listenOnce.Do(func() {
		lctx, cancel := context.WithCancel(context.Background())
		m.stopListen, m.listening, m.listenEnded = cancel, make(chan struct{}), make(chan struct{})
		go func() {
			defer close(m.listenEnded)
			m.listen(lctx)
		}()
	})
	if m.listening == nil {
		return // closed
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-m.listening:
	case <-ctx.Done():
	case <-t.C:
	}
}

// following reports whether notifications are in place.
func (m *Manager) following() bool {
	if m.listening == nil {
		return false
	}
	select {
	case <-m.listening:
		return true
	default:
		return false
	}
}

// listen follows the backend's notifications until ctx ends. An empty
// payload says the backend (re)started listening: notifications sent
// before may have been missed, so every waiter looks again.
func (m *Manager) listen(ctx context.Context) {
	var ready sync.Once
	for ctx.Err() == nil {
		err := m.b.Listen(ctx, m.t.channel(), func(payload string) {
			if payload == "" {
				ready.Do(func() { close(m.listening) })
				m.hub.signalAll()
				return
			}
			if len(payload) < 3 || payload[1] != ':' {
				return
			}
			id := payload[2:]
			m.hub.signal(id)
			if payload[0] == 'c' {
				m.cancelLocal(id)
			}
		})
		if err != nil && ctx.Err() == nil {
			m.log.Warn("runs: listening for notifications failed; retrying", "error", err)
			_ = pause.Sleep(ctx, time.Second)
		}
	}
}
