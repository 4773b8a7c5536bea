package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/postgres"
	"github.com/trellis-go/trellis/store/storetest"
)

// TestReplicasShareMemories opens two stores on one schema through two
// pools, as two replicas would: what one remembers the other finds by
// meaning, and their conditional writes exclude each other.
func TestReplicasShareMemories(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Postgres")
	}
	ctx := t.Context()
	admin := pgtest.Pool(t)
	schema := pgtest.Schema(t, admin, "store_")
	open := func() store.Store {
		s, err := postgres.New(ctx, pgtest.Pool(t), store.WithSchema(schema),
			store.WithEmbedder(&storetest.Embedder{Dims: 128}), store.WithIndex("text"))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
	a, b := open(), open()
	ns := []string{"users", "ana", "memories"}
	_, err := a.Put(ctx, ns, "m0", []byte(`{"text":"Ana likes hiking"}`))
	require.NoError(t, err)
	it, err := a.Put(ctx, ns, "m1", []byte(`{"text":"Ana is allergic to peanuts"}`))
	require.NoError(t, err)

	items, err := b.Search(ctx, []string{"users", "ana"}, store.Query{Text: "is Ana allergic to anything", Limit: 1})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "m1", items[0].Key)

	_, err = b.PutIf(ctx, ns, "m1", []byte(`{"text":"Ana is allergic to peanuts and shellfish"}`), it.Version)
	require.NoError(t, err)
	_, err = a.PutIf(ctx, ns, "m1", []byte(`{"text":"stale"}`), it.Version)
	require.ErrorIs(t, err, store.ErrConflict, "the other replica's write is not overwritten")
}
