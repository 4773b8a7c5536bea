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
	statesqlite "github.com/trellis-go/trellis/state/sqlite"
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

// database is one in-memory database and the queue of its runs.
type database struct {
	db    *sql.DB
	saver *statesqlite.Saver
	queue *runs.LocalQueue
	users int // Managers open on it
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
	params.Add("_pragma", "foreign_keys(1)")
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
	saver, err := statesqlite.New(db, statesqlite.WithWriteGuard(runs.FenceStatement))
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("runs/memory: %w", err)
	}
	return &database{db: db, saver: saver, queue: runs.NewLocalQueue()}, nil
}

func (d *database) close() error { return errors.Join(d.saver.Close(), d.db.Close()) }
