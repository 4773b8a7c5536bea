package memory_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model/hashembed"
	"github.com/trellis-go/trellis/store"
	storemem "github.com/trellis-go/trellis/store/memory"
	"github.com/trellis-go/trellis/store/sqlite"
	"github.com/trellis-go/trellis/tool/memory"
)

func TestMemoriesInAStoreAreSharedAndSurviveRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memories.db")
	open := func() (*memory.Store, store.Store) {
		st, err := sqlite.Open(path)
		require.NoError(t, err)
		m, err := memory.New(memory.WithStore(st))
		require.NoError(t, err)
		return m, st
	}
	ctx := memory.WithScope(t.Context(), "ana")
	a, sa := open()
	b, sb := open() // a second replica on the same file
	id, err := a.Add(ctx, memory.Entry{Text: "Ana prefers window seats on trains", Topics: []string{"travel"}})
	require.NoError(t, err)

	docs, err := b.Retrieve(ctx, "which seats does Ana like", 3)
	require.NoError(t, err)
	require.Len(t, docs, 1, "the other replica finds it")
	assert.Equal(t, id, docs[0].ID)
	assert.Equal(t, "Ana prefers window seats on trains", docs[0].Content)
	assert.Equal(t, []string{"travel"}, docs[0].Metadata[memory.TopicsKey])

	other, err := b.Retrieve(memory.WithScope(t.Context(), "bob"), "seats", 3)
	require.NoError(t, err)
	assert.Empty(t, other, "scopes stay apart")

	_, err = b.Add(ctx, memory.Entry{ID: id, Text: "again"})
	require.ErrorIs(t, err, memory.ErrInvalidEntry, "an ID is taken across replicas")
	require.NoError(t, sa.Close())
	require.NoError(t, sb.Close())

	c, sc := open() // after a restart
	defer sc.Close()
	list, err := c.List(ctx, memory.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "ana", list[0].Scope)
	require.NoError(t, c.Delete(ctx, id))
	require.ErrorIs(t, c.Delete(ctx, id), memory.ErrNotFound)
	assert.ErrorIs(t, c.Save(&bytes.Buffer{}), memory.ErrDurable)
}

func TestMemoriesInAStoreAreFoundByMeaningAndEvicted(t *testing.T) {
	st := storemem.New(store.WithEmbedder(hashembed.New(0)))
	defer st.Close()
	m, err := memory.New(memory.WithStore(st), memory.WithMaxEntries(2))
	require.NoError(t, err)
	ctx := t.Context()
	for _, text := range []string{"the oldest note about gardening", "Ana drinks green tea", "Ana owns a cat named Miso"} {
		_, err := m.Add(ctx, memory.Entry{Text: text})
		require.NoError(t, err)
	}
	list, err := m.List(ctx, memory.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 2, "the oldest was evicted")
	assert.Equal(t, "Ana owns a cat named Miso", list[0].Text, "newest first")

	docs, err := m.Retrieve(ctx, "what does Ana drink", 1)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "Ana drinks green tea", docs[0].Content)
	assert.Greater(t, docs[0].Score, 0.0)
}

func TestRunStoreModeUsesTheContextsStore(t *testing.T) {
	st := storemem.New()
	defer st.Close()
	m, err := memory.New(memory.WithRunStore())
	require.NoError(t, err)
	runCtx := store.NewContext(t.Context(), st)
	_, err = m.Add(runCtx, memory.Entry{Text: "kept in the run's store"})
	require.NoError(t, err)
	items, err := st.Search(t.Context(), nil, store.Query{})
	require.NoError(t, err)
	assert.Len(t, items, 1)

	list, err := m.List(t.Context(), memory.Filter{})
	require.NoError(t, err)
	assert.Empty(t, list, "without a run's store the process's memory is used")
}

func TestStoreModeRefusesItsOwnEmbedder(t *testing.T) {
	_, err := memory.New(memory.WithRunStore(), memory.WithEmbedder(hashembed.New(0).Embed))
	assert.Error(t, err)
	_, err = memory.New(memory.WithStore(nil))
	assert.Error(t, err)
	_, err = memory.New(memory.WithNamespace(""))
	assert.Error(t, err)
}
