package runkey

import "context"

// Key is the context key of a graph run's metadata: a graph run's context
// answers ctx.Value(Key{}) with a value that implements Run.
type Key struct{}

// Run is what packages below graph read of a run's metadata.
type Run interface {
	// Thread returns the thread of the run, "" for a run without one.
	Thread() string
}

// Thread returns the thread of the graph run behind ctx, or "".
func Thread(ctx context.Context) string {
	if r, ok := ctx.Value(Key{}).(Run); ok {
		return r.Thread()
	}
	return ""
}

// Node is what the nodes of the module read of the run they run in: a
// graph run's context answers Key with a value that implements it too, so
// that one lookup (NodeOf) serves a node's questions.
type Node interface {
	Run
	// Resuming is graph.Resuming of ctx, a context of the run.
	Resuming(ctx context.Context) bool
	// Detach is graph.Detach of ctx, a context of the run.
	Detach(ctx context.Context) context.Context
}

// NodeOf returns the run behind ctx, nil outside a graph run.
func NodeOf(ctx context.Context) Node {
	n, _ := ctx.Value(Key{}).(Node)
	return n
}
