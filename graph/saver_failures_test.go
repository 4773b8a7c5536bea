package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// flakySaver is a memory saver whose Put fails for the checkpoints failPut
// selects and whose PutWrites fails when failWrites is set. It records the
// IDs of the checkpoints it failed on.
type flakySaver struct {
	*memory.Saver
	failPut    func(state.Checkpoint) bool
	failWrites bool

	mu     sync.Mutex
	failed []string
}

func (s *flakySaver) Put(ctx context.Context, cp state.Checkpoint) error {
	if s.failPut != nil && s.failPut(cp) {
		s.mu.Lock()
		s.failed = append(s.failed, cp.ID)
		s.mu.Unlock()
		return errDiskFull
	}
	return s.Saver.Put(ctx, cp)
}

// PutIfLatest fails as Put does: the embedded store's would bypass Put.
func (s *flakySaver) PutIfLatest(ctx context.Context, cp state.Checkpoint, latest string) error {
	if s.failPut != nil && s.failPut(cp) {
		s.mu.Lock()
		s.failed = append(s.failed, cp.ID)
		s.mu.Unlock()
		return errDiskFull
	}
	return s.Saver.PutIfLatest(ctx, cp, latest)
}

func (s *flakySaver) PutWrites(ctx context.Context, thread, ns, cpID string, writes []state.PendingWrite) error {
	if s.failWrites {
		s.mu.Lock()
		s.failed = append(s.failed, cpID)
		s.mu.Unlock()
		return errDiskFull
	}
	return s.Saver.PutWrites(ctx, thread, ns, cpID, writes)
}

func (s *flakySaver) failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failed)
}

// A saver that fails makes the run fail with an error that names the thread,
// the checkpoint and what was being saved, and wraps the saver's error,
// whatever the durability mode.
func TestCheckpointSaverFailures(t *testing.T) {
	ctx := context.Background()
	chain := func(t *testing.T, saver state.Saver, ran *atomic.Int32, opts ...graph.CompileOption) *graph.Graph[sampleState] {
		count := func(_ context.Context, s sampleState) (sampleState, error) {
			ran.Add(1)
			s.Count++
			return s, nil
		}
		return mustCompile(t, graph.New[sampleState]().
			AddNode("a", count).AddNode("b", count).
			AddEdge(graph.START, "a").AddEdge("a", "b"),
			append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
	}
	atStep := func(step int) func(state.Checkpoint) bool {
		return func(cp state.Checkpoint) bool { return cp.Step == step }
	}

	t.Run("sync checkpoint", func(t *testing.T) {
		saver := &flakySaver{Saver: memory.New(), failPut: atStep(0)}
		var ran atomic.Int32
		_, err := chain(t, saver, &ran).Invoke(ctx, sampleState{}, graph.WithThread("t"))
		failed := saver.failures()
		require.Len(t, failed, 1)
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving checkpoint: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.Equal(t, int32(1), ran.Load(), "b must not run after its checkpoint failed")
	})
	t.Run("sync pending write", func(t *testing.T) {
		// Outputs are saved as pending writes in supersteps of several
		// tasks (a lone task's is held by the checkpoint that follows).
		saver := &flakySaver{Saver: memory.New(), failWrites: true}
		var ran atomic.Int32
		count := func(_ context.Context, s sampleState) (sampleState, error) {
			ran.Add(1)
			return s, nil
		}
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("a", count).AddNode("b", count).AddNode("c", count).
			AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddEdge("a", "c").AddEdge("b", "c"),
			graph.WithCheckpointer(saver))
		_, err := g.Invoke(ctx, sampleState{}, graph.WithThread("t"))
		failed := saver.failures()
		require.NotEmpty(t, failed)
		assert.Contains(t, err.Error(), fmt.Sprintf(`graph: thread "t": checkpoint %q: saving the output of node `, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.Equal(t, int32(2), ran.Load(), "c must not run after the outputs of its superstep failed to save")
	})
	t.Run("async checkpoint", func(t *testing.T) {
		saver := &flakySaver{Saver: memory.New(), failPut: atStep(0)}
		var ran atomic.Int32
		g := chain(t, saver, &ran)
		_, err := g.Invoke(ctx, sampleState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityAsync))
		failed := saver.failures()
		require.NotEmpty(t, failed)
		// The first failure is reported, whenever the run notices it.
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving checkpoint: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
	})
	t.Run("exit checkpoint", func(t *testing.T) {
		saver := &flakySaver{Saver: memory.New(), failPut: func(state.Checkpoint) bool { return true }}
		var ran atomic.Int32
		// The graph writes synchronously; the run overrides that.
		g := chain(t, saver, &ran)
		out, err := g.Invoke(ctx, sampleState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityExit))
		failed := saver.failures()
		require.Len(t, failed, 1, "exit mode writes once")
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving checkpoint: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.Equal(t, int32(2), ran.Load(), "exit mode writes after the run")
		assert.Equal(t, 2, out.Count)
	})
	t.Run("exit pending writes replace the interrupt", func(t *testing.T) {
		saver := &flakySaver{Saver: memory.New(), failWrites: true}
		g := mustCompile(t, graph.New[sampleState]().
			AddNode("ask", func(ctx context.Context, s sampleState) (sampleState, error) {
				_, err := graph.Interrupt[string](ctx, "ok?")
				return s, err
			}).
			AddEdge(graph.START, "ask"),
			graph.WithCheckpointer(saver), graph.WithDefaultDurability(graph.DurabilityExit))
		_, err := g.Invoke(ctx, sampleState{}, graph.WithThread("t"))
		failed := saver.failures()
		require.Len(t, failed, 1)
		assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t": checkpoint %q: saving pending writes: disk full`, failed[0]))
		assert.ErrorIs(t, err, errDiskFull)
		assert.NotErrorIs(t, err, graph.ErrInterrupted, "an interrupt that was not saved cannot be resumed")
	})
}
