package postgres_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/postgres"
	"github.com/trellis-go/trellis/store/storetest"
)

// childSchemaEnv names the schema a child process of
// TestAnotherProcessMemoryIsFoundByMeaning writes to.
const childSchemaEnv = "TRELLIS_STORE_CHILD_SCHEMA"

// TestAnotherProcessMemoryIsFoundByMeaning runs this test binary again as
// a second process, a replica that remembers something in the shared
// schema; this process finds it by meaning, both by the exact scan and
// through the approximate index it built before the other process wrote.
func TestAnotherProcessMemoryIsFoundByMeaning(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Postgres")
	}
	ctx := t.Context()
	pool := pgtest.Pool(t)
	open := func(schema string, opts ...store.Option) store.Store {
		s, err := postgres.New(ctx, pool, append([]store.Option{store.WithSchema(schema),
			store.WithEmbedder(&storetest.Embedder{Dims: 128}), store.WithIndex("text")}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
	ns := []string{"users", "ana", "memories"}
	if schema := os.Getenv(childSchemaEnv); schema != "" {
		_, err := open(schema).Put(ctx, ns, "m1", []byte(`{"text":"Ana is allergic to peanuts"}`))
		require.NoError(t, err)
		return
	}
	schema := pgtest.Schema(t, pool, "store_proc_")
	exact := open(schema)
	approximate := open(schema, store.WithExactLimit(1))
	_, err := exact.Put(ctx, ns, "m0", []byte(`{"text":"Ana likes hiking"}`))
	require.NoError(t, err)
	_, err = exact.Put(ctx, ns, "m2", []byte(`{"text":"Ana plays the cello"}`))
	require.NoError(t, err)
	q := store.Query{Text: "is Ana allergic to anything", Limit: 1}
	items, err := approximate.Search(ctx, []string{"users", "ana"}, q) // builds the index: two items, above the limit of one
	require.NoError(t, err)
	require.Len(t, items, 1)

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAnotherProcessMemoryIsFoundByMeaning$")
	cmd.Env = append(os.Environ(), childSchemaEnv+"="+schema)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)

	for name, s := range map[string]store.Store{"exact": exact, "approximate": approximate} {
		items, err := s.Search(ctx, []string{"users", "ana"}, q)
		require.NoError(t, err, name)
		require.Len(t, items, 1, name)
		assert.Equal(t, "m1", items[0].Key, name)
	}
}
