package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/trellis-go/trellis/runs"
	statememory "github.com/trellis-go/trellis/state/memory"
)

// Option configures the Manager Open makes.
type Option func(*config)

type config struct {
	name string
	runs []runs.Option
}

// WithName shares the database among the Managers opened with the same
// name in this process; it lives until the last of them is closed. Without
// it each Manager has a database of its own.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithRuns passes options to the Manager (runs.WithLease and the others).
func WithRuns(opts ...runs.Option) Option {
	return func(c *config) { c.runs = append(c.runs, opts...) }
}

// database is one in-memory database, the checkpoints of its threads and
// the queue of its runs.
type database struct {
	db    *sql.DB
	saver *statememory.Saver
	queue *runs.LocalQueue
	users int // Managers open on it

	// fences holds the fence statements, prepared (query → *sql.Stmt).
	fences sync.Map
}

// named holds the databases opened WithName, while a Manager uses them.
var named = struct {
	sync.Mutex
	dbs map[string]*database
}{dbs: map[string]*database{}}

// Open returns a Manager that keeps its runs, their queue and the
// checkpoints of its graphs in the memory of the process; Close releases
// them.
func Open(ctx context.Context, opts ...Option) (*runs.Manager, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	d, release, err := acquire(cfg.name)
	if err != nil {
		return nil, err
	}
	b := runs.Backend{
		Dialect: runs.DialectSQLite,
		DB:      d.db,
		Local:   d.queue,
		Saver:   d.saver,
		Close:   release,
	}
	// The queue is in the process: workers take a run when it is queued,
	// and the poll interval only bounds how late a stream of another
	// Manager on the database sees what this one recorded.
	m, err := runs.New(ctx, b, append([]runs.Option{runs.WithFetch(0, 10*time.Millisecond)}, cfg.runs...)...)
	if err != nil {
		_ = release()
		return nil, err
	}
	return m, nil
}

// acquire opens the database named name (a new one when name is empty, or
// no Manager uses it), and returns the function that gives it up.
func acquire(name string) (*database, func() error, error) {
	if name == "" {
		d, err := open()
		if err != nil {
			return nil, nil, err
		}
		return d, d.close, nil
	}
	named.Lock()
	defer named.Unlock()
	d := named.dbs[name]
	if d == nil {
		var err error
		if d, err = open(); err != nil {
			return nil, nil, err
		}
		named.dbs[name] = d
	}
	d.users++
	var once sync.Once
	return d, func() error {
		var err error
		once.Do(func() {
			named.Lock()
			defer named.Unlock()
			d.users--
			if d.users == 0 {
				delete(named.dbs, name)
				err = d.close()
			}
		})
		return err
	}, nil
}

// open opens a new in-memory database.
func open() (*database, error) {
	params := url.Values{}
	params.Set("_txlock", "immediate")
	// No foreign keys: the runs layer deletes a thread's runs and events
	// itself, and SQLite's checks of the keys (a look-up in the parent at
	// each insert, and the cascades that build a temporary table at each
	// delete) are CPU time a run pays for nothing here.
	params.Add("_pragma", "foreign_keys(0)")
	db, err := sql.Open("sqlite", ":memory:?"+params.Encode())
	if err != nil {
		return nil, fmt.Errorf("runs/memory: open: %w", err)
	}
	// One connection: an in-memory database lives as long as the
	// connection that made it, and is seen by it alone.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	d := &database{db: db, queue: runs.NewLocalQueue()}
	// The checkpoints are Go values (state/memory), not rows: storing one
	// in SQLite (a transaction, the fence, the insert) was about a third of
	// a run's CPU time. Only the fence runs on the database, while the
	// store holds its lock.
	d.saver = statememory.New(statememory.WithWriteGuard(d.fence))
	return d, nil
}

// fence runs the runs layer's fence statement for a checkpoint write made
// with ctx (when ctx is a worker's), on its own: the write is stored only
// if the statement changed a row, and the checkpoint store's lock keeps
// every other read and write of the checkpoints from coming between the
// two, which makes them one step, as a transaction makes them on SQLite.
func (d *database) fence(ctx context.Context) error {
	q, args, ok := runs.FenceStatement(ctx)
	if !ok {
		return nil
	}
	stmt, err := d.fenceStmt(ctx, q)
	if err != nil {
		return err
	}
	res, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return runs.ErrLeaseLost
	}
	return nil
}

// fenceStmt returns the fence statement q, prepared once.
func (d *database) fenceStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s, ok := d.fences.Load(q); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := d.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if prev, loaded := d.fences.LoadOrStore(q, s); loaded {
		_ = s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

func (d *database) close() error {
	var errs []error
	d.fences.Range(func(k, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		d.fences.Delete(k)
		return true
	})
	return errors.Join(append(errs, d.db.Close())...)
}
