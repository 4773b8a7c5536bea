package memory_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// benchPayload is the size of a modest serialized state.
const benchPayload = 4 << 10

func BenchmarkPut(b *testing.B) {
	s := memory.New()
	ctx := b.Context()
	payload := make([]byte, benchPayload)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		err := s.Put(ctx, state.Checkpoint{
			ThreadID: "bench", ID: strconv.Itoa(i), Step: i, Source: "loop",
			CreatedAt: time.Now(), Metadata: map[string]string{"step": "x"}, Payload: payload,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetLatest(b *testing.B) {
	s := memory.New()
	ctx := b.Context()
	payload := make([]byte, benchPayload)
	for i := range 100 {
		require.NoError(b, s.Put(ctx, state.Checkpoint{
			ThreadID: "bench", ID: strconv.Itoa(i), Step: i, Source: "loop",
			CreatedAt: time.Now(), Metadata: map[string]string{"step": "x"}, Payload: payload,
		}))
	}
	require.NoError(b, s.PutWrites(ctx, "bench", "", "99", []state.PendingWrite{
		{TaskID: "a", Node: "agent", Payload: payload[:512]},
		{TaskID: "b", Node: "tools", Payload: payload[:512]},
	}))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tup, err := s.Get(ctx, "bench", "", "")
		if err != nil || len(tup.Writes) != 2 {
			b.Fatal(err, len(tup.Writes))
		}
	}
}
