package tool

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Mutable is a toolset whose members change while it is in use: the
// application adds and removes toolsets (an MCP server a user connects, a
// feature turned on for an account) and every run that resolves it
// afterwards gets the current members, in the order they were added. Give
// it to an agent or a node like any toolset. It resolves as Combine does:
// two tools with one name are a DuplicateToolError naming both members.
// It is safe for concurrent use; a run that is resolving it when it changes
// sees the members before or after the change, never a mix.
type Mutable struct {
	name string
	mu   sync.RWMutex
	sets []Toolset
}

// NewMutable returns a mutable toolset named name with the given members
// (see Add).
func NewMutable(name string, sets ...Toolset) (*Mutable, error) {
	m := &Mutable{name: name}
	if err := m.Add(sets...); err != nil {
		return nil, err
	}
	return m, nil
}

// Name returns the set's name.
func (m *Mutable) Name() string { return m.name }

// Tools returns the tools of the current members, in order.
func (m *Mutable) Tools(ctx context.Context) ([]Tool, error) {
	m.mu.RLock()
	c := combined{name: m.name, sets: m.sets} // Add, Remove and Set never write into sets
	m.mu.RUnlock()
	return c.Tools(ctx)
}

// Add appends members. A nil set, or one named like a member (or like
// another set of the same call), is an error, and then none is added.
func (m *Mutable) Add(sets ...Toolset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := slices.Clip(m.sets)
	for _, s := range sets {
		if s == nil {
			return fmt.Errorf("%w: toolset %q: Add of a nil toolset", ErrInvalidTool, m.name)
		}
		if slices.ContainsFunc(next, func(x Toolset) bool { return x.Name() == s.Name() }) {
			return fmt.Errorf("%w: toolset %q already has a member named %q", ErrInvalidTool, m.name, s.Name())
		}
		next = append(next, s)
	}
	m.sets = next
	return nil
}

// Remove removes the members with the given names and returns them, so
// that the caller can close them; names that are not members are ignored.
func (m *Mutable) Remove(names ...string) []Toolset {
	m.mu.Lock()
	defer m.mu.Unlock()
	var removed []Toolset
	next := make([]Toolset, 0, len(m.sets))
	for _, s := range m.sets {
		if slices.Contains(names, s.Name()) {
			removed = append(removed, s)
		} else {
			next = append(next, s)
		}
	}
	m.sets = next
	return removed
}

// Set replaces the members with sets (see Add for what is refused) and
// returns the members it replaced that are not among sets, so that the
// caller can close them.
func (m *Mutable) Set(sets ...Toolset) ([]Toolset, error) {
	probe := &Mutable{name: m.name}
	if err := probe.Add(sets...); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var replaced []Toolset
	for _, s := range m.sets {
		if !slices.ContainsFunc(probe.sets, func(x Toolset) bool { return identical(x, s) }) {
			replaced = append(replaced, s)
		}
	}
	m.sets = probe.sets
	return replaced, nil
}

// Toolsets returns the current members, in order.
func (m *Mutable) Toolsets() []Toolset {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.sets)
}

// Close closes the current members and removes them.
func (m *Mutable) Close() error {
	m.mu.Lock()
	sets := m.sets
	m.sets = nil
	m.mu.Unlock()
	c := combined{name: m.name, sets: sets}
	return c.Close()
}

// identical reports whether a and b, two toolsets, are one value. Values
// of types that cannot be compared count as different: that they are one
// cannot be told.
func identical[T any](a, b T) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return any(a) == any(b)
}
