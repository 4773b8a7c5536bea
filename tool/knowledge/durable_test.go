package knowledge_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/sqlite"
	"github.com/trellis-go/trellis/tool/knowledge"
)

func TestDocumentsInAStoreAreSharedAndSurviveRestarts(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "kb.db")
	open := func() (*knowledge.KB, store.Store) {
		st, err := sqlite.Open(path)
		require.NoError(t, err)
		kb, err := knowledge.New(knowledge.WithStore(st))
		require.NoError(t, err)
		require.NoError(t, kb.Sync(ctx))
		return kb, st
	}
	a, sa := open()
	b, sb := open() // another replica
	require.NoError(t, a.AddDocument(ctx, knowledge.Doc{ID: "install", Source: "install.md",
		Text: "# Install\n\nRun the installer and accept the licence.\n"}))

	require.NoError(t, b.Sync(ctx))
	res, err := b.Search(ctx, knowledge.Query{Text: "installer licence"})
	require.NoError(t, err)
	require.Len(t, res, 1, "the other replica finds it")
	assert.Equal(t, "install", res[0].DocumentID)

	require.NoError(t, a.AddDocument(ctx, knowledge.Doc{ID: "install", Source: "install.md",
		Text: "# Install\n\nUnpack the archive.\n"}))
	require.NoError(t, b.Sync(ctx))
	res, err = b.Search(ctx, knowledge.Query{Text: "installer licence"})
	require.NoError(t, err)
	assert.Empty(t, res, "the replaced text is gone from the other replica")
	require.NoError(t, sa.Close())
	require.NoError(t, sb.Close())

	c, sc := open() // after a restart
	defer sc.Close()
	res, err = c.Search(ctx, knowledge.Query{Text: "unpack archive"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, c.Remove(ctx, "install"))
	require.ErrorIs(t, c.Remove(ctx, "install"), knowledge.ErrNotFound)
	items, err := sc.Search(ctx, nil, store.Query{})
	require.NoError(t, err)
	assert.Empty(t, items, "removed from the store")
}

func TestWithStoreRejectsBadArguments(t *testing.T) {
	_, err := knowledge.New(knowledge.WithStore(nil))
	assert.Error(t, err)
}

func TestLoadReplacesTheDocumentsOfTheStore(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "kb.db"))
	require.NoError(t, err)
	defer st.Close()
	a, err := knowledge.New(knowledge.WithStore(st))
	require.NoError(t, err)
	require.NoError(t, a.AddDocument(ctx, knowledge.Doc{ID: "old", Source: "old.md", Text: "An old page about ferries."}))

	src, err := knowledge.New()
	require.NoError(t, err)
	for _, id := range []string{"a", "b"} {
		require.NoError(t, src.AddDocument(ctx, knowledge.Doc{ID: id, Source: id + ".md", Text: "Page " + id + " about trains."}))
	}
	var snap bytes.Buffer
	require.NoError(t, src.Save(&snap))
	require.NoError(t, a.Load(ctx, &snap))

	items, err := st.Search(ctx, nil, store.Query{})
	require.NoError(t, err)
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	assert.ElementsMatch(t, []string{"a", "b"}, keys, "the snapshot's documents replaced the store's")

	b, err := knowledge.New(knowledge.WithStore(st))
	require.NoError(t, err)
	require.NoError(t, b.Sync(ctx))
	res, err := b.Search(ctx, knowledge.Query{Text: "trains"})
	require.NoError(t, err)
	assert.Len(t, res, 2, "another replica reads them")
	require.NoError(t, a.Remove(ctx, "a"), "Remove knows the loaded documents")
}

func TestAKnowledgeBaseWithoutAStoreKeepsItsDocumentsInItsOwn(t *testing.T) {
	ctx := t.Context()
	kb, err := knowledge.New()
	require.NoError(t, err)
	require.NoError(t, kb.AddDocument(ctx, knowledge.Doc{ID: "a", Source: "a.md", Text: "Trains leave hourly."}))
	require.NoError(t, kb.Sync(ctx), "nothing to read: no other process writes to it")
	require.NoError(t, kb.Delete("a"))
	require.ErrorIs(t, kb.Remove(ctx, "a"), knowledge.ErrNotFound, "Delete removed it from the store too")
	res, err := kb.Search(ctx, knowledge.Query{Text: "trains"})
	require.NoError(t, err)
	assert.Empty(t, res)
}
