// Package runs executes graph runs as jobs that outlive processes and
// machines: any number of workers, in any number of processes, share the
// runs of one database; a run started on one machine is executed by a
// worker on another and streamed from a third; a worker that is shut down
// hands its runs back at a superstep boundary, and one that dies has them
// taken over when its lease expires.
//
// The queue is River (a job queue on PostgreSQL or SQLite); beside River's
// tables and the checkpoints, the runs layer keeps a table of runs and one
// of threads, in the same database, so that a thread can be found by its
// metadata and status, a busy thread's next run waits its turn, and a
// run's events can be streamed from any replica. Open a Manager with
// runs/postgres or runs/sqlite, or, for one process with no database and
// no durability, runs/memory (whose runs are queued in the process, a
// LocalQueue, instead of River):
//
//	m, err := postgres.Open(ctx, dsn)
//	g, err := builder.Compile(graph.WithCheckpointer(m.Saver()))
//	err = m.Register(runs.Graph(g))
//	go m.Work(ctx)                                   // in each worker
//	r, err := m.Start(ctx, runs.Request{Graph: "agent", Thread: id, Input: in})
//	for ev, err := range m.Stream(ctx, r.ID, 0) { ... }
//
// # Runs, leases and fencing
//
// A run is one job. The worker that takes it holds its lease, renewed
// while the run goes on and with every checkpoint, and each of its writes
// (checkpoints, pending writes, events, the run's end) is fenced: it
// commits only while the worker still holds the lease, in the same
// transaction. A worker presumed dead (its lease expired) and later back
// commits nothing and starts no further superstep. A node that had
// started when its worker died runs again on the next worker: side
// effects are at least once, and a tool call's ID, stable across attempts,
// is the key that makes them idempotent.
//
// # Busy threads
//
// A thread runs one run at a time. A run started on a busy thread follows
// its Strategy: it is refused, queued behind the active run, or it stops
// the active run (keeping, or rolling back, what that run did) and runs
// next. No turn is ever lost silently.
//
// See docs/runs.md for the model, operations and sizing.
package runs
