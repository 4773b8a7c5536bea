// Package sqlite keeps the runs layer (package runs) in one SQLite file:
// the runs and threads tables, River's queue and the checkpoints of the
// graphs. It is the embedded default: no server, and several processes on
// one machine may share the file as producers and workers. Without
// notifications, workers and streams poll (every 50 ms by default).
//
//	m, err := sqlite.Open(ctx, "runs.db")
//	g, err := builder.Compile(graph.WithCheckpointer(m.Saver()))
//	err = m.Register(runs.Graph(g))
//	go m.Work(ctx)
package sqlite
