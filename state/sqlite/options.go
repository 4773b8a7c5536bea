package sqlite

import (
	"fmt"
	"time"

	"github.com/trellis-go/trellis/state"
)

// Option configures a store opened with Open.
type Option func(*config)

type config struct {
	busyTimeout time.Duration
	synchronous Synchronous
	guard       state.WriteGuard
}

func defaultConfig() config {
	return config{busyTimeout: 5 * time.Second, synchronous: SynchronousNormal}
}

func (c config) validate() error {
	if c.busyTimeout < 0 {
		return fmt.Errorf("busy timeout must not be negative, got %v", c.busyTimeout)
	}
	if c.synchronous != SynchronousNormal && c.synchronous != SynchronousFull {
		return fmt.Errorf("unknown synchronous mode %d", int(c.synchronous))
	}
	return nil
}

// WithBusyTimeout sets how long a connection waits for a lock held by another
// connection or process before giving up with "database is locked". The
// default is 5 seconds; it is rounded down to whole milliseconds.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = d }
}

// Synchronous is how hard SQLite works to get a commit onto the disk.
type Synchronous int

const (
	// SynchronousNormal (the default) syncs the write-ahead log only at
	// checkpoints. A commit that returned survives the process being
	// killed; a power cut or operating system crash may roll back the last
	// few commits, never corrupting the file.
	SynchronousNormal Synchronous = iota
	// SynchronousFull syncs the write-ahead log at every commit: a commit
	// that returned survives a power cut too, at the cost of an fsync per
	// Put, PutWrites, DeleteThread and Prune.
	SynchronousFull
)

// String returns the name SQLite gives the mode.
func (m Synchronous) String() string {
	switch m {
	case SynchronousNormal:
		return "NORMAL"
	case SynchronousFull:
		return "FULL"
	}
	return fmt.Sprintf("Synchronous(%d)", int(m))
}

// WithSynchronous sets the synchronous mode (see Synchronous). The default
// is SynchronousNormal.
func WithSynchronous(mode Synchronous) Option {
	return func(c *config) { c.synchronous = mode }
}

// WithWriteGuard makes every write of the store conditional: the guard's
// statement, when it gives one, runs first in the write's transaction, and
// when it fails or changes no row, nothing is stored and the write fails
// with an error wrapping state.ErrFenced. The runs layer (package runs)
// fences its workers' checkpoints this way. Unlike the other options, it
// applies to stores made with New too.
func WithWriteGuard(g state.WriteGuard) Option {
	return func(c *config) { c.guard = g }
}
