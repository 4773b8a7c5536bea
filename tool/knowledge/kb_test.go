package knowledge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/knowledge"
)

func newKB(t *testing.T, opts ...knowledge.Option) *knowledge.KB {
	t.Helper()
	kb, err := knowledge.New(opts...)
	require.NoError(t, err)
	return kb
}

func add(t *testing.T, kb *knowledge.KB, docs ...knowledge.Doc) {
	t.Helper()
	for _, d := range docs {
		require.NoError(t, kb.AddDocument(context.Background(), d))
	}
}

func chunksOf(t *testing.T, kb *knowledge.KB, id string) []knowledge.Chunk {
	t.Helper()
	cs, err := kb.Chunks(id)
	require.NoError(t, err)
	return cs
}

const guide = `# Trellis guide

Trellis builds agents in Go.

## Install

Run go get to add the module.

### On Linux

Nothing more is needed.

## Tools

Tools are functions the model calls.

` + "```go\n# not a heading\n\nfunc main() {}\n```" + `

Setext heading
--------------

Under the setext heading.

***

After a thematic break.
`

func TestChunksFollowHeadings(t *testing.T) {
	kb := newKB(t)
	add(t, kb, knowledge.Doc{ID: "guide", Source: "docs/guide.md", Text: guide})
	type c struct {
		headings []string
		text     string
		line     int
	}
	var got []c
	for i, ch := range chunksOf(t, kb, "guide") {
		assert.Equal(t, i, ch.Index)
		assert.Equal(t, "guide", ch.DocumentID)
		got = append(got, c{ch.Headings, ch.Text, ch.Line})
	}
	assert.Equal(t, []c{
		{[]string{"Trellis guide"}, "Trellis builds agents in Go.", 3},
		{[]string{"Trellis guide", "Install"}, "Run go get to add the module.", 7},
		{[]string{"Trellis guide", "Install", "On Linux"}, "Nothing more is needed.", 11},
		{[]string{"Trellis guide", "Tools"}, "Tools are functions the model calls.\n\n```go\n# not a heading\n\nfunc main() {}\n```", 15},
		{[]string{"Trellis guide", "Setext heading"}, "Under the setext heading.\n\n***\n\nAfter a thematic break.", 26},
	}, got)
	doc, err := kb.Document("guide")
	require.NoError(t, err)
	assert.Equal(t, "Trellis guide", doc.Title, "the first level-1 heading")
}

func TestFrontMatter(t *testing.T) {
	kb := newKB(t)
	add(t, kb, knowledge.Doc{ID: "a", Source: "a.md", Metadata: map[string]string{"lang": "en"}, Text: "---\ntitle: From front matter\nlang: fr\nversion: 2\ndraft: false\ntags: [a, b]\n---\n# Heading\n\nBody.\n"})
	doc, err := kb.Document("a")
	require.NoError(t, err)
	assert.Equal(t, "From front matter", doc.Title)
	assert.Equal(t, map[string]string{"lang": "en", "version": "2", "draft": "false"}, doc.Metadata,
		"scalars join the metadata; the document's own win")
	cs := chunksOf(t, kb, "a")
	require.Len(t, cs, 1)
	assert.Equal(t, "Body.", cs[0].Text)
	assert.Equal(t, 10, cs[0].Line, "lines count from the top of the file")
}

func TestTitles(t *testing.T) {
	kb := newKB(t)
	add(t, kb,
		knowledge.Doc{ID: "given", Title: "  Given  ", Text: "# Heading\n\ntext"},
		knowledge.Doc{Source: "notes/todo.txt", Text: "# not a heading in plain text\n\nbuy milk"},
		knowledge.Doc{ID: "plain", Text: "no headings here"},
	)
	titles := map[string]string{}
	for _, d := range kb.Documents() {
		titles[d.ID] = d.Title
	}
	assert.Equal(t, map[string]string{"given": "Given", "notes/todo.txt": "todo", "plain": "plain"}, titles)
	cs := chunksOf(t, kb, "notes/todo.txt")
	require.Len(t, cs, 1, "plain text has paragraphs but no headings")
	assert.Equal(t, "# not a heading in plain text\n\nbuy milk", cs[0].Text)
	assert.Nil(t, cs[0].Headings)
}

func TestLongParagraphsSplitWithOverlap(t *testing.T) {
	kb := newKB(t, knowledge.WithChunkSize(100), knowledge.WithChunkOverlap(30))
	var sentences []string
	for i := range 20 {
		sentences = append(sentences, fmt.Sprintf("Sentence %d says%s something.", i, strings.Repeat(" more", i%3)))
	}
	para := strings.Join(sentences, " ")
	add(t, kb, knowledge.Doc{ID: "long", Text: "## Only\n\n" + para + "\n\nShort tail."})
	cs := chunksOf(t, kb, "long")
	require.Greater(t, len(cs), 5)
	for i, c := range cs {
		assert.LessOrEqual(t, utf8.RuneCountInString(c.Text), 100, "chunk %d", i)
		assert.Equal(t, []string{"Only"}, c.Headings)
		assert.Equal(t, strings.TrimSpace(c.Text), c.Text)
		if i < len(cs)-2 {
			assert.True(t, strings.HasSuffix(c.Text, "."), "chunk %d ends at a sentence: %q", i, c.Text)
		}
	}
	// Consecutive pieces of the paragraph overlap, and together hold it all.
	pieces := cs[:len(cs)-1]
	for i := 1; i < len(pieces); i++ {
		prev, cur := pieces[i-1].Text, pieces[i].Text
		start := strings.Index(para, cur)
		require.GreaterOrEqual(t, start, 0, "chunk %d is a piece of the paragraph", i)
		prevEnd := strings.Index(para, prev) + len(prev)
		assert.Less(t, start, prevEnd, "chunk %d starts before the end of the one before", i)
		assert.GreaterOrEqual(t, prevEnd-start, 10, "and repeats some of it")
		assert.LessOrEqual(t, utf8.RuneCountInString(para[start:prevEnd]), 30)
	}
	assert.True(t, strings.HasPrefix(para, pieces[0].Text))
	assert.True(t, strings.HasSuffix(para, pieces[len(pieces)-1].Text))
	assert.Equal(t, "Short tail.", cs[len(cs)-1].Text, "the next paragraph is a chunk of its own")
}

func TestParagraphsPackedUpToTheSize(t *testing.T) {
	kb := newKB(t, knowledge.WithChunkSize(40), knowledge.WithChunkOverlap(0))
	add(t, kb, knowledge.Doc{ID: "d", Text: "one two three.\n\nfour five six.\n\nseven eight nine.\n\nten."})
	var texts []string
	for _, c := range chunksOf(t, kb, "d") {
		texts = append(texts, c.Text)
	}
	assert.Equal(t, []string{"one two three.\n\nfour five six.", "seven eight nine.\n\nten."}, texts)
}

func TestWordsLongerThanAChunkAreCut(t *testing.T) {
	kb := newKB(t, knowledge.WithChunkSize(32), knowledge.WithChunkOverlap(4))
	word := strings.Repeat("é", 100)
	add(t, kb, knowledge.Doc{ID: "w", Text: word})
	cs := chunksOf(t, kb, "w")
	require.Len(t, cs, 4, "32 runes a chunk, moving on by 28")
	for _, c := range cs {
		assert.True(t, utf8.ValidString(c.Text))
		assert.LessOrEqual(t, utf8.RuneCountInString(c.Text), 32)
	}
}

func TestCRLFAndBOM(t *testing.T) {
	kb := newKB(t)
	add(t, kb,
		knowledge.Doc{ID: "crlf", Text: "\uFEFF# Title\r\n\r\nFirst line\r\nsecond line\r\n\r\n## Next\r\n\r\nMore.\r\n"},
		knowledge.Doc{ID: "cr", Text: "# Title\r\rFirst line\rsecond line\r\r## Next\r\rMore.\r"},
		knowledge.Doc{ID: "lf", Text: "# Title\n\nFirst line\nsecond line\n\n## Next\n\nMore.\n"},
	)
	want := chunksOf(t, kb, "lf")
	require.Len(t, want, 2)
	assert.Equal(t, "First line\nsecond line", want[0].Text)
	for _, id := range []string{"crlf", "cr"} {
		got := chunksOf(t, kb, id)
		for i := range got {
			got[i].DocumentID = "lf"
		}
		assert.Equal(t, want, got, id)
		doc, err := kb.Document(id)
		require.NoError(t, err)
		assert.NotContains(t, doc.Text, "\r")
		assert.False(t, strings.HasPrefix(doc.Text, "\uFEFF"))
	}
}

func TestEmptyDocuments(t *testing.T) {
	kb := newKB(t)
	for _, text := range []string{"", "   \n\n\t\n", "---\ntitle: Only front matter\n---\n", "# Just a heading\n\n## And another"} {
		add(t, kb, knowledge.Doc{ID: "empty", Text: text})
		assert.Empty(t, chunksOf(t, kb, "empty"), "%q", text)
	}
	infos := kb.Documents()
	require.Len(t, infos, 1)
	assert.Equal(t, 0, infos[0].Chunks)
	res, err := kb.Search(context.Background(), knowledge.Query{Text: "heading"})
	require.NoError(t, err)
	assert.Empty(t, res)
}

func TestReplaceAndDelete(t *testing.T) {
	kb := newKB(t)
	ctx := context.Background()
	add(t, kb, knowledge.Doc{ID: "faq", Text: "The office opens at nine.\n\nParking is free."})
	add(t, kb, knowledge.Doc{ID: "other", Text: "Nothing about the office hours."})
	require.Len(t, chunksOf(t, kb, "faq"), 1)

	add(t, kb, knowledge.Doc{ID: "faq", Text: "The office opens at ten."})
	res, err := kb.Search(ctx, knowledge.Query{Text: "office opens"})
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Equal(t, "The office opens at ten.", res[0].Text, "the old chunks are gone")
	res, err = kb.Search(ctx, knowledge.Query{Text: "parking"})
	require.NoError(t, err)
	assert.Empty(t, res)
	assert.Len(t, kb.Documents(), 2)

	require.NoError(t, kb.Remove(ctx, "faq"))
	res, err = kb.Search(ctx, knowledge.Query{Text: "office opens"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, "other", res[0].DocumentID)
	assert.ErrorIs(t, kb.Remove(ctx, "faq"), knowledge.ErrNotFound)
	_, err = kb.Chunks("faq")
	assert.ErrorIs(t, err, knowledge.ErrNotFound)
	_, err = kb.Document("faq")
	assert.ErrorIs(t, err, knowledge.ErrNotFound)
}

func TestAddDocumentRefuses(t *testing.T) {
	kb := newKB(t, knowledge.WithMaxDocumentSize(100))
	ctx := context.Background()
	for _, c := range []struct {
		doc  knowledge.Doc
		err  error
		want string
	}{
		{knowledge.Doc{Text: "x"}, knowledge.ErrInvalidDocument, "neither an id nor a source"},
		{knowledge.Doc{ID: " a", Text: "x"}, knowledge.ErrInvalidDocument, "spaces around it"},
		{knowledge.Doc{ID: strings.Repeat("a", knowledge.MaxIDSize+1), Text: "x"}, knowledge.ErrInvalidDocument, "longer than 512"},
		{knowledge.Doc{ID: "a", Text: "bad \xff"}, knowledge.ErrInvalidDocument, `the text of document "a" is not valid UTF-8`},
		{knowledge.Doc{ID: "a", Text: strings.Repeat("x", 101)}, knowledge.ErrTooLarge, "101 bytes, more than the limit of 100 bytes"},
		{knowledge.Doc{ID: "a", Text: "x", Metadata: map[string]string{"source": "s"}}, knowledge.ErrInvalidDocument, `uses the key "source"`},
		{knowledge.Doc{ID: "a", Text: "x", Metadata: map[string]string{"": "s"}}, knowledge.ErrInvalidDocument, "empty key"},
	} {
		err := kb.AddDocument(ctx, c.doc)
		assert.ErrorIs(t, err, c.err, c.want)
		assert.ErrorContains(t, err, c.want)
	}
	assert.Empty(t, kb.Documents())

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, kb.AddDocument(cancelled, knowledge.Doc{ID: "a", Text: "x"}), context.Canceled)
}

func TestOptionsAreChecked(t *testing.T) {
	_, err := knowledge.New(knowledge.WithChunkSize(10), knowledge.WithChunkOverlap(-1), knowledge.WithMaxDocumentSize(0),
		knowledge.WithMaxPerDocument(-1), knowledge.WithEmbedder(nil))
	require.Error(t, err)
	for _, want := range []string{"WithChunkSize: n must be at least 32, not 10", "WithChunkOverlap: n must be at least 0", "WithMaxDocumentSize", "WithMaxPerDocument", "WithEmbedder: the embedder is nil"} {
		assert.ErrorContains(t, err, want)
	}
	_, err = knowledge.New(knowledge.WithChunkSize(100), knowledge.WithChunkOverlap(51))
	assert.ErrorContains(t, err, "the overlap of 51 runes is more than half the chunk size of 100")
}

func TestDocumentsAreCopies(t *testing.T) {
	kb := newKB(t)
	meta := map[string]string{"lang": "go"}
	add(t, kb, knowledge.Doc{ID: "a", Source: "a.md", Text: "# A\n\ntext", Metadata: meta})
	meta["lang"] = "rust"
	doc, err := kb.Document("a")
	require.NoError(t, err)
	assert.Equal(t, "go", doc.Metadata["lang"])
	doc.Metadata["lang"] = "c"
	infos := kb.Documents()
	assert.Equal(t, []knowledge.DocumentInfo{{ID: "a", Title: "A", Source: "a.md", Metadata: map[string]string{"lang": "go"}, Chunks: 1, Size: 9}}, infos)
}
