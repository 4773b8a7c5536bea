package memory_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/model/hashembed"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/postgres"
	"github.com/trellis-go/trellis/store/sqlite"
	"github.com/trellis-go/trellis/tool/memory"
)

// replicasFindEachOthersMemories adds a memory through one replica's
// memory store and finds it by meaning through the other's.
func replicasFindEachOthersMemories(t *testing.T, a, b store.Store) {
	t.Helper()
	ma, err := memory.New(memory.WithStore(a))
	require.NoError(t, err)
	mb, err := memory.New(memory.WithStore(b))
	require.NoError(t, err)
	ctx := memory.WithScope(t.Context(), "ana")
	_, err = mb.Add(ctx, memory.Entry{Text: "Ana plays the cello on Sundays"})
	require.NoError(t, err)
	id, err := ma.Add(ctx, memory.Entry{Text: "Ana is allergic to peanuts", Topics: []string{"health"}})
	require.NoError(t, err)

	docs, err := mb.Retrieve(ctx, "which allergies does Ana have", 1)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, id, docs[0].ID, "found by the other replica")
	assert.Greater(t, docs[0].Score, 0.0, "by meaning: a cosine similarity")

	other, err := mb.Retrieve(memory.WithScope(t.Context(), "bob"), "allergies", 3)
	require.NoError(t, err)
	assert.Empty(t, other, "scopes stay apart")
}

func TestReplicasOnOneSQLiteFileFindEachOthersMemoriesByMeaning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memories.db")
	open := func() store.Store {
		st, err := sqlite.Open(path, store.WithEmbedder(hashembed.New(0)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
	replicasFindEachOthersMemories(t, open(), open())
}

func TestReplicasOnPostgresFindEachOthersMemoriesByMeaning(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Postgres")
	}
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "memory_")
	open := func() store.Store {
		st, err := postgres.New(t.Context(), pool, store.WithSchema(schema), store.WithEmbedder(hashembed.New(0)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
	replicasFindEachOthersMemories(t, open(), open())
}
