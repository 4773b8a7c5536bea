package knowledge_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/knowledge"
)

// words returns n distinct words separated by spaces.
func words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("word%d", i)
	}
	return strings.Join(ws, " ")
}

// paragraphs returns n short paragraphs, each a chunk of its own at the
// chunk size used below.
func paragraphs(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("Paragraph %d says something. %s", i, strings.Repeat("More text here. ", 5))
	}
	return strings.Join(ps, "\n\n")
}

// Every chunk of a section carries its headings and its document's title:
// a heading or title as long as the document must not be repeated, and
// indexed, in every chunk of it.
func TestLongHeadingsAndTitlesAreCut(t *testing.T) {
	long := words(20000) // about 200 KB
	body := paragraphs(300)
	for name, doc := range map[string]knowledge.Doc{
		"atx":          {ID: "atx.md", Text: "# " + long + "\n\n## " + long + "\n\n" + body},
		"setext":       {ID: "setext.md", Text: long + "\n===\n\n" + body},
		"front matter": {ID: "fm.md", Text: "---\ntitle: " + long[:60000] + "\n---\n" + body},
		"given title":  {ID: "given.md", Title: long, Text: body},
	} {
		t.Run(name, func(t *testing.T) {
			kb := newKB(t, knowledge.WithChunkSize(200))
			add(t, kb, doc)
			got, err := kb.Document(doc.ID)
			require.NoError(t, err)
			assert.LessOrEqual(t, utf8.RuneCountInString(got.Title), 201, "the title is cut")
			assert.True(t, strings.HasPrefix(got.Title, "word0 word1 "), got.Title[:min(len(got.Title), 40)])
			chunks := chunksOf(t, kb, doc.ID)
			require.Greater(t, len(chunks), 100)
			for _, c := range chunks {
				for _, h := range c.Headings {
					require.LessOrEqual(t, utf8.RuneCountInString(h), 201, "a heading of chunk %d is cut", c.Index)
					require.True(t, strings.HasSuffix(h, "…"))
				}
			}
			// The cut title and headings still find the document.
			res, err := kb.Search(context.Background(), knowledge.Query{Text: "word3"})
			require.NoError(t, err)
			assert.NotEmpty(t, res)
		})
	}
}

// A front matter block larger than 64 KiB is not decoded (the YAML
// decoder's cost grows faster than its input): the lines are text.
func TestHugeFrontMatterIsText(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\n")
	for i := 0; b.Len() < 100<<10; i++ {
		fmt.Fprintf(&b, "key%d: value%d\n", i, i)
	}
	b.WriteString("...\n\nThe body.\n")
	kb := newKB(t)
	add(t, kb, knowledge.Doc{ID: "fm.md", Text: b.String()})
	got, err := kb.Document("fm.md")
	require.NoError(t, err)
	assert.Zero(t, len(got.Metadata), "no field of the oversized front matter is read")
	res, err := kb.Search(context.Background(), knowledge.Query{Text: "key17"})
	require.NoError(t, err)
	require.NotEmpty(t, res, "its lines are text")
	assert.Contains(t, res[0].Text, "key17: value17")

	// One within the limit is still read.
	add(t, kb, knowledge.Doc{ID: "small.md", Text: "---\nkey: value\n---\nBody."})
	got, err = kb.Document("small.md")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"key": "value"}, got.Metadata)
}

// Packing many small paragraphs into large chunks takes time in
// proportion to the text, not to the square of the chunk size.
func TestPackingManyParagraphsIsLinear(t *testing.T) {
	kb := newKB(t, knowledge.WithChunkSize(1<<20))
	text := strings.Repeat("x\n\n", 200_000)
	done := make(chan error, 1)
	go func() { done <- kb.AddDocument(context.Background(), knowledge.Doc{ID: "many.txt", Text: text}) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("AddDocument took more than 20s to pack 200,000 one-letter paragraphs")
	}
	chunks := chunksOf(t, kb, "many.txt")
	require.Len(t, chunks, 1)
	assert.Equal(t, strings.TrimSpace(text), chunks[0].Text)
}

// growingFS holds one file, "big.md", listed with a small size whose
// content goes on for far longer: a file that grew after it was listed,
// or keeps growing. It counts the bytes read of it.
type growingFS struct {
	content int64 // how many bytes the file gives
	read    atomic.Int64
}

type smallInfo struct{ dir bool }

func (i smallInfo) Name() string {
	if i.dir {
		return "."
	}
	return "big.md"
}
func (i smallInfo) Size() int64 { return 10 }
func (i smallInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i smallInfo) ModTime() time.Time { return time.Time{} }
func (i smallInfo) IsDir() bool        { return i.dir }
func (i smallInfo) Sys() any           { return nil }

type growingFile struct {
	fs   *growingFS
	left int64
}

func (f *growingFile) Stat() (fs.FileInfo, error) { return smallInfo{}, nil }
func (f *growingFile) Close() error               { return nil }
func (f *growingFile) Read(p []byte) (int, error) {
	if f.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.left)
	for i := range n {
		p[i] = 'a'
	}
	f.left -= n
	f.fs.read.Add(n)
	return int(n), nil
}

func (g *growingFS) Open(name string) (fs.File, error) {
	if name != "big.md" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &growingFile{fs: g, left: g.content}, nil
}

func (g *growingFS) Stat(name string) (fs.FileInfo, error) {
	switch name {
	case ".":
		return smallInfo{dir: true}, nil
	case "big.md":
		return smallInfo{}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (g *growingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return []fs.DirEntry{fs.FileInfoToDirEntry(smallInfo{})}, nil
}

// AddDir reads no more of a file than the limit allows, whatever size the
// file had when it was listed.
func TestAddDirReadsNoMoreThanTheLimit(t *testing.T) {
	const limit = 1 << 10
	kb := newKB(t, knowledge.WithMaxDocumentSize(limit))
	g := &growingFS{content: 64 << 20}
	report, err := kb.AddDir(context.Background(), g)
	require.NoError(t, err)
	assert.Empty(t, report.Added)
	require.Len(t, report.Skipped, 1)
	assert.Contains(t, report.Skipped[0].Reason, "too large")
	assert.LessOrEqual(t, g.read.Load(), int64(limit+1), "bytes read of a %d-byte file with a limit of %d", g.content, limit)
}
