package sqlite_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/sqlite"
	"github.com/trellis-go/trellis/store/storetest"
)

// childEnv names the file a child process of TestAnotherProcessMemoryIsFoundByMeaning writes to.
const childEnv = "TRELLIS_STORE_CHILD_DB"

// TestAnotherProcessMemoryIsFoundByMeaning runs this test binary again as a
// second process that remembers something in the shared file; this process,
// which opened the file first, finds it by meaning.
func TestAnotherProcessMemoryIsFoundByMeaning(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		s, err := sqlite.Open(path, store.WithEmbedder(&storetest.Embedder{Dims: 128}), store.WithIndex("text"))
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Put(t.Context(), []string{"users", "ana", "memories"}, "m1", []byte(`{"text":"Ana is allergic to peanuts"}`))
		require.NoError(t, err)
		return
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	s, err := sqlite.Open(path, store.WithEmbedder(&storetest.Embedder{Dims: 128}), store.WithIndex("text"))
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Put(t.Context(), []string{"users", "ana", "memories"}, "m0", []byte(`{"text":"Ana likes hiking"}`))
	require.NoError(t, err)

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestAnotherProcessMemoryIsFoundByMeaning$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)

	items, err := s.Search(t.Context(), []string{"users", "ana"}, store.Query{Text: "is Ana allergic to anything", Limit: 1})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "m1", items[0].Key)
}
