package sqlite_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// TestMemoryAgreesWithSQLite runs cases the conformance suite leaves to each
// store against both, so that a program tested on the memory store behaves
// the same on SQLite.
func TestMemoryAgreesWithSQLite(t *testing.T) {
	stores := []struct {
		name string
		new  func(t *testing.T) state.Saver
	}{
		{"memory", func(t *testing.T) state.Saver { return memory.New() }},
		{"sqlite", func(t *testing.T) state.Saver { s, _ := openTemp(t); return s }},
	}
	for _, store := range stores {
		t.Run(store.name, func(t *testing.T) {
			t.Run("MetadataMustBeUTF8", func(t *testing.T) {
				s := store.new(t)
				for _, md := range []map[string]string{{"k": "bad \xff value"}, {"bad \xc3\x28 key": "v"}} {
					err := s.Put(t.Context(), state.Checkpoint{ThreadID: "t", ID: "cp", Metadata: md})
					require.Error(t, err, "metadata %q", md)
					assert.Contains(t, err.Error(), "valid UTF-8")
					assert.Contains(t, err.Error(), `"t"`)
					assert.Contains(t, err.Error(), `"cp"`)
					assert.NotErrorIs(t, err, state.ErrConflict)
				}
				cps, err := s.List(t.Context(), "t", "", state.ListOptions{})
				require.NoError(t, err)
				assert.Empty(t, cps, "a rejected Put stored a checkpoint")

				md := map[string]string{"ünï": "✓", "nul": "a\x00b"}
				require.NoError(t, s.Put(t.Context(), state.Checkpoint{ThreadID: "t", ID: "cp", Metadata: md}))
				tup, err := s.Get(t.Context(), "t", "", "cp")
				require.NoError(t, err)
				assert.Equal(t, md, tup.Checkpoint.Metadata)
			})
		})
	}
}
