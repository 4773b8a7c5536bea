package runstest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/state"
)

type notesState struct {
	Items []string `json:"items"`
	Count int
}

// ThreadState runs the tests of the Manager's access to thread state
// (ThreadState, History, UpdateState, ForkThread, CopyThread, DeleteRun,
// GraphInfo) on Managers that open returns, one per test; open is given
// the test.
func ThreadState(t *testing.T, open func(t *testing.T) *runs.Manager) {
	t.Run("ReadUpdatedForkedAndCopiedAsJSON", func(t *testing.T) { testThreadState(t, open) })
	t.Run("ActiveRunsKeepTheirThreadAndRecord", func(t *testing.T) { testActiveRuns(t, open) })
}

// stateManager works, on the Manager open returns, a graph "two" (a → b,
// each appending its name) and a graph "wait" whose node waits for
// release.
func stateManager(t *testing.T, open func(t *testing.T) *runs.Manager) (*runs.Manager, chan struct{}) {
	t.Helper()
	m := open(t)
	release := make(chan struct{})
	add := func(name string) graph.NodeFunc[notesState] {
		return func(_ context.Context, s notesState) (notesState, error) {
			s.Items = append(s.Items, name)
			return s, nil
		}
	}
	opt := graph.WithReducer(func(s *notesState) *[]string { return &s.Items }, state.Append[string]())
	two, err := graph.New[notesState](opt, graph.WithName("two")).AddNode("a", add("a")).AddNode("b", add("b")).
		AddEdge(graph.START, "a").AddEdge("a", "b").Compile(graph.WithCheckpointer(m.Saver()))
	require.NoError(t, err)
	wait, err := graph.New[notesState](opt, graph.WithName("wait")).AddNode("w", func(ctx context.Context, s notesState) (notesState, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return s, ctx.Err()
		}
		return s, nil
	}).AddEdge(graph.START, "w").Compile(graph.WithCheckpointer(m.Saver()))
	require.NoError(t, err)
	require.NoError(t, m.Register(runs.Graph(two), runs.Graph(wait)))
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Work(wctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	return m, release
}

func finishRun(t *testing.T, m *runs.Manager, ctx context.Context, req runs.Request) runs.Run {
	t.Helper()
	r, err := m.Start(ctx, req)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err = m.Wait(wctx, r.ID)
	require.NoError(t, err)
	return r
}

func testThreadState(t *testing.T, open func(t *testing.T) *runs.Manager) {
	m, _ := stateManager(t, open)
	ctx := runs.WithOwner(t.Context(), "ann")
	_, err := m.CreateThread(ctx, "t", nil)
	require.NoError(t, err)
	st, err := m.ThreadState(ctx, "two", "t", "")
	require.NoError(t, err)
	assert.Equal(t, "null", string(st.Values), "a thread with no checkpoint has no state")

	finishRun(t, m, ctx, runs.Request{Graph: "two", Thread: "t", Input: json.RawMessage(`{"items":["x"]}`)})
	st, err = m.ThreadState(ctx, "", "t", "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":["x","a","b"],"Count":0}`, string(st.Values))

	hist, err := m.History(ctx, "", "t", runs.HistoryQuery{})
	require.NoError(t, err)
	require.Len(t, hist, 3)
	loops, err := m.History(ctx, "", "t", runs.HistoryQuery{Source: "loop"})
	require.NoError(t, err)
	assert.Len(t, loops, 2)
	older, err := m.History(ctx, "", "t", runs.HistoryQuery{Before: hist[0].CheckpointID, Limit: 1})
	require.NoError(t, err)
	require.Len(t, older, 1)
	assert.Equal(t, hist[1].CheckpointID, older[0].CheckpointID)

	// Without as_node, the update is written as the node that wrote the
	// checkpoint (b): nothing is due after it.
	_, err = m.UpdateState(ctx, "", "t", json.RawMessage(`{"items":["y"],"Count":2}`), "", "")
	require.NoError(t, err)
	st, err = m.ThreadState(ctx, "", "t", "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":["x","a","b","y"],"Count":2}`, string(st.Values))
	assert.Empty(t, st.Next)
	_, err = m.UpdateState(ctx, "", "t", json.RawMessage(`{"nope":1}`), "a", "")
	assert.ErrorIs(t, err, runs.ErrInvalid)
	_, err = m.UpdateState(ctx, "", "t", json.RawMessage(`{}`), "zz", "")
	assert.ErrorIs(t, err, runs.ErrInvalid)

	// A fork of the input checkpoint puts the thread back there.
	_, err = m.ForkThread(ctx, "", "t", hist[2].CheckpointID)
	require.NoError(t, err)
	st, err = m.ThreadState(ctx, "", "t", "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":["x"],"Count":0}`, string(st.Values))
	assert.Equal(t, []string{"a"}, st.Next)

	// Continuing the thread runs the nodes due at the fork: a, then b.
	finishRun(t, m, ctx, runs.Request{Graph: "two", Thread: "t", Resume: &runs.Resume{Continue: true}})
	st, err = m.ThreadState(ctx, "", "t", "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":["x","a","b"],"Count":0}`, string(st.Values))
	_, err = m.ForkThread(ctx, "", "t", hist[2].CheckpointID)
	require.NoError(t, err)
	st, err = m.ThreadState(ctx, "", "t", "")
	require.NoError(t, err)

	cp, err := m.CopyThread(ctx, "t")
	require.NoError(t, err)
	copied, err := m.ThreadState(ctx, "", cp.ID, "")
	require.NoError(t, err)
	assert.Equal(t, string(st.Values), string(copied.Values))
	assert.Equal(t, st.Next, copied.Next)
	finishRun(t, m, ctx, runs.Request{Graph: "two", Thread: cp.ID})
	copied, err = m.ThreadState(ctx, "", cp.ID, "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":["x","a","b"],"Count":0}`, string(copied.Values), "the copy resumes where the original was")

	other := runs.WithOwner(t.Context(), "bob")
	_, err = m.ThreadState(other, "two", "t", "")
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.UpdateState(other, "two", "t", json.RawMessage(`{}`), "a", "")
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.CopyThread(other, "t")
	assert.ErrorIs(t, err, runs.ErrNotFound)

	info, err := m.GraphInfo("two")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"Items": "items", "Count": "Count"}, info.Fields)
	assert.Contains(t, string(info.StateSchema), `"items"`)
	assert.Equal(t, []string{"two", "wait"}, m.Graphs())
}

func testActiveRuns(t *testing.T, open func(t *testing.T) *runs.Manager) {
	m, release := stateManager(t, open)
	ctx := t.Context()
	r, err := m.Start(ctx, runs.Request{Graph: "wait", Thread: "t"})
	require.NoError(t, err)
	_, err = m.UpdateState(ctx, "", "t", json.RawMessage(`{}`), "w", "")
	assert.ErrorIs(t, err, runs.ErrThreadBusy)
	_, err = m.CopyThread(ctx, "t")
	assert.ErrorIs(t, err, runs.ErrThreadBusy)
	assert.ErrorIs(t, m.DeleteRun(ctx, r.ID), runs.ErrThreadBusy)
	close(release)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = m.Wait(wctx, r.ID)
	require.NoError(t, err)
	require.NoError(t, m.DeleteRun(ctx, r.ID))
	_, err = m.Get(ctx, r.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound)
}
