package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/store"
)

// NewStore returns a new, empty store configured with opts, released with
// t.Cleanup.
type NewStore func(t *testing.T, opts ...store.Option) store.Store

// Run checks newStore's stores against every rule of the store.Store
// contract, each in its own subtest.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			if c.long && testing.Short() {
				t.Skip("-short: writes hundreds of items")
			}
			c.run(t, newStore)
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, newStore NewStore)
	long bool
}

func cases() []testCase {
	return []testCase{
		{name: "PutGet/RoundTripAndVersions", run: testRoundTrip},
		{name: "Get/MissingIsNotFound", run: testNotFound},
		{name: "Put/InvalidArgumentsAreRejected", run: testInvalid},
		{name: "Delete/RemovesAndMissingIsNoError", run: testDelete},
		{name: "Namespaces/AreIsolatedAtLabelBoundaries", run: testNamespaceIsolation},
		{name: "PutIf/OnlyOverTheExpectedVersion", run: testPutIf},
		{name: "PutIf/ConcurrentWritersOneWins", run: testPutIfRace},
		{name: "Apply/IsAtomic", run: testApplyAtomic},
		{name: "Apply/LaterOpsSeeEarlierOnes", run: testApplySequence},
		{name: "Search/FilterEqualityAndRanges", run: testFilter},
		{name: "Search/RangesByTypeMissingFieldsAndPaging", run: testRanges},
		{name: "Search/MeaningWithRanges", run: testMeaningRanges},
		{name: "Search/NewestFirstWithPaging", run: testSearchOrder},
		{name: "Search/BadQueriesAreInvalid", run: testBadQuery},
		{name: "ListNamespaces/PrefixDepthAndPaging", run: testListNamespaces},
		{name: "TTL/ExpiredItemsAreGoneAndSwept", run: testTTL},
		{name: "Meaning/NearestFirst", run: testMeaning},
		{name: "Meaning/FilterMinScoreAndIndexFields", run: testMeaningFilter},
		{name: "Meaning/NeedsAnEmbedder", run: testNoEmbedder},
		{name: "Meaning/ApproximateIndexFollowsWrites", run: testApproximate, long: true},
		{name: "Isolation/CallerCannotMutateStoredData", run: testIsolation},
		{name: "Context/CanceledContextIsReported", run: testCanceled},
		{name: "Close/ClosedStoreRefusesCalls", run: testClosed},
	}
}

// clock is a settable clock for expiry tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func obj(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func ns(labels ...string) []string { return labels }

func testRoundTrip(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)}
	s := newStore(t, store.WithClock(clk.Now))
	it, err := s.Put(ctx, ns("users", "u1", "memories"), "m1", obj(t, map[string]any{"text": "likes tea", "n": 1}))
	require.NoError(t, err)
	assert.Equal(t, int64(1), it.Version)
	assert.Equal(t, ns("users", "u1", "memories"), it.Namespace)
	assert.Equal(t, "m1", it.Key)
	assert.True(t, it.CreatedAt.Equal(clk.Now()), "CreatedAt %v", it.CreatedAt)
	assert.True(t, it.UpdatedAt.Equal(clk.Now()))
	assert.True(t, it.ExpiresAt.IsZero())

	got, err := s.Get(ctx, ns("users", "u1", "memories"), "m1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"text":"likes tea","n":1}`, string(got.Value))
	assert.Equal(t, int64(1), got.Version)
	assert.True(t, got.CreatedAt.Equal(clk.Now()))
	var v struct{ Text string }
	require.NoError(t, got.Decode(&v))
	assert.Equal(t, "likes tea", v.Text)

	clk.Advance(time.Minute)
	it2, err := s.Put(ctx, ns("users", "u1", "memories"), "m1", obj(t, map[string]any{"text": "likes coffee"}))
	require.NoError(t, err)
	assert.Equal(t, int64(2), it2.Version)
	got, err = s.Get(ctx, ns("users", "u1", "memories"), "m1")
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Version)
	assert.True(t, got.CreatedAt.Equal(it.CreatedAt), "CreatedAt is kept across writes")
	assert.True(t, got.UpdatedAt.Equal(clk.Now()), "UpdatedAt moves")
	assert.JSONEq(t, `{"text":"likes coffee"}`, string(got.Value))

	// Unusual but valid labels and keys survive.
	odd := ns("ünïcode", "a/b", "with space", "%_")
	_, err = s.Put(ctx, odd, "k/ey with ' quote", obj(t, map[string]any{}))
	require.NoError(t, err)
	got, err = s.Get(ctx, odd, "k/ey with ' quote")
	require.NoError(t, err)
	assert.Equal(t, odd, got.Namespace)
}

func testNotFound(t *testing.T, newStore NewStore) {
	s := newStore(t)
	_, err := s.Get(t.Context(), ns("a"), "missing")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testInvalid(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	for name, call := range map[string]func() error{
		"empty namespace": func() error { _, err := s.Put(ctx, nil, "k", obj(t, map[string]any{})); return err },
		"empty label":     func() error { _, err := s.Put(ctx, ns("a", ""), "k", obj(t, map[string]any{})); return err },
		"separator label": func() error { _, err := s.Put(ctx, ns("a\x1fb"), "k", obj(t, map[string]any{})); return err },
		"empty key":       func() error { _, err := s.Put(ctx, ns("a"), "", obj(t, map[string]any{})); return err },
		"array value":     func() error { _, err := s.Put(ctx, ns("a"), "k", json.RawMessage(`[1]`)); return err },
		"bad json":        func() error { _, err := s.Put(ctx, ns("a"), "k", json.RawMessage(`{`)); return err },
		"nil value":       func() error { _, err := s.Put(ctx, ns("a"), "k", nil); return err },
		"negative ttl": func() error {
			_, err := s.Put(ctx, ns("a"), "k", obj(t, map[string]any{}), store.WithTTL(-time.Second))
			return err
		},
		"get empty key": func() error { _, err := s.Get(ctx, ns("a"), ""); return err },
	} {
		assert.ErrorIs(t, call(), store.ErrInvalid, name)
	}
	_, err := s.Get(ctx, ns("a"), "k")
	assert.ErrorIs(t, err, store.ErrNotFound, "nothing was stored")
}

func testDelete(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	_, err := s.Put(ctx, ns("a"), "k", obj(t, map[string]any{"x": 1}))
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, ns("a"), "k"))
	_, err = s.Get(ctx, ns("a"), "k")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, s.Delete(ctx, ns("a"), "k"), "deleting a missing item")
	// A new item at the key starts again at version 1.
	it, err := s.Put(ctx, ns("a"), "k", obj(t, map[string]any{"x": 2}))
	require.NoError(t, err)
	assert.Equal(t, int64(1), it.Version)
}

func testNamespaceIsolation(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	for _, n := range [][]string{ns("users"), ns("users", "u1"), ns("users", "u10"), ns("users2"), ns("users", "u1", "deep")} {
		_, err := s.Put(ctx, n, "k", obj(t, map[string]any{"ns": fmt.Sprint(n)}))
		require.NoError(t, err)
	}
	got, err := s.Get(ctx, ns("users", "u1"), "k")
	require.NoError(t, err)
	assert.JSONEq(t, `{"ns":"[users u1]"}`, string(got.Value))

	items, err := s.Search(ctx, ns("users", "u1"), store.Query{})
	require.NoError(t, err)
	assert.ElementsMatch(t, [][]string{ns("users", "u1"), ns("users", "u1", "deep")}, namespaces(items),
		"a prefix holds its namespace and those below, not u10")
	items, err = s.Search(ctx, ns("users"), store.Query{})
	require.NoError(t, err)
	assert.Len(t, items, 4, "users2 is not under users")
	items, err = s.Search(ctx, nil, store.Query{})
	require.NoError(t, err)
	assert.Len(t, items, 5, "the empty prefix holds everything")
}

func namespaces(items []store.Item) [][]string {
	out := make([][]string, len(items))
	for i, it := range items {
		out[i] = it.Namespace
	}
	return out
}

func keys(items []store.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Key
	}
	return out
}

func testPutIf(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	it, err := s.PutIf(ctx, ns("a"), "k", obj(t, map[string]any{"v": 1}), 0)
	require.NoError(t, err, "version 0 creates a missing item")
	assert.Equal(t, int64(1), it.Version)

	_, err = s.PutIf(ctx, ns("a"), "k", obj(t, map[string]any{"v": 2}), 0)
	require.ErrorIs(t, err, store.ErrConflict, "version 0 over an existing item")
	var ce *store.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, int64(0), ce.Want)
	assert.Equal(t, int64(1), ce.Have)
	assert.Equal(t, ns("a"), ce.Namespace)
	assert.Equal(t, "k", ce.Key)

	it, err = s.PutIf(ctx, ns("a"), "k", obj(t, map[string]any{"v": 2}), 1)
	require.NoError(t, err)
	assert.Equal(t, int64(2), it.Version)

	_, err = s.PutIf(ctx, ns("a"), "k", obj(t, map[string]any{"v": 3}), 1)
	require.ErrorAs(t, err, &ce, "a stale version")
	assert.Equal(t, int64(1), ce.Want)
	assert.Equal(t, int64(2), ce.Have)
	got, err := s.Get(ctx, ns("a"), "k")
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":2}`, string(got.Value), "a conflict stores nothing")

	_, err = s.PutIf(ctx, ns("a"), "other", obj(t, map[string]any{}), 3)
	require.ErrorAs(t, err, &ce, "a version over a missing item")
	assert.Equal(t, int64(0), ce.Have)
}

func testPutIfRace(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	_, err := s.Put(ctx, ns("race"), "k", obj(t, map[string]any{"by": -1}))
	require.NoError(t, err)
	const writers = 8
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			_, err := s.PutIf(ctx, ns("race"), "k", obj(t, map[string]any{"by": i}), 1)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrConflict):
				conflicts.Add(1)
			default:
				t.Errorf("writer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), wins.Load())
	assert.Equal(t, int32(writers-1), conflicts.Load())
	got, err := s.Get(ctx, ns("race"), "k")
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Version)
}

func testApplyAtomic(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	_, err := s.Put(ctx, ns("b"), "keep", obj(t, map[string]any{"v": 1}))
	require.NoError(t, err)
	bad := store.PutOp(ns("b"), "keep", obj(t, map[string]any{"v": 2}))
	bad.Conditional, bad.IfVersion = true, 7
	_, err = s.Apply(ctx, []store.Op{
		store.PutOp(ns("b"), "new", obj(t, map[string]any{"v": 1})),
		store.DeleteOp(ns("b"), "keep"),
		bad,
	})
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = s.Get(ctx, ns("b"), "new")
	assert.ErrorIs(t, err, store.ErrNotFound, "the failed batch stored nothing")
	got, err := s.Get(ctx, ns("b"), "keep")
	require.NoError(t, err, "the failed batch deleted nothing")
	assert.Equal(t, int64(1), got.Version)

	_, err = s.Apply(ctx, []store.Op{
		store.PutOp(ns("b"), "new", obj(t, map[string]any{"v": 1})),
		store.PutOp(ns("b"), "k", json.RawMessage(`[]`)),
	})
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = s.Get(ctx, ns("b"), "new")
	assert.ErrorIs(t, err, store.ErrNotFound, "an invalid op fails the whole batch")

	items, err := s.Apply(ctx, []store.Op{
		store.PutOp(ns("b"), "x", obj(t, map[string]any{"v": 1})),
		store.PutOp(ns("c"), "y", obj(t, map[string]any{"v": 2})),
		store.DeleteOp(ns("b"), "keep"),
	})
	require.NoError(t, err)
	require.Len(t, items, 3)
	assert.Equal(t, "x", items[0].Key)
	assert.Equal(t, ns("c"), items[1].Namespace)
	assert.Equal(t, int64(1), items[1].Version)
	assert.Empty(t, items[2].Key, "a delete returns the zero Item")
	_, err = s.Get(ctx, ns("b"), "keep")
	assert.ErrorIs(t, err, store.ErrNotFound)
	empty, err := s.Apply(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, empty)
}

func testApplySequence(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	second := store.PutOp(ns("seq"), "k", obj(t, map[string]any{"v": 2}))
	second.Conditional, second.IfVersion = true, 1
	items, err := s.Apply(ctx, []store.Op{
		store.PutOp(ns("seq"), "k", obj(t, map[string]any{"v": 1})),
		second,
	})
	require.NoError(t, err, "the second op sees the version the first wrote")
	assert.Equal(t, int64(2), items[1].Version)
	got, err := s.Get(ctx, ns("seq"), "k")
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":2}`, string(got.Value))
}

func testFilter(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	docs := map[string]any{
		"a": map[string]any{"kind": "note", "score": 1, "tag": "alpha", "meta": map[string]any{"lang": "en"}},
		"b": map[string]any{"kind": "note", "score": 5, "tag": "beta", "meta": map[string]any{"lang": "fr"}},
		"c": map[string]any{"kind": "fact", "score": 9.5, "tag": "gamma", "list": []any{1, 2}},
		"d": map[string]any{"kind": "fact", "score": "high"},
		"e": map[string]any{"other": true},
		"g": map[string]any{`q"uote`: "x", "kind": "odd", "meta": map[string]any{"lang": "en", "extra": 1}},
	}
	for k, v := range docs {
		_, err := s.Put(ctx, ns("f"), k, obj(t, v))
		require.NoError(t, err)
	}
	for name, tc := range map[string]struct {
		conds []store.Cond
		want  []string
	}{
		"eq string":     {[]store.Cond{store.Eq("kind", "note")}, []string{"a", "b"}},
		"eq number":     {[]store.Cond{store.Eq("score", 5)}, []string{"b"}},
		"eq bool":       {[]store.Cond{store.Eq("other", true)}, []string{"e"}},
		"eq array":      {[]store.Cond{store.Eq("list", []int{1, 2})}, []string{"c"}},
		"ne":            {[]store.Cond{store.Ne("kind", "note")}, []string{"c", "d", "e", "g"}},
		"gt number":     {[]store.Cond{store.Gt("score", 1)}, []string{"b", "c"}},
		"gte number":    {[]store.Cond{store.Gte("score", 5)}, []string{"b", "c"}},
		"lt number":     {[]store.Cond{store.Lt("score", 5)}, []string{"a"}},
		"lte number":    {[]store.Cond{store.Lte("score", 5)}, []string{"a", "b"}},
		"range":         {[]store.Cond{store.Gt("score", 0), store.Lt("score", 9)}, []string{"a", "b"}},
		"string range":  {[]store.Cond{store.Gte("tag", "b")}, []string{"b", "c"}},
		"nested":        {[]store.Cond{store.Eq("meta.lang", "fr")}, []string{"b"}},
		"nested en":     {[]store.Cond{store.Eq("meta.lang", "en")}, []string{"a", "g"}},
		"nested absent": {[]store.Cond{store.Eq("meta.lang", "de")}, nil},
		"and":           {[]store.Cond{store.Eq("kind", "fact"), store.Eq("score", "high")}, []string{"d"}},
		"int as float":  {[]store.Cond{store.Eq("score", 5.0)}, []string{"b"}},
		"quoted key":    {[]store.Cond{store.Eq(`q"uote`, "x")}, []string{"g"}},
		"nested object": {[]store.Cond{store.Eq("meta", map[string]any{"lang": "en"})}, []string{"a"}},
		"eq with range": {[]store.Cond{store.Eq("kind", "note"), store.Gt("score", 2)}, []string{"b"}},
	} {
		items, err := s.Search(ctx, ns("f"), store.Query{Filter: tc.conds})
		require.NoError(t, err, name)
		assert.ElementsMatch(t, tc.want, keys(items), name)
	}
}

// testRanges holds fields of every JSON type under the same names, so that
// a backend filtering in its database must compare numbers with numbers
// and strings with strings, byte by byte, and skip everything else.
func testRanges(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newStore(t, store.WithClock(clk.Now))
	docs := []struct {
		key   string
		value string
	}{
		{"int", `{"n": 1, "s": "apple"}`},
		{"real", `{"n": 2.5, "s": "banana"}`},
		{"negative", `{"n": -3, "s": "Cherry"}`},
		{"ten", `{"n": 10, "s": "\u00e4rger"}`},
		{"swapped", `{"n": "7", "s": 7}`},
		{"bool", `{"n": true, "s": false}`},
		{"null", `{"n": null, "s": null}`},
		{"missing", `{"other": 1}`},
		{"object", `{"n": {"v": 5}, "s": ["a", "b"]}`},
		{"big", `{"n": 9007199254740993, "s": ""}`},
		{"exp", `{"n": 1e3, "s": "b"}`},
	}
	for _, d := range docs {
		clk.Advance(time.Second)
		_, err := s.Put(ctx, ns("r"), d.key, json.RawMessage(d.value))
		require.NoError(t, err, d.key)
	}
	const two53 = 9007199254740992 // what 2^53+1 is as a float64
	for name, tc := range map[string]struct {
		conds []store.Cond
		want  []string
	}{
		"gt number":            {[]store.Cond{store.Gt("n", 1)}, []string{"real", "ten", "big", "exp"}},
		"gte number":           {[]store.Cond{store.Gte("n", 1)}, []string{"int", "real", "ten", "big", "exp"}},
		"lt number":            {[]store.Cond{store.Lt("n", 2.5)}, []string{"int", "negative"}},
		"lte negative":         {[]store.Cond{store.Lte("n", -3)}, []string{"negative"}},
		"between":              {[]store.Cond{store.Gt("n", 0), store.Lte("n", 10)}, []string{"int", "real", "ten"}},
		"exponent":             {[]store.Cond{store.Gte("n", 1000), store.Lt("n", 1001)}, []string{"exp"}},
		"float64 precision":    {[]store.Cond{store.Lte("n", two53), store.Gte("n", two53)}, []string{"big"}},
		"above float64":        {[]store.Cond{store.Gt("n", two53)}, nil},
		"eq float64":           {[]store.Cond{store.Eq("n", two53)}, []string{"big"}},
		"string on number":     {[]store.Cond{store.Gt("n", "5")}, []string{"swapped"}},
		"number on string":     {[]store.Cond{store.Lt("s", 100)}, []string{"swapped"}},
		"gte string":           {[]store.Cond{store.Gte("s", "b")}, []string{"real", "ten", "exp"}},
		"lt string":            {[]store.Cond{store.Lt("s", "b")}, []string{"int", "negative", "big"}},
		"bytewise case":        {[]store.Cond{store.Gte("s", "C"), store.Lt("s", "a")}, []string{"negative"}},
		"bytewise non-ascii":   {[]store.Cond{store.Gt("s", "z")}, []string{"ten"}},
		"empty string":         {[]store.Cond{store.Lte("s", "")}, []string{"big"}},
		"missing field":        {[]store.Cond{store.Lt("absent", 100)}, nil},
		"missing nested":       {[]store.Cond{store.Gte("n.absent", "")}, nil},
		"nested in object":     {[]store.Cond{store.Lt("n.v", 6)}, []string{"object"}},
		"through a scalar":     {[]store.Cond{store.Gt("s.x", "")}, nil},
		"eq string":            {[]store.Cond{store.Eq("n", "7")}, []string{"swapped"}},
		"eq number":            {[]store.Cond{store.Eq("s", 7)}, []string{"swapped"}},
		"eq false":             {[]store.Cond{store.Eq("s", false)}, []string{"bool"}},
		"eq null":              {[]store.Cond{store.Eq("n", nil)}, []string{"null"}},
		"ne with range":        {[]store.Cond{store.Ne("s", "apple"), store.Lt("n", 2)}, []string{"negative"}},
		"contradiction":        {[]store.Cond{store.Gt("n", 5), store.Lt("n", 5)}, nil},
		"eq and range":         {[]store.Cond{store.Eq("s", "b"), store.Gt("n", 999)}, []string{"exp"}},
		"eq of the wrong type": {[]store.Cond{store.Eq("n", "1")}, nil},
	} {
		items, err := s.Search(ctx, ns("r"), store.Query{Filter: tc.conds})
		require.NoError(t, err, name)
		assert.ElementsMatch(t, tc.want, keys(items), name)
	}
	// Paging applies to the matching items, newest first.
	items, err := s.Search(ctx, ns("r"), store.Query{Filter: []store.Cond{store.Gte("n", 1)}, Limit: 2, Offset: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"big", "ten"}, keys(items))
	// A page of a filter a backend cannot fully evaluate in its database
	// (an inequality): the newest item fails it, the page still fills.
	items, err = s.Search(ctx, ns("r"), store.Query{Filter: []store.Cond{store.Ne("s", "b")}, Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"big", "object"}, keys(items))
	items, err = s.Search(ctx, ns("r"), store.Query{Filter: []store.Cond{store.Ne("s", "b")}, Limit: 2, Offset: 8})
	require.NoError(t, err)
	assert.Equal(t, []string{"real", "int"}, keys(items))
}

// testMeaningRanges filters a search by meaning with ranges.
func testMeaningRanges(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s, _ := newSemantic(t, newStore, store.WithIndex("text"))
	for i, text := range []string{"red apples", "red cherries", "red wine", "green apples"} {
		_, err := s.Put(ctx, ns("m"), fmt.Sprint("k", i), obj(t, map[string]any{"text": text, "year": 2020 + i, "tag": fmt.Sprint("t", i)}))
		require.NoError(t, err)
	}
	items, err := s.Search(ctx, ns("m"), store.Query{Text: "red apples", Filter: []store.Cond{store.Gte("year", 2021), store.Lt("tag", "t3")}})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"k1", "k2"}, keys(items))
}

func testSearchOrder(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newStore(t, store.WithClock(clk.Now))
	for i := range 7 {
		clk.Advance(time.Second)
		_, err := s.Put(ctx, ns("o"), fmt.Sprintf("k%d", i), obj(t, map[string]any{"i": i}))
		require.NoError(t, err)
	}
	items, err := s.Search(ctx, ns("o"), store.Query{Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"k6", "k5", "k4"}, keys(items), "newest first")
	items, err = s.Search(ctx, ns("o"), store.Query{Limit: 3, Offset: 5})
	require.NoError(t, err)
	assert.Equal(t, []string{"k1", "k0"}, keys(items))
	items, err = s.Search(ctx, ns("o"), store.Query{Offset: 10})
	require.NoError(t, err)
	assert.Empty(t, items)
	items, err = s.Search(ctx, ns("o"), store.Query{})
	require.NoError(t, err)
	assert.Len(t, items, 7, "the default limit is above 7")
}

func testBadQuery(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	for name, q := range map[string]store.Query{
		"negative limit": {Limit: -1},
		"empty path":     {Filter: []store.Cond{store.Eq("", 1)}},
		"bad path":       {Filter: []store.Cond{store.Eq("a..b", 1)}},
		"bad operator":   {Filter: []store.Cond{{Path: "a", Op: "like", Value: "x"}}},
		"range of bool":  {Filter: []store.Cond{store.Gt("a", true)}},
	} {
		_, err := s.Search(ctx, ns("x"), q)
		assert.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, err := s.Search(ctx, ns("x", ""), store.Query{})
	assert.ErrorIs(t, err, store.ErrInvalid, "empty label in prefix")
	_, err = s.ListNamespaces(ctx, store.NamespaceQuery{MaxDepth: -1})
	assert.ErrorIs(t, err, store.ErrInvalid)
}

func testListNamespaces(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	all := [][]string{
		ns("users", "u1", "memories"), ns("users", "u1", "profile"), ns("users", "u2", "memories"),
		ns("docs"), ns("docs", "guides"), ns("usersx"),
	}
	for _, n := range all {
		_, err := s.Put(ctx, n, "k1", obj(t, map[string]any{}))
		require.NoError(t, err)
		_, err = s.Put(ctx, n, "k2", obj(t, map[string]any{}))
		require.NoError(t, err)
	}
	got, err := s.ListNamespaces(ctx, store.NamespaceQuery{})
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		ns("docs"), ns("docs", "guides"), ns("users", "u1", "memories"), ns("users", "u1", "profile"),
		ns("users", "u2", "memories"), ns("usersx"),
	}, got, "each once, in lexical order")
	got, err = s.ListNamespaces(ctx, store.NamespaceQuery{Prefix: ns("users")})
	require.NoError(t, err)
	assert.Equal(t, [][]string{ns("users", "u1", "memories"), ns("users", "u1", "profile"), ns("users", "u2", "memories")}, got)
	got, err = s.ListNamespaces(ctx, store.NamespaceQuery{Prefix: ns("users"), MaxDepth: 2})
	require.NoError(t, err)
	assert.Equal(t, [][]string{ns("users", "u1"), ns("users", "u2")}, got)
	got, err = s.ListNamespaces(ctx, store.NamespaceQuery{MaxDepth: 1, Limit: 2, Offset: 1})
	require.NoError(t, err)
	assert.Equal(t, [][]string{ns("users"), ns("usersx")}, got)
	require.NoError(t, s.Delete(ctx, ns("usersx"), "k1"))
	require.NoError(t, s.Delete(ctx, ns("usersx"), "k2"))
	got, err = s.ListNamespaces(ctx, store.NamespaceQuery{MaxDepth: 1})
	require.NoError(t, err)
	assert.Equal(t, [][]string{ns("docs"), ns("users")}, got, "an emptied namespace is gone")
}

func testTTL(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	clk := &clock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	s := newStore(t, store.WithClock(clk.Now))
	it, err := s.Put(ctx, ns("t", "short"), "k", obj(t, map[string]any{"v": 1}), store.WithTTL(time.Minute))
	require.NoError(t, err)
	assert.True(t, it.ExpiresAt.Equal(clk.Now().Add(time.Minute)), "ExpiresAt %v", it.ExpiresAt)
	_, err = s.Put(ctx, ns("t", "long"), "k", obj(t, map[string]any{"v": 1}), store.WithTTL(time.Hour))
	require.NoError(t, err)
	_, err = s.Put(ctx, ns("t", "long"), "forever", obj(t, map[string]any{"v": 1}))
	require.NoError(t, err)

	got, err := s.Get(ctx, ns("t", "short"), "k")
	require.NoError(t, err, "alive before its time")
	assert.True(t, got.ExpiresAt.Equal(it.ExpiresAt))

	clk.Advance(2 * time.Minute)
	_, err = s.Get(ctx, ns("t", "short"), "k")
	require.ErrorIs(t, err, store.ErrNotFound, "expired")
	items, err := s.Search(ctx, ns("t"), store.Query{})
	require.NoError(t, err)
	assert.ElementsMatch(t, [][]string{ns("t", "long"), ns("t", "long")}, namespaces(items))
	nss, err := s.ListNamespaces(ctx, store.NamespaceQuery{})
	require.NoError(t, err)
	assert.Equal(t, [][]string{ns("t", "long")}, nss, "a namespace of expired items is not listed")
	it, err = s.PutIf(ctx, ns("t", "short"), "k", obj(t, map[string]any{"v": 2}), 0)
	require.NoError(t, err, "an expired item counts as absent")
	assert.Equal(t, int64(1), it.Version)
	assert.True(t, it.ExpiresAt.IsZero(), "a put without TTL never expires")

	clk.Advance(2 * time.Hour)
	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one item expired unswept")
	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	items, err = s.Search(ctx, nil, store.Query{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"k", "forever"}, keys(items))
}

func newSemantic(t *testing.T, newStore NewStore, opts ...store.Option) (store.Store, *Embedder) {
	e := &Embedder{Dims: 256}
	return newStore(t, append([]store.Option{store.WithEmbedder(e), store.WithIndex("text")}, opts...)...), e
}

func testMeaning(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s, e := newSemantic(t, newStore)
	texts := map[string]string{
		"tea":    "the user drinks green tea every morning",
		"cat":    "the user has a cat called Miso",
		"city":   "the user lives in Lisbon near the river",
		"coffee": "the user drinks coffee after lunch",
	}
	var ops []store.Op
	for k, v := range texts {
		ops = append(ops, store.PutOp(ns("u", "mem"), k, obj(t, map[string]any{"text": v})))
	}
	_, err := s.Apply(ctx, ops)
	require.NoError(t, err)
	assert.Equal(t, int64(4), e.Embedded(), "a batch embeds each item once")

	items, err := s.Search(ctx, ns("u"), store.Query{Text: "user drinks tea morning", Limit: 2})
	require.NoError(t, err)
	require.Len(t, items, 2)
	assert.Equal(t, "tea", items[0].Key)
	assert.Equal(t, "coffee", items[1].Key)
	assert.Greater(t, items[0].Score, items[1].Score)
	assert.LessOrEqual(t, items[0].Score, 1.0001)

	items, err = s.Search(ctx, ns("u", "mem"), store.Query{Text: texts["cat"], Limit: 1})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "cat", items[0].Key)
	assert.InDelta(t, 1, items[0].Score, 1e-5, "the same text is the same direction")

	items, err = s.Search(ctx, ns("u", "mem"), store.Query{Text: texts["cat"], Limit: 2, Offset: 1})
	require.NoError(t, err)
	require.Len(t, items, 2)
	assert.NotEqual(t, "cat", items[0].Key)

	// A rewrite is embedded anew.
	_, err = s.Put(ctx, ns("u", "mem"), "cat", obj(t, map[string]any{"text": "the user moved to Porto"}))
	require.NoError(t, err)
	items, err = s.Search(ctx, ns("u"), store.Query{Text: "moved to Porto", Limit: 1})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "cat", items[0].Key)

	items, err = s.Search(ctx, ns("elsewhere"), store.Query{Text: "tea"})
	require.NoError(t, err)
	assert.Empty(t, items, "meaning stays within the prefix")
}

func testMeaningFilter(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s, _ := newSemantic(t, newStore)
	put := func(k, text, kind string, opts ...store.PutOption) {
		_, err := s.Put(ctx, ns("m"), k, obj(t, map[string]any{"text": text, "kind": kind}), opts...)
		require.NoError(t, err)
	}
	put("a", "red apples and green pears", "fruit")
	put("b", "red cars drive fast", "vehicle")
	put("c", "red apples", "fruit", store.WithIndexFields())
	put("d", "nothing in common here", "fruit")
	put("e", "red red red apples", "fruit", store.WithIndexFields("kind"))

	items, err := s.Search(ctx, ns("m"), store.Query{Text: "red apples", Filter: []store.Cond{store.Eq("kind", "vehicle")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, keys(items))
	items, err = s.Search(ctx, ns("m"), store.Query{Text: "red apples", MinScore: 0.3})
	require.NoError(t, err)
	assert.NotContains(t, keys(items), "c", "an item put without index fields is not embedded")
	assert.NotContains(t, keys(items), "d", "below MinScore")
	assert.Contains(t, keys(items), "a")
	items, err = s.Search(ctx, ns("m"), store.Query{Text: "fruit", Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"e"}, keys(items), "the item's own index fields were embedded")
	// The item left out of meaning is still found by filter.
	items, err = s.Search(ctx, ns("m"), store.Query{Filter: []store.Cond{store.Eq("text", "red apples")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, keys(items))
}

func testNoEmbedder(t *testing.T, newStore NewStore) {
	s := newStore(t)
	_, err := s.Put(t.Context(), ns("n"), "k", obj(t, map[string]any{"text": "x"}))
	require.NoError(t, err)
	_, err = s.Search(t.Context(), ns("n"), store.Query{Text: "x"})
	require.ErrorIs(t, err, store.ErrNoEmbedder)
}

func testApproximate(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := newSemantic(t, newStore, store.WithExactLimit(50), store.WithClock(clk.Now))
	const n = 300
	ops := make([]store.Op, n)
	for i := range n {
		ops[i] = store.PutOp(ns("big", fmt.Sprint(i%3)), fmt.Sprintf("k%d", i),
			obj(t, map[string]any{"text": fmt.Sprintf("word%d word%d shared", i, i*7), "i": i}))
	}
	_, err := s.Apply(ctx, ops)
	require.NoError(t, err)
	find := func(text string, q store.Query) []string {
		t.Helper()
		q.Text = text
		items, err := s.Search(ctx, ns("big"), q)
		require.NoError(t, err)
		return keys(items)
	}
	// The first search scans (and builds the index); the next ones go
	// through the index, whose recall of older items is approximate (see
	// docs/performance.md): what the suite holds it to is below.
	assert.Equal(t, []string{"k5"}, find("word5 word35 shared", store.Query{Limit: 1}))
	assert.Len(t, find("word120 word840 shared", store.Query{Limit: 5}), 5)
	// Writes after the index was built are found, deletes and expiry are
	// honoured, and filters still apply.
	_, err = s.Put(ctx, ns("big", "new"), "fresh", obj(t, map[string]any{"text": "zebra giraffe", "i": -1}))
	require.NoError(t, err)
	assert.Equal(t, []string{"fresh"}, find("zebra giraffe", store.Query{Limit: 1}))
	_, err = s.Put(ctx, ns("big", "0"), "k0", obj(t, map[string]any{"text": "okapi"}), store.WithTTL(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"k0"}, find("okapi", store.Query{Limit: 1}))
	require.NoError(t, s.Delete(ctx, ns("big", "new"), "fresh"))
	assert.NotContains(t, find("zebra giraffe", store.Query{Limit: 3}), "fresh")
	clk.Advance(2 * time.Minute)
	assert.NotContains(t, find("okapi", store.Query{Limit: 3}), "k0")
	got := find("word7 word49 shared", store.Query{Limit: 2, Filter: []store.Cond{store.Gte("i", 200)}})
	require.Len(t, got, 2)
	_, err = s.Put(ctx, ns("big", "1"), "k7", obj(t, map[string]any{"text": "renamed", "i": 7}), store.WithIndexFields())
	require.NoError(t, err)
	assert.NotContains(t, find("word7 word49", store.Query{Limit: 3}), "k7", "an item rewritten without index fields leaves the index")
}

func testIsolation(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	s := newStore(t)
	v := obj(t, map[string]any{"a": "original"})
	nsp := ns("iso")
	it, err := s.Put(ctx, nsp, "k", v)
	require.NoError(t, err)
	copy(v, `{"a":"mutated!!"}`)
	nsp[0] = "changed"
	it.Value[2] = 'X'
	got, err := s.Get(ctx, ns("iso"), "k")
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":"original"}`, string(got.Value))
	got.Value[2] = 'Y'
	got.Namespace[0] = "z"
	again, err := s.Get(ctx, ns("iso"), "k")
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":"original"}`, string(again.Value))
	assert.Equal(t, ns("iso"), again.Namespace)
}

func testCanceled(t *testing.T, newStore NewStore) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Put(ctx, ns("c"), "k", obj(t, map[string]any{}))
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Get(ctx, ns("c"), "k")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Search(ctx, ns("c"), store.Query{})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.ListNamespaces(ctx, store.NamespaceQuery{})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Sweep(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

func testClosed(t *testing.T, newStore NewStore) {
	s := newStore(t)
	require.NoError(t, s.Close())
	_, err := s.Get(t.Context(), ns("c"), "k")
	assert.ErrorIs(t, err, store.ErrClosed)
	_, err = s.Put(t.Context(), ns("c"), "k", obj(t, map[string]any{}))
	assert.ErrorIs(t, err, store.ErrClosed)
	assert.NoError(t, s.Close(), "closing twice")
}
