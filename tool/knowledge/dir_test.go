package knowledge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/knowledge"
)

func corpusFS() fstest.MapFS {
	return fstest.MapFS{
		"README.md":             {Data: []byte("# Project\n\nThe project's readme.\n")},
		"docs/install.md":       {Data: []byte("# Install\r\n\r\nDownload the installer.\r\n")},
		"docs/deep/faq.txt":     {Data: []byte("Questions and answers.\n")},
		"docs/notes.markdown":   {Data: []byte("Notes.\n")},
		"docs/logo.png":         {Data: []byte("\x89PNG\r\n\x1a\n\x00\x00")},
		"docs/fake.md":          {Data: []byte("looks like text\x00but is not")},
		"docs/latin1.txt":       {Data: []byte("caf\xe9")},
		"docs/huge.md":          {Data: []byte(strings.Repeat("big ", 100))},
		"docs/empty.md":         {Data: []byte("")},
		".git/HEAD.md":          {Data: []byte("hidden directory")},
		"docs/.draft.md":        {Data: []byte("hidden file")},
		"cmd/tool/main.go":      {Data: []byte("package main\n\n// main runs the tool.\nfunc main() {}\n")},
		"cmd/tool/main_test.go": {Data: []byte("package main\n")},
	}
}

func TestAddDir(t *testing.T) {
	kb := newKB(t, knowledge.WithMaxDocumentSize(200))
	report, err := kb.AddDir(context.Background(), corpusFS())
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md", "docs/deep/faq.txt", "docs/empty.md", "docs/install.md", "docs/notes.markdown"}, report.Added)
	assert.Equal(t, []knowledge.Skipped{
		{Path: "docs/fake.md", Reason: "binary: not UTF-8 text"},
		{Path: "docs/huge.md", Reason: "too large: 400 bytes, more than the limit of 200 bytes (WithMaxDocumentSize)"},
		{Path: "docs/latin1.txt", Reason: "binary: not UTF-8 text"},
	}, report.Skipped, "the PNG matches no pattern")
	assert.Equal(t, 4, report.Chunks)

	doc, err := kb.Document("docs/install.md")
	require.NoError(t, err)
	assert.Equal(t, "docs/install.md", doc.Source, "the path is the source")
	assert.Equal(t, "Install", doc.Title)
	assert.Equal(t, "# Install\n\nDownload the installer.\n", doc.Text)
	res, err := kb.Search(context.Background(), knowledge.Query{Text: "installer"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, "Install — docs/install.md#install", res[0].Citation())

	// Go files by pattern; the path is matched as a whole when the pattern
	// has a "/".
	report, err = kb.AddDir(context.Background(), corpusFS(), "cmd/**/*.go", "docs/[")
	assert.ErrorContains(t, err, `the pattern "docs/[" is malformed`)
	assert.Empty(t, report.Added)
	report, err = kb.AddDir(context.Background(), corpusFS(), "cmd/*/main.go")
	require.NoError(t, err)
	assert.Equal(t, []string{"cmd/tool/main.go"}, report.Added)
	res, err = kb.Search(context.Background(), knowledge.Query{Text: "runs the tool"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, "main — cmd/tool/main.go#L1", res[0].Citation(), "plain text is cited by line")
}

func TestAddDirReplacesAndStops(t *testing.T) {
	kb := newKB(t)
	ctx := context.Background()
	fsys := fstest.MapFS{"a.md": {Data: []byte("old words")}}
	_, err := kb.AddDir(ctx, fsys)
	require.NoError(t, err)
	fsys["a.md"] = &fstest.MapFile{Data: []byte("new words")}
	_, err = kb.AddDir(ctx, fsys)
	require.NoError(t, err)
	cs := chunksOf(t, kb, "a.md")
	require.Len(t, cs, 1)
	assert.Equal(t, "new words", cs[0].Text)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = kb.AddDir(cancelled, fsys)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = kb.AddDir(ctx, nil)
	assert.ErrorContains(t, err, "the file system is nil")
}

func TestAddDirFromDisk(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "guide"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "guide", "start.md"), []byte("# Start\n\nHello from disk."), 0o600))
	kb := newKB(t)
	report, err := kb.AddDir(context.Background(), os.DirFS(dir))
	require.NoError(t, err)
	assert.Equal(t, []string{"guide/start.md"}, report.Added)

	_, err = kb.AddDir(context.Background(), os.DirFS(filepath.Join(dir, "missing")))
	assert.ErrorContains(t, err, "knowledge: AddDir:")
}

func TestDefaultGlobsCannotBeChangedByACaller(t *testing.T) {
	g := knowledge.DefaultGlobs()
	g[0] = "*.secret"
	assert.Equal(t, []string{"*.md", "*.markdown", "*.txt"}, knowledge.DefaultGlobs())
}
