package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// encryptedGraph is START → a over saver, its checkpoints encrypted.
func encryptedGraph(t *testing.T, saver state.Saver, ser state.Serializer) *graph.Graph[doc] {
	t.Helper()
	return mustCompile(t, graph.New[doc]().
		AddNode("a", func(_ context.Context, s doc) (doc, error) { s.Answer = "for " + s.Log[0]; return s, nil }).
		AddEdge(graph.START, "a"),
		graph.WithCheckpointer(saver), graph.WithSerializer(ser))
}

// Whoever can write to the store cannot pass one thread's encrypted state
// off as another's, nor put a thread back to an older state by writing an
// older checkpoint's payload as its latest: the engine binds each payload
// to its thread, namespace and checkpoint, and reading it anywhere else
// fails with an error matching ErrCorruptCheckpoint and state.ErrMisplaced.
func TestEncryptedCheckpointMovedToAnotherPlaceIsRefused(t *testing.T) {
	ctx := context.Background()
	saver := memory.New()
	ser, err := state.Encrypted([]byte("0123456789abcdef0123456789abcdef"), state.JSON())
	require.NoError(t, err)
	g := encryptedGraph(t, saver, ser)
	for _, thread := range []string{"alice", "mallory"} {
		_, err := g.Invoke(ctx, doc{Log: []string{thread}}, graph.WithThread(thread))
		require.NoError(t, err)
	}
	alice, err := saver.Get(ctx, "alice", "", "")
	require.NoError(t, err)
	mallory, err := saver.Get(ctx, "mallory", "", "")
	require.NoError(t, err)

	// Alice's state copied into Mallory's thread, as its latest checkpoint.
	swapped := mallory.Checkpoint
	swapped.ID, swapped.ParentID, swapped.Payload = "swapped", mallory.Checkpoint.ID, alice.Checkpoint.Payload
	require.NoError(t, saver.Put(ctx, swapped))
	_, err = g.GetState(ctx, "mallory")
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
	require.ErrorIs(t, err, state.ErrMisplaced)
	assert.ErrorContains(t, err, `checkpoint "swapped"`)
	_, err = g.Invoke(ctx, doc{Log: []string{"mallory"}}, graph.WithThread("mallory"), graph.IfLatest("swapped"))
	require.NoError(t, err, "a new turn does not read the state; it follows the checkpoint")
	_, err = g.Resume(ctx, "alice")
	require.NoError(t, err, "alice's own thread is untouched")

	// Alice's first state put back as her latest checkpoint.
	hist, err := g.History(ctx, "alice", 0)
	require.NoError(t, err)
	first, err := saver.Get(ctx, "alice", "", hist[len(hist)-1].CheckpointID)
	require.NoError(t, err)
	rolledBack := first.Checkpoint
	rolledBack.ID, rolledBack.ParentID = "rolled-back", hist[0].CheckpointID
	require.NoError(t, saver.Put(ctx, rolledBack))
	_, err = g.GetState(ctx, "alice")
	require.ErrorIs(t, err, state.ErrMisplaced)
	_, err = g.Resume(ctx, "alice")
	require.ErrorIs(t, err, state.ErrMisplaced)
	_, err = g.History(ctx, "alice", 0)
	require.ErrorIs(t, err, state.ErrMisplaced)
}

// A task's saved output is bound to its task: one task's output written as
// another's is refused.
func TestEncryptedPendingWriteMovedToAnotherTaskIsRefused(t *testing.T) {
	ctx := context.Background()
	saver := memory.New()
	ser, err := state.Encrypted([]byte("0123456789abcdef"), state.JSON())
	require.NoError(t, err)
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("done", appendLog("done")).
		AddNode("asks", func(ctx context.Context, s doc) (doc, error) {
			answer, err := graph.Interrupt[string](ctx, "approve?")
			if err != nil {
				return s, err
			}
			s.Log = append(s.Log, answer)
			return s, nil
		}).
		AddEdge(graph.START, "done").AddEdge(graph.START, "asks"),
		graph.WithCheckpointer(saver), graph.WithSerializer(ser))
	_, err = g.Invoke(ctx, doc{}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	tup, err := saver.Get(ctx, "t", "", "")
	require.NoError(t, err)
	require.Len(t, tup.Writes, 2)
	_, err = g.GetState(ctx, "t")
	require.NoError(t, err)

	// The interrupted task's record replaced by the finished one's.
	moved := tup.Writes[1]
	moved.Payload = tup.Writes[0].Payload
	require.NoError(t, saver.PutWrites(ctx, "t", "", tup.Checkpoint.ID, []state.PendingWrite{moved}))
	_, err = g.GetState(ctx, "t")
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
	require.ErrorIs(t, err, state.ErrMisplaced)
	assert.ErrorContains(t, err, `task "`+moved.TaskID+`"`)
}
