package graph_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/state/sqlite"
)

// chainStores are the stores the history-chain tests run on.
func chainStores(t *testing.T) map[string]func() state.Saver {
	return map[string]func() state.Saver{
		"memory": func() state.Saver { return memory.New() },
		"sqlite": func() state.Saver {
			s, err := sqlite.Open(filepath.Join(t.TempDir(), "checkpoints.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

// requireOneChain checks that hist (newest first) is one chain: each
// checkpoint's parent is the next one, the oldest has none.
func requireOneChain(t *testing.T, hist []graph.Snapshot[doc]) {
	t.Helper()
	require.NotEmpty(t, hist)
	for i, s := range hist[:len(hist)-1] {
		assert.Equal(t, hist[i+1].CheckpointID, s.ParentID,
			"checkpoint %d (%s, step %d) names a parent that is not the checkpoint before it", i, s.Source, s.Step)
	}
	assert.Empty(t, hist[len(hist)-1].ParentID, "the thread's first checkpoint has no parent")
}

// Whatever the durability, every stored checkpoint's parent is a stored
// checkpoint, so that History reads as one chain across turns and
// resumes; with exit durability too, which stores one checkpoint per run
// and keeps the others in memory only.
func TestHistoryIsOneChainInEveryDurability(t *testing.T) {
	for name, open := range chainStores(t) {
		for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
			t.Run(name+"/"+d.String(), func(t *testing.T) {
				var c counts
				g := mustCompile(t, graph.New[doc](logReducer()).
					AddNode("a", counted(&c, "a")).AddNode("approve", approval(&c)).AddNode("b", counted(&c, "b")).
					AddEdge(graph.START, "a").AddEdge("a", "approve").AddEdge("approve", "b"),
					graph.WithCheckpointer(open()), graph.WithDefaultDurability(d))
				ctx := context.Background()
				for turn := range 2 {
					_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
					require.ErrorIs(t, err, graph.ErrInterrupted, "turn %d", turn)
					_, err = g.Resume(ctx, "t", graph.WithResumeValue("ok"))
					require.NoError(t, err, "turn %d", turn)
				}
				hist, err := g.History(ctx, "t", 0)
				require.NoError(t, err)
				if d == graph.DurabilityExit {
					require.Len(t, hist, 4, "one checkpoint per run")
				}
				requireOneChain(t, hist)

				// A replay from an earlier checkpoint follows it.
				from := hist[len(hist)-1].CheckpointID
				_, err = g.Resume(ctx, "t", graph.FromCheckpoint(from))
				require.ErrorIs(t, err, graph.ErrInterrupted)
				after, err := g.History(ctx, "t", 0)
				require.NoError(t, err)
				ids := map[string]bool{}
				for _, s := range after {
					ids[s.CheckpointID] = true
				}
				for _, s := range after {
					if s.ParentID != "" {
						assert.True(t, ids[s.ParentID], "checkpoint %s (%s) names parent %s, which is not stored", s.CheckpointID, s.Source, s.ParentID)
					}
				}
				parent := after[0]
				for parent.ParentID != "" && parent.CheckpointID != from {
					for _, s := range after {
						if s.CheckpointID == parent.ParentID {
							parent = s
						}
					}
				}
				assert.Equal(t, from, parent.CheckpointID, "the replay's checkpoints lead back to the one it replayed")
			})
		}
	}
}
