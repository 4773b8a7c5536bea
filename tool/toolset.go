package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/trellis-go/trellis/model"
)

// Toolset is a named group of tools whose members are resolved per run,
// from the run's context: an MCP server's tools, the tools a user may use,
// a fixed list. Whoever creates a toolset closes it; adding it to a run
// does not transfer ownership.
type Toolset interface {
	// Name identifies the set, in errors and logs.
	Name() string
	// Tools returns the set's tools for the run ctx belongs to.
	Tools(ctx context.Context) ([]Tool, error)
	// Close releases what the set holds (connections, processes).
	Close() error
}

// Static is a toolset with a fixed list of tools.
type Static struct {
	name  string
	tools []Tool
}

// NewStatic returns a toolset that always resolves to tools.
func NewStatic(name string, tools ...Tool) *Static {
	return &Static{name: name, tools: slices.Clone(tools)}
}

// Name returns the set's name.
func (s *Static) Name() string { return s.name }

// Tools returns the set's tools.
func (s *Static) Tools(context.Context) ([]Tool, error) { return slices.Clone(s.tools), nil }

// Close does nothing.
func (s *Static) Close() error { return nil }

// combined is the toolset Combine returns.
type combined struct {
	name string
	sets []Toolset
}

// Combine returns a toolset that resolves to the tools of sets, in order;
// nil sets are skipped. Two tools with one name are an error
// (DuplicateToolError naming both sets) when the combined set is resolved,
// as is a nil tool. Closing it closes every set.
func Combine(name string, sets ...Toolset) Toolset {
	return &combined{name: name, sets: slices.DeleteFunc(slices.Clone(sets), func(s Toolset) bool { return s == nil })}
}

func (c *combined) Name() string { return c.name }

func (c *combined) Tools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	from := map[string]string{}
	for _, s := range c.sets {
		tools, err := s.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("toolset %q: %w", s.Name(), err)
		}
		for _, t := range tools {
			if t == nil {
				return nil, fmt.Errorf("%w: toolset %q returned a nil tool", ErrInvalidTool, s.Name())
			}
			name := Name(t)
			if first, dup := from[name]; dup {
				return nil, &DuplicateToolError{Name: name, First: first, Second: s.Name()}
			}
			from[name] = s.Name()
			out = append(out, t)
		}
	}
	return out, nil
}

func (c *combined) Close() error {
	var errs []error
	for _, s := range c.sets {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("toolset %q: %w", s.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Predicate selects tools. The context is the run's.
type Predicate func(ctx context.Context, t Tool) bool

// AllowNames is an allow-list: it selects the tools with the given names.
func AllowNames(names ...string) Predicate {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(_ context.Context, t Tool) bool { return set[Name(t)] }
}

// DenyNames selects every tool except those with the given names.
func DenyNames(names ...string) Predicate {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(_ context.Context, t Tool) bool { return !set[Name(t)] }
}

// filtered is the toolset Filter returns.
type filtered struct {
	Toolset
	keep Predicate
}

// Filter returns a toolset that resolves to the tools of set that keep
// selects.
func Filter(set Toolset, keep Predicate) Toolset {
	return &filtered{Toolset: set, keep: keep}
}

// Include returns a toolset with only the tools of set that have the given
// names.
func Include(set Toolset, names ...string) Toolset { return Filter(set, AllowNames(names...)) }

// Exclude returns a toolset with the tools of set except those with the
// given names.
func Exclude(set Toolset, names ...string) Toolset { return Filter(set, DenyNames(names...)) }

func (f *filtered) Tools(ctx context.Context) ([]Tool, error) {
	tools, err := f.Toolset.Tools(ctx)
	if err != nil {
		return nil, err
	}
	out := tools[:0:0]
	for _, t := range tools {
		// A nil tool is passed on, for Resolve to report.
		if t == nil || f.keep == nil || f.keep(ctx, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// prefixed is the toolset WithPrefix returns.
type prefixed struct {
	Toolset
	prefix string
}

// WithPrefix returns a toolset whose tools are set's tools renamed to
// prefix+name (for example "github_" + "search"), so that sets with
// clashing names can serve one run. The renamed tools are called under
// their new names.
func WithPrefix(set Toolset, prefix string) Toolset {
	return &prefixed{Toolset: set, prefix: prefix}
}

func (p *prefixed) Tools(ctx context.Context) ([]Tool, error) {
	tools, err := p.Toolset.Tools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Tool, len(tools))
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("%w: toolset %q returned a nil tool", ErrInvalidTool, p.Name())
		}
		out[i] = Rename(t, p.prefix+Name(t))
	}
	return out, nil
}

// Rename returns t under another name. The renamed tool keeps t's
// capabilities (metadata, schema, streaming, permission checker, ...) and
// is called under the new name.
func Rename(t Tool, name string) Tool {
	r := &renamed{inner: t, name: name}
	if _, ok := t.(Streamer); ok {
		return &renamedStreamer{renamed: r}
	}
	return r
}

type renamed struct {
	inner Tool
	name  string
}

func (r *renamed) Definition() model.ToolDefinition {
	def := r.inner.Definition()
	def.Name = r.name
	return def
}

func (r *renamed) Call(ctx context.Context, callID string, args json.RawMessage) (Result, error) {
	return r.inner.Call(ctx, callID, args)
}

// Unwrap returns the renamed tool.
func (r *renamed) Unwrap() Tool { return r.inner }

func (r *renamed) CompiledSchema() *Schema {
	if sp, ok := As[SchemaProvider](r.inner); ok {
		return sp.CompiledSchema()
	}
	return nil
}

func (r *renamed) argumentPreparer() prepareFunc { return preparerOf(r.inner) }

type renamedStreamer struct {
	*renamed
}

func (r *renamedStreamer) Stream(ctx context.Context, callID string, args json.RawMessage) iter.Seq2[Result, error] {
	return r.inner.(Streamer).Stream(ctx, callID, args)
}

// Fixed returns set as a toolset whose tools no resolve option applies to:
// VisibleIf and selectors never hide them, ExecutableIf never leaves their
// calls to the caller (declaration-only tools aside). It is for the tools
// the framework or an application adds to every run on its own account,
// such as a swarm's transfer tools, which an allow-list written for the
// application's tools would otherwise hide. Their names still count in the
// duplicate check. The exemption holds for a set given to Resolve (or to a
// node or an agent) itself: inside Combine, NewMutable or WithPrefix it is
// an ordinary set.
func Fixed(set Toolset) Toolset {
	if set == nil {
		return nil
	}
	return &fixedSet{set}
}

// fixedSet is a toolset that Fixed exempts from the resolve options.
type fixedSet struct{ Toolset }

// IsStatic reports whether every set always resolves to the same tools:
// Static sets, and Fixed ones around them. Such a list can be resolved once.
func IsStatic(sets ...Toolset) bool {
	for _, s := range sets {
		if f, ok := s.(*fixedSet); ok {
			s = f.Toolset
		}
		if _, ok := s.(*Static); !ok {
			return false
		}
	}
	return true
}
