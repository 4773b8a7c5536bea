package runs

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures a Manager.
type Option func(*config)

type config struct {
	queue        string
	lease        time.Duration
	concurrency  int
	cooldown     time.Duration
	poll         time.Duration
	drain        Drain
	drainTimeout time.Duration
	retention    time.Duration
	cronTick     time.Duration
	logger       *slog.Logger
	id           string
}

func defaultConfig(dialect string) config {
	c := config{
		queue:        "trellis_runs",
		lease:        30 * time.Second,
		concurrency:  100,
		cooldown:     time.Millisecond,
		poll:         100 * time.Millisecond,
		drainTimeout: 20 * time.Second,
		retention:    time.Hour,
		cronTick:     5 * time.Second,
	}
	if dialect == dialectSQLite {
		// Without notifications, workers and streams find new work by
		// polling.
		c.poll = 50 * time.Millisecond
	}
	return c
}

func (c *config) validate() error {
	switch {
	case c.lease < 100*time.Millisecond:
		return fmt.Errorf("runs: lease %v is under 100ms", c.lease)
	case c.concurrency < 1:
		return fmt.Errorf("runs: concurrency %d is under 1", c.concurrency)
	case c.poll <= 0:
		return fmt.Errorf("runs: poll interval %v is not positive", c.poll)
	case c.cooldown < 0:
		return fmt.Errorf("runs: fetch cooldown %v is negative", c.cooldown)
	case c.drainTimeout < 0:
		return fmt.Errorf("runs: drain timeout %v is negative", c.drainTimeout)
	case c.queue == "":
		return fmt.Errorf("runs: the queue has no name")
	}
	return nil
}

// WithQueue names the River queue the Manager's runs go through
// ("trellis_runs" by default). Managers that share a database and a queue
// share their runs.
func WithQueue(name string) Option { return func(c *config) { c.queue = name } }

// WithLease sets how long a worker holds a run without renewing its lease
// (30 seconds by default). A worker renews it every third of that time and
// with every checkpoint; a worker that dies leaves its runs to be taken
// over once their leases expire, so the lease is also how long a run waits
// after its worker is killed.
func WithLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithConcurrency sets how many runs one Manager works at once (100 by
// default). Runs mostly wait for models and tools, so the figure can be
// high.
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithFetch sets River's fetch cooldown (the least time between two
// fetches of new runs; 1ms by default) and poll interval (how often
// workers look for runs without being told of them; 100ms by default on
// PostgreSQL, 50ms on SQLite, which has no notifications). See
// docs/runs.md for the measurements behind the defaults.
func WithFetch(cooldown, poll time.Duration) Option {
	return func(c *config) { c.cooldown, c.poll = cooldown, poll }
}

// Drain says what a worker does with its runs when Work's context ends.
type Drain int

const (
	// DrainAtBoundary lets each run finish the superstep it is in, then
	// hands it back to the queue, where another worker continues it from
	// that superstep's checkpoint. Supersteps still running after the
	// drain timeout are cancelled. It is the default.
	DrainAtBoundary Drain = iota
	// DrainCancel cancels the supersteps in progress at once and hands the
	// runs back; another worker runs those supersteps again (tasks that
	// had finished keep their saved outputs).
	DrainCancel
)

// String names the drain mode.
func (d Drain) String() string {
	switch d {
	case DrainAtBoundary:
		return "at-boundary"
	case DrainCancel:
		return "cancel"
	}
	return fmt.Sprintf("Drain(%d)", int(d))
}

// WithDrain sets how a worker hands its runs back when Work's context ends
// (DrainAtBoundary by default) and how long it waits for supersteps to
// finish before cancelling them (20 seconds by default, inside the 30
// seconds most orchestrators give a process between SIGTERM and SIGKILL).
func WithDrain(d Drain, timeout time.Duration) Option {
	return func(c *config) { c.drain, c.drainTimeout = d, timeout }
}

// WithEventRetention sets how long a run's events are kept for streams
// after the run ends (one hour by default).
func WithEventRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithCronTick sets how often scheduled runs (Manager.Schedule) are looked
// for (every 5 seconds by default): a scheduled run starts at most this
// late.
func WithCronTick(d time.Duration) Option { return func(c *config) { c.cronTick = d } }

// WithLogger logs the Manager's work (runs taken, handed back, taken over,
// failures of its own) to l.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithWorkerID names the Manager as a worker (in the runs it holds and its
// logs); a random ID by default.
func WithWorkerID(id string) Option { return func(c *config) { c.id = id } }
