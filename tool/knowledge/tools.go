package knowledge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// The name of the search tool, and of the toolset Tools returns, unless
// options set others.
const (
	SearchName         = "knowledge_search"
	DefaultToolsetName = "knowledge"
)

// The search tool's bounds unless options set others.
const (
	// DefaultMaxSearchLimit is the most passages one call of the search
	// tool returns.
	DefaultMaxSearchLimit = 20
	// DefaultMaxFilterValues is how many values of a metadata key the
	// agentic tool's schema enumerates; a key with more is described with
	// a few of them instead.
	DefaultMaxFilterValues = 25
	// DefaultMaxListedSources is how many sources the agentic tool's schema
	// lists; with more, it lists their directories.
	DefaultMaxListedSources = 50
)

// SearchArgs are the arguments of the search tool.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"description=What to search for: the words the passages would contain,minLength=1"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many passages to return at most (default 5),minimum=1"`
}

// AgenticArgs are the arguments of the agentic search tool (WithAgentic):
// SearchArgs with a metadata filter and sources. Its schema enumerates the
// metadata keys and values and the sources of the knowledge base.
type AgenticArgs struct {
	Query   string            `json:"query"`
	Limit   int               `json:"limit,omitempty"`
	Filter  map[string]string `json:"filter,omitempty"`
	Sources []string          `json:"sources,omitempty"`
}

// ToolOption configures the tool SearchTool and Tools make.
type ToolOption func(*toolConfig)

type toolConfig struct {
	name        string
	setName     string
	description string
	agentic     bool
	keys        []string
	maxLimit    int
	maxValues   int
	maxSources  int
	problems    []string
}

// WithName names the search tool (SearchName unless set).
func WithName(name string) ToolOption {
	return func(c *toolConfig) { c.name = name }
}

// WithToolsetName names the toolset Tools returns (DefaultToolsetName
// unless set), for errors and logs.
func WithToolsetName(name string) ToolOption {
	return func(c *toolConfig) {
		if name == "" {
			c.problems = append(c.problems, "WithToolsetName: the name is empty")
		}
		c.setName = name
	}
}

// WithDescription says what the knowledge base holds, for the model to
// know when to search it: "The Trellis documentation: guides and API
// reference." It begins the tool's description, followed by how to search
// and cite.
func WithDescription(text string) ToolOption {
	return func(c *toolConfig) { c.description = strings.TrimSpace(text) }
}

// WithAgentic lets the model narrow its searches itself: the tool also
// takes a metadata filter and a list of sources (see AgenticArgs), and its
// schema enumerates the metadata keys and their values, and the sources,
// that the knowledge base holds.
func WithAgentic() ToolOption {
	return func(c *toolConfig) { c.agentic = true }
}

// WithFilterKeys sets the metadata keys the agentic tool offers to filter
// by; all keys of the documents' metadata unless set. Keys that are the
// application's own business (an owner, an internal ID) can be left out
// this way.
func WithFilterKeys(keys ...string) ToolOption {
	return func(c *toolConfig) {
		if len(keys) == 0 {
			c.problems = append(c.problems, "WithFilterKeys: no keys")
		}
		c.keys = slices.Clone(keys)
	}
}

// WithMaxLimit sets the most passages one call returns
// (DefaultMaxSearchLimit unless set); n must be at least 1.
func WithMaxLimit(n int) ToolOption {
	return func(c *toolConfig) {
		if n < 1 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxLimit: n must be at least 1, not %d", n))
		}
		c.maxLimit = n
	}
}

// WithMaxFilterValues sets how many values of a metadata key the agentic
// schema enumerates (DefaultMaxFilterValues unless set); n must be at least
// 1.
func WithMaxFilterValues(n int) ToolOption {
	return func(c *toolConfig) {
		if n < 1 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxFilterValues: n must be at least 1, not %d", n))
		}
		c.maxValues = n
	}
}

func newToolConfig(kb *KB, opts []ToolOption) (toolConfig, error) {
	c := toolConfig{
		name: SearchName, setName: DefaultToolsetName,
		maxLimit: DefaultMaxSearchLimit, maxValues: DefaultMaxFilterValues, maxSources: DefaultMaxListedSources,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if kb == nil {
		c.problems = append(c.problems, "the knowledge base is nil")
	}
	if len(c.problems) > 0 {
		return c, fmt.Errorf("%w: knowledge tool %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	return c, nil
}

// SearchTool returns a tool that searches kb (knowledge_search unless
// WithName says otherwise). It takes a query and a limit and answers with
// the passages found, most relevant first, each headed by its number and
// citation:
//
//	[1] Install guide — docs/install.md#on-linux
//	Section: Install › On Linux
//	The passage's text...
//
// so that the model can cite what it uses. The result's Details hold the
// []Result, for user interfaces. The tool is read-only, search-or-read and
// concurrency-safe.
//
// With WithAgentic the tool also takes a metadata filter and sources, and
// its schema lists the keys, values and sources kb holds when SearchTool is
// called: build it once the documents are in, or use Tools, which keeps the
// schema up to date as documents change.
func SearchTool(kb *KB, opts ...ToolOption) (tool.Tool, error) {
	c, err := newToolConfig(kb, opts)
	if err != nil {
		return nil, err
	}
	return c.build(kb)
}

// build makes the tool for kb's documents as they are now.
func (c *toolConfig) build(kb *KB) (tool.Tool, error) {
	opts := []tool.Option{
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("Search the knowledge base"),
	}
	if !c.agentic {
		return tool.NewFunc(c.name, c.toolDescription(kb), func(ctx context.Context, in SearchArgs) (tool.Result, error) {
			return c.run(ctx, kb, Query{Text: in.Query, Limit: in.Limit})
		}, opts...)
	}
	schema, err := c.agenticSchema(kb.facets(c.keys))
	if err != nil {
		return nil, err
	}
	return tool.NewFuncWithSchema(c.name, c.toolDescription(kb), schema, func(ctx context.Context, in AgenticArgs) (tool.Result, error) {
		return c.run(ctx, kb, Query{Text: in.Query, Limit: in.Limit, Filter: in.Filter, Sources: in.Sources})
	}, opts...)
}

func (c *toolConfig) toolDescription(kb *KB) string {
	var b strings.Builder
	b.WriteString(cmp.Or(c.description, "Search the knowledge base."))
	if !strings.HasSuffix(b.String(), ".") {
		b.WriteString(".")
	}
	b.WriteString(" Returns the passages most relevant to the query, most relevant first, each headed by its number and citation: [n] title — source#section. Answer from the passages and cite the ones you use by their citation.")
	if kb.cfg.embed != nil {
		b.WriteString(" Matching is by meaning.")
	} else {
		b.WriteString(" Matching is by words, not meaning: use the words the passages would contain, and search again with other words when nothing fits.")
	}
	if c.agentic {
		b.WriteString(" Narrow a search with filter (metadata values) and sources (documents) when the question is about one of them.")
	}
	return b.String()
}

// run searches and formats the results for the model.
func (c *toolConfig) run(ctx context.Context, kb *KB, q Query) (tool.Result, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	q.Limit = min(q.Limit, c.maxLimit)
	results, err := kb.Search(ctx, q)
	if err != nil {
		return tool.Result{}, err
	}
	if len(results) == 0 {
		return tool.Text(noResults(q)), nil
	}
	res := tool.Text(Format(results))
	res.Details = results
	return res, nil
}

// noResults says that q found nothing.
func noResults(q Query) string {
	var b strings.Builder
	fmt.Fprintf(&b, "No passages match %q", textcut.Clip(q.Text, 200, "…"))
	var narrowed []string
	for _, k := range slices.Sorted(maps.Keys(q.Filter)) {
		narrowed = append(narrowed, k+"="+q.Filter[k])
	}
	if len(narrowed) > 0 {
		fmt.Fprintf(&b, " with the filter %s", strings.Join(narrowed, ", "))
	}
	if len(q.Sources) > 0 {
		fmt.Fprintf(&b, " in the sources %s", strings.Join(q.Sources, ", "))
	}
	b.WriteString(".")
	if len(narrowed) > 0 || len(q.Sources) > 0 {
		b.WriteString(" Search without them, or with other words.")
	} else {
		b.WriteString(" Search with other words.")
	}
	return b.String()
}

// Format writes results as the search tool gives them to the model:
// numbered from 1, each headed by its citation (see Result.Citation) and
// its section, then its text, separated by blank lines.
func Format(results []Result) string {
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s\n", i+1, r.Citation())
		if len(r.Headings) > 0 {
			fmt.Fprintf(&b, "Section: %s\n", strings.Join(r.Headings, " › "))
		}
		b.WriteString(r.Text)
	}
	return b.String()
}

// facetSet is what the agentic schema lists: metadata keys and their
// values, and sources.
type facetSet struct {
	values  map[string][]string // by key, sorted
	sources []string            // sorted
}

// facets returns the metadata keys (those of keys, or all when keys is
// empty) and values and the sources of kb's documents.
func (kb *KB) facets(keys []string) facetSet {
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	vals := map[string]map[string]bool{}
	srcs := map[string]bool{}
	for _, doc := range kb.docs {
		if doc.doc.Source != "" {
			srcs[doc.doc.Source] = true
		}
		for k, v := range doc.doc.Metadata {
			if len(keys) > 0 && !slices.Contains(keys, k) {
				continue
			}
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	f := facetSet{values: map[string][]string{}, sources: slices.Sorted(maps.Keys(srcs))}
	for k, vs := range vals {
		f.values[k] = slices.Sorted(maps.Keys(vs))
	}
	return f
}

// agenticSchema returns the input schema of the agentic tool for the
// facets f.
func (c *toolConfig) agenticSchema(f facetSet) (json.RawMessage, error) {
	props := map[string]any{
		"query": map[string]any{
			"type": "string", "minLength": 1,
			"description": "What to search for: the words the passages would contain",
		},
		"limit": map[string]any{
			"type": "integer", "minimum": 1, "maximum": c.maxLimit,
			"description": fmt.Sprintf("How many passages to return at most (default %d)", min(DefaultLimit, c.maxLimit)),
		},
	}
	if len(f.values) > 0 {
		keyProps := map[string]any{}
		var listed []string
		for _, k := range slices.Sorted(maps.Keys(f.values)) {
			vs := f.values[k]
			if len(vs) <= c.maxValues {
				keyProps[k] = map[string]any{"type": "string", "enum": vs}
				listed = append(listed, fmt.Sprintf("%s (%s)", k, strings.Join(vs, ", ")))
				continue
			}
			some := strings.Join(vs[:min(5, len(vs))], ", ")
			keyProps[k] = map[string]any{"type": "string", "description": fmt.Sprintf("One of %d values, such as %s", len(vs), some)}
			listed = append(listed, fmt.Sprintf("%s (%d values, such as %s)", k, len(vs), some))
		}
		props["filter"] = map[string]any{
			"type":                 "object",
			"properties":           keyProps,
			"additionalProperties": false,
			"description": "Only passages of documents whose metadata has all these values. The keys and their values: " +
				strings.Join(listed, "; "),
		}
	}
	props["sources"] = map[string]any{
		"type":        "array",
		"items":       map[string]any{"type": "string", "minLength": 1},
		"description": c.sourcesDescription(f.sources),
	}
	return json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             []string{"query"},
		"additionalProperties": false,
	})
}

// sourcesDescription describes the sources property, listing the sources,
// or their directories when there are too many.
func (c *toolConfig) sourcesDescription(sources []string) string {
	desc := `Only passages of these documents: a source as listed, a directory ending in "/", or a pattern such as "docs/*.md".`
	switch {
	case len(sources) == 0:
		return desc
	case len(sources) <= c.maxSources:
		return desc + " The sources: " + strings.Join(sources, ", ")
	}
	dirs := map[string]int{}
	for _, s := range sources {
		dirs[path.Dir(s)+"/"]++
	}
	names := slices.Sorted(maps.Keys(dirs))
	var listed []string
	for _, d := range names[:min(len(names), c.maxSources)] {
		listed = append(listed, d+" ("+strconv.Itoa(dirs[d])+")")
	}
	more := ""
	if len(names) > c.maxSources {
		more = fmt.Sprintf(", and %d more directories", len(names)-c.maxSources)
	}
	return desc + fmt.Sprintf(" There are %d sources, in these directories (with their number of documents): %s%s", len(sources), strings.Join(listed, ", "), more)
}

// Tools returns a toolset holding the search tool of kb (see SearchTool).
// With WithAgentic, its schema follows kb: when documents were added or
// deleted since the last run, the next run gets a tool whose schema lists
// the keys, values and sources kb holds then.
func Tools(kb *KB, opts ...ToolOption) (tool.Toolset, error) {
	c, err := newToolConfig(kb, opts)
	if err != nil {
		return nil, err
	}
	t, err := c.build(kb)
	if err != nil {
		return nil, err
	}
	if !c.agentic {
		return tool.NewStatic(c.setName, t), nil
	}
	kb.mu.RLock()
	v := kb.version
	kb.mu.RUnlock()
	return &toolset{cfg: c, kb: kb, tool: t, version: v}, nil
}

// toolset is the toolset Tools returns for the agentic tool.
type toolset struct {
	cfg     toolConfig
	kb      *KB
	mu      sync.Mutex
	tool    tool.Tool
	version uint64 // the version of kb tool was built for
}

// Name returns the set's name.
func (s *toolset) Name() string { return s.cfg.setName }

// Tools returns the search tool, built again when kb changed.
func (s *toolset) Tools(context.Context) ([]tool.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kb.mu.RLock()
	v := s.kb.version
	s.kb.mu.RUnlock()
	if v != s.version {
		t, err := s.cfg.build(s.kb)
		if err != nil {
			return nil, err
		}
		s.tool, s.version = t, v
	}
	return []tool.Tool{s.tool}, nil
}

// Close does nothing.
func (s *toolset) Close() error { return nil }
