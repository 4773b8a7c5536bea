package savertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
)

// CreatedAtTolerance is how far a stored CreatedAt may be from the one put.
// Stores keep at least microsecond precision (the precision of a Postgres
// timestamp); the location need not survive, only the instant.
const CreatedAtTolerance = time.Microsecond

// Run checks newSaver's savers against every rule of the state.Saver
// contract, each in its own subtest. newSaver must return a new, empty saver
// each time it is called, and release it with t.Cleanup.
func Run(t *testing.T, newSaver func(t *testing.T) state.Saver) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			s := newSaver(t)
			require.NotNil(t, s, "newSaver returned nil")
			c.run(t, s)
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s state.Saver)
}

func cases() []testCase {
	return []testCase{
		{"PutGet/RoundTripKeepsEveryField", testRoundTrip},
		{"PutGet/EmptyFields", testEmptyFields},
		{"PutGet/ZeroCreatedAtIsSetByStore", testZeroCreatedAt},
		{"Put/RejectsMissingIDs", testPutValidation},
		{"Put/DuplicateIsConflictAndKeepsOriginal", testPutConflict},
		{"Get/LatestIsLastPut", testGetLatest},
		{"Get/ByID", testGetByID},
		{"Get/UnknownThreadIsNotFound", testGetUnknownThread},
		{"Get/UnknownCheckpointIsNotFound", testGetUnknownCheckpoint},
		{"PutWrites/UnknownCheckpointIsNotFound", testPutWritesUnknown},
		{"PutWrites/UpsertByTaskIDKeepsFirstOrder", testPutWritesUpsert},
		{"PutWrites/RepeatedTaskInOneCall", testPutWritesRepeatedTask},
		{"PutWrites/InvalidBatchStoresNothing", testPutWritesValidation},
		{"PutWrites/BelongToTheirCheckpoint", testPutWritesPerCheckpoint},
		{"PutWrites/EmptyBatch", testPutWritesEmpty},
		{"Namespaces/AreIsolated", testNamespaces},
		{"List/NewestFirstWithoutWrites", testListNewestFirst},
		{"List/LimitAndBefore", testListLimitBefore},
		{"List/BadOptions", testListBadOptions},
		{"List/UnknownThreadIsEmpty", testListUnknownThread},
		{"DeleteThread/RemovesOnlyThatThread", testDeleteThread},
		{"Prune/KeepsNewestPerNamespace", testPrune},
		{"Prune/RejectsKeepBelowOne", testPruneInvalid},
		{"Concurrent/Puts", testConcurrentPuts},
		{"Concurrent/PutWrites", testConcurrentPutWrites},
		{"Concurrent/ReadersAndWriters", testConcurrentMixed},
		{"Payload/Large", testLargePayload},
		{"Payload/BinaryAndUnusualNames", testBinaryPayload},
		{"Isolation/CallerCannotMutateStoredData", testIsolation},
		{"Context/CanceledContextIsReported", testCanceledContext},
		{"PutIfLatest/StoresOnlyAfterTheExpectedLatest", conditional(testPutIfLatest)},
		{"PutIfLatest/NamespacesHaveTheirOwnLatest", conditional(testPutIfLatestNamespaces)},
		{"PutIfLatest/DuplicateIsConflict", conditional(testPutIfLatestConflict)},
		{"PutIfLatest/ConcurrentWritersOneWins", conditional(testPutIfLatestConcurrent)},
	}
}

// conditional runs a test of state.ConditionalSaver, skipped for a saver
// that does not implement it.
func conditional(test func(*testing.T, state.ConditionalSaver)) func(*testing.T, state.Saver) {
	return func(t *testing.T, s state.Saver) {
		cs, ok := s.(state.ConditionalSaver)
		if !ok {
			t.Skipf("%T does not implement state.ConditionalSaver", s)
		}
		test(t, cs)
	}
}

// baseTime is a fixed instant with nanoseconds and a non-UTC zone, so stores
// must keep the instant rather than the wall clock text.
var baseTime = time.Date(2025, time.March, 14, 15, 9, 26, 535897000, time.FixedZone("UTC+2", 2*3600))

func checkpoint(thread, ns, id string, n int) state.Checkpoint {
	return state.Checkpoint{
		ThreadID:  thread,
		Namespace: ns,
		ID:        id,
		ParentID:  fmt.Sprintf("parent-of-%s", id),
		Step:      n,
		Source:    "loop",
		CreatedAt: baseTime.Add(time.Duration(n) * time.Second),
		Metadata:  map[string]string{"n": fmt.Sprint(n), "writer": "savertest"},
		Payload:   []byte(fmt.Sprintf("payload %s/%s/%s", thread, ns, id)),
	}
}

func write(task, node, payload string) state.PendingWrite {
	return state.PendingWrite{TaskID: task, Node: node, Payload: []byte(payload)}
}

func put(t *testing.T, s state.Saver, cps ...state.Checkpoint) {
	t.Helper()
	for _, cp := range cps {
		require.NoError(t, s.Put(t.Context(), cp), "put %s/%s/%s", cp.ThreadID, cp.Namespace, cp.ID)
	}
}

func get(t *testing.T, s state.Saver, thread, ns, id string) state.Tuple {
	t.Helper()
	tup, err := s.Get(t.Context(), thread, ns, id)
	require.NoError(t, err, "get %s/%s/%q", thread, ns, id)
	return tup
}

func list(t *testing.T, s state.Saver, thread, ns string, opts state.ListOptions) []state.Checkpoint {
	t.Helper()
	cps, err := s.List(t.Context(), thread, ns, opts)
	require.NoError(t, err, "list %s/%s %+v", thread, ns, opts)
	return cps
}

func ids(cps []state.Checkpoint) []string {
	out := make([]string, len(cps))
	for i, cp := range cps {
		out[i] = cp.ID
	}
	return out
}

func taskIDs(ws []state.PendingWrite) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.TaskID
	}
	return out
}

// assertCheckpoint compares every field. Empty and nil metadata or payload
// are the same; CreatedAt must be the same instant within CreatedAtTolerance.
func assertCheckpoint(t *testing.T, want, got state.Checkpoint) {
	t.Helper()
	assert.Equal(t, want.ThreadID, got.ThreadID, "ThreadID")
	assert.Equal(t, want.Namespace, got.Namespace, "Namespace")
	assert.Equal(t, want.ID, got.ID, "ID")
	assert.Equal(t, want.ParentID, got.ParentID, "ParentID")
	assert.Equal(t, want.Step, got.Step, "Step")
	assert.Equal(t, want.Source, got.Source, "Source")
	assert.WithinDuration(t, want.CreatedAt, got.CreatedAt, CreatedAtTolerance, "CreatedAt")
	if len(want.Metadata) == 0 {
		assert.Empty(t, got.Metadata, "Metadata")
	} else {
		assert.Equal(t, want.Metadata, got.Metadata, "Metadata")
	}
	assert.True(t, bytes.Equal(want.Payload, got.Payload), "Payload differs: want %d bytes, got %d bytes", len(want.Payload), len(got.Payload))
}

func assertWrites(t *testing.T, want, got []state.PendingWrite) {
	t.Helper()
	require.Equal(t, taskIDs(want), taskIDs(got), "task IDs of the writes, in order")
	for i := range want {
		assert.Equal(t, want[i].Node, got[i].Node, "write %q: Node", want[i].TaskID)
		assert.True(t, bytes.Equal(want[i].Payload, got[i].Payload), "write %q: Payload differs: want %q, got %q",
			want[i].TaskID, want[i].Payload, got[i].Payload)
	}
}

// assertNotFound checks err wraps state.ErrNotFound and names each of names.
func assertNotFound(t *testing.T, err error, names ...string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, state.ErrNotFound)
	for _, n := range names {
		assert.Contains(t, err.Error(), n, "the error must name %q", n)
	}
}

func testRoundTrip(t *testing.T, s state.Saver) {
	cp := checkpoint("thread-rt", "", "cp-1", 7)
	cp.Source = "update"
	cp.Metadata = map[string]string{"user": "ada", "empty": "", "ünï": "✓ \"quoted\""}
	put(t, s, cp)

	tup := get(t, s, "thread-rt", "", "cp-1")
	assertCheckpoint(t, cp, tup.Checkpoint)
	assert.Empty(t, tup.Writes)

	latest := get(t, s, "thread-rt", "", "")
	assertCheckpoint(t, cp, latest.Checkpoint)

	writes := []state.PendingWrite{write("task-1", "agent", "w1"), write("task-2", "tools", "w2")}
	require.NoError(t, s.PutWrites(t.Context(), "thread-rt", "", "cp-1", writes))
	tup = get(t, s, "thread-rt", "", "cp-1")
	assertCheckpoint(t, cp, tup.Checkpoint)
	assertWrites(t, writes, tup.Writes)
}

func testEmptyFields(t *testing.T, s state.Saver) {
	cp := state.Checkpoint{ThreadID: "thread-empty", ID: "first", Step: -1, Source: "input", CreatedAt: baseTime}
	put(t, s, cp)
	tup := get(t, s, "thread-empty", "", "first")
	assertCheckpoint(t, cp, tup.Checkpoint)

	require.NoError(t, s.PutWrites(t.Context(), "thread-empty", "", "first", []state.PendingWrite{{TaskID: "t"}}))
	tup = get(t, s, "thread-empty", "", "")
	assertWrites(t, []state.PendingWrite{{TaskID: "t"}}, tup.Writes)
}

func testZeroCreatedAt(t *testing.T, s state.Saver) {
	cp := checkpoint("thread-zero-time", "", "cp", 1)
	cp.CreatedAt = time.Time{}
	before := time.Now()
	put(t, s, cp)
	after := time.Now()

	got := get(t, s, "thread-zero-time", "", "cp").Checkpoint.CreatedAt
	require.False(t, got.IsZero(), "a zero CreatedAt must be set to the time of the Put")
	assert.False(t, got.Before(before.Add(-time.Second)) || got.After(after.Add(time.Second)),
		"CreatedAt %v is not the time of the Put (between %v and %v)", got, before, after)
}

func testPutValidation(t *testing.T, s state.Saver) {
	tests := []struct {
		name string
		cp   state.Checkpoint
	}{
		{"empty thread ID", checkpoint("", "", "cp", 1)},
		{"empty checkpoint ID", checkpoint("thread-v", "", "", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Put(t.Context(), tt.cp)
			require.Error(t, err)
			assert.NotErrorIs(t, err, state.ErrConflict)
			cps := list(t, s, tt.cp.ThreadID, "", state.ListOptions{})
			assert.Empty(t, cps, "a rejected Put must store nothing")
		})
	}
}

func testPutConflict(t *testing.T, s state.Saver) {
	first := checkpoint("thread-dup", "", "cp-a", 1)
	second := checkpoint("thread-dup", "", "cp-b", 2)
	put(t, s, first, second)
	w := []state.PendingWrite{write("task", "node", "kept")}
	require.NoError(t, s.PutWrites(t.Context(), "thread-dup", "", "cp-a", w))

	again := checkpoint("thread-dup", "", "cp-a", 9)
	again.Payload = []byte("overwrite attempt")
	again.Metadata = map[string]string{"evil": "yes"}
	err := s.Put(t.Context(), again)
	require.Error(t, err)
	assert.ErrorIs(t, err, state.ErrConflict)
	assert.NotErrorIs(t, err, state.ErrNotFound)
	assert.Contains(t, err.Error(), "thread-dup")
	assert.Contains(t, err.Error(), "cp-a")

	tup := get(t, s, "thread-dup", "", "cp-a")
	assertCheckpoint(t, first, tup.Checkpoint)
	assertWrites(t, w, tup.Writes)

	latest := get(t, s, "thread-dup", "", "")
	assert.Equal(t, "cp-b", latest.Checkpoint.ID, "a rejected duplicate must not become the latest")
	assert.Equal(t, []string{"cp-b", "cp-a"}, ids(list(t, s, "thread-dup", "", state.ListOptions{})))
}

func testGetLatest(t *testing.T, s state.Saver) {
	// Neither ID order nor CreatedAt order matches insertion order: "latest"
	// must follow the order of Puts.
	order := []string{"m", "z", "a", "q"}
	for i, id := range order {
		cp := checkpoint("thread-latest", "", id, i)
		cp.CreatedAt = baseTime.Add(-time.Duration(i) * time.Hour)
		put(t, s, cp)
		assert.Equal(t, id, get(t, s, "thread-latest", "", "").Checkpoint.ID, "after putting %q", id)
	}
	put(t, s, checkpoint("thread-other", "", "zzz", 99))
	assert.Equal(t, "q", get(t, s, "thread-latest", "", "").Checkpoint.ID, "another thread's Put changed the latest")
}

func testGetByID(t *testing.T, s state.Saver) {
	cps := []state.Checkpoint{
		checkpoint("thread-byid", "", "one", 1),
		checkpoint("thread-byid", "", "two", 2),
		checkpoint("thread-byid", "", "three", 3),
	}
	put(t, s, cps...)
	for _, cp := range cps {
		assertCheckpoint(t, cp, get(t, s, "thread-byid", "", cp.ID).Checkpoint)
	}
}

func testGetUnknownThread(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-known", "", "cp", 1))

	_, err := s.Get(t.Context(), "thread-missing-71", "", "")
	assertNotFound(t, err, "thread-missing-71")

	_, err = s.Get(t.Context(), "thread-missing-72", "", "cp")
	assertNotFound(t, err, "thread-missing-72", "cp")

	_, err = s.Get(t.Context(), "thread-known", "ns-missing-73", "")
	assertNotFound(t, err, "thread-known", "ns-missing-73")
}

func testGetUnknownCheckpoint(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-k", "", "cp-1", 1), checkpoint("thread-k", "sub", "cp-sub", 1))

	_, err := s.Get(t.Context(), "thread-k", "", "cp-missing-81")
	assertNotFound(t, err, "thread-k", "cp-missing-81")

	_, err = s.Get(t.Context(), "thread-k", "", "cp-sub")
	assertNotFound(t, err, "thread-k", "cp-sub")

	_, err = s.Get(t.Context(), "thread-k", "sub", "cp-1")
	assertNotFound(t, err, "thread-k", "sub", "cp-1")
}

func testPutWritesUnknown(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-pw", "", "cp-1", 1))
	w := []state.PendingWrite{write("task", "node", "x")}

	err := s.PutWrites(t.Context(), "thread-missing-91", "", "cp-1", w)
	assertNotFound(t, err, "thread-missing-91", "cp-1")

	err = s.PutWrites(t.Context(), "thread-pw", "", "cp-missing-92", w)
	assertNotFound(t, err, "thread-pw", "cp-missing-92")

	err = s.PutWrites(t.Context(), "thread-pw", "ns-missing-93", "cp-1", w)
	assertNotFound(t, err, "thread-pw", "ns-missing-93", "cp-1")

	assert.Empty(t, get(t, s, "thread-pw", "", "cp-1").Writes, "writes against unknown checkpoints leaked onto another")
}

func testPutWritesUpsert(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-up", "", "cp", 1))
	ctx := t.Context()

	require.NoError(t, s.PutWrites(ctx, "thread-up", "", "cp", []state.PendingWrite{
		write("b-task", "n1", "b1"), write("a-task", "n2", "a1"),
	}))
	require.NoError(t, s.PutWrites(ctx, "thread-up", "", "cp", []state.PendingWrite{
		write("c-task", "n3", "c1"), write("a-task", "n2-again", "a2"),
	}))
	require.NoError(t, s.PutWrites(ctx, "thread-up", "", "cp", []state.PendingWrite{
		write("b-task", "n1", "b2"),
	}))

	want := []state.PendingWrite{write("b-task", "n1", "b2"), write("a-task", "n2-again", "a2"), write("c-task", "n3", "c1")}
	assertWrites(t, want, get(t, s, "thread-up", "", "cp").Writes)
	assertWrites(t, want, get(t, s, "thread-up", "", "").Writes)
}

func testPutWritesRepeatedTask(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-rep", "", "cp", 1))
	require.NoError(t, s.PutWrites(t.Context(), "thread-rep", "", "cp", []state.PendingWrite{
		write("x", "n", "first"), write("y", "n", "y"), write("x", "n", "last"),
	}))
	assertWrites(t, []state.PendingWrite{write("x", "n", "last"), write("y", "n", "y")},
		get(t, s, "thread-rep", "", "cp").Writes)
}

func testPutWritesValidation(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-pwv", "", "cp", 1))
	require.NoError(t, s.PutWrites(t.Context(), "thread-pwv", "", "cp", []state.PendingWrite{write("kept", "n", "old")}))

	err := s.PutWrites(t.Context(), "thread-pwv", "", "cp", []state.PendingWrite{
		write("kept", "n", "new"), write("fresh", "n", "x"), write("", "n", "no task ID"),
	})
	require.Error(t, err, "a write without a TaskID must be rejected")
	assert.NotErrorIs(t, err, state.ErrNotFound)
	assertWrites(t, []state.PendingWrite{write("kept", "n", "old")}, get(t, s, "thread-pwv", "", "cp").Writes)
}

func testPutWritesPerCheckpoint(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-per", "", "cp-1", 1), checkpoint("thread-per", "", "cp-2", 2))
	w1 := []state.PendingWrite{write("task", "n", "for cp-1")}
	w2 := []state.PendingWrite{write("task", "n", "for cp-2"), write("other", "m", "also cp-2")}
	require.NoError(t, s.PutWrites(t.Context(), "thread-per", "", "cp-1", w1))
	require.NoError(t, s.PutWrites(t.Context(), "thread-per", "", "cp-2", w2))

	assertWrites(t, w1, get(t, s, "thread-per", "", "cp-1").Writes)
	assertWrites(t, w2, get(t, s, "thread-per", "", "cp-2").Writes)
	assertWrites(t, w2, get(t, s, "thread-per", "", "").Writes)

	put(t, s, checkpoint("thread-per", "", "cp-3", 3))
	assert.Empty(t, get(t, s, "thread-per", "", "").Writes, "a new latest checkpoint starts without writes")
}

func testPutWritesEmpty(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-pwe", "", "cp", 1))
	require.NoError(t, s.PutWrites(t.Context(), "thread-pwe", "", "cp", nil))
	require.NoError(t, s.PutWrites(t.Context(), "thread-pwe", "", "cp", []state.PendingWrite{}))
	assert.Empty(t, get(t, s, "thread-pwe", "", "cp").Writes)

	err := s.PutWrites(t.Context(), "thread-pwe", "", "cp-missing-94", nil)
	assertNotFound(t, err, "thread-pwe", "cp-missing-94")
}

func testNamespaces(t *testing.T, s state.Saver) {
	root := checkpoint("thread-ns", "", "same-id", 1)
	child := checkpoint("thread-ns", "agent:1", "same-id", 1)
	child.Payload = []byte("child payload")
	put(t, s, root, child) // the same ID in two namespaces is no conflict
	put(t, s, checkpoint("thread-ns", "agent:1", "child-2", 2))

	assertCheckpoint(t, root, get(t, s, "thread-ns", "", "same-id").Checkpoint)
	assertCheckpoint(t, child, get(t, s, "thread-ns", "agent:1", "same-id").Checkpoint)
	assert.Equal(t, "same-id", get(t, s, "thread-ns", "", "").Checkpoint.ID, "the root's latest must ignore the child namespace")
	assert.Equal(t, "child-2", get(t, s, "thread-ns", "agent:1", "").Checkpoint.ID)

	require.NoError(t, s.PutWrites(t.Context(), "thread-ns", "agent:1", "same-id", []state.PendingWrite{write("t", "n", "child")}))
	assert.Empty(t, get(t, s, "thread-ns", "", "same-id").Writes, "writes leaked across namespaces")
	assert.Len(t, get(t, s, "thread-ns", "agent:1", "same-id").Writes, 1)

	assert.Equal(t, []string{"same-id"}, ids(list(t, s, "thread-ns", "", state.ListOptions{})))
	assert.Equal(t, []string{"child-2", "same-id"}, ids(list(t, s, "thread-ns", "agent:1", state.ListOptions{})))
	assert.Empty(t, list(t, s, "thread-ns", "agent:2", state.ListOptions{}))

	_, err := s.Get(t.Context(), "thread-ns", "agent:1", "missing-cp-95")
	assertNotFound(t, err, "thread-ns", "agent:1", "missing-cp-95")
}

func testListNewestFirst(t *testing.T, s state.Saver) {
	var cps []state.Checkpoint
	for i, id := range []string{"c3", "a1", "b2", "e5", "d4"} {
		cp := checkpoint("thread-list", "", id, i)
		cp.CreatedAt = baseTime.Add(-time.Duration(i) * time.Minute) // wall clock runs backwards
		cps = append(cps, cp)
	}
	put(t, s, cps...)
	require.NoError(t, s.PutWrites(t.Context(), "thread-list", "", "b2", []state.PendingWrite{write("t", "n", "w")}))

	got := list(t, s, "thread-list", "", state.ListOptions{})
	require.Equal(t, []string{"d4", "e5", "b2", "a1", "c3"}, ids(got))
	for i, cp := range got {
		assertCheckpoint(t, cps[len(cps)-1-i], cp)
	}
}

func testListLimitBefore(t *testing.T, s state.Saver) {
	for i, id := range []string{"p1", "p2", "p3", "p4", "p5"} {
		put(t, s, checkpoint("thread-page", "", id, i))
	}
	tests := []struct {
		name string
		opts state.ListOptions
		want []string
	}{
		{"no options", state.ListOptions{}, []string{"p5", "p4", "p3", "p2", "p1"}},
		{"limit 2", state.ListOptions{Limit: 2}, []string{"p5", "p4"}},
		{"limit above count", state.ListOptions{Limit: 50}, []string{"p5", "p4", "p3", "p2", "p1"}},
		{"limit 1", state.ListOptions{Limit: 1}, []string{"p5"}},
		{"before newest", state.ListOptions{Before: "p5"}, []string{"p4", "p3", "p2", "p1"}},
		{"before middle", state.ListOptions{Before: "p3"}, []string{"p2", "p1"}},
		{"before oldest", state.ListOptions{Before: "p1"}, []string{}},
		{"before with limit", state.ListOptions{Before: "p4", Limit: 2}, []string{"p3", "p2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ids(list(t, s, "thread-page", "", tt.opts)))
		})
	}

	// Paging with Before and Limit visits every checkpoint once.
	var seen []string
	opts := state.ListOptions{Limit: 2}
	for range 10 { // bounded: a store that ignores Before would page forever
		page := list(t, s, "thread-page", "", opts)
		if len(page) == 0 {
			break
		}
		seen = append(seen, ids(page)...)
		opts.Before = page[len(page)-1].ID
	}
	assert.Equal(t, []string{"p5", "p4", "p3", "p2", "p1"}, seen)
}

func testListBadOptions(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-bad", "", "cp", 1))

	_, err := s.List(t.Context(), "thread-bad", "", state.ListOptions{Limit: -1})
	require.Error(t, err, "a negative limit must be rejected")
	assert.Contains(t, err.Error(), "-1")

	_, err = s.List(t.Context(), "thread-bad", "", state.ListOptions{Before: "cp-missing-96"})
	assertNotFound(t, err, "thread-bad", "cp-missing-96")
}

func testListUnknownThread(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-exists", "", "cp", 1))
	cps, err := s.List(t.Context(), "thread-never-put", "", state.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, cps)
	cps, err = s.List(t.Context(), "thread-never-put", "", state.ListOptions{Limit: 3})
	require.NoError(t, err)
	assert.Empty(t, cps)
}

func testDeleteThread(t *testing.T, s state.Saver) {
	// Names chosen so that a LIKE or prefix match would catch the wrong thread.
	doomed, similar, prefixed := "t_1%", "tx1x", "t_1%-more"
	for _, thread := range []string{doomed, similar, prefixed} {
		put(t, s, checkpoint(thread, "", "cp-1", 1), checkpoint(thread, "", "cp-2", 2), checkpoint(thread, "sub", "cp-1", 1))
		require.NoError(t, s.PutWrites(t.Context(), thread, "", "cp-1", []state.PendingWrite{write("task", "n", thread)}))
	}

	require.NoError(t, s.DeleteThread(t.Context(), doomed))

	for _, ns := range []string{"", "sub"} {
		_, err := s.Get(t.Context(), doomed, ns, "")
		assertNotFound(t, err, doomed)
		assert.Empty(t, list(t, s, doomed, ns, state.ListOptions{}))
	}
	for _, thread := range []string{similar, prefixed} {
		assert.Equal(t, []string{"cp-2", "cp-1"}, ids(list(t, s, thread, "", state.ListOptions{})), "thread %q", thread)
		assert.Equal(t, []string{"cp-1"}, ids(list(t, s, thread, "sub", state.ListOptions{})), "thread %q", thread)
		assertWrites(t, []state.PendingWrite{write("task", "n", thread)}, get(t, s, thread, "", "cp-1").Writes)
	}

	// The thread can start over, and nothing of its past comes back.
	put(t, s, checkpoint(doomed, "", "cp-1", 1))
	tup := get(t, s, doomed, "", "")
	assert.Equal(t, "cp-1", tup.Checkpoint.ID)
	assert.Empty(t, tup.Writes, "writes of a deleted thread came back")

	require.NoError(t, s.DeleteThread(t.Context(), "thread-never-put"), "deleting an unknown thread is not an error")
}

func testPrune(t *testing.T, s state.Saver) {
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		put(t, s, checkpoint("thread-prune", "", fmt.Sprintf("root-%d", i), i))
	}
	for i := 1; i <= 3; i++ {
		put(t, s, checkpoint("thread-prune", "child", fmt.Sprintf("child-%d", i), i))
	}
	for i := 1; i <= 4; i++ {
		put(t, s, checkpoint("thread-keep", "", fmt.Sprintf("root-%d", i), i))
	}
	for _, id := range []string{"root-1", "root-4", "root-5"} {
		require.NoError(t, s.PutWrites(ctx, "thread-prune", "", id, []state.PendingWrite{write("task", "n", id)}))
	}
	require.NoError(t, s.PutWrites(ctx, "thread-prune", "child", "child-1", []state.PendingWrite{write("task", "n", "c1")}))

	require.NoError(t, s.Prune(ctx, "thread-prune", 2))

	assert.Equal(t, []string{"root-5", "root-4"}, ids(list(t, s, "thread-prune", "", state.ListOptions{})))
	assert.Equal(t, []string{"child-3", "child-2"}, ids(list(t, s, "thread-prune", "child", state.ListOptions{})))
	assert.Equal(t, []string{"root-4", "root-3", "root-2", "root-1"}, ids(list(t, s, "thread-keep", "", state.ListOptions{})),
		"another thread was pruned")
	assertWrites(t, []state.PendingWrite{write("task", "n", "root-4")}, get(t, s, "thread-prune", "", "root-4").Writes)
	assertWrites(t, []state.PendingWrite{write("task", "n", "root-5")}, get(t, s, "thread-prune", "", "").Writes)

	_, err := s.Get(ctx, "thread-prune", "", "root-3")
	assertNotFound(t, err, "thread-prune", "root-3")

	// A pruned checkpoint is gone with its writes: putting its ID again is no
	// conflict, and the old writes do not come back.
	put(t, s, checkpoint("thread-prune", "", "root-1", 1))
	assert.Empty(t, get(t, s, "thread-prune", "", "root-1").Writes, "writes of a pruned checkpoint survived")
	put(t, s, checkpoint("thread-prune", "child", "child-1", 1))
	assert.Empty(t, get(t, s, "thread-prune", "child", "child-1").Writes, "writes of a pruned checkpoint survived")

	// Keeping more than there are removes nothing; an unknown thread is fine.
	require.NoError(t, s.Prune(ctx, "thread-keep", 10))
	assert.Len(t, list(t, s, "thread-keep", "", state.ListOptions{}), 4)
	require.NoError(t, s.Prune(ctx, "thread-never-put", 1))

	require.NoError(t, s.Prune(ctx, "thread-keep", 1))
	assert.Equal(t, []string{"root-4"}, ids(list(t, s, "thread-keep", "", state.ListOptions{})))
}

func testPruneInvalid(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-pi", "", "cp-1", 1), checkpoint("thread-pi", "", "cp-2", 2))
	for _, keep := range []int{0, -1} {
		err := s.Prune(t.Context(), "thread-pi", keep)
		require.Error(t, err, "keep %d must be rejected", keep)
		assert.Contains(t, err.Error(), fmt.Sprint(keep))
	}
	assert.Len(t, list(t, s, "thread-pi", "", state.ListOptions{}), 2, "a rejected Prune removed checkpoints")
}

const (
	goroutines   = 8
	perGoroutine = 12
)

func testConcurrentPuts(t *testing.T, s state.Saver) {
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine*2)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				shared := checkpoint("thread-shared", "", fmt.Sprintf("g%d-%d", g, i), i)
				own := checkpoint(fmt.Sprintf("thread-own-%d", g), "", fmt.Sprintf("cp-%d", i), i)
				errs <- s.Put(ctx, shared)
				errs <- s.Put(ctx, own)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	var want []string
	for g := range goroutines {
		for i := range perGoroutine {
			want = append(want, fmt.Sprintf("g%d-%d", g, i))
		}
		own := list(t, s, fmt.Sprintf("thread-own-%d", g), "", state.ListOptions{})
		var wantOwn []string
		for i := perGoroutine - 1; i >= 0; i-- {
			wantOwn = append(wantOwn, fmt.Sprintf("cp-%d", i))
		}
		assert.Equal(t, wantOwn, ids(own), "one goroutine's puts must keep their order")
	}
	got := ids(list(t, s, "thread-shared", "", state.ListOptions{}))
	assert.ElementsMatch(t, want, got)
	latest := get(t, s, "thread-shared", "", "")
	assert.Equal(t, got[0], latest.Checkpoint.ID, "List and Get must agree on the latest")

	// Each goroutine's own puts appear in its order within the shared thread.
	for g := range goroutines {
		var mine []string
		for _, id := range got {
			var gg, i int
			if _, err := fmt.Sscanf(id, "g%d-%d", &gg, &i); err == nil && gg == g {
				mine = append(mine, id)
			}
		}
		assert.True(t, slices.IsSortedFunc(mine, func(a, b string) int {
			var ga, ia, gb, ib int
			_, _ = fmt.Sscanf(a, "g%d-%d", &ga, &ia)
			_, _ = fmt.Sscanf(b, "g%d-%d", &gb, &ib)
			return ib - ia // newest first
		}), "goroutine %d's puts out of order: %v", g, mine)
	}
}

func testConcurrentPutWrites(t *testing.T, s state.Saver) {
	ctx := t.Context()
	put(t, s, checkpoint("thread-cw", "", "cp", 1))
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				errs <- s.PutWrites(ctx, "thread-cw", "", "cp", []state.PendingWrite{
					write(fmt.Sprintf("task-%d-%d", g, i), "node", "x"),
					write("shared-task", "node", fmt.Sprintf("%d", g)),
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	writes := get(t, s, "thread-cw", "", "cp").Writes
	assert.Len(t, writes, goroutines*perGoroutine+1)
	seen := map[string]bool{}
	for _, w := range writes {
		assert.False(t, seen[w.TaskID], "task %q stored twice", w.TaskID)
		seen[w.TaskID] = true
	}
	assert.True(t, seen["shared-task"])
}

func testConcurrentMixed(t *testing.T, s state.Saver) {
	ctx := t.Context()
	put(t, s, checkpoint("thread-mix", "", "cp-0", 0))
	var wg sync.WaitGroup
	errs := make(chan error, 4*perGoroutine*3)
	for g := range 2 {
		wg.Go(func() {
			for i := range perGoroutine {
				id := fmt.Sprintf("w%d-%d", g, i)
				errs <- s.Put(ctx, checkpoint("thread-mix", "", id, i+1))
				errs <- s.PutWrites(ctx, "thread-mix", "", id, []state.PendingWrite{write("t", "n", id)})
			}
		})
		wg.Go(func() {
			for range perGoroutine {
				tup, err := s.Get(ctx, "thread-mix", "", "")
				errs <- err
				if err == nil && len(tup.Writes) > 0 && string(tup.Writes[0].Payload) != tup.Checkpoint.ID {
					errs <- fmt.Errorf("checkpoint %q returned the writes of %q", tup.Checkpoint.ID, tup.Writes[0].Payload)
				}
				_, err = s.List(ctx, "thread-mix", "", state.ListOptions{Limit: 5})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, list(t, s, "thread-mix", "", state.ListOptions{}), 2*perGoroutine+1)
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

func testLargePayload(t *testing.T, s state.Saver) {
	cp := checkpoint("thread-large", "", "big", 1)
	cp.Payload = randomBytes(t, 1<<20)
	put(t, s, cp)
	w := []state.PendingWrite{{TaskID: "big-task", Node: "n", Payload: randomBytes(t, 1<<20)}}
	require.NoError(t, s.PutWrites(t.Context(), "thread-large", "", "big", w))

	tup := get(t, s, "thread-large", "", "")
	assertCheckpoint(t, cp, tup.Checkpoint)
	assertWrites(t, w, tup.Writes)
}

func testBinaryPayload(t *testing.T, s state.Saver) {
	all := make([]byte, 0, 512)
	for i := range 256 {
		all = append(all, byte(i))
	}
	all = append(all, 0, 0, 0xff, 0xfe, 0xc3, 0x28) // NULs, invalid UTF-8
	thread, ns, id := `thread 'quoted' "double" ; DROP TABLE x; --`, "ns/ü/日本", "id\\with\\backslashes%_*"
	cp := checkpoint(thread, ns, id, 1)
	cp.Payload = all
	cp.Metadata = map[string]string{"emoji": "🧵", "quote": `"'`, "newline": "a\nb"}
	put(t, s, cp)
	w := []state.PendingWrite{{TaskID: "task\x01ü", Node: "node 'x'", Payload: all[:3]}}
	require.NoError(t, s.PutWrites(t.Context(), thread, ns, id, w))

	tup := get(t, s, thread, ns, id)
	assertCheckpoint(t, cp, tup.Checkpoint)
	assertWrites(t, w, tup.Writes)
	assert.Equal(t, []string{id}, ids(list(t, s, thread, ns, state.ListOptions{})))
}

func testIsolation(t *testing.T, s state.Saver) {
	cp := checkpoint("thread-iso", "", "cp", 1)
	want := checkpoint("thread-iso", "", "cp", 1)
	put(t, s, cp)
	w := []state.PendingWrite{write("task", "n", "write payload")}
	require.NoError(t, s.PutWrites(t.Context(), "thread-iso", "", "cp", w))

	// Mutate what was put.
	cp.Payload[0] = 'X'
	cp.Metadata["n"] = "changed"
	w[0].Payload[0] = 'X'

	// Mutate what was returned.
	tup := get(t, s, "thread-iso", "", "cp")
	tup.Checkpoint.Payload[0] = 'Y'
	tup.Checkpoint.Metadata["writer"] = "changed"
	tup.Writes[0].Payload[0] = 'Y'
	listed := list(t, s, "thread-iso", "", state.ListOptions{})
	listed[0].Payload[1] = 'Z'
	listed[0].Metadata["extra"] = "added"

	again := get(t, s, "thread-iso", "", "")
	assertCheckpoint(t, want, again.Checkpoint)
	assertWrites(t, []state.PendingWrite{write("task", "n", "write payload")}, again.Writes)
}

func testCanceledContext(t *testing.T, s state.Saver) {
	put(t, s, checkpoint("thread-ctx", "", "cp", 1))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	calls := []struct {
		name string
		call func() error
	}{
		{"Put", func() error { return s.Put(ctx, checkpoint("thread-ctx", "", "cp-new", 2)) }},
		{"PutWrites", func() error {
			return s.PutWrites(ctx, "thread-ctx", "", "cp", []state.PendingWrite{write("t", "n", "x")})
		}},
		{"Get", func() error { _, err := s.Get(ctx, "thread-ctx", "", ""); return err }},
		{"List", func() error { _, err := s.List(ctx, "thread-ctx", "", state.ListOptions{}); return err }},
		{"DeleteThread", func() error { return s.DeleteThread(ctx, "thread-ctx") }},
		{"Prune", func() error { return s.Prune(ctx, "thread-ctx", 1) }},
	}
	for _, c := range calls {
		err := c.call()
		require.Error(t, err, "%s ignored a canceled context", c.name)
		assert.ErrorIs(t, err, context.Canceled, "%s", c.name)
	}

	// Nothing changed.
	tup := get(t, s, "thread-ctx", "", "")
	assert.Equal(t, "cp", tup.Checkpoint.ID)
	assert.Empty(t, tup.Writes)
	assert.Len(t, list(t, s, "thread-ctx", "", state.ListOptions{}), 1)
}

// assertNotLatest checks that err refuses a conditional put for another
// latest checkpoint, and names the one found.
func assertNotLatest(t *testing.T, err error, found string) {
	t.Helper()
	require.ErrorIs(t, err, state.ErrNotLatest)
	assert.NotErrorIs(t, err, state.ErrConflict)
	if found == "" {
		assert.Contains(t, err.Error(), "none")
	} else {
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", found))
	}
}

func testPutIfLatest(t *testing.T, s state.ConditionalSaver) {
	ctx := t.Context()
	// An empty thread: only "none" is its latest.
	assertNotLatest(t, s.PutIfLatest(ctx, checkpoint("t", "", "a", 0), "x"), "")
	require.NoError(t, s.PutIfLatest(ctx, checkpoint("t", "", "a", 0), ""))
	// The thread has moved on from none.
	assertNotLatest(t, s.PutIfLatest(ctx, checkpoint("t", "", "b", 1), ""), "a")
	require.NoError(t, s.PutIfLatest(ctx, checkpoint("t", "", "b", 1), "a"))
	// A writer that still believes "a" is the latest is refused, and nothing
	// of its checkpoint is stored.
	stale := checkpoint("t", "", "c", 2)
	assertNotLatest(t, s.PutIfLatest(ctx, stale, "a"), "b")
	_, err := s.Get(ctx, "t", "", "c")
	assertNotFound(t, err, "c")
	// Plain puts move the latest too.
	put(t, s, checkpoint("t", "", "d", 3))
	assertNotLatest(t, s.PutIfLatest(ctx, checkpoint("t", "", "e", 4), "b"), "d")
	want := checkpoint("t", "", "e", 4)
	require.NoError(t, s.PutIfLatest(ctx, want, "d"))
	assertCheckpoint(t, want, get(t, s, "t", "", "").Checkpoint)
	assert.Equal(t, []string{"e", "d", "b", "a"}, ids(list(t, s, "t", "", state.ListOptions{})))
}

func testPutIfLatestNamespaces(t *testing.T, s state.ConditionalSaver) {
	ctx := t.Context()
	require.NoError(t, s.PutIfLatest(ctx, checkpoint("t", "", "root-1", 0), ""))
	// Another namespace of the thread, and another thread, start empty.
	require.NoError(t, s.PutIfLatest(ctx, checkpoint("t", "child", "child-1", 0), ""))
	require.NoError(t, s.PutIfLatest(ctx, checkpoint("u", "", "other-1", 0), ""))
	assertNotLatest(t, s.PutIfLatest(ctx, checkpoint("t", "child", "child-2", 1), "root-1"), "child-1")
	require.NoError(t, s.PutIfLatest(ctx, checkpoint("t", "child", "child-2", 1), "child-1"))
	require.NoError(t, s.PutIfLatest(ctx, checkpoint("t", "", "root-2", 1), "root-1"))
}

func testPutIfLatestConflict(t *testing.T, s state.ConditionalSaver) {
	ctx := t.Context()
	first := checkpoint("t", "", "a", 0)
	require.NoError(t, s.PutIfLatest(ctx, first, ""))
	again := checkpoint("t", "", "a", 1)
	again.Payload = []byte("another payload")
	// The same ID again is a conflict whether or not the expectation holds.
	err := s.PutIfLatest(ctx, again, "a")
	require.ErrorIs(t, err, state.ErrConflict)
	assert.Contains(t, err.Error(), `"a"`)
	require.ErrorIs(t, s.PutIfLatest(ctx, again, ""), state.ErrConflict)
	assertCheckpoint(t, first, get(t, s, "t", "", "a").Checkpoint)
}

// testPutIfLatestConcurrent starts writers that all follow the same
// checkpoint: exactly one of them may store its own, every round.
func testPutIfLatestConcurrent(t *testing.T, s state.ConditionalSaver) {
	ctx := t.Context()
	latest := ""
	for round := range 4 {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			errs    []error
		)
		for g := range goroutines {
			wg.Go(func() {
				id := fmt.Sprintf("r%d-g%d", round, g)
				err := s.PutIfLatest(ctx, checkpoint("race", "", id, round), latest)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					winners = append(winners, id)
				} else {
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		require.Len(t, winners, 1, "round %d: exactly one writer must win", round)
		for _, err := range errs {
			require.ErrorIs(t, err, state.ErrNotLatest, "round %d", round)
		}
		require.Equal(t, winners[0], get(t, s, "race", "", "").Checkpoint.ID)
		latest = winners[0]
	}
	assert.Len(t, list(t, s, "race", "", state.ListOptions{}), 4, "the losers must store nothing")
}
