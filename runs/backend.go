package runs

import (
	"context"
	"database/sql"
	"sync"

	"github.com/riverqueue/river/riverdriver"

	"github.com/trellis-go/trellis/state"
)

// The databases the runs layer speaks (Backend.Dialect).
const (
	DialectPostgres = dialectPostgres
	DialectSQLite   = dialectSQLite
)

// A Backend is the database a Manager keeps runs in: runs/postgres and
// runs/sqlite make one. It is exported so that those packages can; an
// application opens a Manager through them.
type Backend struct {
	// Dialect is DialectPostgres or DialectSQLite.
	Dialect string
	// DB reaches the database; the runs layer's tables live in it, beside
	// River's and the checkpoints.
	DB *sql.DB
	// Driver is River's driver over DB. It is not needed with Local.
	Driver riverdriver.Driver[*sql.Tx]
	// Local, when set, queues runs in the process's memory instead of in
	// River's tables: for a database that no other process reaches, such
	// as runs/memory's. The Managers opened on one such database share
	// one LocalQueue.
	Local *LocalQueue
	// Schema is the PostgreSQL schema of the tables, empty for the
	// search_path's. SQLite ignores it.
	Schema string
	// Prefix starts the names of the runs layer's tables ("trellis_"
	// when empty).
	Prefix string
	// Saver stores the checkpoints of the graphs the Manager runs. It must
	// run FenceStatement's statement first in the transaction of each of
	// its writes, so that a worker that lost a run's lease stores nothing.
	Saver state.ConditionalSaver
	// Listen, when set, delivers the payloads of notifications sent on
	// channel until ctx ends (PostgreSQL's LISTEN), so that streams and
	// cancellations reach other processes at once; without it they are
	// polled for. It delivers an empty payload each time it has begun to
	// listen (at first, and after a reconnection), since notifications
	// sent before may have been missed.
	Listen func(ctx context.Context, channel string, deliver func(payload string)) error
	// Close releases what the backend opened, when the Manager is closed.
	Close func() error
}

// fenceKey is the context key of a worker's fence.
type fenceKey struct{}

// fence is what a worker's writes are conditional on: that it still holds
// the lease of run at epoch.
type fence struct {
	query   string
	args    []any
	attempt *activeRun // the attempt whose writes these are
	mu      sync.Mutex
	head    *string // the thread's head when the run read it; nil: not known
}

// setHead records the checkpoint the run read its thread at, before its
// first write.
func (f *fence) setHead(id string) {
	f.mu.Lock()
	f.head = &id
	f.mu.Unlock()
}

// FenceStatement returns the statement a Backend's saver runs first in the
// transaction of each write it makes with ctx, and its arguments; ok is
// false when ctx is not a worker's (nothing to fence). On PostgreSQL the
// statement fails when the worker no longer holds the run's lease, which
// rolls the whole transaction back; on SQLite it is an UPDATE that changes
// no row then, and the saver must refuse the write (with an error wrapping
// ErrLeaseLost).
func FenceStatement(ctx context.Context) (query string, args []any, ok bool) {
	f, ok := ctx.Value(fenceKey{}).(*fence)
	if !ok {
		return "", nil, false
	}
	f.mu.Lock()
	var head any // NULL: not known
	if f.head != nil {
		head = *f.head
	}
	f.mu.Unlock()
	return f.query, append(f.args[:len(f.args):len(f.args)], head), true
}
