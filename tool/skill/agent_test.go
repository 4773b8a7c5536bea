package skill_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/skill"
)

// An agent whose model loads a skill: the system prompt lists the skills,
// and the tool message that answers skill_load holds the skill's body.
func TestAnAgentLoadsASkill(t *testing.T) {
	ts, err := skill.Tools(open(t, sampleTree(t)))
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", skill.LoadName, `{"name":"pdf-tools"}`)),
		scripted.CallTools(scripted.CallWithID("c2", skill.ReadFileName, `{"name":"pdf-tools","path":"scripts/extract.py"}`)),
		scripted.Reply("I ran the extraction."),
	)
	a, err := agent.NewReAct(m, agent.WithSystemPrompt("You help with documents."), agent.WithToolsets(ts))
	require.NoError(t, err)

	out, err := a.Invoke(context.Background(), agent.Ask("get the text out of report.pdf"))
	require.NoError(t, err)
	assert.Equal(t, "I ran the extraction.", agent.FinalText(out.Messages))

	msgs := out.Messages
	require.Len(t, msgs, 6)
	assert.Equal(t, model.RoleTool, msgs[2].Role)
	assert.Contains(t, msgs[2].Text(), "# PDF\n\nRun scripts/extract.py FILE.")
	assert.Contains(t, msgs[2].Text(), "- scripts/extract.py (27 bytes)")
	assert.Equal(t, "import sys\nprint(sys.argv)\n", msgs[4].Text())

	reqs := m.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, model.RoleSystem, reqs[0].Messages[0].Role)
	system := reqs[0].Messages[0].Text()
	assert.Contains(t, system, "You help with documents.")
	assert.Contains(t, system, "- pdf-tools: Extract text from PDF files.")
	assert.NotContains(t, system, "Run scripts/extract.py", "the body is not in the system prompt")
	assert.Equal(t, []string{skill.LoadName, skill.ReadFileName}, defNames(reqs[0].Tools))
}

func defNames(defs []model.ToolDefinition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}
