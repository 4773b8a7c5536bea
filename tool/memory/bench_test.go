package memory_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/memory"
)

// BenchmarkScopeOf5k measures adding to, and searching lexically, a scope
// of 5,000 entries in the store's own in-process store.
func BenchmarkScopeOf5k(b *testing.B) {
	s, err := memory.New()
	require.NoError(b, err)
	ctx := memory.WithScope(b.Context(), "ana")
	for i := range 5000 {
		_, err := s.Add(ctx, memory.Entry{Text: fmt.Sprintf("note %d about topic%d and topic%d", i, i%97, i%13)})
		require.NoError(b, err)
	}
	b.Run("Add", func(b *testing.B) {
		for b.Loop() {
			_, err := s.Add(ctx, memory.Entry{Text: "one more note about topic3"})
			require.NoError(b, err)
		}
	})
	b.Run("Retrieve", func(b *testing.B) {
		for b.Loop() {
			docs, err := s.Retrieve(ctx, "topic42 topic7", 5)
			require.NoError(b, err)
			require.NotEmpty(b, docs)
		}
	})
}
