package store

import "context"

type contextKey struct{}

// NewContext returns a context that carries s. The graph engine does this
// for the runs of a graph compiled with a store, so that its nodes and
// their tools find it with FromContext.
func NewContext(ctx context.Context, s Store) context.Context {
	return context.WithValue(ctx, contextKey{}, s)
}

// FromContext returns the store ctx carries, and whether it carries one.
func FromContext(ctx context.Context) (Store, bool) {
	s, ok := ctx.Value(contextKey{}).(Store)
	return s, ok && s != nil
}
