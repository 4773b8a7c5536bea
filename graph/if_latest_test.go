package graph_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// turnState is a conversation of lines; each run's node answers the last.
type turnState struct {
	Lines []string
}

// turnGraph is START → answer → END over saver; ran counts the answers.
func turnGraph(t *testing.T, saver state.Saver, ran *atomic.Int32, opts ...graph.CompileOption) *graph.Graph[turnState] {
	t.Helper()
	return mustCompile(t, graph.New[turnState]().
		AddNode("answer", func(_ context.Context, s turnState) (turnState, error) {
			ran.Add(1)
			s.Lines = append(s.Lines, "answer to "+s.Lines[len(s.Lines)-1])
			return s, nil
		}).
		AddEdge(graph.START, "answer"),
		append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
}

// nextTurn reads thread and returns its lines with text appended, and the
// checkpoint they were read at ("" for a new thread).
func nextTurn(t *testing.T, g *graph.Graph[turnState], thread, text string) (turnState, string) {
	t.Helper()
	snap, err := g.GetState(context.Background(), thread)
	if err != nil {
		require.ErrorIs(t, err, state.ErrNotFound)
	}
	s := snap.State
	s.Lines = append(append([]string(nil), s.Lines...), text)
	return s, snap.CheckpointID
}

// A turn made from a state read before another turn ran would erase that
// turn: IfLatest refuses it before its node runs, and it stores nothing.
func TestIfLatestRefusesATurnMadeFromAnOlderCheckpoint(t *testing.T) {
	ctx := context.Background()
	var ran atomic.Int32
	g := turnGraph(t, memory.New(), &ran)

	first, at := nextTurn(t, g, "t", "hello")
	_, err := g.Invoke(ctx, first, graph.WithThread("t"), graph.IfLatest(at))
	require.NoError(t, err, "a new thread is at no checkpoint")

	late, readAt := nextTurn(t, g, "t", "late")       // read now…
	won, wonAt := nextTurn(t, g, "t", "first to run") // …overtaken by this
	_, err = g.Invoke(ctx, won, graph.WithThread("t"), graph.IfLatest(wonAt))
	require.NoError(t, err)
	before, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	ran.Store(0)

	_, err = g.Invoke(ctx, late, graph.WithThread("t"), graph.IfLatest(readAt))
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	require.ErrorIs(t, err, state.ErrNotLatest)
	assert.ErrorContains(t, err, `thread "t"`)
	assert.ErrorContains(t, err, readAt, "the error names the checkpoint the turn was made from")
	assert.Zero(t, ran.Load(), "the refused turn ran a node")
	after, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	assert.Len(t, after, len(before), "the refused turn stored a checkpoint")
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"hello", "answer to hello", "first to run", "answer to first to run"}, snap.State.Lines)

	// A turn made for a new thread is refused once the thread exists.
	_, err = g.Invoke(ctx, turnState{Lines: []string{"again"}}, graph.WithThread("t"), graph.IfLatest(""))
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	assert.ErrorContains(t, err, "none (a new thread)")
}

// sneakySaver lets another writer store a checkpoint on the thread right
// after a run read the thread's latest, before the run's first write: the
// race IfLatest's check cannot see, which the store's conditional put
// must catch.
type sneakySaver struct {
	*memory.Saver
	armed atomic.Bool
	sneak func()
}

func (s *sneakySaver) Get(ctx context.Context, thread, ns, id string) (state.Tuple, error) {
	tup, err := s.Saver.Get(ctx, thread, ns, id)
	if id == "" && s.armed.CompareAndSwap(true, false) {
		s.sneak()
	}
	return tup, err
}

// A turn that passed IfLatest's check stores its input only if the thread
// has not moved since, checked and stored at once; otherwise it fails and
// stores nothing, and — its input being its first write, stored before any
// node runs even with async writes — runs no node.
func TestIfLatestTurnOvertakenAfterItsCheckStoresNothing(t *testing.T) {
	ctx := context.Background()
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(d.String(), func(t *testing.T) {
			shared := memory.New()
			var ran, otherRan atomic.Int32
			// Another replica: a graph of its own over the same store, which
			// this process's guard against concurrent runs does not see.
			other := turnGraph(t, shared, &otherRan)
			_, err := other.Invoke(ctx, turnState{Lines: []string{"hello"}}, graph.WithThread("t"))
			require.NoError(t, err)

			saver := &sneakySaver{Saver: shared}
			g := turnGraph(t, saver, &ran, graph.WithDefaultDurability(d))
			late, at := nextTurn(t, g, "t", "late")
			var once sync.Once
			saver.sneak = func() {
				once.Do(func() {
					s, sat := nextTurn(t, other, "t", "sneaked in")
					_, err := other.Invoke(ctx, s, graph.WithThread("t"), graph.IfLatest(sat))
					require.NoError(t, err)
				})
			}
			saver.armed.Store(true)

			_, err = g.Invoke(ctx, late, graph.WithThread("t"), graph.IfLatest(at))
			require.ErrorIs(t, err, graph.ErrThreadBusy)
			require.ErrorIs(t, err, state.ErrNotLatest)
			if d != graph.DurabilityExit { // exit mode writes only when the run ends
				assert.Zero(t, ran.Load(), "the refused turn ran its node")
			}
			history, err := other.History(ctx, "t", 0)
			require.NoError(t, err)
			for _, h := range history {
				assert.NotContains(t, h.State.Lines, "late", "checkpoint %s (%s) holds the refused turn", h.CheckpointID, h.Source)
			}
			snap, err := other.GetState(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, []string{"hello", "answer to hello", "sneaked in", "answer to sneaked in"}, snap.State.Lines)
		})
	}
}

// IfLatest applies to a resume and an UpdateState too: the resume values,
// or the update, were made for the checkpoint the caller read.
func TestIfLatestRefusesAResumeOrUpdateOfAMovedThread(t *testing.T) {
	ctx := context.Background()
	var ran atomic.Int32
	g := turnGraph(t, memory.New(), &ran, graph.InterruptBefore("answer"))
	_, err := g.Invoke(ctx, turnState{Lines: []string{"hello"}}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	paused, err := g.GetState(ctx, "t")
	require.NoError(t, err)

	edited, err := g.UpdateState(ctx, "t", graph.START, func(s turnState) turnState {
		s.Lines = append(s.Lines, "edited")
		return s
	}, graph.IfLatest(paused.CheckpointID))
	require.NoError(t, err, "the thread is where the update was made")

	_, err = g.UpdateState(ctx, "t", graph.START, func(s turnState) turnState { return s }, graph.IfLatest(paused.CheckpointID))
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	require.ErrorIs(t, err, state.ErrNotLatest)

	_, err = g.Resume(ctx, "t", graph.IfLatest(paused.CheckpointID))
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	require.ErrorIs(t, err, state.ErrNotLatest)
	assert.Zero(t, ran.Load())
	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, edited, snap.CheckpointID, "a refused resume or update stored nothing")

	out, err := g.Resume(ctx, "t", graph.IfLatest(edited))
	require.NoError(t, err)
	assert.Equal(t, []string{"hello", "edited", "answer to edited"}, out.Lines)
}
