package handoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

type roleKey struct{}

// A dynamic agent's boundary can come with each run: here, from the role
// of the user the run serves.
func TestDynamicToolsetBoundaryPerRun(t *testing.T) {
	readFile, deleteRepo := named("read_file"), named("delete_repo")
	byRole := func(ctx context.Context) ([]tool.Tool, error) {
		switch ctx.Value(roleKey{}) {
		case "admin":
			return []tool.Tool{readFile, deleteRepo}, nil
		case "user":
			return []tool.Tool{readFile}, nil
		}
		return nil, errors.New("no role")
	}
	rec := &recordingTemplate{steps: func() []scripted.Step { return []scripted.Step{scripted.Reply("done")} }}
	set, err := handoff.NewDynamicToolset("specialist", "", rec.build, byRole)
	require.NoError(t, err)
	assert.Equal(t, "specialist", set.Name())

	run := func(role string) (offered []any, answer string) {
		t.Helper()
		pm := scripted.New(
			scripted.Func(func(req *model.Request) (*model.Response, error) {
				require.Len(t, req.Tools, 1)
				var schema map[string]any
				require.NoError(t, json.Unmarshal(req.Tools[0].InputSchema, &schema))
				offered = schema["properties"].(map[string]any)["tools"].(map[string]any)["items"].(map[string]any)["enum"].([]any)
				return &model.Response{Message: model.Assistant("", model.ToolCall{ID: "s1", Name: "specialist",
					Arguments: []byte(`{"request":"clean up","tools":["delete_repo"]}`)})}, nil
			}),
			lastToolText(""),
		)
		g, err := agent.NewReAct(pm, agent.WithToolsets(set))
		require.NoError(t, err)
		out, err := g.Invoke(context.WithValue(context.Background(), roleKey{}, role), agent.Ask("tidy the repo"))
		require.NoError(t, err)
		return offered, agent.FinalText(out.Messages)
	}

	offered, answer := run("admin")
	assert.Equal(t, []any{"read_file", "delete_repo"}, offered)
	assert.Equal(t, "done", answer)
	require.Len(t, rec.tools, 1)
	assert.Equal(t, []string{"delete_repo"}, rec.tools[0])

	offered, answer = run("user")
	assert.Equal(t, []any{"read_file"}, offered)
	assert.Contains(t, answer, "$.tools[0]", "a tool outside the user's boundary is refused")
	assert.Len(t, rec.tools, 1, "no agent was built for the refused call")

	// A failing capabilities function fails the run's resolve, named.
	g, err := agent.NewReAct(scripted.New(scripted.Reply("x")), agent.WithToolsets(set))
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Ask("hi"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `dynamic agent "specialist": the run's capabilities: no role`)
}

func TestDynamicToolsetRefusesBadArguments(t *testing.T) {
	caps := func(context.Context) ([]tool.Tool, error) { return nil, nil }
	_, err := handoff.NewDynamicToolset[agent.State]("x", "", nil, caps)
	require.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.Contains(t, err.Error(), "template is nil")
	rec := &recordingTemplate{}
	_, err = handoff.NewDynamicToolset("x", "", rec.build, nil)
	require.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.Contains(t, err.Error(), "capabilities function is nil")

	// A boundary with two tools of one name fails that run's resolve.
	dup := func(context.Context) ([]tool.Tool, error) { return []tool.Tool{named("a"), named("a")}, nil }
	set, err := handoff.NewDynamicToolset("x", "", rec.build, dup)
	require.NoError(t, err)
	_, err = set.Tools(context.Background())
	require.ErrorIs(t, err, tool.ErrDuplicateTool)
	require.NoError(t, set.Close())
}
