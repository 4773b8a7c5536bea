package tool

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func TestAddToolsForOneRun(t *testing.T) {
	pick, err := NewDeclaration(model.ToolDefinition{Name: "ui_pick", Description: "lets the user pick"})
	require.NoError(t, err)
	sets := []Toolset{NewStatic("agent", named("search"), named("write"))}

	// Added after the toolsets' own, under a run's context.
	ctx := ResolveWith(context.Background(), AddTools(named("extra"), pick))
	l, err := Resolve(ctx, sets)
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "write", "extra", "ui_pick"}, l.Names())
	assert.True(t, l.Executable("extra"))
	assert.False(t, l.Executable("ui_pick"), "declaration-only tools are the caller's")
	assert.False(t, l.ExecutesAll())
	assert.Equal(t, "added for the run", l.Source("extra"))
	tl, ok := l.Lookup("extra")
	require.True(t, ok)
	assert.Equal(t, "extra ran", Invoke(ctx, tl, model.ToolCall{ID: "1", Name: "extra", Arguments: []byte(`{"query":"q"}`)}).Text())

	// Without the run's context the agent has its own tools only.
	l, err = Resolve(context.Background(), sets)
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "write"}, l.Names())

	// The agent's own tools win over a run's tool of the same name, and
	// the first of two added tools with one name wins.
	other := MustFunc("search", "another search", func(context.Context, searchArgs) (string, error) { return "other ran", nil })
	l, err = Resolve(ResolveWith(context.Background(), AddTools(other, named("extra")), AddTools(named("extra", WithTitle("second")))), sets)
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "write", "extra"}, l.Names())
	assert.Equal(t, "the search tool", l.Definitions()[0].Description)
	tl, _ = l.Lookup("extra")
	assert.Empty(t, TitleOf(tl))

	// Filters and selectors apply to them as to the others.
	l, err = Resolve(ResolveWith(context.Background(), AddTools(named("extra"), named("hidden"))), sets,
		VisibleIf(DenyNames("hidden")),
		ExecutableIf(func(_ context.Context, t Tool) bool { return Name(t) != "extra" }),
		SelectWith(SelectorFunc(func(_ context.Context, ts []Tool) ([]Tool, error) {
			assert.Equal(t, []string{"search", "write", "extra"}, names(ts))
			return ts[1:], nil
		})))
	require.NoError(t, err)
	assert.Equal(t, []string{"write", "extra"}, l.Names())
	assert.False(t, l.Executable("extra"))
}

func TestAddToolsRefusesBadTools(t *testing.T) {
	sets := []Toolset{NewStatic("agent", named("search"))}
	_, err := Resolve(context.Background(), sets, AddTools(nil))
	require.ErrorIs(t, err, ErrInvalidTool)
	assert.Contains(t, err.Error(), "AddTools was given a nil tool")

	nameless, err := NewDeclaration(model.ToolDefinition{Name: "x"})
	require.NoError(t, err)
	nameless.def.Name = ""
	_, err = Resolve(context.Background(), sets, AddTools(nameless))
	require.ErrorIs(t, err, ErrInvalidTool)
	assert.Contains(t, err.Error(), "empty name")
}

// Instructions added for one run come after the tools' own, survive
// selection and With, and blank ones are left out.
func TestAddInstructionsForOneRun(t *testing.T) {
	guided := MustFunc("guided", "has guidance", func(context.Context, searchArgs) (string, error) { return "", nil },
		WithInstruction("Use guided first."))
	sets := []Toolset{NewStatic("agent", guided, named("plain"))}
	ctx := ResolveWith(context.Background(), AddInstructions("The user is in Paris.", "  "), AddInstructions("Be brief."))
	l, err := Resolve(ctx, sets)
	require.NoError(t, err)
	assert.Equal(t, "Use guided first.\n\nThe user is in Paris.\n\nBe brief.", l.Instructions())

	keepPlain := SelectorFunc(func(_ context.Context, tools []Tool) ([]Tool, error) { return tools[1:], nil })
	l, err = Resolve(ctx, sets, SelectWith(keepPlain))
	require.NoError(t, err)
	assert.Equal(t, "The user is in Paris.\n\nBe brief.", l.Instructions(), "no tool instruction left, the run's remain")
	l2, err := l.With(named("more"), "fixed")
	require.NoError(t, err)
	assert.Equal(t, l.Instructions(), l2.Instructions())

	l, err = Resolve(context.Background(), sets)
	require.NoError(t, err)
	assert.Equal(t, "Use guided first.", l.Instructions())
}
