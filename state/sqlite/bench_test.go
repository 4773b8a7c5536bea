package sqlite_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/sqlite"
)

// benchPayload is the size of a modest serialized state.
const benchPayload = 4 << 10

func benchCheckpoint(i int, payload []byte) state.Checkpoint {
	return state.Checkpoint{
		ThreadID: "bench", ID: strconv.Itoa(i), ParentID: strconv.Itoa(i - 1), Step: i, Source: "loop",
		CreatedAt: time.Now(), Metadata: map[string]string{"step": "x"}, Payload: payload,
	}
}

func BenchmarkPut(b *testing.B) {
	for _, mode := range []sqlite.Synchronous{sqlite.SynchronousNormal, sqlite.SynchronousFull} {
		b.Run("synchronous="+mode.String(), func(b *testing.B) {
			benchPuts(b, mode, func(ctx context.Context, s *sqlite.Saver, cp state.Checkpoint, _ string) error {
				return s.Put(ctx, cp)
			})
		})
	}
}

// BenchmarkPutIfLatest is BenchmarkPut (synchronous=NORMAL) through the
// conditional put a graph run uses, each checkpoint following the one
// before.
func BenchmarkPutIfLatest(b *testing.B) {
	benchPuts(b, sqlite.SynchronousNormal, func(ctx context.Context, s *sqlite.Saver, cp state.Checkpoint, latest string) error {
		return s.PutIfLatest(ctx, cp, latest)
	})
}

// benchPuts stores checkpoints one after the other with put, which gets
// the ID of the one before ("" for the first).
func benchPuts(b *testing.B, mode sqlite.Synchronous, put func(context.Context, *sqlite.Saver, state.Checkpoint, string) error) {
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), sqlite.WithSynchronous(mode))
	require.NoError(b, err)
	defer s.Close()
	ctx := b.Context()
	payload := make([]byte, benchPayload)
	b.ReportAllocs()
	b.ResetTimer()
	latest := ""
	for i := 0; b.Loop(); i++ {
		cp := benchCheckpoint(i, payload)
		if err := put(ctx, s, cp, latest); err != nil {
			b.Fatal(err)
		}
		latest = cp.ID
	}
}

func BenchmarkGetLatest(b *testing.B) {
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	require.NoError(b, err)
	defer s.Close()
	ctx := b.Context()
	payload := make([]byte, benchPayload)
	for i := range 100 {
		require.NoError(b, s.Put(ctx, benchCheckpoint(i, payload)))
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
