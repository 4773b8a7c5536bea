package artifact

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a Store that keeps artifacts in the process's memory; they
// are gone when the process ends. It is safe for concurrent use.
type Memory struct {
	opts options

	mu     sync.RWMutex
	scopes map[Scope]map[string][]stored // by scope, then name: the versions, oldest first
}

// stored is one version in a Memory.
type stored struct {
	a     Artifact
	saved time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory(opts ...Option) *Memory {
	return &Memory{opts: newOptions(opts), scopes: map[Scope]map[string][]stored{}}
}

// Save stores a as a new version of the artifact name (see Store).
func (m *Memory) Save(ctx context.Context, scope Scope, name string, a Artifact) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	a, err := Prepare(name, a, m.opts.maxSize)
	if err != nil {
		return 0, err
	}
	scope = scope.For(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	names := m.scopes[scope]
	if names == nil {
		names = map[string][]stored{}
		m.scopes[scope] = names
	}
	names[name] = append(names[name], stored{a: a, saved: m.opts.now().UTC()})
	return len(names[name]), nil
}

// Load returns a version of the artifact name, 0 for the latest (see
// Store).
func (m *Memory) Load(ctx context.Context, scope Scope, name string, version int) (Artifact, error) {
	v, err := m.version(ctx, scope, name, version)
	if err != nil {
		return Artifact{}, err
	}
	out := Artifact{Data: slices.Clone(v.a.Data), MediaType: v.a.MediaType, Metadata: maps.Clone(v.a.Metadata)}
	if out.Data == nil {
		out.Data = []byte{}
	}
	return out, nil
}

func (m *Memory) version(ctx context.Context, scope Scope, name string, version int) (stored, error) {
	if err := ctx.Err(); err != nil {
		return stored{}, err
	}
	if err := CheckName(name); err != nil {
		return stored{}, err
	}
	if err := checkVersion(name, version); err != nil {
		return stored{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	vs := m.scopes[scope.For(name)][name]
	if version == 0 {
		version = len(vs)
	}
	if version == 0 || version > len(vs) {
		return stored{}, notFound(name, version, len(vs))
	}
	return vs[version-1], nil
}

// List describes the latest version of every artifact reachable from
// scope (see Store).
func (m *Memory) List(ctx context.Context, scope Scope) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Info
	for name, vs := range m.scopes[scope] {
		if len(vs) > 0 && (scope.Thread == "" || !IsUserName(name)) {
			out = append(out, info(name, len(vs), vs[len(vs)-1]))
		}
	}
	if scope.Thread != "" {
		for name, vs := range m.scopes[scope.UserScope()] {
			if len(vs) > 0 && IsUserName(name) {
				out = append(out, info(name, len(vs), vs[len(vs)-1]))
			}
		}
	}
	sortInfos(out)
	return out, nil
}

// Versions describes every version of the artifact name (see Store).
func (m *Memory) Versions(ctx context.Context, scope Scope, name string) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	vs := m.scopes[scope.For(name)][name]
	if len(vs) == 0 {
		return nil, notFound(name, 0, 0)
	}
	out := make([]Info, len(vs))
	for i, v := range vs {
		out[i] = info(name, i+1, v)
	}
	return out, nil
}

// Delete removes the artifact name with all its versions (see Store).
func (m *Memory) Delete(ctx context.Context, scope Scope, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckName(name); err != nil {
		return err
	}
	scope = scope.For(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	names := m.scopes[scope]
	if len(names[name]) == 0 {
		return notFound(name, 0, 0)
	}
	delete(names, name)
	if len(names) == 0 {
		delete(m.scopes, scope)
	}
	return nil
}

func info(name string, version int, v stored) Info {
	return Info{
		Name: name, Version: version, Size: int64(len(v.a.Data)), MediaType: v.a.MediaType,
		Saved: v.saved, Metadata: maps.Clone(v.a.Metadata),
	}
}

func sortInfos(infos []Info) {
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
}
