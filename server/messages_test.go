package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/runs"
)

// Messages in each form clients send become the same Trellis messages,
// and a Trellis conversation is served as LangChain messages that read
// back as they were.
func TestMessagesReadInEveryFormAndRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"messages":[{"type":"human","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"messages":{"type":"human","content":[{"type":"text","text":"hi"}]}}`,
		`{"messages":"hi"}`,
	} {
		out, err := stateIn(json.RawMessage(in))
		require.NoError(t, err, in)
		var st struct{ Messages []model.Message }
		require.NoError(t, json.Unmarshal(out, &st), in)
		assert.Equal(t, []model.Message{model.User("hi")}, st.Messages, in)
	}

	conv := []model.Message{
		model.User("find lamps"),
		model.Assistant("looking", model.ToolCall{ID: "c1", Name: "find", Arguments: json.RawMessage(`{"q":"lamp"}`)}),
		model.ToolMessage("c1", "find", true, model.TextPart("no lamps")),
		{Role: model.RoleAssistant, ID: "m4", Content: []model.Part{model.TextPart("see "), model.ImageURLPart("", "https://example.invalid/x.png")},
			Metadata: map[string]string{"k": "v"}},
	}
	raw, err := json.Marshal(map[string]any{"messages": conv, "other": 1})
	require.NoError(t, err)
	served := stateOut(raw)
	var lc struct {
		Messages []map[string]any `json:"messages"`
		Other    int              `json:"other"`
	}
	require.NoError(t, json.Unmarshal(served, &lc))
	assert.Equal(t, 1, lc.Other)
	assert.Equal(t, "human", lc.Messages[0]["type"])
	assert.Equal(t, "ai", lc.Messages[1]["type"])
	assert.Equal(t, map[string]any{"q": "lamp"}, lc.Messages[1]["tool_calls"].([]any)[0].(map[string]any)["args"])
	assert.Equal(t, "error", lc.Messages[2]["status"])
	assert.Equal(t, "find", lc.Messages[2]["name"])

	back, err := stateIn(served)
	require.NoError(t, err)
	var st struct{ Messages []model.Message }
	require.NoError(t, json.Unmarshal(back, &st))
	assert.Equal(t, conv, st.Messages, "served messages read back as they were")
}

func TestMessagesInABadFormAreRefusedByPosition(t *testing.T) {
	for in, says := range map[string]string{
		`{"messages":[{"type":"human","content":"a"},{"type":"robot","content":"b"}]}`: `message 1: a message's type or role "robot"`,
		`{"messages":[{"type":"human","content":5}]}`:                                  "message 0: a message's content",
		`{"messages":[{"type":"ai","tool_calls":"x"}]}`:                                "tool_calls",
		`{"messages":7}`: "not a list",
	} {
		_, err := stateIn(json.RawMessage(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), says, in)
	}
}

// The drawable graph names nodes by their names (not the chart's
// identifiers) and marks conditional edges.
func TestDrawableGraphIsReadFromTheMermaidChart(t *testing.T) {
	info := runs.GraphInfo{Nodes: []string{"a-b", "end"}, Mermaid: "---\ntitle: g\n---\nflowchart TD\n" +
		"\t__start__([start]):::first\n\ta_b(\"a-b\")\n\tsubgraph end_2 [\"end\"]\n\t\tend_2___start__([start]):::first\n\t\tend_2_x(\"x\")\n\t\tend_2___start__ --> end_2_x\n\tend\n" +
		"\t__start__ --> a_b\n\ta_b -.->|\"end\"| end_2\n\tend_2 --> __end__\n\t__end__([end]):::last\n\tclassDef first fill:#eee\n"}
	g := drawable(info)
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	assert.Equal(t, []string{"__start__", "a-b", "end", "__end__"}, ids)
	assert.Equal(t, []drawEdge{
		{Source: "__start__", Target: "a-b"},
		{Source: "a-b", Target: "end", Data: "end", Conditional: true},
		{Source: "end", Target: "__end__"},
	}, g.Edges)
}

func FuzzStateIn(f *testing.F) {
	f.Add(`{"messages":[{"type":"human","content":"hi"}]}`)
	f.Add(`{"messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}],"tool_calls":[{"id":"1","name":"f","args":"{}"}]}]}`)
	f.Add(`{"messages":"x","n":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, err := stateIn(json.RawMessage(in))
		if err != nil {
			return
		}
		if json.Valid([]byte(in)) && !json.Valid(out) {
			t.Fatalf("valid input %q became invalid JSON %q", in, out)
		}
		_ = stateOut(out)
	})
}

func FuzzParseModes(f *testing.F) {
	f.Add(`["values","messages-tuple"]`)
	f.Add(`"debug"`)
	f.Fuzz(func(t *testing.T, in string) {
		modes, err := parseModes(json.RawMessage(in))
		if err == nil && len(modes) == 0 {
			t.Fatalf("%q: no error and no modes", in)
		}
	})
}
