package runs

import (
	"container/heap"
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// A jobQueue hands the jobs of runs to workers: River on a database that
// several processes share, or a LocalQueue when one process alone reaches
// the database.
type jobQueue interface {
	// insert queues job in tx, to start no sooner than at (zero: now), and
	// returns its ID.
	insert(ctx context.Context, tx *sql.Tx, job runJob, at time.Time) (int64, error)
	// cancel drops job id in tx, if it is still queued.
	cancel(ctx context.Context, tx *sql.Tx, id int64) error
	// lost says whether job id, carrying a pending run, will never reach
	// a worker: it is gone or over, or a worker fetched it longer than
	// stale ago and never began it.
	lost(ctx context.Context, tx *sql.Tx, id int64, stale time.Duration) (bool, error)
}

// riverQueue is River's queue.
type riverQueue struct {
	m *Manager
}

func (q riverQueue) insert(ctx context.Context, tx *sql.Tx, job runJob, at time.Time) (int64, error) {
	opts := &river.InsertOpts{Queue: q.m.cfg.queue, MaxAttempts: 100}
	if !at.IsZero() && time.Until(at) > 0 {
		opts.ScheduledAt = at
	}
	res, err := q.m.river.InsertTx(ctx, tx, job, opts)
	if err != nil {
		return 0, err
	}
	return res.Job.ID, nil
}

func (q riverQueue) cancel(ctx context.Context, tx *sql.Tx, id int64) error {
	if _, err := q.m.river.JobCancelTx(ctx, tx, id); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return err
	}
	return nil
}

func (q riverQueue) lost(ctx context.Context, tx *sql.Tx, id int64, stale time.Duration) (bool, error) {
	job, err := q.m.river.JobGetTx(ctx, tx, id)
	if errors.Is(err, rivertype.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if job.State == rivertype.JobStateRunning && job.AttemptedAt != nil && time.Since(*job.AttemptedAt) > stale {
		return true, nil
	}
	return job.State == rivertype.JobStateCompleted || job.State == rivertype.JobStateCancelled || job.State == rivertype.JobStateDiscarded, nil
}

// A LocalQueue is a queue of runs kept in the memory of the process: the
// queue of a database that no other process reaches (runs/memory), where
// River's tables and polling would be pure cost. The Managers opened on
// one such database share one LocalQueue (Backend.Local), and each that
// works takes the runs due from it as soon as they are queued.
//
// A job enters the queue when the transaction that queued it commits, and
// leaves it when a worker takes it; a run handed back is queued again.
// Nothing of the queue survives the process, as nothing of its database
// does.
type LocalQueue struct {
	mu      sync.Mutex
	next    int64
	jobs    localHeap
	byID    map[int64]*localJob
	changed chan struct{} // closed and replaced when a job is queued
	// pending holds the jobs queued in transactions not yet committed.
	pending map[*sql.Tx][]*localJob
}

// NewLocalQueue returns an empty queue.
func NewLocalQueue() *LocalQueue {
	return &LocalQueue{byID: map[int64]*localJob{}, changed: make(chan struct{}), pending: map[*sql.Tx][]*localJob{}}
}

// localJob is a job of a LocalQueue.
type localJob struct {
	id       int64
	job      runJob
	at       time.Time
	attempts int
	index    int // in the heap; -1 once taken or dropped
}

// localHeap orders jobs by their start time, then by their IDs.
type localHeap []*localJob

func (h localHeap) Len() int { return len(h) }
func (h localHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].id < h[j].id
}
func (h localHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *localHeap) Push(x any) {
	j := x.(*localJob)
	j.index = len(*h)
	*h = append(*h, j)
}
func (h *localHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	j.index = -1
	return j
}

// queue is q as a Manager's jobQueue.
func (q *LocalQueue) queue() jobQueue { return localQueue{q} }

type localQueue struct{ q *LocalQueue }

func (l localQueue) insert(_ context.Context, tx *sql.Tx, job runJob, at time.Time) (int64, error) {
	q := l.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next++
	j := &localJob{id: q.next, job: job, at: at, index: -1}
	q.pending[tx] = append(q.pending[tx], j)
	return j.id, nil
}

func (l localQueue) cancel(_ context.Context, tx *sql.Tx, id int64) error {
	q := l.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if j := q.byID[id]; j != nil {
		heap.Remove(&q.jobs, j.index)
		delete(q.byID, id)
		return nil
	}
	list := q.pending[tx]
	for i, j := range list {
		if j.id == id {
			q.pending[tx] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	return nil
}

// lost: a job of a LocalQueue is taken by the worker that begins it, in
// the same process, so none is fetched and forgotten.
func (localQueue) lost(context.Context, *sql.Tx, int64, time.Duration) (bool, error) {
	return false, nil
}

// settle publishes the jobs queued in tx when it committed, and forgets
// them when it did not.
func (q *LocalQueue) settle(tx *sql.Tx, committed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	list, ok := q.pending[tx]
	if !ok {
		return
	}
	delete(q.pending, tx)
	if !committed || len(list) == 0 {
		return
	}
	for _, j := range list {
		heap.Push(&q.jobs, j)
		q.byID[j.id] = j
	}
	close(q.changed)
	q.changed = make(chan struct{})
}

// retry queues j again after a delay that grows with its attempts; a job
// whose worker stopped before it could begin (failed is false) is queued
// again as it was.
func (q *LocalQueue) retry(j *localJob, failed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if failed {
		j.attempts++
		if j.attempts >= 100 {
			return // as River discards a job after its attempts
		}
		j.at = time.Now().Add(min(time.Duration(j.attempts)*time.Second, 30*time.Second))
	}
	heap.Push(&q.jobs, j)
	q.byID[j.id] = j
	close(q.changed)
	q.changed = make(chan struct{})
}

// take removes and returns the first job due, or returns how long until
// one is and a channel closed when a job is queued.
func (q *LocalQueue) take(now time.Time) (*localJob, time.Duration, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.jobs) == 0 {
		return nil, time.Hour, q.changed
	}
	first := q.jobs[0]
	if d := first.at.Sub(now); d > 0 {
		return nil, d, q.changed
	}
	heap.Pop(&q.jobs)
	delete(q.byID, first.id)
	return first, 0, nil
}

// dispatch takes the jobs of the Manager's LocalQueue as they come due,
// each in a slot of its concurrency, until the Manager drains or ctx ends.
func (m *Manager) dispatch(ctx context.Context) {
	q := m.b.Local
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select { // a slot first, so that a job waits in the queue, not here
		case m.local <- struct{}{}:
		case <-m.drainCh:
			return
		case <-ctx.Done():
			return
		}
		var j *localJob
		for j == nil {
			var (
				d       time.Duration
				changed <-chan struct{}
			)
			j, d, changed = q.take(time.Now())
			if j != nil {
				break
			}
			timer.Reset(d)
			select {
			case <-changed:
			case <-timer.C:
			case <-m.drainCh:
				<-m.local
				return
			case <-ctx.Done():
				<-m.local
				return
			}
			timer.Stop()
		}
		m.localRuns.Add(1)
		go func() {
			defer m.localRuns.Done()
			defer func() { <-m.local }()
			if err := m.work(ctx, j.job, j.id); err != nil {
				// The run was not begun: another worker, or this one's
				// next Work, tries again.
				if ctx.Err() == nil {
					m.log.Warn("runs: a run failed to start; it will be tried again", "run", j.job.Run, "error", err)
				}
				q.retry(j, ctx.Err() == nil)
			}
		}()
	}
}

// cronLoop starts the schedules that are due every cron tick, while the
// Manager works on a LocalQueue.
func (m *Manager) cronLoop(ctx context.Context) {
	t := time.NewTicker(m.cfg.cronTick)
	defer t.Stop()
	for {
		if err := m.fireCrons(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("runs: starting the schedules due failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
