package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/knowledge"
)

var drinks = []knowledge.Doc{
	{ID: "tea", Source: "drinks/tea.md", Metadata: map[string]string{"kind": "hot"}, Text: "# Tea\n\nGreen tea is brewed at 80 degrees; black tea at 95 degrees.\n\n## Storage\n\nKeep tea leaves dry and dark."},
	{ID: "coffee", Source: "drinks/coffee.md", Metadata: map[string]string{"kind": "hot"}, Text: "# Coffee\n\nEspresso is brewed under pressure, at about 93 degrees."},
	{ID: "water", Source: "basics/water.txt", Metadata: map[string]string{"kind": "cold"}, Text: "Water boils at 100 degrees at sea level."},
	{ID: "lemonade", Source: "drinks/lemonade.md", Metadata: map[string]string{"kind": "cold"}, Text: "# Lemonade\n\nLemons, sugar and cold water."},
}

func texts(rs []knowledge.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s:%d-%d", r.DocumentID, r.First, r.Last))
	}
	return out
}

func TestRankingIsDeterministic(t *testing.T) {
	ctx := context.Background()
	kb := newKB(t)
	add(t, kb, drinks...)
	res, err := kb.Search(ctx, knowledge.Query{Text: "Which temperature for green tea? degrees", Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"tea:0-0", "tea:1-1", "coffee:0-0", "water:0-0"}, texts(res), "tea's second chunk by its title")
	for i := 1; i < len(res); i++ {
		assert.GreaterOrEqual(t, res[i-1].Score, res[i].Score)
	}
	assert.Equal(t, "Tea — drinks/tea.md#tea", res[0].Citation())
	assert.Equal(t, []string{"Tea"}, res[0].Headings)
	assert.Equal(t, "Green tea is brewed at 80 degrees; black tea at 95 degrees.", res[0].Text)
	assert.Equal(t, 3, res[0].Line)
	assert.Equal(t, map[string]string{"kind": "hot"}, res[0].Metadata)

	// The same documents added in any order rank the same, to the bit.
	for range 5 {
		other := newKB(t)
		shuffled := append([]knowledge.Doc(nil), drinks...)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		add(t, other, shuffled...)
		again, err := other.Search(ctx, knowledge.Query{Text: "Which temperature for green tea? degrees", Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, res, again)
	}

	// Headings and titles count: "storage" is only a heading.
	res, err = kb.Search(ctx, knowledge.Query{Text: "tea storage"})
	require.NoError(t, err)
	require.NotEmpty(t, res)
	assert.Equal(t, []string{"Tea", "Storage"}, res[0].Headings)
	assert.Equal(t, "Tea — drinks/tea.md#storage", res[0].Citation())

	// Ties go to the document ID.
	tie := newKB(t)
	add(t, tie, knowledge.Doc{ID: "b", Text: "same words"}, knowledge.Doc{ID: "a", Text: "same words"}, knowledge.Doc{ID: "c", Text: "other"})
	res, err = tie.Search(ctx, knowledge.Query{Text: "words"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a:0-0", "b:0-0"}, texts(res))
	assert.Equal(t, res[0].Score, res[1].Score)

	for _, q := range []string{"", "the and of", "unknownword"} {
		res, err = kb.Search(ctx, knowledge.Query{Text: q})
		require.NoError(t, err)
		assert.Empty(t, res, "%q", q)
	}
}

func TestFiltersAndSources(t *testing.T) {
	ctx := context.Background()
	kb := newKB(t)
	add(t, kb, drinks...)
	search := func(q knowledge.Query) []string {
		t.Helper()
		q.Limit = 10
		res, err := kb.Search(ctx, q)
		require.NoError(t, err)
		return texts(res)
	}
	assert.Equal(t, []string{"tea:0-0", "coffee:0-0", "water:0-0"}, search(knowledge.Query{Text: "degrees"}), "tea says it twice")
	assert.Equal(t, []string{"water:0-0"}, search(knowledge.Query{Text: "degrees", Filter: map[string]string{"kind": "cold"}}))
	assert.Equal(t, []string{"tea:0-0", "coffee:0-0"}, search(knowledge.Query{Text: "degrees", Filter: map[string]string{"kind": "hot"}}))
	assert.Empty(t, search(knowledge.Query{Text: "water", Filter: map[string]string{"kind": "cold", "missing": "x"}}))
	assert.Equal(t, []string{"coffee:0-0", "tea:0-0"}, search(knowledge.Query{Text: "brewed", Sources: []string{"drinks/"}}))
	assert.Equal(t, []string{"coffee:0-0"}, search(knowledge.Query{Text: "brewed", Sources: []string{"drinks/coffee.md"}}))
	assert.Equal(t, []string{"coffee:0-0", "water:0-0"}, search(knowledge.Query{Text: "degrees", Sources: []string{"*/*.txt", "drinks/c*"}}))
	assert.Equal(t, []string{"coffee:0-0"}, search(knowledge.Query{Text: "degrees", Sources: []string{"drinks/coffee.md", "drinks/coffee.md"}}))
	assert.Equal(t, []string{"tea:0-0", "coffee:0-0"}, search(knowledge.Query{Text: "degrees", Sources: []string{"drinks/"}, Filter: map[string]string{"kind": "hot"}}))
	_, err := kb.Search(ctx, knowledge.Query{Text: "x", Sources: []string{"[bad"}})
	assert.ErrorContains(t, err, `the source pattern "[bad" is malformed`)
}

// manual is a document of many paragraphs that all mention alpha twice,
// each its own chunk.
func manual(n int) knowledge.Doc {
	var paras []string
	for i := range n {
		paras = append(paras, fmt.Sprintf("Paragraph %d: alpha and alpha again, with filler words to make it long enough to fill a chunk.", i))
	}
	return knowledge.Doc{ID: "manual", Text: "# Manual\n\n" + strings.Join(paras, "\n\n")}
}

func TestOneDocumentDoesNotFillEverySlot(t *testing.T) {
	ctx := context.Background()
	other := []knowledge.Doc{
		{ID: "note", Text: "A note that mentions alpha once among many other words about unrelated things entirely, and then goes on."},
		{ID: "memo", Text: "A memo that names alpha once among many other words on unrelated subjects, at length, and then some more."},
	}
	for _, c := range []struct {
		name string
		opts []knowledge.Option
		want []string
	}{
		{"default", nil, []string{"manual:0-0", "manual:1-1", "memo:0-0"}},
		{"one each", []knowledge.Option{knowledge.WithMaxPerDocument(1)}, []string{"manual:0-0", "memo:0-0", "note:0-0"}},
		{"no bound", []knowledge.Option{knowledge.WithMaxPerDocument(0)}, []string{"manual:0-0", "manual:1-1", "manual:2-2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := append([]knowledge.Option{knowledge.WithChunkSize(120), knowledge.WithMergeAdjacent(false)}, c.opts...)
			kb := newKB(t, opts...)
			add(t, kb, manual(10))
			add(t, kb, other...)
			res, err := kb.Search(ctx, knowledge.Query{Text: "alpha", Limit: 3})
			require.NoError(t, err)
			assert.Equal(t, c.want, texts(res))
		})
	}

	// With no other document matching, one document fills the limit.
	kb := newKB(t, knowledge.WithChunkSize(120), knowledge.WithMergeAdjacent(false))
	add(t, kb, manual(10))
	res, err := kb.Search(ctx, knowledge.Query{Text: "alpha", Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"manual:0-0", "manual:1-1", "manual:2-2"}, texts(res))
}

func TestAdjacentChunksAreJoined(t *testing.T) {
	ctx := context.Background()
	kb := newKB(t, knowledge.WithChunkSize(120), knowledge.WithMaxPerDocument(0))
	add(t, kb, manual(6))
	res, err := kb.Search(ctx, knowledge.Query{Text: "alpha", Limit: 3})
	require.NoError(t, err)
	require.Len(t, res, 1, "three chunks that follow each other are one passage")
	assert.Equal(t, 0, res[0].First)
	assert.Equal(t, 2, res[0].Last)
	cs := chunksOf(t, kb, "manual")
	assert.Equal(t, cs[0].Text+"\n\n"+cs[1].Text+"\n\n"+cs[2].Text, res[0].Text)
	assert.Equal(t, []string{"Manual"}, res[0].Headings)

	// Chunks apart, or in other sections, stay apart; a chunk that comes
	// between two passages joins them.
	kb = newKB(t, knowledge.WithChunkSize(60), knowledge.WithChunkOverlap(20), knowledge.WithMaxPerDocument(0))
	long := "The red fox of a long paragraph, which is cut into pieces that overlap, ends with a red fox."
	add(t, kb, knowledge.Doc{ID: "d", Text: "# A\n\nThe red fox runs in the first paragraph.\n\nA blue whale swims in the second one here.\n\n" +
		"The red fox returns in the third paragraph.\n\n# B\n\nThe red fox appears in section b as well.\n\n" + long})
	cs = chunksOf(t, kb, "d")
	require.Len(t, cs, 6, "three paragraphs in A, one and two pieces of one in B")
	require.Less(t, strings.Index(long, cs[5].Text), strings.Index(long, cs[4].Text)+len(cs[4].Text), "the pieces overlap")
	res, err = kb.Search(ctx, knowledge.Query{Text: "red fox", Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"d:0-0", "d:2-2", "d:3-5"}, sortedTexts(res), "the third and fourth chunk are in two sections")
	for _, r := range res {
		if r.First == 3 {
			assert.Equal(t, "The red fox appears in section b as well.\n\n"+long, r.Text,
				"overlapping pieces are joined without repeating the overlap")
			assert.Equal(t, []string{"B"}, r.Headings)
		}
	}
	res, err = kb.Search(ctx, knowledge.Query{Text: "red fox blue whale", Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"d:0-2", "d:3-5"}, sortedTexts(res))
}

func sortedTexts(rs []knowledge.Result) []string {
	out := texts(rs)
	slices.Sort(out)
	return out
}

func TestRetrieve(t *testing.T) {
	kb := newKB(t)
	add(t, kb, drinks...)
	var r tool.Retriever = kb
	docs, err := r.Retrieve(context.Background(), "green tea", 0)
	require.NoError(t, err)
	require.Len(t, docs, 2, "both chunks of the tea document; not joined, as they are in two sections")
	assert.Equal(t, "tea#0", docs[0].ID)
	assert.Equal(t, "Green tea is brewed at 80 degrees; black tea at 95 degrees.", docs[0].Content)
	assert.Positive(t, docs[0].Score)
	assert.Equal(t, map[string]any{
		"kind": "hot", knowledge.TitleKey: "Tea", knowledge.SourceKey: "drinks/tea.md",
		knowledge.HeadingsKey: []string{"Tea"}, knowledge.DocumentIDKey: "tea", knowledge.LineKey: 3,
	}, docs[0].Metadata)

	// As a retrieval tool.
	rt, err := tool.NewRetrieval("docs", "search the docs", kb)
	require.NoError(t, err)
	out := tool.Invoke(context.Background(), rt, model.ToolCall{ID: "c1", Name: "docs", Arguments: []byte(`{"query":"espresso"}`)})
	require.False(t, out.IsError)
	assert.Contains(t, string(out.Content[0].JSON), `"id":"coffee#0"`)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = kb.Retrieve(cancelled, "tea", 1)
	assert.ErrorIs(t, err, context.Canceled)
}

// wordEmbedder embeds a text as the counts of a few words in it, kittens
// counting as cats and puppies as dogs, and a constant.
func wordEmbedder(calls *int) knowledge.Embedder {
	dims := map[string]int{"cat": 0, "kitten": 0, "dog": 1, "puppy": 1, "car": 2}
	return func(_ context.Context, texts []string) ([][]float32, error) {
		*calls++
		out := make([][]float32, len(texts))
		for i, text := range texts {
			v := []float32{0, 0, 0, 0.1}
			for _, w := range strings.Fields(strings.ToLower(text)) {
				if d, ok := dims[strings.Trim(w, ".,")]; ok {
					v[d]++
				}
			}
			out[i] = v
		}
		return out, nil
	}
}

func TestEmbedder(t *testing.T) {
	ctx := context.Background()
	calls := 0
	kb := newKB(t, knowledge.WithEmbedder(wordEmbedder(&calls)))
	add(t, kb,
		knowledge.Doc{ID: "cats", Text: "A kitten sleeps."},
		knowledge.Doc{ID: "dogs", Text: "A puppy barks."},
		knowledge.Doc{ID: "cars", Text: "A car drives."},
	)
	res, err := kb.Search(ctx, knowledge.Query{Text: "cat", Limit: 2})
	require.NoError(t, err)
	require.Len(t, res, 2, "every chunk has a similarity")
	assert.Equal(t, "cats", res[0].DocumentID, "by meaning: kitten for cat")
	assert.Greater(t, res[0].Score, res[1].Score)
	assert.InDelta(t, 1, res[0].Score, 0.01)
	res, err = kb.Search(ctx, knowledge.Query{Text: "  "})
	require.NoError(t, err)
	assert.Empty(t, res)

	failing := newKB(t, knowledge.WithEmbedder(func(context.Context, []string) ([][]float32, error) {
		return nil, errors.New("model down")
	}))
	err = failing.AddDocument(ctx, knowledge.Doc{ID: "a", Text: "text"})
	assert.ErrorIs(t, err, knowledge.ErrEmbedding)
	assert.ErrorContains(t, err, "model down")
	assert.Empty(t, failing.Documents(), "nothing is added")

	dims := 3
	varying := newKB(t, knowledge.WithEmbedder(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = make([]float32, dims)
			out[i][0] = 1
		}
		return out, nil
	}))
	add(t, varying, knowledge.Doc{ID: "a", Text: "one"})
	dims = 4
	err = varying.AddDocument(ctx, knowledge.Doc{ID: "b", Text: "two"})
	assert.ErrorContains(t, err, "the chunks' vectors have 4 dimensions, those of the knowledge base have 3")
	_, err = varying.Search(ctx, knowledge.Query{Text: "one"})
	assert.ErrorContains(t, err, "the query's vector has 4 dimensions, the chunks' have 3")
	add(t, varying, knowledge.Doc{ID: "a", Text: "one, replaced"})
	assert.Len(t, varying.Documents(), 1, "replacing the only document may change the length")

	report, err := failing.AddDir(ctx, corpusFS())
	assert.ErrorIs(t, err, knowledge.ErrEmbedding, "AddDir stops")
	assert.Empty(t, report.Added)

	// Batches of one document must agree too.
	batches := 0
	growing := newKB(t, knowledge.WithChunkSize(32), knowledge.WithEmbedder(func(_ context.Context, texts []string) ([][]float32, error) {
		batches++
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = make([]float32, 2+batches)
			out[i][0] = 1
		}
		return out, nil
	}))
	err = growing.AddDocument(ctx, knowledge.Doc{ID: "many", Text: strings.Repeat("A paragraph.\n\n", 600)})
	assert.ErrorContains(t, err, "the embedder gave vectors of 3 and 4 dimensions")
	assert.Equal(t, 2, batches, "256 chunks a batch")

	bad := newKB(t, knowledge.WithEmbedder(func(_ context.Context, texts []string) ([][]float32, error) {
		return [][]float32{{float32(math.NaN())}}, nil
	}))
	assert.ErrorContains(t, bad.AddDocument(ctx, knowledge.Doc{ID: "a", Text: "x"}), "not a finite number")
}
