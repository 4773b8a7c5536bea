package knowledge_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/knowledge"
)

func filled(t *testing.T, opts ...knowledge.Option) *knowledge.KB {
	t.Helper()
	kb := newKB(t, opts...)
	add(t, kb, drinks...)
	add(t, kb, knowledge.Doc{ID: "guide", Source: "docs/guide.md", Text: strings.ReplaceAll(guide, "\n", "\r\n")})
	return kb
}

func TestSaveLoadRoundTrip(t *testing.T) {
	ctx := context.Background()
	kb := filled(t)
	var buf strings.Builder
	require.NoError(t, kb.Save(&buf))
	assert.True(t, strings.HasPrefix(buf.String(), "{\n  \"version\": 1,\n  \"documents\": [\n"), buf.String()[:40])

	loaded := newKB(t)
	add(t, loaded, knowledge.Doc{ID: "stale", Text: "goes away"})
	require.NoError(t, loaded.Load(ctx, strings.NewReader(buf.String())))
	assert.Equal(t, kb.Documents(), loaded.Documents())
	for _, d := range kb.Documents() {
		want, err := kb.Chunks(d.ID)
		require.NoError(t, err)
		got, err := loaded.Chunks(d.ID)
		require.NoError(t, err)
		assert.Equal(t, want, got, d.ID)
	}
	for _, q := range []string{"green tea", "tools model", "degrees"} {
		want, err := kb.Search(ctx, knowledge.Query{Text: q})
		require.NoError(t, err)
		got, err := loaded.Search(ctx, knowledge.Query{Text: q})
		require.NoError(t, err)
		assert.Equal(t, want, got, q)
	}
	var again strings.Builder
	require.NoError(t, loaded.Save(&again))
	assert.Equal(t, buf.String(), again.String(), "saving what was loaded writes the same")

	// Another chunk size cuts the same documents anew.
	small := newKB(t, knowledge.WithChunkSize(32))
	require.NoError(t, small.Load(ctx, strings.NewReader(buf.String())))
	smallChunks, err := small.Chunks("guide")
	require.NoError(t, err)
	bigChunks, err := kb.Chunks("guide")
	require.NoError(t, err)
	assert.Greater(t, len(smallChunks), len(bigChunks))

	// With an embedder, the loaded chunks are embedded.
	calls := 0
	embedded := newKB(t, knowledge.WithEmbedder(wordEmbedder(&calls)))
	require.NoError(t, embedded.Load(ctx, strings.NewReader(buf.String())))
	assert.Equal(t, 1, calls, "in one batch")
	res, err := embedded.Search(ctx, knowledge.Query{Text: "tea"})
	require.NoError(t, err)
	assert.NotEmpty(t, res)
}

func TestLoadRefusesCorruptSnapshots(t *testing.T) {
	good := func() string {
		var buf strings.Builder
		require.NoError(t, filled(t).Save(&buf))
		return buf.String()
	}()
	for _, c := range []struct {
		name, data, want string
	}{
		{"empty", "", "knowledge: corrupt snapshot: it is empty"},
		{"cut", good[:len(good)/2], "it ends early, at byte"},
		{"not json", "documents: yes", "it is not valid JSON: invalid character 'd' looking for beginning of value, at byte 1"},
		{"trailing", good + "{}", "there is more after the snapshot's JSON object"},
		{"wrong type", `{"version":1,"documents":[{"id":"a","text":7}]}`, "documents.text holds a JSON number where a string belongs"},
		{"unknown field", `{"version":1,"documents":[],"chunks":[]}`, `unknown field "chunks"`},
		{"version", `{"version":2,"documents":[]}`, "the snapshot has version 2; this knowledge base reads version 1"},
		{"null", `{"version":1,"documents":[null]}`, "document 0 is null"},
		{"no id", `{"version":1,"documents":[{"text":"x"}]}`, "document 0 has no id"},
		{"twice", `{"version":1,"documents":[{"id":"a","text":"x"},{"id":"a","text":"y"}]}`, `document 1: the id "a" is taken by an earlier document`},
		{"reserved", `{"version":1,"documents":[{"id":"a","text":"x","metadata":{"title":"t"}}]}`, `document 0: knowledge: invalid document: the metadata of document "a" uses the key "title"`},
		{"too large", `{"version":1,"documents":[{"id":"a","text":"` + strings.Repeat("x", 2000) + `"}]}`, "document 0: knowledge: document too large"},
	} {
		kb := filled(t, knowledge.WithMaxDocumentSize(1000))
		before := kb.Documents()
		err := kb.Load(context.Background(), strings.NewReader(c.data))
		assert.ErrorIs(t, err, knowledge.ErrCorrupt, c.name)
		assert.ErrorContains(t, err, c.want, c.name)
		assert.Equal(t, before, kb.Documents(), "%s: the knowledge base is as it was", c.name)
	}

	calls := 0
	failing := newKB(t, knowledge.WithEmbedder(func(context.Context, []string) ([][]float32, error) {
		calls++
		return nil, errors.New("model down")
	}))
	err := failing.Load(context.Background(), strings.NewReader(good))
	assert.ErrorIs(t, err, knowledge.ErrEmbedding)
	assert.Equal(t, 1, calls)
}

func TestSaveFileLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kb.json")
	ctx := context.Background()

	err := newKB(t).LoadFile(ctx, path)
	assert.ErrorIs(t, err, fs.ErrNotExist, "a first run finds no file")

	kb := filled(t)
	require.NoError(t, kb.SaveFile(path))
	if runtime.GOOS != "windows" {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	}
	loaded := newKB(t)
	require.NoError(t, loaded.LoadFile(ctx, path))
	assert.Equal(t, kb.Documents(), loaded.Documents())

	require.NoError(t, os.WriteFile(path, []byte(`{"version":1,"documents":[`), 0o600))
	err = loaded.LoadFile(ctx, path)
	assert.ErrorIs(t, err, knowledge.ErrCorrupt)
	assert.ErrorContains(t, err, "(file "+path+")")
	assert.Len(t, loaded.Documents(), len(kb.Documents()))

	err = kb.SaveFile(filepath.Join(dir, "missing", "kb.json"))
	assert.ErrorContains(t, err, "knowledge: saving "+filepath.Join(dir, "missing", "kb.json"))
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, names, 1, "no temporary file is left")
}
