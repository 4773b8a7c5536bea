package artifact

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/internal/runkey"
)

type (
	storeKey  struct{}
	userKey   struct{}
	appKey    struct{}
	threadKey struct{}
)

// WithStore returns a context that carries s, the store that SaveFromTool
// and LoadFromTool use. Give it to a run (agent.Invoke, graph.Invoke) and
// every tool of the run can save artifacts.
func WithStore(ctx context.Context, s Store) context.Context {
	return context.WithValue(ctx, storeKey{}, s)
}

// FromContext returns the store carried by ctx (see WithStore), or nil.
func FromContext(ctx context.Context) Store {
	s, _ := ctx.Value(storeKey{}).(Store)
	return s
}

// WithUser returns a context whose scope (see ScopeFromContext) belongs to
// user.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// WithApp returns a context whose scope (see ScopeFromContext) belongs to
// app.
func WithApp(ctx context.Context, app string) context.Context {
	return context.WithValue(ctx, appKey{}, app)
}

// WithThread returns a context whose scope names thread when it runs in no
// graph thread: for tools and code that run outside a graph run, or in a
// run without one. The thread of a graph run (graph.ThreadID) wins.
func WithThread(ctx context.Context, thread string) context.Context {
	return context.WithValue(ctx, threadKey{}, thread)
}

// ScopeFromContext returns the scope of the run ctx belongs to: the app
// and user set with WithApp and WithUser ("" when not set), and the thread
// of the graph run (graph.ThreadID), or else the one set with WithThread.
//
// A graph run has a thread when it is given one with graph.WithThread
// (agent runs too): with a checkpointer, which requires one, or without.
// A run with no thread gives a scope with an empty Thread: the user's
// scope, in which every name is shared by all of the user's threadless
// runs.
func ScopeFromContext(ctx context.Context) Scope {
	s := Scope{Thread: runkey.Thread(ctx)}
	s.App, _ = ctx.Value(appKey{}).(string)
	s.User, _ = ctx.Value(userKey{}).(string)
	if s.Thread == "" {
		s.Thread, _ = ctx.Value(threadKey{}).(string)
	}
	return s
}

// SaveFromTool saves a as a new version of the artifact name in the store
// of ctx (see WithStore), in the scope of the run (see ScopeFromContext),
// and returns the version's number. Any tool can call it with the context
// of its call. Without a store in ctx it fails with an error that matches
// ErrNoStore.
func SaveFromTool(ctx context.Context, name string, a Artifact) (int, error) {
	s := FromContext(ctx)
	if s == nil {
		return 0, fmt.Errorf("artifact: save %q: %w (see artifact.WithStore)", name, ErrNoStore)
	}
	return s.Save(ctx, ScopeFromContext(ctx), name, a)
}

// LoadFromTool loads a version (0 for the latest) of the artifact name
// from the store of ctx, in the scope of the run, as SaveFromTool saves
// one.
func LoadFromTool(ctx context.Context, name string, version int) (Artifact, error) {
	s := FromContext(ctx)
	if s == nil {
		return Artifact{}, fmt.Errorf("artifact: load %q: %w (see artifact.WithStore)", name, ErrNoStore)
	}
	return s.Load(ctx, ScopeFromContext(ctx), name, version)
}
