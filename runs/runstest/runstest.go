package runstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
)

// DB is one fresh database for one test.
type DB struct {
	// Open returns a new Manager on the test's database, closed when the
	// test ends. Managers opened on one DB share its runs, as processes
	// sharing a database do.
	Open func(opts ...runs.Option) *runs.Manager
	// Exec runs a statement on the test's database, with PostgreSQL-style
	// placeholders ($1); the suite uses it to play a worker that died.
	Exec func(query string, args ...any) error
}

// Run runs the suite; newDB makes a fresh database for each test.
func Run(t *testing.T, newDB func(t *testing.T) DB) {
	tests := []struct {
		name string
		fn   func(t *testing.T, db DB)
	}{
		{"RunsToTheEnd", testRunsToTheEnd},
		{"InputIsWrittenThroughTheReducers", testInputIsWrittenThroughTheReducers},
		{"BadRequestsAreRefusedAndLeaveNoTrace", testBadRequests},
		{"InterruptAndResume", testInterruptAndResume},
		{"RejectLeavesNoTrace", testReject},
		{"EnqueueRunsInOrder", testEnqueue},
		{"InterruptStrategyKeepsWhatTheRunCheckpointed", testInterruptStrategy},
		{"RollbackStrategyUndoesTheRun", testRollbackStrategy},
		{"ConcurrentTurnsFollowTheStrategy", testConcurrentTurns},
		{"CancelActiveAndQueuedRuns", testCancel},
		{"StreamsResumeAfterAnEventAndFromAnyManager", testStream},
		{"OwnersSeeOnlyTheirOwn", testOwners},
		{"ThreadsAreFoundByMetadataAndStatus", testSearchThreads},
		{"DelayedRunsWait", testDelayed},
		{"SchedulesStartRuns", testCron},
		{"ScheduleFiresOnceHoweverManyWorkers", testCronWorkers},
		{"ShutdownHandsRunsBackAtABoundary", testDrain},
		{"ShutdownCancelsSuperstepsWithDrainCancelOrAfterTheTimeout", testDrainCancel},
		{"ExpiredLeaseIsTakenOverAndTheOldHolderCommitsNothing", testTakeOver},
		{"LateToolResultsAreAcceptedByAnyManager", testCompleteCall},
		{"RunEndReportsTheUsageOfTheRunsModelCalls", testUsage},
		{"DeleteThreadSoonDeletesIdleThreadsOnly", testDeleteThreadSoon},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newDB(t))
		})
	}
}

// worker opens a Manager on db with the suite's graphs and works it until
// the test ends.
func worker(t *testing.T, db DB, gs *gates, opts ...runs.Option) *runs.Manager {
	t.Helper()
	m, _ := stoppableWorker(t, db, gs, opts...)
	return m
}

// stoppableWorker is worker, with a function that stops its work and
// waits for Work to return (as the end of the test does).
func stoppableWorker(t *testing.T, db DB, gs *gates, opts ...runs.Option) (*runs.Manager, func()) {
	t.Helper()
	m := db.Open(append([]runs.Option{runs.WithLease(2 * time.Second), runs.WithDrain(runs.DrainAtBoundary, 10*time.Second)}, opts...)...)
	graphs(t, m, gs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Work(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err, "Work")
			case <-time.After(30 * time.Second):
				t.Error("Work did not return 30s after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return m, stop
}

// client opens a Manager on db that does not work runs.
func client(t *testing.T, db DB, gs *gates) *runs.Manager {
	t.Helper()
	m := db.Open()
	graphs(t, m, gs)
	return m
}

func wait(t *testing.T, m *runs.Manager, id string) runs.Run {
	t.Helper()
	return waitAs(t, t.Context(), m, id)
}

// waitAs waits for a run with ctx (and its owner).
func waitAs(t *testing.T, ctx context.Context, m *runs.Manager, id string) runs.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := m.Wait(ctx, id)
	require.NoError(t, err, "waiting for run %s", id)
	return r
}

// eventually waits, up to a deadline, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func entered(t *testing.T, h *hold) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the held node was not reached within 30s")
	}
}

func testRunsToTheEnd(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	r, err := m.Start(t.Context(), runs.Request{Graph: "echo", Input: input("hi"), Metadata: map[string]any{"user": "ana"}})
	require.NoError(t, err)
	assert.Equal(t, runs.StatusPending, r.Status)
	assert.NotEmpty(t, r.Thread, "a run without a thread starts a new one")
	done := wait(t, m, r.ID)
	assert.Equal(t, runs.StatusSuccess, done.Status, done.Error)
	assert.Equal(t, 1, done.Attempts)
	assert.False(t, done.EndedAt.IsZero())
	assert.Equal(t, []string{"hi", "a:hi", "b:a:hi"}, stateOf(t, m, r.Thread).Messages)
	out, err := m.Output(t.Context(), r.ID)
	require.NoError(t, err, "Output of a run that succeeded")
	var final Chat
	require.NoError(t, json.Unmarshal(out, &final), "Output is the final state as JSON: %s", out)
	assert.Equal(t, []string{"hi", "a:hi", "b:a:hi"}, final.Messages)
	th, err := m.Thread(t.Context(), r.Thread)
	require.NoError(t, err)
	assert.Equal(t, runs.ThreadIdle, th.Status)
	assert.Empty(t, th.ActiveRun)
	assert.Equal(t, "ana", th.Metadata["user"], "the thread takes the metadata of the run that made it")
	list, err := m.Runs(t.Context(), r.Thread, runs.RunQuery{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, r.ID, list[0].ID)
	assert.Equal(t, "ana", list[0].Metadata["user"])
}

func testInputIsWrittenThroughTheReducers(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ctx := t.Context()
	first, err := m.Start(ctx, runs.Request{Graph: "echo", Input: []byte(`{"messages":["hi"],"turns":1}`)})
	require.NoError(t, err)
	wait(t, m, first.ID)
	second, err := m.Start(ctx, runs.Request{Graph: "echo", Thread: first.Thread, Input: []byte(`{"messages":["again"],"turns":1,"note":"n"}`)})
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, wait(t, m, second.ID).Status)
	st := stateOf(t, m, first.Thread)
	assert.Equal(t, []string{"hi", "a:hi", "b:a:hi", "again", "a:again", "b:a:again"}, st.Messages, "appended, not replaced")
	assert.Equal(t, 2, st.Turns, "summed")
	assert.Equal(t, "n", st.Note, "a field without a reducer is replaced")
}

func testBadRequests(t *testing.T, db DB) {
	gs := newGates()
	m := client(t, db, gs)
	ctx := t.Context()
	cases := map[string]runs.Request{
		"unknown graph":        {Graph: "nope"},
		"input not an object":  {Graph: "echo", Input: []byte(`[1]`)},
		"input not JSON":       {Graph: "echo", Input: []byte(`{"messages":`)},
		"unknown strategy":     {Graph: "echo", Strategy: "sometimes"},
		"input and resume":     {Graph: "echo", Input: input("x"), Resume: &runs.Resume{HasValue: true, Value: []byte(`1`)}},
		"resume without value": {Graph: "echo", Resume: &runs.Resume{}},
		"negative delay":       {Graph: "echo", After: -time.Second},
	}
	for name, req := range cases {
		_, err := m.Start(ctx, req)
		assert.Error(t, err, name)
	}
	_, err := m.Start(ctx, runs.Request{Graph: "nope"})
	assert.ErrorIs(t, err, runs.ErrUnknownGraph)
	_, err = m.Start(ctx, runs.Request{Graph: "echo", Thread: "missing", IfNotExists: runs.IfNotExistsReject})
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.Thread(ctx, "missing")
	assert.ErrorIs(t, err, runs.ErrNotFound, "a refused run leaves no thread behind")
	threads, err := m.SearchThreads(ctx, runs.ThreadQuery{})
	require.NoError(t, err)
	assert.Empty(t, threads)

	// An input that fits no field of the state fails the run, naming it.
	w := worker(t, db, gs)
	r, err := w.Start(ctx, runs.Request{Graph: "echo", Input: []byte(`{"colour":"red"}`)})
	require.NoError(t, err)
	done := wait(t, w, r.ID)
	assert.Equal(t, runs.StatusError, done.Status)
	assert.Contains(t, done.Error, `"colour"`)
}

func testInterruptAndResume(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ctx := t.Context()
	r, err := m.Start(ctx, runs.Request{Graph: "ask", Input: input("hello")})
	require.NoError(t, err)
	paused := wait(t, m, r.ID)
	require.Equal(t, runs.StatusInterrupted, paused.Status, paused.Error)
	require.Len(t, paused.Interrupts, 1)
	_, err = m.Output(ctx, r.ID)
	assert.ErrorIs(t, err, runs.ErrNoOutput, "a paused run has no final state")
	th, err := m.Thread(ctx, r.Thread)
	require.NoError(t, err)
	assert.Equal(t, runs.ThreadInterrupted, th.Status)

	resumed, err := m.Start(ctx, runs.Request{Graph: "ask", Thread: r.Thread,
		Resume: &runs.Resume{ByID: map[string]json.RawMessage{paused.Interrupts[0].ID: []byte(`"yes"`)}}})
	require.NoError(t, err)
	done := wait(t, m, resumed.ID)
	assert.Equal(t, runs.StatusSuccess, done.Status, done.Error)
	assert.Equal(t, []string{"hello", "note:yes"}, stateOf(t, m, r.Thread).Messages)
	th, err = m.Thread(ctx, r.Thread)
	require.NoError(t, err)
	assert.Equal(t, runs.ThreadIdle, th.Status)
}

func testReject(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ctx := t.Context()
	h := gs.hold("t1", 1)
	first, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "t1", Input: input("one")})
	require.NoError(t, err)
	entered(t, h)
	_, err = m.Start(ctx, runs.Request{Graph: "hold", Thread: "t1", Input: input("two")})
	require.ErrorIs(t, err, runs.ErrThreadBusy)
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	list, err := m.Runs(ctx, "t1", runs.RunQuery{})
	require.NoError(t, err)
	assert.Len(t, list, 1, "a refused run leaves no trace")
	h.open()
	assert.Equal(t, runs.StatusSuccess, wait(t, m, first.ID).Status)
	assert.Equal(t, []string{"one", "a:one", "hold:a:one", "b:hold:a:one"}, stateOf(t, m, "t1").Messages)
}

func testEnqueue(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ctx := t.Context()
	h := gs.hold("t1", 1)
	var ids []string
	for _, msg := range []string{"one", "two", "three"} {
		r, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "t1", Input: input(msg), Strategy: runs.StrategyEnqueue})
		require.NoError(t, err)
		ids = append(ids, r.ID)
	}
	entered(t, h)
	second, err := m.Get(ctx, ids[1])
	require.NoError(t, err)
	assert.Equal(t, runs.StatusPending, second.Status, "a queued run waits for its turn")
	h.open()
	var ended []time.Time
	for _, id := range ids {
		r := wait(t, m, id)
		assert.Equal(t, runs.StatusSuccess, r.Status, r.Error)
		ended = append(ended, r.EndedAt)
	}
	assert.True(t, slices.IsSortedFunc(ended, func(a, b time.Time) int { return a.Compare(b) }), "runs end in the order they were accepted")
	msgs := stateOf(t, m, "t1").Messages
	assert.Equal(t, []string{"one", "a:one", "hold:a:one", "b:hold:a:one",
		"two", "a:two", "hold:a:two", "b:hold:a:two",
		"three", "a:three", "hold:a:three", "b:hold:a:three"}, msgs, "every turn, in order")
}

func testInterruptStrategy(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ctx := t.Context()
	h := gs.hold("t1", 1)
	first, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "t1", Input: input("one")})
	require.NoError(t, err)
	entered(t, h)
	second, err := m.Start(ctx, runs.Request{Graph: "echo", Thread: "t1", Input: input("two"), Strategy: runs.StrategyInterrupt})
	require.NoError(t, err)
	r1 := wait(t, m, first.ID)
	assert.Equal(t, runs.StatusCancelled, r1.Status)
	r2 := wait(t, m, second.ID)
	assert.Equal(t, runs.StatusSuccess, r2.Status, r2.Error)
	assert.Equal(t, []string{"one", "a:one", "two", "a:two", "b:a:two"}, stateOf(t, m, "t1").Messages,
		"the interrupted run's checkpointed work stays; the new one follows it")
	h.open()
}

func testRollbackStrategy(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ctx := t.Context()
	base, err := m.Start(ctx, runs.Request{Graph: "echo", Thread: "t1", Input: input("zero")})
	require.NoError(t, err)
	wait(t, m, base.ID)
	h := gs.hold("t1", 1)
	first, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "t1", Input: input("one")})
	require.NoError(t, err)
	entered(t, h)
	second, err := m.Start(ctx, runs.Request{Graph: "echo", Thread: "t1", Input: input("two"), Strategy: runs.StrategyRollback})
	require.NoError(t, err)
	r1 := wait(t, m, first.ID)
	assert.Equal(t, runs.StatusCancelled, r1.Status)
	assert.Equal(t, runs.StatusSuccess, wait(t, m, second.ID).Status)
	assert.Equal(t, []string{"zero", "a:zero", "b:a:zero", "two", "a:two", "b:a:two"}, stateOf(t, m, "t1").Messages,
		"the rolled-back run left nothing in the thread")
	h.open()

	// A thread's first run rolled back leaves the thread empty.
	h2 := gs.hold("t2", 1)
	lone, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "t2", Input: input("one")})
	require.NoError(t, err)
	entered(t, h2)
	require.NoError(t, m.Cancel(ctx, lone.ID, runs.CancelRollback))
	assert.Equal(t, runs.StatusCancelled, wait(t, m, lone.ID).Status)
	next, err := m.Start(ctx, runs.Request{Graph: "echo", Thread: "t2", Input: input("fresh")})
	require.NoError(t, err)
	wait(t, m, next.ID)
	assert.Equal(t, []string{"fresh", "a:fresh", "b:a:fresh"}, stateOf(t, m, "t2").Messages)
	h2.open()
}

func testCancel(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	other := client(t, db, gs) // cancels from another "process"
	ctx := t.Context()
	h := gs.hold("t1", 1)
	active, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "t1", Input: input("one")})
	require.NoError(t, err)
	queued, err := m.Start(ctx, runs.Request{Graph: "echo", Thread: "t1", Input: input("two"), Strategy: runs.StrategyEnqueue})
	require.NoError(t, err)
	entered(t, h)
	require.NoError(t, other.Cancel(ctx, queued.ID, runs.CancelInterrupt))
	q, err := m.Get(ctx, queued.ID)
	require.NoError(t, err)
	assert.Equal(t, runs.StatusCancelled, q.Status, "a queued run is cancelled at once")
	require.NoError(t, other.Cancel(ctx, active.ID, runs.CancelInterrupt))
	r := wait(t, other, active.ID)
	assert.Equal(t, runs.StatusCancelled, r.Status)
	assert.Equal(t, []string{"one", "a:one"}, stateOf(t, m, "t1").Messages, "what the run checkpointed stays")
	th, err := m.Thread(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, runs.ThreadIdle, th.Status)
	require.NoError(t, other.Cancel(ctx, active.ID, runs.CancelInterrupt), "cancelling an ended run does nothing")
	assert.ErrorIs(t, other.Cancel(ctx, "no-such-run", runs.CancelInterrupt), runs.ErrNotFound)
	assert.ErrorIs(t, other.Cancel(ctx, active.ID, "sideways"), runs.ErrInvalid)
	h.open()
}

func testStream(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	other := client(t, db, gs)
	ctx := t.Context()
	r, err := m.Start(ctx, runs.Request{Graph: "echo", Input: input("hi"), Modes: graph.ModeValues | graph.ModeUpdates})
	require.NoError(t, err)
	var all []runs.Event
	for ev, err := range other.Stream(ctx, r.ID, 0) {
		require.NoError(t, err)
		all = append(all, ev)
	}
	require.NotEmpty(t, all)
	last := all[len(all)-1]
	assert.Equal(t, runs.KindRunEnd, last.Kind)
	assert.Equal(t, runs.StatusSuccess, last.Status)
	for i, ev := range all {
		assert.Equal(t, int64(i+1), ev.Seq, "events are numbered from 1 without gaps")
		assert.Equal(t, r.ID, ev.Run)
	}
	var kinds []graph.EventKind
	for _, ev := range all {
		kinds = append(kinds, ev.Kind)
	}
	assert.Contains(t, kinds, graph.KindUpdate)
	assert.Contains(t, kinds, graph.KindValues)
	var values Chat
	for _, ev := range all {
		if ev.Kind == graph.KindValues {
			require.NoError(t, json.Unmarshal(ev.State, &values))
		}
	}
	assert.Equal(t, []string{"hi", "a:hi", "b:a:hi"}, values.Messages)

	// A client that reconnects after event k gets the rest, once.
	k := all[len(all)/2].Seq
	var rest []runs.Event
	for ev, err := range m.Stream(ctx, r.ID, k) {
		require.NoError(t, err)
		rest = append(rest, ev)
	}
	assert.Equal(t, all[k:], rest)

	// A stream opened while the run waits streams it live.
	h := gs.hold("live", 1)
	live, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "live", Input: input("x")})
	require.NoError(t, err)
	var got []runs.Event
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev, err := range other.Stream(ctx, live.ID, 0) {
			if err != nil {
				return
			}
			got = append(got, ev)
		}
	})
	entered(t, h)
	h.open()
	wg.Wait()
	require.NotEmpty(t, got)
	assert.Equal(t, runs.KindRunEnd, got[len(got)-1].Kind)

	_, err = m.Get(ctx, "missing")
	assert.ErrorIs(t, err, runs.ErrNotFound)
	for _, err := range m.Stream(ctx, "missing", 0) {
		assert.ErrorIs(t, err, runs.ErrNotFound)
	}
}

func testOwners(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ana := runs.WithOwner(t.Context(), "ana")
	bob := runs.WithOwner(t.Context(), "bob")
	r, err := m.Start(ana, runs.Request{Graph: "echo", Thread: "shared-name", Input: input("secret")})
	require.NoError(t, err)
	waitAs(t, ana, m, r.ID)
	_, err = m.Get(t.Context(), r.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound, "a context without an owner is the empty owner's")
	_, err = m.Get(bob, r.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.Output(bob, r.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound, "another owner's output")
	_, err = m.Thread(bob, r.Thread)
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.Runs(bob, r.Thread, runs.RunQuery{})
	assert.ErrorIs(t, err, runs.ErrNotFound)
	assert.ErrorIs(t, m.Cancel(bob, r.ID, runs.CancelInterrupt), runs.ErrNotFound)
	assert.ErrorIs(t, m.DeleteThread(bob, r.Thread), runs.ErrNotFound)
	_, err = m.Start(bob, runs.Request{Graph: "echo", Thread: r.Thread, Input: input("intrude")})
	assert.ErrorIs(t, err, runs.ErrNotFound, "another owner's thread cannot be continued")
	for _, err := range m.Stream(bob, r.ID, 0) {
		assert.ErrorIs(t, err, runs.ErrNotFound)
	}
	found, err := m.SearchThreads(bob, runs.ThreadQuery{})
	require.NoError(t, err)
	assert.Empty(t, found)
	found, err = m.SearchThreads(ana, runs.ThreadQuery{})
	require.NoError(t, err)
	assert.Len(t, found, 1)
	_, err = m.Get(ana, r.ID)
	assert.NoError(t, err)
}

func testSearchThreads(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	ctx := t.Context()
	var ended []string
	for i, team := range []string{"red", "blue", "red"} {
		r, err := m.Start(ctx, runs.Request{Graph: "echo", Input: input("x"), Metadata: map[string]any{"team": team, "n": i}})
		require.NoError(t, err)
		wait(t, m, r.ID)
		ended = append(ended, r.Thread)
	}
	paused, err := m.Start(ctx, runs.Request{Graph: "ask", Input: input("q"), Metadata: map[string]any{"team": "red"}})
	require.NoError(t, err)
	wait(t, m, paused.ID)
	failed, err := m.Start(ctx, runs.Request{Graph: "fail", Input: input("f")})
	require.NoError(t, err)
	assert.Equal(t, runs.StatusError, wait(t, m, failed.ID).Status)
	h := gs.hold("searched-busy", 1)
	busy, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "searched-busy", Input: input("b")})
	require.NoError(t, err)
	entered(t, h)
	for status, want := range map[runs.ThreadStatus][]string{
		runs.ThreadIdle:        ended,
		runs.ThreadInterrupted: {paused.Thread},
		runs.ThreadError:       {failed.Thread},
		runs.ThreadBusy:        {busy.Thread},
	} {
		found, err := m.SearchThreads(ctx, runs.ThreadQuery{Status: status})
		require.NoError(t, err)
		var ids []string
		for _, th := range found {
			assert.Equal(t, status, th.Status)
			ids = append(ids, th.ID)
		}
		assert.ElementsMatch(t, want, ids, "threads %s", status)
	}
	h.open()
	assert.Equal(t, runs.StatusSuccess, wait(t, m, busy.ID).Status)

	red, err := m.SearchThreads(ctx, runs.ThreadQuery{Metadata: map[string]any{"team": "red"}})
	require.NoError(t, err)
	assert.Len(t, red, 3)
	redIdle, err := m.SearchThreads(ctx, runs.ThreadQuery{Metadata: map[string]any{"team": "red"}, Status: runs.ThreadIdle})
	require.NoError(t, err)
	assert.Len(t, redIdle, 2, "metadata and status together")
	one, err := m.SearchThreads(ctx, runs.ThreadQuery{Metadata: map[string]any{"team": "red", "n": 2}})
	require.NoError(t, err)
	assert.Len(t, one, 1)
	waiting, err := m.SearchThreads(ctx, runs.ThreadQuery{Status: runs.ThreadInterrupted})
	require.NoError(t, err)
	require.Len(t, waiting, 1)
	assert.Equal(t, paused.Thread, waiting[0].ID)
	page, err := m.SearchThreads(ctx, runs.ThreadQuery{Limit: 2, Offset: 1})
	require.NoError(t, err)
	assert.Len(t, page, 2)
	_, err = m.SearchThreads(ctx, runs.ThreadQuery{Limit: runs.MaxLimit + 1})
	assert.ErrorIs(t, err, runs.ErrInvalid)

	th, err := m.UpdateThread(ctx, paused.Thread, map[string]any{"team": nil, "priority": "high"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"priority": "high"}, th.Metadata)
	made, err := m.CreateThread(ctx, "", map[string]any{"team": "green"})
	require.NoError(t, err)
	_, err = m.CreateThread(ctx, made.ID, nil)
	assert.ErrorIs(t, err, runs.ErrExists)
	require.NoError(t, m.DeleteThread(ctx, made.ID))
	_, err = m.Thread(ctx, made.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound)
	require.NoError(t, m.DeleteThread(ctx, paused.Thread))
	_, err = m.Get(ctx, paused.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound, "a deleted thread's runs go with it")
}

func testDelayed(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	r, err := m.Start(t.Context(), runs.Request{Graph: "echo", Input: input("later"), After: 500 * time.Millisecond})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, r.StartAt.Sub(r.CreatedAt), 500*time.Millisecond)
	done := wait(t, m, r.ID)
	assert.Equal(t, runs.StatusSuccess, done.Status)
	assert.False(t, done.EndedAt.Before(r.StartAt), "it did not end before it was due")
}

func testCron(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs, runs.WithCronTick(200*time.Millisecond))
	ctx := t.Context()
	c, err := m.Schedule(ctx, "@every 1s", runs.Request{Graph: "echo", Input: input("tick"), Metadata: map[string]any{"from": "cron"}})
	require.NoError(t, err)
	_, err = m.Schedule(ctx, "not a schedule", runs.Request{Graph: "echo"})
	assert.ErrorIs(t, err, runs.ErrInvalid)
	list, err := m.Crons(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, c.ID, list[0].ID)
	eventually(t, "a scheduled run ran", func() bool {
		found, err := m.SearchThreads(ctx, runs.ThreadQuery{Metadata: map[string]any{"from": "cron"}, Status: runs.ThreadIdle})
		return err == nil && len(found) > 0
	})
	require.NoError(t, m.Unschedule(ctx, c.ID))
	assert.ErrorIs(t, m.Unschedule(ctx, c.ID), runs.ErrNotFound)
}

// testCronWorkers: with two working Managers, each firing of a schedule
// starts one run. A schedule of "@every 1s" is due at most once a second
// (its next time is rounded to the second), so over an interval it fires
// at most once per second begun, plus the firing under way when it is
// removed; a firing started by both workers would double that.
func testCronWorkers(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs, runs.WithCronTick(50*time.Millisecond))
	worker(t, db, gs, runs.WithCronTick(50*time.Millisecond))
	ctx := t.Context()
	began := time.Now()
	c, err := m.Schedule(ctx, "@every 1s", runs.Request{Graph: "echo", Input: input("tick"), Metadata: map[string]any{"from": "cron"}})
	require.NoError(t, err)
	fired := func() []runs.Thread {
		found, err := m.SearchThreads(ctx, runs.ThreadQuery{Metadata: map[string]any{"from": "cron"}, Limit: runs.MaxLimit})
		require.NoError(t, err)
		return found
	}
	eventually(t, "the schedule fired three times", func() bool { return len(fired()) >= 3 })
	require.NoError(t, m.Unschedule(ctx, c.ID))
	seconds := int(time.Since(began)/time.Second) + 1
	found := fired()
	assert.LessOrEqual(t, len(found), seconds+1, "%d runs in %d seconds begun: a firing started more than one run", len(found), seconds)
}

func testDrain(t *testing.T, db DB) {
	gs := newGates()
	logs := &logWatch{}
	first := db.Open(runs.WithLease(2*time.Second), runs.WithDrain(runs.DrainAtBoundary, 10*time.Second),
		runs.WithLogger(slog.New(logs)))
	graphs(t, first, gs)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Work(ctx) }()

	h := gs.hold("t1", 1)
	r, err := first.Start(t.Context(), runs.Request{Graph: "hold", Thread: "t1", Input: input("one")})
	require.NoError(t, err)
	entered(t, h)
	stop() // SIGTERM: the run finishes its superstep, then goes back
	eventually(t, "the worker began handing its runs back", func() bool { return logs.saw("handing its runs back") })
	h.open()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Work did not return")
	}
	handed, err := first.Get(t.Context(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, runs.StatusPending, handed.Status, "handed back, waiting for a worker (attempt %d); the worker logged %q", handed.Attempts, logs.all())

	second := worker(t, db, gs)
	done2 := wait(t, second, r.ID)
	assert.Equal(t, runs.StatusSuccess, done2.Status, done2.Error)
	assert.Equal(t, 2, done2.Attempts)
	assert.Equal(t, []string{"one", "a:one", "hold:a:one", "b:hold:a:one"}, stateOf(t, second, "t1").Messages)
	for _, node := range []string{"a", "hold", "b"} {
		assert.Equal(t, 1, gs.ran("t1", node), "node %s ran once: no superstep ran twice", node)
	}
}

// logWatch is a slog handler that remembers the messages it was given.
type logWatch struct {
	mu   sync.Mutex
	msgs []string
}

// testDrainCancel: a worker that stops with DrainCancel, or whose drain
// timeout passes, cancels the superstep in progress and hands the run back
// at once; the next worker runs that superstep again, and none before it.
func testDrainCancel(t *testing.T, db DB) {
	for _, tc := range []struct {
		name string
		opt  runs.Option
	}{
		{"DrainCancel", runs.WithDrain(runs.DrainCancel, time.Minute)},
		{"DrainTimeout", runs.WithDrain(runs.DrainAtBoundary, 100*time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := newGates()
			thread := "drain-" + tc.name
			first := db.Open(runs.WithLease(2*time.Second), tc.opt)
			graphs(t, first, gs)
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- first.Work(ctx) }()

			h := gs.hold(thread, 1)
			r, err := first.Start(t.Context(), runs.Request{Graph: "hold", Thread: thread, Input: input("one")})
			require.NoError(t, err)
			entered(t, h)
			stop() // the held node is never released: only a cancellation ends its superstep
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("Work did not return: the superstep in progress was not cancelled")
			}
			handed, err := first.Get(t.Context(), r.ID)
			require.NoError(t, err)
			assert.Equal(t, runs.StatusPending, handed.Status, "handed back, waiting for a worker")

			second := worker(t, db, gs)
			end := wait(t, second, r.ID)
			assert.Equal(t, runs.StatusSuccess, end.Status, end.Error)
			assert.Equal(t, 2, end.Attempts)
			assert.Equal(t, []string{"one", "a:one", "hold:a:one", "b:hold:a:one"}, stateOf(t, second, thread).Messages)
			assert.Equal(t, 1, gs.ran(thread, "a"), "the superstep that committed before the stop did not run again")
			assert.Equal(t, 1, gs.ran(thread, "hold"), "the cancelled superstep ran to its end once, on the next worker")
			h.open()
		})
	}
}

func (l *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWatch) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" {
			msg += ": " + a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, msg)
	l.mu.Unlock()
	return nil
}

// all is what was logged, in order.
func (l *logWatch) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}
func (l *logWatch) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logWatch) WithGroup(string) slog.Handler      { return l }

func (l *logWatch) saw(part string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, part) {
			return true
		}
	}
	return false
}

func testTakeOver(t *testing.T, db DB) {
	gs := newGates()
	// The first worker holds the run with a long lease, then "dies": its
	// lease is made to expire while its node still runs.
	first, stopFirst := stoppableWorker(t, db, gs, runs.WithLease(10*time.Second))
	h := gs.hold("t1", 1)
	r, err := first.Start(t.Context(), runs.Request{Graph: "hold", Thread: "t1", Input: input("one")})
	require.NoError(t, err)
	entered(t, h)
	require.NoError(t, db.Exec(`UPDATE trellis_runs SET lease_until = 0 WHERE run_id = $1`, r.ID))

	second := worker(t, db, gs, runs.WithLease(time.Second))
	done := wait(t, second, r.ID)
	assert.Equal(t, runs.StatusSuccess, done.Status, done.Error)
	assert.Equal(t, 2, done.Attempts)
	want := []string{"one", "a:one", "hold:a:one", "b:hold:a:one"}
	assert.Equal(t, want, stateOf(t, second, "t1").Messages)

	// The old holder wakes up (or learns from its lease renewal that it
	// lost the run): it must store nothing and start nothing more.
	h.open()
	stopFirst() // returns once the old holder's attempt is over
	assert.Equal(t, want, stateOf(t, second, "t1").Messages, "the fenced worker committed nothing")
	assert.Equal(t, 1, gs.ran("t1", "b"), "the fenced worker started no further superstep")
	after, err := second.Get(t.Context(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, done.UpdatedAt, after.UpdatedAt, "the fenced worker did not touch the run's record")
	var kinds []graph.EventKind
	for ev, err := range second.Stream(t.Context(), r.ID, 0) {
		require.NoError(t, err)
		kinds = append(kinds, ev.Kind)
	}
	assert.Equal(t, 1, count(kinds, runs.KindRunEnd))
}

func testCompleteCall(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	other := client(t, db, gs) // the process the webhook reaches
	ctx := t.Context()
	in := []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"the quarterly report, please"}]}]}`)
	r, err := m.Start(ctx, runs.Request{Graph: "reporter", Input: in})
	require.NoError(t, err)
	first := wait(t, m, r.ID)
	require.Equal(t, runs.StatusSuccess, first.Status, first.Error)

	done, err := other.CompleteCall(ctx, "reporter", r.Thread, "call-report", "report", tool.Text("revenue up 4%"))
	require.NoError(t, err)
	end := wait(t, m, done.ID)
	require.Equal(t, runs.StatusSuccess, end.Status, end.Error)
	g, err := agent.NewReAct(reportModel{}, agent.WithCheckpointer(m.Saver()))
	require.NoError(t, err)
	snap, err := g.GetState(ctx, r.Thread)
	require.NoError(t, err)
	var texts []string
	for _, msg := range snap.State.Messages {
		texts = append(texts, string(msg.Role)+":"+msg.Text())
	}
	assert.Equal(t, []string{"user:the quarterly report, please", "assistant:", "tool:revenue up 4%",
		"assistant:report: report started", "assistant:report: revenue up 4%"}, texts,
		"the final result took the pending one's place, and the agent reacted to it")

	_, err = other.CompleteCall(ctx, "reporter", "no-such-thread", "call-report", "report", tool.Text("x"))
	assert.ErrorIs(t, err, runs.ErrNotFound)
	_, err = other.CompleteCall(ctx, "reporter", r.Thread, "call-report", "report", tool.PendingResult("again"))
	assert.ErrorIs(t, err, runs.ErrInvalid)
}

func testUsage(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	other := client(t, db, gs)
	ctx := t.Context()
	in := []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a report"}]}]}`)
	r, err := m.Start(ctx, runs.Request{Graph: "reporter", Input: in})
	require.NoError(t, err)
	done := wait(t, m, r.ID)
	require.Equal(t, runs.StatusSuccess, done.Status, done.Error)

	// Two model calls: the tool call, then the answer to its result.
	want := model.Usage{InputTokens: 20, OutputTokens: 10, TotalTokens: 30}
	u, err := other.Usage(ctx, r.ID)
	require.NoError(t, err, "Usage from any manager")
	assert.Equal(t, 2, u.Calls)
	assert.Equal(t, want, u.Total)
	assert.Equal(t, want, u.ByModel[reportModelName])
	assert.Equal(t, want, u.ByAgent["reporter"])

	var last runs.Event
	for ev, err := range other.Stream(ctx, r.ID, 0) {
		require.NoError(t, err)
		last = ev
	}
	require.Equal(t, runs.KindRunEnd, last.Kind)
	require.NotNil(t, last.Usage, "the run's end event carries its usage")
	assert.Equal(t, want, last.Usage.Total)

	// A run without model calls reports none.
	plain, err := m.Start(ctx, runs.Request{Graph: "echo", Input: input("hi")})
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, wait(t, m, plain.ID).Status)
	u, err = m.Usage(ctx, plain.ID)
	require.NoError(t, err)
	assert.Zero(t, u.Calls)
	assert.Zero(t, u.Total)

	// A run of another owner is not found.
	_, err = m.Usage(runs.WithOwner(ctx, "someone-else"), r.ID)
	assert.ErrorIs(t, err, runs.ErrNotFound)
}

func count[T comparable](xs []T, x T) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func testDeleteThreadSoon(t *testing.T, db DB) {
	gs := newGates()
	m, stop := stoppableWorker(t, db, gs)
	ctx := t.Context()
	var ended []runs.Run
	for i := range 5 {
		r, err := m.Start(ctx, runs.Request{Graph: "echo", Input: input(fmt.Sprint(i))})
		require.NoError(t, err)
		ended = append(ended, wait(t, m, r.ID))
	}
	h := gs.hold("busy", 1)
	busy, err := m.Start(ctx, runs.Request{Graph: "hold", Thread: "busy", Input: input("held")})
	require.NoError(t, err)
	entered(t, h)
	bob := runs.WithOwner(ctx, "bob")
	for _, r := range ended {
		require.NoError(t, m.DeleteThreadSoon(ctx, r.Thread))
	}
	require.NoError(t, m.DeleteThreadSoon(ctx, busy.Thread), "a busy thread is not an error: it is kept")
	require.NoError(t, m.DeleteThreadSoon(bob, ended[0].Thread), "another owner's thread is left alone")
	require.NoError(t, m.DeleteThreadSoon(ctx, "no-such-thread"))
	assert.ErrorIs(t, m.DeleteThreadSoon(ctx, strings.Repeat("x", 257)), runs.ErrInvalid)
	for _, r := range ended {
		eventually(t, "thread "+r.Thread+" deleted", func() bool {
			_, err := m.Thread(ctx, r.Thread)
			return errors.Is(err, runs.ErrNotFound)
		})
		_, err := m.Get(ctx, r.ID)
		assert.ErrorIs(t, err, runs.ErrNotFound, "a deleted thread's runs go with it")
		eventually(t, "the checkpoints of thread "+r.Thread+" deleted", func() bool {
			cps, err := m.Saver().List(ctx, r.Thread, "", state.ListOptions{})
			require.NoError(t, err)
			return len(cps) == 0
		})
	}
	th, err := m.Thread(ctx, busy.Thread)
	require.NoError(t, err, "a thread with an active run is kept")
	assert.Equal(t, busy.ID, th.ActiveRun)
	h.open()
	assert.Equal(t, runs.StatusSuccess, wait(t, m, busy.ID).Status)

	// Close deletes what is still pending, and takes no more.
	last, err := m.Start(ctx, runs.Request{Graph: "echo", Input: input("last")})
	require.NoError(t, err)
	wait(t, m, last.ID)
	require.NoError(t, m.DeleteThreadSoon(ctx, last.Thread))
	stop()
	require.NoError(t, m.Close())
	assert.ErrorIs(t, m.DeleteThreadSoon(ctx, busy.Thread), runs.ErrClosed)
	other := client(t, db, gs)
	_, err = other.Thread(ctx, last.Thread)
	assert.ErrorIs(t, err, runs.ErrNotFound, "Close deleted the pending thread")
}
