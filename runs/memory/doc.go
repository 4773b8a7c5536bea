// Package memory keeps the runs layer (package runs) in the memory of the
// process: no database server, no file. It is the backend for development,
// for tests, and for a single process that needs no durability and wants
// the shortest path from a request to a run's first event: runs are queued
// in the process (a runs.LocalQueue, not River's tables), a run started is
// taken at once by a worker of the process, and its events reach the
// streams of the process as soon as they are recorded, with no polling.
//
// The runs, threads and events are kept in an in-memory SQLite database
// that only this process opens, so everything the runs layer does —
// multitask strategies, cancellation, joining and resuming streams,
// interrupts, schedules — works as with runs/sqlite and runs/postgres. The
// checkpoints are Go values (state/memory), each write fenced by the runs
// layer's fence statement on that database. Everything is gone when the
// Manager is closed.
//
//	m, err := memory.Open(ctx)
//	g, err := builder.Compile(graph.WithCheckpointer(m.Saver()))
//	err = m.Register(runs.Graph(g))
//	go m.Work(ctx)
//
// Managers opened with the same WithName share one database and one queue,
// as processes sharing a database do (a test of several workers, or a
// producer and a worker in one program).
package memory
