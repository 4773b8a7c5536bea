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
