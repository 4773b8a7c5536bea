// Package postgres keeps the runs layer (package runs) in PostgreSQL: the
// runs and threads tables, River's queue and the checkpoints of the graphs
// share one database, so that a checkpoint, the lease check that fences
// it, and the next job's enqueue commit together. Streams and
// cancellations reach every process at once through LISTEN/NOTIFY.
//
//	m, err := postgres.Open(ctx, "postgres://app@db/app")
//	g, err := builder.Compile(graph.WithCheckpointer(m.Saver()))
//	err = m.Register(runs.Graph(g))
//	go m.Work(ctx) // in each worker process
package postgres
