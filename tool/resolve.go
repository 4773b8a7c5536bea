package tool

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/internal/editdist"
	"github.com/trellis-go/trellis/model"
)

type resolveConfig struct {
	visible    Predicate
	executable Predicate
	selectors  []Selector
	noSelect   bool
	extra      []Tool
	notes      []string
}

// Selector narrows a run's visible tools as a whole, for example to the
// few most relevant to the user's request (tool search), where a Predicate
// judges one tool at a time. It receives the visible tools in order and
// returns the ones to keep; it may read the run's context (the request,
// the run state) and must return only tools it was given.
type Selector interface {
	Select(ctx context.Context, tools []Tool) ([]Tool, error)
}

// SelectorFunc adapts a function to Selector.
type SelectorFunc func(ctx context.Context, tools []Tool) ([]Tool, error)

// Select calls f.
func (f SelectorFunc) Select(ctx context.Context, tools []Tool) ([]Tool, error) { return f(ctx, tools) }

// SelectWith narrows the visible tools with s, after VisibleIf and the
// duplicate check. Selectors run in the order given. Tools s leaves out are
// not shown to the model. Selection is about relevance, not access: the
// ToolsNode resolves a turn's calls without the selectors (IgnoreSelectors),
// so every tool the model was offered runs even when a selector would pick
// differently a second time, and a call of a visible tool the selector left
// out runs too. VisibleIf and permission checks are what keep tools from
// running.
func SelectWith(s Selector) ResolveOption {
	return func(c *resolveConfig) { c.selectors = append(c.selectors, s) }
}

// IgnoreSelectors makes Resolve skip the selectors of the other options
// (SelectWith), for resolving the calls of a turn whose tools were selected
// already: a selector is not run twice per turn, and its second answer
// cannot turn a tool the model was offered into an unknown one.
func IgnoreSelectors() ResolveOption {
	return func(c *resolveConfig) { c.noSelect = true }
}

// ResolveOption configures Resolve. A nil ResolveOption does nothing.
type ResolveOption func(*resolveConfig)

// VisibleIf keeps in the run's tool list only the tools keep selects: the
// others are not shown to the model, and a call of one is an unknown tool.
// Visibility is a soft constraint (a model may still guess a name); tools
// that must not run also need a permission check. Several VisibleIf
// options all apply: a tool is visible when every one keeps it.
func VisibleIf(keep Predicate) ResolveOption {
	return func(c *resolveConfig) { c.visible = both(c.visible, keep) }
}

// ExecutableIf sets which visible tools the framework executes. The calls
// of the others are left to the caller, which runs them outside the
// framework and answers with tool messages. Declaration-only tools are
// never executable. Several ExecutableIf options all apply.
func ExecutableIf(run Predicate) ResolveOption {
	return func(c *resolveConfig) { c.executable = both(c.executable, run) }
}

// both returns the predicate that holds where a and b do; a nil predicate
// holds everywhere.
func both(a, b Predicate) Predicate {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, t Tool) bool { return a(ctx, t) && b(ctx, t) }
}

// AddTools adds tools to the resolved list, after the toolsets' own:
// tools that come with one run (with ResolveWith) rather than with the
// agent, such as the tools of the application's user interface for this
// request. Declaration-only tools among them (NewDeclaration) are left to
// the caller: their calls stop the run with the pending calls, as for any
// declaration-only tool. The filters and selectors apply to them as to the
// others. A tool whose name the list already has is left out: the agent's
// own tools win, so a run cannot replace them (or an agent a handoff
// starts under the run's context, which resolves with the same options).
// Several AddTools options add up, in order; a nil tool is an error of
// Resolve. Resume a paused run under the same options: a call whose tool
// is no longer in the run's list is answered as an unknown tool, and a
// result supplied for it is not used.
func AddTools(tools ...Tool) ResolveOption {
	return func(c *resolveConfig) { c.extra = append(c.extra, tools...) }
}

// AddInstructions adds texts to the instructions of the resolved list
// (ToolList.Instructions), after those of its tools: guidance that comes
// with one run rather than with the agent, such as what the application's
// user interface knows about the user's screen. The LLM node puts them in
// the system prompt with the tools' own. Blank texts are left out; several
// AddInstructions options add up, in order. Like AddTools, they reach the
// runs of agents that tools start under the run's context (handoffs).
func AddInstructions(texts ...string) ResolveOption {
	return func(c *resolveConfig) {
		for _, t := range texts {
			if t = strings.TrimSpace(t); t != "" {
				c.notes = append(c.notes, t)
			}
		}
	}
}

// runOptionsKey is the context key of the options ResolveWith adds.
type runOptionsKey struct{}

// ResolveWith returns a context under which every Resolve also applies
// opts, after its own: filters and selectors for one run of an agent that
// serves many (the tools one user may see, a feature turned off for a
// request), without building an agent per case. Run the graph with the
// returned context. The options add to those of earlier ResolveWith calls
// on ctx, and to the agent's own; Fixed toolsets are exempt, as always. The
// runs of agents that tools start under ctx (handoffs) resolve their tools
// under it too, so prefer rules that name what they refuse over allow-lists
// written for one agent's tools.
func ResolveWith(ctx context.Context, opts ...ResolveOption) context.Context {
	prev := RunResolveOptions(ctx)
	return context.WithValue(ctx, runOptionsKey{}, append(prev[:len(prev):len(prev)], opts...))
}

// RunResolveOptions returns the options ResolveWith added to ctx, which
// Resolve applies; nil when there are none.
func RunResolveOptions(ctx context.Context) []ResolveOption {
	opts, _ := ctx.Value(runOptionsKey{}).([]ResolveOption)
	return opts
}

// ToolList is a run's resolved tools: what the model sees, in order, and
// which of them the framework executes. It is immutable and safe for
// concurrent use.
type ToolList struct {
	entries []listEntry
	byName  map[string]int
	// someExternal: the caller executes some of the tools.
	someExternal bool
	// notes are the instructions AddInstructions added.
	notes []string
}

type listEntry struct {
	tool       Tool
	def        model.ToolDefinition
	source     string
	executable bool
	fixed      bool // from a Fixed toolset: no filter or selector applies
}

// Resolve builds a run's tool list from sets, in order: it asks each set
// for its tools (with the run's ctx), keeps the visible ones, and marks the
// executable ones, by opts and by the options ResolveWith put in ctx. Two visible tools with one name are an error
// (DuplicateToolError naming both sources), as is a tool with an empty
// name.
func Resolve(ctx context.Context, sets []Toolset, opts ...ResolveOption) (*ToolList, error) {
	var cfg resolveConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	for _, o := range RunResolveOptions(ctx) {
		if o != nil {
			o(&cfg)
		}
	}
	l := &ToolList{byName: map[string]int{}, notes: cfg.notes}
	for _, set := range sets {
		if set == nil {
			continue
		}
		tools, err := set.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("tool: resolve toolset %q: %w", set.Name(), err)
		}
		_, fixed := set.(*fixedSet)
		for _, t := range tools {
			if t == nil {
				return nil, fmt.Errorf("%w: toolset %q returned a nil tool", ErrInvalidTool, set.Name())
			}
			if !fixed && cfg.visible != nil && !cfg.visible(ctx, t) {
				continue
			}
			def := t.Definition()
			if def.Name == "" {
				return nil, fmt.Errorf("%w: toolset %q returned a tool with an empty name", ErrInvalidTool, set.Name())
			}
			if i, dup := l.byName[def.Name]; dup {
				return nil, &DuplicateToolError{Name: def.Name, First: l.entries[i].source, Second: set.Name()}
			}
			exec := !IsDeclarationOnly(t) && (fixed || cfg.executable == nil || cfg.executable(ctx, t))
			l.byName[def.Name] = len(l.entries)
			l.entries = append(l.entries, listEntry{tool: t, def: def, source: set.Name(), executable: exec, fixed: fixed})
			l.someExternal = l.someExternal || !exec
		}
	}
	for _, t := range cfg.extra {
		if t == nil {
			return nil, fmt.Errorf("%w: AddTools was given a nil tool", ErrInvalidTool)
		}
		if cfg.visible != nil && !cfg.visible(ctx, t) {
			continue
		}
		def := t.Definition()
		if def.Name == "" {
			return nil, fmt.Errorf("%w: AddTools was given a tool with an empty name", ErrInvalidTool)
		}
		if _, taken := l.byName[def.Name]; taken {
			continue // the agent's own tool (or an earlier added one) wins
		}
		exec := !IsDeclarationOnly(t) && (cfg.executable == nil || cfg.executable(ctx, t))
		l.byName[def.Name] = len(l.entries)
		l.entries = append(l.entries, listEntry{tool: t, def: def, source: addedSource, executable: exec})
		l.someExternal = l.someExternal || !exec
	}
	for _, s := range cfg.selectors {
		if cfg.noSelect {
			break
		}
		if err := l.narrow(ctx, s); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// addedSource is the source (ToolList.Source) of the tools AddTools adds.
const addedSource = "added for the run"

// narrow keeps the entries that s selects, and those of Fixed toolsets,
// which s is not shown, in their original order.
func (l *ToolList) narrow(ctx context.Context, s Selector) error {
	if s == nil {
		return nil
	}
	offered := make([]Tool, 0, len(l.entries))
	keep := make(map[string]bool, len(l.entries))
	for _, e := range l.entries {
		if e.fixed {
			keep[e.def.Name] = true
		} else {
			offered = append(offered, e.tool)
		}
	}
	kept, err := s.Select(ctx, offered)
	if err != nil {
		return fmt.Errorf("tool: select tools: %w", err)
	}
	for _, t := range kept {
		if t == nil {
			return fmt.Errorf("%w: selector returned a nil tool", ErrInvalidTool)
		}
		name := Name(t)
		if i, ok := l.byName[name]; !ok || l.entries[i].fixed {
			return fmt.Errorf("%w: selector returned tool %q, which it was not given", ErrInvalidTool, name)
		}
		keep[name] = true
	}
	entries := l.entries[:0:0]
	byName := make(map[string]int, len(keep))
	for _, e := range l.entries {
		if keep[e.def.Name] {
			byName[e.def.Name] = len(entries)
			entries = append(entries, e)
		}
	}
	l.entries, l.byName = entries, byName
	l.someExternal = slices.ContainsFunc(entries, func(e listEntry) bool { return !e.executable })
	return nil
}

// With returns a copy of l with t added after its tools, visible and
// executable (unless declaration-only) whatever the filters l was resolved
// with, as a Fixed toolset's would be; source names where t comes from.
// A tool of l with t's name is a *DuplicateToolError.
func (l *ToolList) With(t Tool, source string) (*ToolList, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: With of a nil tool", ErrInvalidTool)
	}
	def := t.Definition()
	if def.Name == "" {
		return nil, fmt.Errorf("%w: toolset %q returned a tool with an empty name", ErrInvalidTool, source)
	}
	if i, dup := l.byName[def.Name]; dup {
		return nil, &DuplicateToolError{Name: def.Name, First: l.entries[i].source, Second: source}
	}
	out := &ToolList{entries: make([]listEntry, len(l.entries), len(l.entries)+1), byName: make(map[string]int, len(l.entries)+1)}
	copy(out.entries, l.entries)
	maps.Copy(out.byName, l.byName)
	exec := !IsDeclarationOnly(t)
	out.byName[def.Name] = len(out.entries)
	out.entries = append(out.entries, listEntry{tool: t, def: def, source: source, executable: exec, fixed: true})
	out.someExternal = l.someExternal || !exec
	out.notes = l.notes
	return out, nil
}

// Len returns the number of tools.
func (l *ToolList) Len() int { return len(l.entries) }

// Tools returns the tools, in order.
func (l *ToolList) Tools() []Tool {
	out := make([]Tool, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.tool
	}
	return out
}

// Definitions returns what the model is told about the tools, in order.
func (l *ToolList) Definitions() []model.ToolDefinition {
	out := make([]model.ToolDefinition, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.def
	}
	return out
}

// Names returns the tools' names, in order.
func (l *ToolList) Names() []string {
	out := make([]string, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.def.Name
	}
	return out
}

// Lookup returns the tool with the given name.
func (l *ToolList) Lookup(name string) (Tool, bool) {
	i, ok := l.index(name)
	if !ok {
		return nil, false
	}
	return l.entries[i].tool, true
}

// maxScanned is the most tools a list finds by name without its map:
// comparing a few names costs less than hashing one.
const maxScanned = 8

// index returns the position of the named tool in l.entries.
func (l *ToolList) index(name string) (int, bool) {
	if len(l.entries) <= maxScanned {
		for i := range l.entries {
			if l.entries[i].def.Name == name {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := l.byName[name]
	return i, ok
}

// Executable reports whether the framework executes calls of the named
// tool. It is false for unknown tools, declaration-only tools and tools
// ExecutableIf left to the caller.
func (l *ToolList) Executable(name string) bool {
	i, ok := l.index(name)
	return ok && l.entries[i].executable
}

// ExecutesAll reports whether the framework executes every tool of the
// list: none is declaration-only or left to the caller by ExecutableIf.
func (l *ToolList) ExecutesAll() bool { return !l.someExternal }

// Source returns the name of the toolset the named tool came from.
func (l *ToolList) Source(name string) string {
	if i, ok := l.byName[name]; ok {
		return l.entries[i].source
	}
	return ""
}

// Instructions returns the instructions for the system prompt: the tools'
// (CollectInstructions), then those AddInstructions added, separated by
// blank lines.
func (l *ToolList) Instructions() string {
	own := CollectInstructions(l.Tools())
	if len(l.notes) == 0 {
		return own
	}
	parts := make([]string, 0, len(l.notes)+1)
	if own != "" {
		parts = append(parts, own)
	}
	return strings.Join(append(parts, l.notes...), "\n\n")
}

// Unknown returns the error result for a call of a name the list does not
// have, suggesting the nearest names.
func (l *ToolList) Unknown(name string) Result { return UnknownTool(name, l.Names()) }

// UnknownTool returns the error result for a call of a tool that does not
// exist among available: ErrorCode CodeUnknownTool, a message that
// suggests the nearest names (by edit distance) and lists the available
// ones, and an *UnknownToolError in Err.
func UnknownTool(name string, available []string) Result {
	err := &UnknownToolError{Name: name, Suggestions: Suggest(name, available, 3), Available: slices.Clone(available)}
	return ErrorResult(CodeUnknownTool, err)
}

// Suggest returns up to n names from candidates that are close to name,
// nearest first: names within an edit distance of a third of the longer
// name (at least 2, case ignored), and names that contain it or that it
// contains.
func Suggest(name string, candidates []string, n int) []string {
	type scored struct {
		name string
		dist int
	}
	lname := strings.ToLower(name)
	var hits []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := editdist.Levenshtein(lname, lc)
		within := max(2, max(len(lname), len(lc))/3)
		contains := lname != "" && lc != "" && (strings.Contains(lc, lname) || strings.Contains(lname, lc))
		if d <= within || contains {
			hits = append(hits, scored{c, d})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, max(0, min(len(hits), n)))
	for _, h := range hits {
		if len(out) >= n {
			break
		}
		out = append(out, h.name)
	}
	return out
}

// CollectInstructions gathers the instructions of the tools that provide
// them (InstructionProvider), in the tools' order, separated by blank
// lines. It returns "" when no tool has one.
func CollectInstructions(tools []Tool) string {
	var parts []string
	for _, t := range tools {
		if t == nil {
			continue
		}
		if p, ok := As[InstructionProvider](t); ok {
			if s := strings.TrimSpace(p.Instruction()); s != "" {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}
