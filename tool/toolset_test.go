package tool

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func named(name string, opts ...Option) *FuncTool[searchArgs, string] {
	return MustFunc(name, "the "+name+" tool", func(context.Context, searchArgs) (string, error) { return name + " ran", nil }, opts...)
}

type closer struct {
	Toolset
	closed *int
	err    error
}

func (c closer) Close() error { *c.closed++; return c.err }

type failingSet struct{}

func (failingSet) Name() string                          { return "flaky" }
func (failingSet) Tools(context.Context) ([]Tool, error) { return nil, errors.New("server gone") }
func (failingSet) Close() error                          { return nil }

type ctxKey struct{}

// roleSet resolves its tools from the run's context.
type roleSet struct{}

func (roleSet) Name() string { return "by-role" }
func (roleSet) Tools(ctx context.Context) ([]Tool, error) {
	if ctx.Value(ctxKey{}) == "admin" {
		return []Tool{named("audit"), named("purge")}, nil
	}
	return []Tool{named("audit")}, nil
}
func (roleSet) Close() error { return nil }

func TestStaticAndCombine(t *testing.T) {
	ctx := context.Background()
	s := NewStatic("basic", named("a"), named("b"))
	assert.Equal(t, "basic", s.Name())
	tools, err := s.Tools(ctx)
	require.NoError(t, err)
	assert.Len(t, tools, 2)
	tools[0] = nil
	again, _ := s.Tools(ctx)
	assert.NotNil(t, again[0], "callers cannot change the set")

	closed := 0
	c := Combine("all", closer{Toolset: s, closed: &closed}, closer{Toolset: NewStatic("more", named("c")), closed: &closed, err: errors.New("close failed")})
	tools, err = c.Tools(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, names(tools))
	err = c.Close()
	assert.Equal(t, 2, closed)
	assert.ErrorContains(t, err, `toolset "more": close failed`)

	dup := Combine("all", NewStatic("first", named("a")), NewStatic("second", named("a")))
	_, err = dup.Tools(ctx)
	var derr *DuplicateToolError
	require.ErrorAs(t, err, &derr)
	assert.ErrorIs(t, err, ErrDuplicateTool)
	assert.Equal(t, &DuplicateToolError{Name: "a", First: "first", Second: "second"}, derr)

	_, err = Combine("x", failingSet{}).Tools(ctx)
	assert.ErrorContains(t, err, `toolset "flaky": server gone`)
}

func names(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = Name(t)
	}
	return out
}

func TestFilters(t *testing.T) {
	ctx := context.Background()
	s := NewStatic("s", named("read"), named("write"), named("delete"))
	for name, tc := range map[string]struct {
		set  Toolset
		want []string
	}{
		"include":       {Include(s, "read", "delete", "absent"), []string{"read", "delete"}},
		"exclude":       {Exclude(s, "delete"), []string{"read", "write"}},
		"allow-list":    {Filter(s, AllowNames("write")), []string{"write"}},
		"predicate":     {Filter(s, func(_ context.Context, t Tool) bool { return MetadataOf(t).ReadOnly || Name(t) == "read" }), []string{"read"}},
		"nil predicate": {Filter(s, nil), []string{"read", "write", "delete"}},
	} {
		t.Run(name, func(t *testing.T) {
			tools, err := tc.set.Tools(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.want, names(tools))
			assert.Equal(t, "s", tc.set.Name())
		})
	}
	_, err := Include(failingSet{}, "x").Tools(ctx)
	assert.Error(t, err)
}

func TestPrefixedToolsAreCallable(t *testing.T) {
	ctx := context.Background()
	gh := WithPrefix(NewStatic("github", named("search", WithMetadata(Metadata{ReadOnly: true}), WithInstruction("Search GitHub."), WithTitle("Search GitHub"))), "gh_")
	tools, err := gh.Tools(ctx)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	renamedTool := tools[0]
	assert.Equal(t, "gh_search", renamedTool.Definition().Name)
	assert.Equal(t, "the search tool", renamedTool.Definition().Description)
	assert.True(t, MetadataOf(renamedTool).ReadOnly, "metadata is kept")
	assert.Equal(t, "Search GitHub", TitleOf(renamedTool), "the title is kept")
	assert.Empty(t, TitleOf(named("plain")))
	assert.Empty(t, TitleOf(nil))
	assert.Equal(t, "Search GitHub.", CollectInstructions(tools))

	r := Invoke(ctx, renamedTool, model.ToolCall{ID: "1", Name: "gh_search", Arguments: json.RawMessage(`{"query":"go"}`)})
	assert.Equal(t, "search ran", r.Text())
	r = Invoke(ctx, renamedTool, model.ToolCall{ID: "1", Name: "gh_search", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), `tool "gh_search"`, "errors name the tool as the model knows it")

	// Streaming survives a rename.
	st, err := NewStreamFunc("stream", "", func(context.Context, searchArgs) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) { _ = yield("a", nil) && yield("b", nil) }
	})
	require.NoError(t, err)
	rs := Rename(st, "x_stream")
	_, isStreamer := rs.(Streamer)
	assert.True(t, isStreamer)
	var pieces int
	r = Invoke(ctx, rs, model.ToolCall{ID: "1", Name: "x_stream", Arguments: json.RawMessage(`{"query":"q"}`)}, WithProgress(func(Update) { pieces++ }))
	assert.Equal(t, "ab", r.Text())
	assert.Equal(t, 2, pieces)
	_, isStreamer = Rename(named("plain"), "p").(Streamer)
	assert.False(t, isStreamer)

	// A renamed foreign tool is still validated and called.
	pt := &plainTool{schema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}}}`)}
	r = Invoke(ctx, Rename(pt, "other"), model.ToolCall{ID: "1", Name: "other", Arguments: json.RawMessage(`{"count":"2"}`)})
	assert.JSONEq(t, `{"count":2}`, r.Text())
}

func TestResolve(t *testing.T) {
	decl, err := NewDeclaration(model.ToolDefinition{Name: "client_pick"})
	require.NoError(t, err)
	sets := []Toolset{
		NewStatic("local", named("search", WithInstruction("Prefer search over guessing.")), named("write"), decl),
		roleSet{},
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "admin")

	l, err := Resolve(ctx, sets,
		VisibleIf(DenyNames("write")),
		ExecutableIf(func(_ context.Context, t Tool) bool { return Name(t) != "purge" }),
	)
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "client_pick", "audit", "purge"}, l.Names())
	assert.Equal(t, 4, l.Len())
	defs := l.Definitions()
	require.Len(t, defs, 4)
	assert.Equal(t, "the search tool", defs[0].Description)
	assert.Equal(t, "Prefer search over guessing.", l.Instructions())

	_, ok := l.Lookup("write")
	assert.False(t, ok, "invisible tools are not in the list")
	tl, ok := l.Lookup("audit")
	require.True(t, ok)
	assert.Equal(t, "audit", Name(tl))
	assert.True(t, l.Executable("search"))
	assert.False(t, l.Executable("client_pick"), "declaration-only tools are the caller's")
	assert.False(t, l.Executable("purge"), "ExecutableIf leaves it to the caller")
	assert.False(t, l.Executable("ghost"))
	assert.Equal(t, "by-role", l.Source("purge"))
	assert.Equal(t, "", l.Source("ghost"))
	assert.False(t, l.ExecutesAll(), "the caller executes client_pick and purge")

	// A selector that leaves out the caller's tools leaves a list the
	// framework runs whole.
	l, err = Resolve(ctx, sets, ExecutableIf(func(_ context.Context, t Tool) bool { return Name(t) != "purge" }),
		SelectWith(SelectorFunc(func(_ context.Context, ts []Tool) ([]Tool, error) {
			return slices.DeleteFunc(ts, func(t Tool) bool { return Name(t) == "purge" || Name(t) == "client_pick" }), nil
		})))
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "write", "audit"}, l.Names())
	assert.True(t, l.ExecutesAll())
	l, err = Resolve(ctx, []Toolset{NewStatic("local", named("search"), decl)})
	require.NoError(t, err)
	assert.False(t, l.ExecutesAll(), "declaration-only tools are the caller's")

	// Tools are resolved from the run's context.
	l, err = Resolve(context.Background(), sets)
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "write", "client_pick", "audit"}, l.Names())

	unknown := l.Unknown("serch")
	assert.Equal(t, CodeUnknownTool, unknown.ErrorCode)
	assert.Equal(t, `unknown tool "serch". Did you mean "search"? Available tools: search, write, client_pick, audit.`, unknown.Text())
}

func TestResolveErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Resolve(ctx, []Toolset{NewStatic("one", named("a")), NewStatic("two", named("b"), named("a"))})
	var derr *DuplicateToolError
	require.ErrorAs(t, err, &derr)
	assert.Equal(t, "one", derr.First)
	assert.Equal(t, "two", derr.Second)
	assert.Equal(t, `tool: duplicate tool name "a": provided by toolset "one" and by toolset "two"`, err.Error())

	// A duplicate that is filtered out is no conflict.
	_, err = Resolve(ctx, []Toolset{NewStatic("one", named("a")), NewStatic("two", named("a"))}, VisibleIf(func(_ context.Context, t Tool) bool { return false }))
	assert.NoError(t, err)

	_, err = Resolve(ctx, []Toolset{failingSet{}})
	assert.ErrorContains(t, err, `resolve toolset "flaky": server gone`)
	_, err = Resolve(ctx, []Toolset{NewStatic("nils", nil)})
	assert.ErrorIs(t, err, ErrInvalidTool)
	l, err := Resolve(ctx, []Toolset{nil})
	require.NoError(t, err)
	assert.Zero(t, l.Len())
}

func TestSuggest(t *testing.T) {
	avail := []string{"get_weather", "get_time", "search_docs", "send_email", "calculator"}
	cases := map[string][]string{
		"get_wether":  {"get_weather"},
		"GET_TIME":    {"get_time"},
		"search":      {"search_docs"},
		"calc":        {"calculator"},
		"get_tim":     {"get_time"},
		"send_emails": {"send_email"},
		"zzz":         {},
		"":            {},
	}
	for in, want := range cases {
		assert.Equal(t, want, Suggest(in, avail, 3), in)
	}
	assert.Equal(t, []string{"ab", "abc"}, Suggest("ab", []string{"abc", "ab", "xyz"}, 2))
	assert.Len(t, Suggest("get", avail, 1), 1)

	r := UnknownTool("x", nil)
	assert.Equal(t, `unknown tool "x". No tools are available.`, r.Text())
}

func TestCollectInstructions(t *testing.T) {
	tools := []Tool{
		named("a", WithInstruction("  First.  ")),
		named("b"),
		nil,
		named("c", WithInstruction("Second.")),
	}
	assert.Equal(t, "First.\n\nSecond.", CollectInstructions(tools))
	assert.Equal(t, "", CollectInstructions([]Tool{named("x")}))
}

func TestResolveWithSelector(t *testing.T) {
	ctx := context.Background()
	set := NewStatic("all", named("weather"), named("stocks"), named("news"), named("calendar"))
	// A stand-in for tool search: keep the tools whose name the query mentions.
	query := "weather and news please"
	search := SelectorFunc(func(_ context.Context, tools []Tool) ([]Tool, error) {
		var out []Tool
		for i := len(tools) - 1; i >= 0; i-- { // order of the answer does not matter
			if strings.Contains(query, Name(tools[i])) {
				out = append(out, tools[i])
			}
		}
		return out, nil
	})
	l, err := Resolve(ctx, []Toolset{set}, VisibleIf(DenyNames("calendar")), SelectWith(search))
	require.NoError(t, err)
	assert.Equal(t, []string{"weather", "news"}, l.Names(), "the list keeps its order")
	_, ok := l.Lookup("stocks")
	assert.False(t, ok)
	assert.True(t, l.Executable("news"))

	_, err = Resolve(ctx, []Toolset{set}, SelectWith(SelectorFunc(func(context.Context, []Tool) ([]Tool, error) {
		return []Tool{named("invented")}, nil
	})))
	assert.ErrorContains(t, err, `selector returned tool "invented", which it was not given`)
	_, err = Resolve(ctx, []Toolset{set}, SelectWith(SelectorFunc(func(context.Context, []Tool) ([]Tool, error) {
		return nil, errors.New("embedding service down")
	})))
	assert.ErrorContains(t, err, "embedding service down")

	// IgnoreSelectors keeps the filters and skips the selectors.
	l, err = Resolve(ctx, []Toolset{set}, VisibleIf(DenyNames("calendar")), SelectWith(SelectorFunc(func(context.Context, []Tool) ([]Tool, error) {
		t.Error("the selector ran")
		return nil, nil
	})), IgnoreSelectors())
	require.NoError(t, err)
	assert.Equal(t, []string{"weather", "stocks", "news"}, l.Names())
}

// logged is a wrapper from outside the package: it adds behaviour to Call
// and exposes the wrapped tool through Unwrap.
type logged struct {
	Tool
	calls int
}

func (l *logged) Call(ctx context.Context, id string, args json.RawMessage) (Result, error) {
	l.calls++
	return l.Tool.Call(ctx, id, args)
}

func (l *logged) Unwrap() Tool { return l.Tool }

func TestCapabilitiesThroughWrappers(t *testing.T) {
	inner := named("inner", WithMetadata(Metadata{Sequential: true, ConcurrencyGroup: "db"}), WithLongRunning(), WithInstruction("Use sparingly."))
	w := &logged{Tool: inner}
	assert.Equal(t, Metadata{Sequential: true, ConcurrencyGroup: "db"}, MetadataOf(w))
	assert.True(t, IsLongRunning(w))
	assert.Equal(t, "Use sparingly.", CollectInstructions([]Tool{w}))
	sp, ok := As[SchemaProvider](w)
	require.True(t, ok)
	assert.Same(t, inner.CompiledSchema(), sp.CompiledSchema())
	_, ok = As[Streamer](w)
	assert.False(t, ok)

	// Invoke calls the wrapper's own Call: its behaviour is not bypassed.
	r := Invoke(context.Background(), w, model.ToolCall{ID: "1", Name: "inner", Arguments: json.RawMessage(`{"query":"q"}`)})
	assert.Equal(t, "inner ran", r.Text())
	assert.Equal(t, 1, w.calls)
	r = Invoke(context.Background(), w, model.ToolCall{ID: "1", Name: "inner", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Equal(t, 1, w.calls, "invalid arguments never reach the wrapper")
	assert.Equal(t, MetadataOf(named("plain")), Metadata{})
}

func TestRenamedStreamerCalledDirectly(t *testing.T) {
	st := MustStreamFunc("count", "", func(context.Context, searchArgs) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) { _ = yield(1, nil) && yield(2, nil) }
	})
	rs := Rename(st, "counter").(Streamer)
	var texts []string
	for piece, err := range rs.Stream(context.Background(), "1", json.RawMessage(`{"query":"q"}`)) {
		require.NoError(t, err)
		texts = append(texts, piece.Text())
	}
	assert.Equal(t, []string{"1", "2"}, texts)
	r, err := rs.Call(context.Background(), "1", json.RawMessage(`{"query":"q"}`))
	require.NoError(t, err)
	assert.Equal(t, `12`, r.Text())
	assert.Equal(t, "counter", Name(rs))
	assert.NoError(t, NewStatic("s").Close())
	assert.Equal(t, "all", Combine("all").Name())
}

// Nil sets and nil tools inside combined, filtered and prefixed sets are
// reported as Resolve reports them, never a panic.
func TestToolsetsReportNilTools(t *testing.T) {
	ctx := context.Background()
	nils := NewStatic("nils", named("a"), nil)
	for name, set := range map[string]Toolset{
		"combined": Combine("all", NewStatic("one", named("b")), nils),
		"filtered": Include(nils, "a"),
		"excluded": Exclude(nils, "b"),
		"prefixed": WithPrefix(nils, "x_"),
	} {
		_, err := Resolve(ctx, []Toolset{set})
		assert.ErrorIs(t, err, ErrInvalidTool, name)
	}
	c := Combine("all", nil, NewStatic("one", named("b")), nil)
	l, err := Resolve(ctx, []Toolset{c})
	require.NoError(t, err, "nil sets are skipped")
	assert.Equal(t, []string{"b"}, l.Names())
	assert.NoError(t, c.Close())
}

func TestFixedToolsetsIgnoreTheResolveOptions(t *testing.T) {
	ctx := context.Background()
	app := NewStatic("app", named("search"), named("delete"))
	own := Fixed(NewStatic("framework", named("transfer")))
	var shown []string
	sel := SelectorFunc(func(_ context.Context, tools []Tool) ([]Tool, error) {
		shown = nil
		for _, x := range tools {
			shown = append(shown, Name(x))
		}
		return tools[:1], nil
	})
	l, err := Resolve(ctx, []Toolset{app, own},
		VisibleIf(AllowNames("search", "delete")), ExecutableIf(AllowNames("delete")), SelectWith(sel))
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "transfer"}, l.Names())
	assert.Equal(t, []string{"search", "delete"}, shown, "the selector is not shown the fixed tools")
	assert.True(t, l.Executable("transfer"))
	assert.False(t, l.Executable("search"))
	assert.Equal(t, "framework", l.Source("transfer"))

	_, err = Resolve(ctx, []Toolset{own, Fixed(NewStatic("again", named("transfer")))})
	assert.ErrorIs(t, err, ErrDuplicateTool, "fixed tools still have unique names")

	_, err = Resolve(ctx, []Toolset{app, own}, SelectWith(SelectorFunc(func(context.Context, []Tool) ([]Tool, error) {
		return []Tool{named("transfer")}, nil
	})))
	assert.ErrorContains(t, err, `selector returned tool "transfer", which it was not given`)
	assert.Nil(t, Fixed(nil))
}

// Filters add up: two VisibleIf options both apply, and so do the options
// ResolveWith puts in the run's context, on top of Resolve's own.
func TestFiltersAddUpAcrossOptionsAndTheRunContext(t *testing.T) {
	set := NewStatic("all", named("search"), named("delete"), named("send"), named("read"))
	fixed := Fixed(NewStatic("framework", named("transfer")))
	l, err := Resolve(context.Background(), []Toolset{set}, VisibleIf(DenyNames("delete")), VisibleIf(DenyNames("send")))
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "read"}, l.Names())

	ctx := ResolveWith(context.Background(), VisibleIf(DenyNames("search")))
	ctx = ResolveWith(ctx, ExecutableIf(DenyNames("read")))
	assert.Len(t, RunResolveOptions(ctx), 2)
	l, err = Resolve(ctx, []Toolset{set, fixed}, VisibleIf(DenyNames("delete")))
	require.NoError(t, err)
	assert.Equal(t, []string{"send", "read", "transfer"}, l.Names(), "the run's filters and Resolve's own")
	assert.False(t, l.Executable("read"))
	assert.True(t, l.Executable("send"))
	assert.Nil(t, RunResolveOptions(context.Background()))
}

func TestToolListWith(t *testing.T) {
	ctx := context.Background()
	l, err := Resolve(ctx, []Toolset{NewStatic("app", named("a"), named("b"))}, ExecutableIf(AllowNames("a")))
	require.NoError(t, err)
	w, err := l.With(named("own"), "node")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "own"}, w.Names())
	assert.True(t, w.Executable("own"))
	assert.False(t, w.Executable("b"), "the others keep what they were")
	assert.Equal(t, "node", w.Source("own"))
	assert.Equal(t, []string{"a", "b"}, l.Names(), "l is unchanged")
	_, err = w.With(named("a"), "again")
	assert.ErrorIs(t, err, ErrDuplicateTool)
	_, err = l.With(nil, "x")
	assert.ErrorIs(t, err, ErrInvalidTool)

	assert.True(t, IsStatic(NewStatic("s"), Fixed(NewStatic("f"))))
	assert.False(t, IsStatic(NewStatic("s"), Combine("c")))
	assert.True(t, IsStatic())
}
