package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// A node that asks twice gets its first answer back, saved with the run,
// exactly: an int64 beyond 2^53 included.
func TestEarlierResumeAnswersKeepTheirPrecision(t *testing.T) {
	saver := memory.New()
	const orderID int64 = 9007199254740993 // 2^53 + 1
	g := mustCompile(t, graph.New[doc]().
		AddNode("form", func(ctx context.Context, s doc) (doc, error) {
			id, err := graph.Interrupt[int64](ctx, "order?")
			if err != nil {
				return s, err
			}
			ok, err := graph.Interrupt[bool](ctx, "confirm?")
			if err != nil {
				return s, err
			}
			s.Answer = fmt.Sprintf("%d %v", id, ok)
			return s, nil
		}).AddEdge(graph.START, "form"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx, "t", graph.WithResumeValue(orderID))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	out, err := g.Resume(ctx, "t", graph.WithResumeValue(true))
	require.NoError(t, err)
	assert.Equal(t, "9007199254740993 true", out.Answer)
}

func TestEarlierResumeAnswersDecodeIntoAny(t *testing.T) {
	saver := memory.New()
	var first any
	g := mustCompile(t, graph.New[doc]().
		AddNode("form", func(ctx context.Context, s doc) (doc, error) {
			v, err := graph.Interrupt[any](ctx, "anything?")
			if err != nil {
				return s, err
			}
			if _, err := graph.Interrupt[bool](ctx, "sure?"); err != nil {
				return s, err
			}
			first = v
			return s, nil
		}).AddEdge(graph.START, "form"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx, "t", graph.WithResumeValue(map[string]any{"k": "v"}))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	_, err = g.Resume(ctx, "t", graph.WithResumeValue(true))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": "v"}, first, "decoded, not JSON text")
}

// After a resume, the output of a task that had finished before the run
// stopped is read back from its pending write; fields it did not change
// still count as unchanged, so the merge sees the same writes as in a run
// that never stopped.
func TestResumedTaskOutputWritesOnlyWhatTheTaskChanged(t *testing.T) {
	saver := memory.New()
	var fail atomic.Bool
	fail.Store(true)
	g := mustCompile(t, graph.New[doc](logReducer()).
		AddNode("ok", appendLog("ok")).
		AddNode("flaky", func(_ context.Context, s doc) (doc, error) {
			if fail.Load() {
				return s, errors.New("down")
			}
			s.Items = append(s.Items, 2) // only flaky writes Items
			return s, nil
		}).
		AddEdge(graph.START, "ok").AddEdge(graph.START, "flaky"),
		graph.WithCheckpointer(saver))
	ctx := context.Background()

	// Without the failure the superstep merges fine.
	fail.Store(false)
	out, err := g.Invoke(ctx, doc{Items: []int{1}}, graph.WithThread("ok-run"))
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, out.Items)

	fail.Store(true)
	_, err = g.Invoke(ctx, doc{Items: []int{1}}, graph.WithThread("t"))
	require.ErrorContains(t, err, "down")
	fail.Store(false)
	out, err = g.Resume(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, out.Items)
	assert.Equal(t, []string{"ok"}, out.Log)
}

// With DurabilityExit, a resumed run that pauses again before it completes a
// superstep saves what the paused superstep's tasks recorded: the answers
// given so far and the new interrupt.
func TestExitDurabilityKeepsTheWritesOfAResumedRunThatPausesAgain(t *testing.T) {
	saver := memory.New()
	g := mustCompile(t, graph.New[doc]().
		AddNode("form", func(ctx context.Context, s doc) (doc, error) {
			name, err := graph.Interrupt[string](ctx, "name?")
			if err != nil {
				return s, err
			}
			age, err := graph.Interrupt[int](ctx, "age?")
			if err != nil {
				return s, err
			}
			s.Answer = fmt.Sprintf("%s is %d", name, age)
			return s, nil
		}).AddEdge(graph.START, "form"),
		graph.WithCheckpointer(saver), graph.WithDefaultDurability(graph.DurabilityExit))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)

	_, err = g.Resume(ctx, "t", graph.WithResumeValue("Ada"))
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	ageID := ie.Interrupts[0].ID

	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, ageID, snap.Interrupts[0].ID, "the thread waits for the interrupt the last run reported")

	out, err := g.Resume(ctx, "t", graph.WithResume(ageID, 36))
	require.NoError(t, err)
	assert.Equal(t, "Ada is 36", out.Answer)
}

func TestNestedStartedOutsideACheckpointedRun(t *testing.T) {
	started, err := graph.NestedStarted(context.Background(), "agent", "call_1")
	require.NoError(t, err)
	assert.False(t, started)
}

// A run named by a thread but not checkpointed (WithThread without a
// checkpointer; a task of RunTask, as an executor such as module temporal
// runs it) has nothing started: a handoff with retries asks.
func TestNestedStartedInARunNotCheckpointed(t *testing.T) {
	type s struct{ Started bool }
	g, err := graph.New[s]().AddNode("ask", func(ctx context.Context, in s) (s, error) {
		started, err := graph.NestedStarted(ctx, "agent", "call_1")
		in.Started = started
		return in, err
	}).AddEdge(graph.START, "ask").Compile()
	require.NoError(t, err)

	out, err := g.Invoke(context.Background(), s{Started: true}, graph.WithThread("t"))
	require.NoError(t, err)
	assert.False(t, out.Started)

	task, err := g.RunTask(context.Background(), graph.StepTask[s]{Node: "ask"}, s{Started: true}, graph.TaskScope{Thread: "t"})
	require.NoError(t, err)
	assert.False(t, task.State.Started)
}
