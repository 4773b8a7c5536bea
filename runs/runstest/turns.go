package runstest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/runs"
)

// concurrentTurns is how many turns the concurrent-turns test starts at
// once on one thread.
const concurrentTurns = 8

// testConcurrentTurns starts turns on one thread at the same moment, half
// through a working Manager and half through another one, with each
// strategy: no turn is lost (each is refused with ErrThreadBusy and leaves
// no trace, or ends in a status its caller can read), and the thread holds
// the turns in the order the strategy says.
func testConcurrentTurns(t *testing.T, db DB) {
	gs := newGates()
	m := worker(t, db, gs)
	other := client(t, db, gs)
	managers := []*runs.Manager{m, other}
	t.Run("Reject", func(t *testing.T) { rejectTurns(t, managers, gs) })
	t.Run("Enqueue", func(t *testing.T) { enqueueTurns(t, managers) })
	t.Run("Interrupt", func(t *testing.T) { displacingTurns(t, managers, gs, runs.StrategyInterrupt) })
	t.Run("Rollback", func(t *testing.T) { displacingTurns(t, managers, gs, runs.StrategyRollback) })
}

// turnResult is what one of the concurrent Starts returned.
type turnResult struct {
	input string
	run   runs.Run
	err   error
}

// startTogether starts concurrentTurns runs of graph on thread, each with
// its own input ("<thread>-<i>"), released together, alternating between
// managers.
func startTogether(t *testing.T, managers []*runs.Manager, graphName, thread string, strategy runs.Strategy) []turnResult {
	t.Helper()
	out := make([]turnResult, concurrentTurns)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range out {
		in := fmt.Sprintf("%s-%d", thread, i)
		m := managers[i%len(managers)]
		wg.Go(func() {
			<-release
			r, err := m.Start(t.Context(), runs.Request{Graph: graphName, Thread: thread, Input: input(in), Strategy: strategy})
			out[i] = turnResult{input: in, run: r, err: err}
		})
	}
	close(release)
	wg.Wait()
	return out
}

// accepted returns the thread's runs in the order they were accepted
// (oldest first), each ended, with the input of each.
func acceptedRuns(t *testing.T, m *runs.Manager, thread string, results []turnResult) ([]runs.Run, map[string]string) {
	t.Helper()
	inputs := map[string]string{}
	for _, r := range results {
		if r.err == nil {
			inputs[r.run.ID] = r.input
		}
	}
	list, err := m.Runs(t.Context(), thread, runs.RunQuery{Limit: runs.MaxLimit})
	require.NoError(t, err)
	slices.Reverse(list)
	ended := make([]runs.Run, 0, len(list))
	for _, r := range list {
		ended = append(ended, wait(t, m, r.ID))
	}
	return ended, inputs
}

// echoTurn is what the "echo" graph leaves on its thread for input in.
func echoTurn(in string) []string { return []string{in, "a:" + in, "b:a:" + in} }

// StrategyReject: of turns started together on an idle thread, one is
// accepted and the others are refused, leaving no trace.
func rejectTurns(t *testing.T, managers []*runs.Manager, gs *gates) {
	const thread = "turns-reject"
	h := gs.hold(thread, 1)
	results := startTogether(t, managers, "hold", thread, runs.StrategyReject)
	var won []turnResult
	for _, r := range results {
		if r.err == nil {
			won = append(won, r)
			continue
		}
		require.ErrorIs(t, r.err, runs.ErrThreadBusy, "a turn on a busy thread is refused as busy")
	}
	require.Len(t, won, 1, "exactly one of the turns started together is accepted")
	entered(t, h)
	list, err := managers[1].Runs(t.Context(), thread, runs.RunQuery{Limit: runs.MaxLimit})
	require.NoError(t, err)
	assert.Len(t, list, 1, "refused turns leave no run")
	h.open()
	end := wait(t, managers[1], won[0].run.ID)
	assert.Equal(t, runs.StatusSuccess, end.Status, end.Error)
	in := won[0].input
	assert.Equal(t, []string{in, "a:" + in, "hold:a:" + in, "b:hold:a:" + in}, stateOf(t, managers[0], thread).Messages,
		"the accepted turn, and only it")
}

// StrategyEnqueue: turns started together on an idle thread are all
// accepted and all run, one after the other, in the order they were
// accepted.
func enqueueTurns(t *testing.T, managers []*runs.Manager) {
	const thread = "turns-enqueue"
	results := startTogether(t, managers, "echo", thread, runs.StrategyEnqueue)
	for _, r := range results {
		require.NoError(t, r.err, "an enqueued turn is accepted")
	}
	ended, inputs := acceptedRuns(t, managers[1], thread, results)
	require.Len(t, ended, concurrentTurns, "every turn is a run of the thread")
	var want []string
	for i, r := range ended {
		assert.Equal(t, runs.StatusSuccess, r.Status, r.Error)
		want = append(want, echoTurn(inputs[r.ID])...)
		if i > 0 {
			assert.False(t, r.EndedAt.Before(ended[i-1].EndedAt), "run %d ended before the run accepted before it", i)
		}
	}
	assert.Equal(t, want, stateOf(t, managers[0], thread).Messages, "every turn, once, in the order the turns were accepted")
}

// StrategyInterrupt and StrategyRollback: turns started together on a
// thread with a run in progress are all accepted; the run in progress is
// cancelled, and so may be any of the new turns that a later one found in
// progress, but the last one accepted runs to its end. The thread holds
// every turn that succeeded, in order; of a cancelled one, what it
// checkpointed (StrategyInterrupt) or nothing (StrategyRollback).
func displacingTurns(t *testing.T, managers []*runs.Manager, gs *gates, strategy runs.Strategy) {
	thread := "turns-" + string(strategy)
	h := gs.hold(thread, 1)
	first, err := managers[0].Start(t.Context(), runs.Request{Graph: "hold", Thread: thread, Input: input("first")})
	require.NoError(t, err)
	entered(t, h)
	results := startTogether(t, managers, "echo", thread, strategy)
	for _, r := range results {
		require.NoError(t, r.err, "a turn that displaces the active one is accepted")
	}
	ended, inputs := acceptedRuns(t, managers[1], thread, results)
	require.Len(t, ended, concurrentTurns+1, "every turn is a run of the thread")
	require.Equal(t, first.ID, ended[0].ID)
	assert.Equal(t, runs.StatusCancelled, ended[0].Status, "the run in progress is displaced")
	assert.Equal(t, runs.StatusSuccess, ended[len(ended)-1].Status, "the last turn accepted runs to its end: %s", ended[len(ended)-1].Error)
	inputs[first.ID] = "first"
	msgs := stateOf(t, managers[0], thread).Messages
	at := 0
	for _, r := range ended {
		turn := echoTurn(inputs[r.ID])
		if r.ID == first.ID {
			turn = []string{"first", "a:first", "hold:a:first", "b:hold:a:first"}
		}
		n := 0 // how much of the turn the thread holds, from at
		for n < len(turn) && at+n < len(msgs) && msgs[at+n] == turn[n] {
			n++
		}
		switch r.Status {
		case runs.StatusSuccess:
			require.Equal(t, len(turn), n, "turn %s succeeded and is on the thread in its place: %q", inputs[r.ID], msgs)
		case runs.StatusCancelled:
			if strategy == runs.StrategyRollback {
				require.Zero(t, n, "turn %s was rolled back and left nothing: %q", inputs[r.ID], msgs)
			}
		default:
			t.Fatalf("turn %s ended %s (%s): a turn ends in success or is cancelled by a later one", inputs[r.ID], r.Status, r.Error)
		}
		at += n
	}
	assert.Equal(t, len(msgs), at, "the thread holds nothing but the turns, in order: %q", msgs)
	h.open()
}
