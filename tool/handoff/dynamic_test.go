package handoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

func named(name string) tool.Tool {
	return tool.MustFunc(name, name+" tool", func(context.Context, struct{}) (string, error) { return name + " ran", nil })
}

// recordingTemplate builds a ReAct agent per call and records what it was
// asked to build.
type recordingTemplate struct {
	mu     sync.Mutex
	models []*scripted.Model
	instr  []string
	tools  [][]string
	steps  func() []scripted.Step
}

func (r *recordingTemplate) build(instruction string, tools []tool.Tool) (*graph.Graph[agent.State], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, t := range tools {
		names = append(names, tool.Name(t))
	}
	r.instr = append(r.instr, instruction)
	r.tools = append(r.tools, names)
	m := scripted.New(r.steps()...)
	r.models = append(r.models, m)
	opts := []agent.Option{agent.WithSystemPrompt("Base prompt. " + instruction)}
	if len(tools) > 0 {
		opts = append(opts, agent.WithTools(tools...))
	}
	return agent.NewReAct(m, opts...)
}

func TestDynamicAgentToolSelection(t *testing.T) {
	boundary := []tool.Tool{named("read_file"), named("search_code"), named("run_tests")}
	tests := []struct {
		name      string
		args      string
		wantTools []string
	}{
		{"tools left out: the whole boundary", `{"request":"audit"}`, []string{"read_file", "search_code", "run_tests"}},
		{"a subset, in boundary order", `{"request":"audit","tools":["run_tests","read_file"]}`, []string{"read_file", "run_tests"}},
		{"an empty list: no tools", `{"request":"audit","tools":[]}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTemplate{steps: func() []scripted.Step { return []scripted.Step{scripted.Reply("report")} }}
			dyn, err := handoff.NewDynamic("", "", rec.build, boundary)
			require.NoError(t, err)
			assert.Equal(t, handoff.DynamicName, tool.Name(dyn))
			r := tool.Invoke(context.Background(), dyn, model.ToolCall{ID: "d", Name: handoff.DynamicName, Arguments: json.RawMessage(tc.args)})
			require.False(t, r.IsError, r.Text())
			assert.Equal(t, "report", r.Text())
			require.Len(t, rec.tools, 1)
			assert.Equal(t, tc.wantTools, rec.tools[0])
			assert.Equal(t, "", rec.instr[0])
			// The agent was offered exactly those tools.
			req := rec.models[0].Requests()[0]
			var offered []string
			for _, d := range req.Tools {
				offered = append(offered, d.Name)
			}
			assert.Equal(t, tc.wantTools, offered)
			assert.Equal(t, "audit", req.Messages[len(req.Messages)-1].Text())
		})
	}
}

func TestDynamicAgentInsideARun(t *testing.T) {
	rec := &recordingTemplate{steps: func() []scripted.Step {
		return []scripted.Step{scripted.CallTools(scripted.Call("search_code", `{}`)), lastToolText("auditor: ")}
	}}
	dyn, err := handoff.NewDynamic("specialist", "Starts a specialist.", rec.build, []tool.Tool{named("search_code"), named("delete_repo")})
	require.NoError(t, err)
	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("s1", "specialist",
			`{"request":"Find authorization bypasses in handlers/","instruction":"Act as a security auditor.","tools":["search_code"]}`)),
		lastToolText("boss: "),
	)
	var paths [][]string
	g := parent(t, pm, []tool.Tool{dyn})
	for ev, err := range g.Stream(context.Background(), agent.Ask("audit"), graph.WithModes(graph.ModeEvents)) {
		require.NoError(t, err)
		if ev.Kind == graph.KindNodeStart && len(ev.Path) > 0 {
			paths = append(paths, ev.Path)
		}
		if ev.Kind == graph.KindDone {
			assert.Equal(t, "boss: auditor: search_code ran", agent.FinalText(ev.State.(agent.State).Messages))
		}
	}
	assert.Equal(t, []string{"Act as a security auditor."}, rec.instr)
	assert.Equal(t, [][]string{{"search_code"}}, rec.tools)
	assert.Equal(t, "Base prompt. Act as a security auditor.", rec.models[0].Requests()[0].Messages[0].Text())
	require.NotEmpty(t, paths)
	assert.Equal(t, []string{"specialist"}, paths[0])
}

func TestDynamicAgentBoundaryIsEnforced(t *testing.T) {
	rec := &recordingTemplate{steps: func() []scripted.Step { return []scripted.Step{scripted.Reply("x")} }}
	dyn, err := handoff.NewDynamic("", "", rec.build, []tool.Tool{named("read_file")})
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(dyn.Definition().InputSchema, &schema))
	items := schema["properties"].(map[string]any)["tools"].(map[string]any)["items"].(map[string]any)
	assert.Equal(t, []any{"read_file"}, items["enum"], "the schema enumerates the boundary")

	r := tool.Invoke(context.Background(), dyn, model.ToolCall{ID: "d", Name: handoff.DynamicName,
		Arguments: json.RawMessage(`{"request":"x","tools":["delete_repo"]}`)})
	require.True(t, r.IsError)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "$.tools[0]")
	assert.Empty(t, rec.tools, "no agent was built")

	// Without a boundary the model cannot name tools at all.
	none, err := handoff.NewDynamic("", "", rec.build, nil)
	require.NoError(t, err)
	r = tool.Invoke(context.Background(), none, model.ToolCall{ID: "d", Name: handoff.DynamicName,
		Arguments: json.RawMessage(`{"request":"x","tools":["read_file"]}`)})
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "$.tools")
}

func TestDynamicAgentTemplateFailure(t *testing.T) {
	dyn, err := handoff.NewDynamic[agent.State]("", "", func(string, []tool.Tool) (*graph.Graph[agent.State], error) {
		return nil, errors.New("no capacity")
	}, nil)
	require.NoError(t, err)
	r := tool.Invoke(context.Background(), dyn, model.ToolCall{ID: "d", Name: handoff.DynamicName, Arguments: json.RawMessage(`{"request":"x"}`)})
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "building the agent: no capacity")

	nilGraph, err := handoff.NewDynamic[agent.State]("", "", func(string, []tool.Tool) (*graph.Graph[agent.State], error) { return nil, nil }, nil)
	require.NoError(t, err)
	r = tool.Invoke(context.Background(), nilGraph, model.ToolCall{ID: "d", Name: handoff.DynamicName, Arguments: json.RawMessage(`{"request":"x"}`)})
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "the template returned no graph")
}

func TestNewDynamicRejectsBadSettings(t *testing.T) {
	tmpl := func(string, []tool.Tool) (*graph.Graph[agent.State], error) { return nil, nil }
	_, err := handoff.NewDynamic[agent.State]("", "", nil, nil)
	require.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.Contains(t, err.Error(), "template is nil")

	_, err = handoff.NewDynamic("", "", tmpl, []tool.Tool{named("a"), named("a")})
	require.ErrorIs(t, err, tool.ErrDuplicateTool)

	_, err = handoff.NewDynamic("", "", tmpl, []tool.Tool{nil})
	require.ErrorIs(t, err, tool.ErrInvalidTool)

	_, err = handoff.NewDynamic("", "", tmpl, nil, handoff.WithMaxDepth(-1))
	require.ErrorIs(t, err, tool.ErrInvalidTool)
}

// The arguments offered to the model can be narrowed: without the
// instruction and the tool choice, the model gives the request alone and
// every agent gets the whole boundary; descriptions can be replaced.
func TestDynamicAgentFields(t *testing.T) {
	boundary := []tool.Tool{named("read_file"), named("search_code")}
	rt := &recordingTemplate{steps: func() []scripted.Step { return []scripted.Step{scripted.Reply("done")} }}
	dyn, err := handoff.NewDynamic[agent.State](
		"", "", rt.build, boundary,
		handoff.WithoutInstruction(), handoff.WithoutToolChoice(),
		handoff.WithFieldDescriptions("What to audit, completely.", "", ""))
	require.NoError(t, err)
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(dyn.Definition().InputSchema, &schema))
	assert.Len(t, schema.Properties, 1)
	assert.Equal(t, "What to audit, completely.", schema.Properties["request"].Description)

	r := tool.Invoke(context.Background(), dyn, model.ToolCall{ID: "d1", Name: handoff.DynamicName, Arguments: json.RawMessage(`{"request":"audit"}`)})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, []string{""}, rt.instr)
	assert.Equal(t, [][]string{{"read_file", "search_code"}}, rt.tools)

	r = tool.Invoke(context.Background(), dyn, model.ToolCall{ID: "d2", Name: handoff.DynamicName, Arguments: json.RawMessage(`{"request":"audit","tools":[]}`)})
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "a field the schema does not offer is refused")

	_, err = handoff.New("w", "works", agentGraph(t), handoff.WithoutToolChoice())
	assert.ErrorContains(t, err, "are options of NewDynamic")
}

func agentGraph(t *testing.T) *graph.Graph[agent.State] {
	t.Helper()
	g, err := agent.NewReAct(scripted.New(scripted.Reply("x")))
	require.NoError(t, err)
	return g
}
