package knowledge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/knowledge"
)

func call(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	return tool.Invoke(context.Background(), tl, model.ToolCall{ID: "call-1", Name: tool.Name(tl), Arguments: json.RawMessage(args)})
}

func TestSearchToolOutput(t *testing.T) {
	kb := newKB(t)
	add(t, kb, drinks...)
	search, err := knowledge.SearchTool(kb, knowledge.WithDescription("Notes on drinks"))
	require.NoError(t, err)
	def := search.Definition()
	assert.Equal(t, knowledge.SearchName, def.Name)
	assert.True(t, strings.HasPrefix(def.Description, "Notes on drinks. Returns the passages"), def.Description)
	assert.Contains(t, def.Description, "cite the ones you use")
	assert.Contains(t, def.Description, "Matching is by words")
	assert.JSONEq(t, `{"type":"object","properties":{
		"query":{"type":"string","description":"What to search for: the words the passages would contain","minLength":1},
		"limit":{"type":"integer","description":"How many passages to return at most (default 5)","minimum":1}},
		"required":["query"],"additionalProperties":false}`, string(def.InputSchema))
	meta := tool.MetadataOf(search)
	assert.True(t, meta.ReadOnly && meta.SearchOrRead && meta.ConcurrencySafe)

	out := call(t, search, `{"query":"green degrees","limit":3}`)
	require.False(t, out.IsError, "%v", out.Content)
	assert.Equal(t, `[1] Tea — drinks/tea.md#tea
Section: Tea
Green tea is brewed at 80 degrees; black tea at 95 degrees.

[2] Coffee — drinks/coffee.md#coffee
Section: Coffee
Espresso is brewed under pressure, at about 93 degrees.

[3] water — basics/water.txt#L1
Water boils at 100 degrees at sea level.`, out.Content[0].Text)
	details, ok := out.Details.([]knowledge.Result)
	require.True(t, ok)
	assert.Len(t, details, 3)

	out = call(t, search, `{"query":"absinthe"}`)
	require.False(t, out.IsError)
	assert.Equal(t, `No passages match "absinthe". Search with other words.`, out.Content[0].Text)
	// A huge query that matches nothing is not echoed whole.
	out = call(t, search, `{"query":"`+strings.Repeat("zq ", 10000)+`"}`)
	require.False(t, out.IsError)
	assert.Less(t, len(out.Content[0].Text), 400)
	assert.Contains(t, out.Content[0].Text, "…")

	// The limit is capped.
	kb2 := newKB(t, knowledge.WithChunkSize(120), knowledge.WithMaxPerDocument(0), knowledge.WithMergeAdjacent(false))
	add(t, kb2, manual(10))
	capped, err := knowledge.SearchTool(kb2, knowledge.WithMaxLimit(2), knowledge.WithName("manual_search"))
	require.NoError(t, err)
	out = call(t, capped, `{"query":"alpha","limit":9}`)
	assert.Equal(t, 2, strings.Count(out.Content[0].Text, "Manual — manual#manual"), out.Content[0].Text)
	assert.Equal(t, "manual_search", capped.Definition().Name)

	_, err = knowledge.SearchTool(nil, knowledge.WithMaxLimit(0), knowledge.WithFilterKeys())
	assert.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.ErrorContains(t, err, "WithMaxLimit: n must be at least 1, not 0; WithFilterKeys: no keys; the knowledge base is nil")
}

func TestFormat(t *testing.T) {
	assert.Equal(t, "", knowledge.Format(nil))
	assert.Equal(t, "[1] T — id\ntext\n\n[2] T — src.md#b\nSection: A › B\nmore\n\n[3] U — main.go#L7\ncode", knowledge.Format([]knowledge.Result{
		{DocumentID: "id", Title: "T", Text: "text"},
		{DocumentID: "x", Title: "T", Source: "src.md", Headings: []string{"A", "B"}, Text: "more"},
		{DocumentID: "y", Title: "U", Source: "main.go", Text: "code", Line: 7},
	}))
}

func TestAgenticSchema(t *testing.T) {
	kb := newKB(t)
	add(t, kb, drinks...)
	add(t, kb, knowledge.Doc{ID: "internal", Source: "drinks/secret.md", Text: "# Secret\n\nA secret recipe.", Metadata: map[string]string{"kind": "hot", "owner": "ops"}})
	search, err := knowledge.SearchTool(kb, knowledge.WithAgentic(), knowledge.WithFilterKeys("kind", "lang"))
	require.NoError(t, err)
	def := search.Definition()
	assert.Contains(t, def.Description, "Narrow a search with filter")
	var schema struct {
		Properties struct {
			Filter struct {
				Description string                     `json:"description"`
				Properties  map[string]json.RawMessage `json:"properties"`
			} `json:"filter"`
			Sources struct {
				Description string `json:"description"`
			} `json:"sources"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(def.InputSchema, &schema))
	assert.Equal(t, []string{"kind"}, keysOf(schema.Properties.Filter.Properties), "owner is not offered; lang is in no document")
	assert.JSONEq(t, `{"type":"string","enum":["cold","hot"]}`, string(schema.Properties.Filter.Properties["kind"]))
	assert.Contains(t, schema.Properties.Filter.Description, "The keys and their values: kind (cold, hot)")
	assert.Contains(t, schema.Properties.Sources.Description,
		"The sources: basics/water.txt, drinks/coffee.md, drinks/lemonade.md, drinks/secret.md, drinks/tea.md")

	out := call(t, search, `{"query":"degrees","filter":{"kind":"cold"}}`)
	require.False(t, out.IsError, "%v", out.Content)
	assert.Equal(t, "[1] water — basics/water.txt#L1\nWater boils at 100 degrees at sea level.", out.Content[0].Text)
	out = call(t, search, `{"query":"brewed","sources":["drinks/c*"]}`)
	assert.True(t, strings.HasPrefix(out.Content[0].Text, "[1] Coffee — drinks/coffee.md#coffee\n"), out.Content[0].Text)
	assert.NotContains(t, out.Content[0].Text, "[2]")
	out = call(t, search, `{"query":"espresso","filter":{"kind":"cold"},"sources":["drinks/"]}`)
	assert.Equal(t, `No passages match "espresso" with the filter kind=cold in the sources drinks/. Search without them, or with other words.`, out.Content[0].Text)

	// Values and keys the corpus does not have are refused by the schema,
	// with a result the model can read.
	out = call(t, search, `{"query":"tea","filter":{"kind":"lukewarm"}}`)
	assert.True(t, out.IsError)
	assert.Contains(t, out.Content[0].Text, "filter")
	out = call(t, search, `{"query":"tea","filter":{"owner":"ops"}}`)
	assert.True(t, out.IsError)
	out = call(t, search, `{"query":"tea","sources":["[bad"]}`)
	assert.True(t, out.IsError)
	assert.Contains(t, out.Content[0].Text, `the source pattern "[bad" is malformed`)
}

func keysOf(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestAgenticSchemaOfALargeCorpus(t *testing.T) {
	kb := newKB(t)
	for i := range 60 {
		add(t, kb, knowledge.Doc{ID: fmt.Sprint(i), Source: fmt.Sprintf("dir%d/doc%d.md", i%3, i), Text: "text",
			Metadata: map[string]string{"version": fmt.Sprintf("v%02d", i), "lang": []string{"en", "fr"}[i%2]}})
	}
	search, err := knowledge.SearchTool(kb, knowledge.WithAgentic(), knowledge.WithMaxFilterValues(10))
	require.NoError(t, err)
	var schema struct {
		Properties map[string]struct {
			Description string                     `json:"description"`
			Properties  map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(search.Definition().InputSchema, &schema))
	filter := schema.Properties["filter"]
	assert.JSONEq(t, `{"type":"string","enum":["en","fr"]}`, string(filter.Properties["lang"]))
	assert.JSONEq(t, `{"type":"string","description":"One of 60 values, such as v00, v01, v02, v03, v04"}`, string(filter.Properties["version"]))
	assert.Contains(t, filter.Description, "lang (en, fr); version (60 values, such as v00, v01, v02, v03, v04)")
	assert.Contains(t, schema.Properties["sources"].Description, "There are 60 sources, in these directories (with their number of documents): dir0/ (20), dir1/ (20), dir2/ (20)")

	empty, err := knowledge.SearchTool(newKB(t), knowledge.WithAgentic())
	require.NoError(t, err)
	assert.NotContains(t, string(empty.Definition().InputSchema), `"filter"`, "no metadata, no filter")
}

func TestToolsFollowTheCorpus(t *testing.T) {
	ctx := context.Background()
	kb := newKB(t)
	set, err := knowledge.Tools(kb, knowledge.WithAgentic())
	require.NoError(t, err)
	defer set.Close()
	assert.Equal(t, knowledge.DefaultToolsetName, set.Name())
	tools, err := set.Tools(ctx)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	first := tools[0]
	assert.NotContains(t, string(first.Definition().InputSchema), `"filter"`)

	again, err := set.Tools(ctx)
	require.NoError(t, err)
	assert.Same(t, first, again[0], "unchanged documents, the same tool")

	add(t, kb, drinks...)
	tools, err = set.Tools(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(tools[0].Definition().InputSchema), `"enum":["cold","hot"]`)

	plain, err := knowledge.Tools(kb, knowledge.WithToolsetName("docs"))
	require.NoError(t, err)
	assert.True(t, tool.IsStatic(plain), "without WithAgentic the set never changes")
	assert.Equal(t, "docs", plain.Name())
}

// An agent searches the knowledge base, reads the cited passages and
// answers with a citation.
func TestAgentAnswersFromTheKnowledgeBase(t *testing.T) {
	kb := newKB(t)
	add(t, kb, drinks...)
	search, err := knowledge.SearchTool(kb, knowledge.WithAgentic(), knowledge.WithDescription("Notes on drinks."))
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(scripted.Call(knowledge.SearchName, `{"query":"green tea temperature","filter":{"kind":"hot"},"limit":1}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			found := req.Messages[len(req.Messages)-1].Text()
			cite := strings.SplitN(found, "\n", 2)[0]
			return &model.Response{Message: model.Assistant("Brew green tea at 80 degrees " + cite + ".")}, nil
		}),
	)
	a, err := agent.NewReAct(m, agent.WithTools(search))
	require.NoError(t, err)
	out, err := a.Invoke(context.Background(), agent.Ask("How hot should the water be for green tea?"))
	require.NoError(t, err)
	msgs := out.Messages
	assert.Equal(t, "Brew green tea at 80 degrees [1] Tea — drinks/tea.md#tea.", msgs[len(msgs)-1].Text())
	reqs := m.Requests()
	require.Len(t, reqs, 2)
	require.Len(t, reqs[0].Tools, 1)
	assert.Contains(t, string(reqs[0].Tools[0].InputSchema), `"enum":["cold","hot"]`, "the model sees the filter's values")
}
