package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/memory"
)

func newStore(t *testing.T, opts ...memory.Option) *memory.Store {
	t.Helper()
	s, err := memory.New(opts...)
	require.NoError(t, err)
	return s
}

// base is the time the corpus's entries are made at, a minute apart.
var base = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// corpus adds a small set of memories and returns their IDs by name.
func corpus(t *testing.T, ctx context.Context, s *memory.Store) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for i, e := range []struct {
		name, text string
		topics     []string
	}{
		{"seat", "Ada prefers window seats on long flights", []string{"travel"}},
		{"peanut", "Ada is allergic to peanuts", []string{"food", "health"}},
		{"deploy", "The team deploys on Fridays only after the tests pass", []string{"work"}},
		{"city", "Ada's favourite city is Lisbon; she visits every spring", []string{"travel"}},
		{"fare", "Flights to Lisbon are cheapest in February", nil},
	} {
		id, err := s.Add(ctx, memory.Entry{Text: e.text, Topics: e.topics, CreatedAt: base.Add(time.Duration(i) * time.Minute)})
		require.NoError(t, err)
		ids[e.name] = id
	}
	return ids
}

// idsOf returns the IDs of docs, in order, by the names ids gives them.
func idsOf(docs []tool.Document, ids map[string]string) []string {
	names := map[string]string{}
	for n, id := range ids {
		names[id] = n
	}
	out := []string{}
	for _, d := range docs {
		out = append(out, names[d.ID])
	}
	return out
}

func TestRetrieveRanksLexically(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ids := corpus(t, ctx, s)
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"window seat on flights", []string{"seat", "fare"}},
		{"Lisbon flights", []string{"fare", "seat", "city"}},
		{"Does Ada have peanut allergies?", []string{"peanut", "seat", "city"}},
		{"TRAVEL", []string{"seat", "city"}},                  // topics count, case does not
		{"what day does the team deploy", []string{"deploy"}}, // plural folded, stop words dropped
		{"submarines", []string{}},                            // no shared word: nothing
	} {
		for range 3 { // the same order every time
			docs, err := s.Retrieve(ctx, c.query, 10)
			require.NoError(t, err)
			assert.Equal(t, c.want, idsOf(docs, ids), c.query)
			for i := 1; i < len(docs); i++ {
				assert.GreaterOrEqual(t, docs[i-1].Score, docs[i].Score, c.query)
			}
			for _, d := range docs {
				assert.Positive(t, d.Score, c.query)
			}
		}
	}

	docs, err := s.Retrieve(ctx, "Lisbon flights", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"fare", "seat"}, idsOf(docs, ids), "the limit keeps the best")

	docs, err = s.Retrieve(ctx, "Ada", 0)
	require.NoError(t, err)
	assert.Len(t, docs, 3, "a limit of 0 is the default limit, more than the three matches")
	assert.Equal(t, []string{"peanut", "seat", "city"}, idsOf(docs, ids), "a word once in each: the shorter entry first")

	d := docs[0]
	assert.Equal(t, "Ada is allergic to peanuts", d.Content)
	assert.Equal(t, map[string]any{memory.TopicsKey: []string{"food", "health"}, memory.CreatedAtKey: "2025-03-01T09:01:00Z"}, d.Metadata)
}

func TestRetrieveTiesGoToTheNewer(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	older, err := s.Add(ctx, memory.Entry{Text: "likes green tea", CreatedAt: base.Add(time.Hour)})
	require.NoError(t, err)
	newer, err := s.Add(ctx, memory.Entry{Text: "likes green tea", CreatedAt: base.Add(2 * time.Hour)})
	require.NoError(t, err)
	sameTimeLater, err := s.Add(ctx, memory.Entry{Text: "likes green tea", CreatedAt: base.Add(2 * time.Hour)})
	require.NoError(t, err)
	oldest, err := s.Add(ctx, memory.Entry{Text: "likes green tea", CreatedAt: base})
	require.NoError(t, err)
	docs, err := s.Retrieve(ctx, "green tea", 10)
	require.NoError(t, err)
	require.Len(t, docs, 4)
	assert.Equal(t, []string{sameTimeLater, newer, older, oldest}, []string{docs[0].ID, docs[1].ID, docs[2].ID, docs[3].ID})
	assert.Equal(t, docs[0].Score, docs[3].Score)
}

func TestRetrieveWithoutWordsGivesTheNewest(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ids := corpus(t, ctx, s)
	for _, q := range []string{"", "   ", "what is it?", "a b c"} {
		docs, err := s.Retrieve(ctx, q, 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"fare", "city"}, idsOf(docs, ids), "%q", q)
		assert.Zero(t, docs[0].Score)
	}
	docs, err := s.Retrieve(ctx, "anything", 3)
	require.NoError(t, err)
	assert.Empty(t, docs)
	assert.NotNil(t, docs)
}

func TestScopesAreIsolated(t *testing.T) {
	s := newStore(t)
	ada := memory.WithScope(context.Background(), "ada")
	bob := memory.WithScope(context.Background(), "bob")
	assert.Equal(t, "ada", memory.ScopeOf(ada))
	assert.Equal(t, "", memory.ScopeOf(context.Background()))

	adaID, err := s.Add(ada, memory.Entry{Text: "prefers the window seat"})
	require.NoError(t, err)
	_, err = s.Add(bob, memory.Entry{Text: "prefers the aisle seat", ID: adaID})
	require.NoError(t, err, "an ID is unique within its scope only")
	_, err = s.Add(context.Background(), memory.Entry{Text: "the shared scope's seat"})
	require.NoError(t, err)

	docs, err := s.Retrieve(ada, "seat", 10)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "prefers the window seat", docs[0].Content)
	list, err := s.List(bob, memory.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "bob", list[0].Scope)
	assert.Equal(t, "prefers the aisle seat", list[0].Text)

	require.NoError(t, s.Delete(bob, adaID), "bob deletes his own entry with that ID")
	docs, err = s.Retrieve(ada, "seat", 10)
	require.NoError(t, err)
	assert.Len(t, docs, 1, "ada's is still there")
	err = s.Delete(bob, adaID)
	assert.ErrorIs(t, err, memory.ErrNotFound)
	assert.ErrorContains(t, err, adaID)

	_, err = s.Add(ada, memory.Entry{Text: "x y", Scope: "bob"})
	assert.ErrorIs(t, err, memory.ErrInvalidEntry)
	assert.ErrorContains(t, err, `the entry is for scope "bob" but the context's scope is "ada"`)
	id, err := s.Add(ada, memory.Entry{Text: "likes tea", Scope: "ada"})
	require.NoError(t, err, "the context's own scope may be named")
	require.NoError(t, s.Delete(ada, id))
}

// Ranking uses the scope's own statistics: what other scopes hold changes
// no score.
func TestScopesHaveTheirOwnStatistics(t *testing.T) {
	ctx := memory.WithScope(context.Background(), "ada")
	alone := newStore(t)
	shared := newStore(t)
	for _, s := range []*memory.Store{alone, shared} {
		corpus(t, ctx, s)
	}
	other := memory.WithScope(context.Background(), "bob")
	for i := range 20 {
		_, err := shared.Add(other, memory.Entry{Text: fmt.Sprintf("Lisbon flights number %d", i)})
		require.NoError(t, err)
	}
	a, err := alone.Retrieve(ctx, "Lisbon flights", 5)
	require.NoError(t, err)
	b, err := shared.Retrieve(ctx, "Lisbon flights", 5)
	require.NoError(t, err)
	require.Len(t, b, len(a))
	for i := range a {
		assert.Equal(t, a[i].Score, b[i].Score)
	}
}

func TestScopeFunc(t *testing.T) {
	type userKey struct{}
	noUser := errors.New("no user in the context")
	s := newStore(t, memory.WithScopeFunc(func(ctx context.Context) (string, error) {
		u, ok := ctx.Value(userKey{}).(string)
		if !ok {
			return "", noUser
		}
		return "user:" + u, nil
	}))
	ctx := context.WithValue(context.Background(), userKey{}, "ada")
	_, err := s.Add(ctx, memory.Entry{Text: "likes tea"})
	require.NoError(t, err)
	list, err := s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "user:ada", list[0].Scope)
	assert.Empty(t, memory.ScopeOf(ctx))

	bare := context.Background()
	_, err = s.Add(bare, memory.Entry{Text: "likes tea"})
	assert.ErrorIs(t, err, noUser)
	_, err = s.Retrieve(bare, "tea", 1)
	assert.ErrorIs(t, err, noUser)
	_, err = s.List(bare, memory.Filter{})
	assert.ErrorIs(t, err, noUser)
	assert.ErrorIs(t, s.Delete(bare, list[0].ID), noUser)
	_, err = s.Retrieve(memory.WithScope(bare, "user:ada"), "tea", 1)
	assert.ErrorIs(t, err, noUser, "WithScope is not read by a store with a scope function")
}

func TestEvictionKeepsTheNewest(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, memory.WithMaxEntries(3))
	var ids []string
	for i := range 5 {
		id, err := s.Add(ctx, memory.Entry{Text: fmt.Sprintf("note number %d about tea", i)})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	list, err := s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, []string{ids[4], ids[3], ids[2]}, []string{list[0].ID, list[1].ID, list[2].ID})
	docs, err := s.Retrieve(ctx, "tea", 10)
	require.NoError(t, err)
	assert.Len(t, docs, 3, "evicted entries are gone from the index too")
	assert.ErrorIs(t, s.Delete(ctx, ids[0]), memory.ErrNotFound)

	// An entry dated earlier than all others is the oldest, and goes first.
	_, err = s.Add(ctx, memory.Entry{Text: "an old note about tea", CreatedAt: base})
	require.NoError(t, err)
	list, err = s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	assert.Equal(t, []string{ids[4], ids[3], ids[2]}, []string{list[0].ID, list[1].ID, list[2].ID}, "it was the one evicted")

	// The limit is per scope.
	other := memory.WithScope(ctx, "other")
	for range 3 {
		_, err := s.Add(other, memory.Entry{Text: "other tea"})
		require.NoError(t, err)
	}
	list, err = s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 3)
}

func TestSizeLimit(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, memory.WithMaxEntrySize(20))
	_, err := s.Add(ctx, memory.Entry{Text: strings.Repeat("x", 20)})
	require.NoError(t, err, "the limit itself is allowed")
	_, err = s.Add(ctx, memory.Entry{Text: strings.Repeat("x", 15), Topics: []string{"abc"}, Metadata: map[string]string{"k": "vv"}})
	require.ErrorIs(t, err, memory.ErrTooLarge)
	assert.EqualError(t, err, "memory: entry too large: the entry is 21 bytes (text, topics and metadata), more than the limit of 20 bytes (WithMaxEntrySize)")
	list, err := s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 1, "nothing is stored")

	s = newStore(t)
	_, err = s.Add(ctx, memory.Entry{Text: strings.Repeat("y", memory.DefaultMaxEntrySize+1)})
	assert.ErrorContains(t, err, fmt.Sprintf("limit of %d bytes", memory.DefaultMaxEntrySize))
}

func TestAddRefusesInvalidEntries(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	_, err := s.Add(ctx, memory.Entry{ID: "m1", Text: "likes tea"})
	require.NoError(t, err)
	for _, c := range []struct {
		e    memory.Entry
		want string
	}{
		{memory.Entry{Text: "  \n"}, "the entry has no text"},
		{memory.Entry{ID: "m1", Text: "likes coffee"}, `scope "" has an entry with id "m1" already`},
		{memory.Entry{ID: " m2", Text: "likes coffee"}, "has spaces around it"},
		{memory.Entry{ID: strings.Repeat("i", memory.MaxIDSize+1), Text: "t t"}, "longer than 128"},
		{memory.Entry{Text: "bad \xff text"}, "not valid UTF-8"},
		{memory.Entry{Text: "ok", Topics: []string{"\xfe"}}, "not valid UTF-8"},
		{memory.Entry{Text: "ok", Metadata: map[string]string{memory.TopicsKey: "x"}}, `uses the key "topics", which the store sets`},
		{memory.Entry{Text: "ok", Metadata: map[string]string{memory.CreatedAtKey: "x"}}, `uses the key "created_at"`},
	} {
		_, err := s.Add(ctx, c.e)
		assert.ErrorIs(t, err, memory.ErrInvalidEntry, c.want)
		assert.ErrorContains(t, err, c.want)
	}
	list, err := s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 1)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Add(cancelled, memory.Entry{Text: "late"})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Retrieve(cancelled, "late", 1)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestAddKeepsItsOwnCopy(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	e := memory.Entry{Text: "likes tea", Topics: []string{" drinks ", "", "Drinks", "tea"}, Metadata: map[string]string{"source": "chat"}}
	before := time.Now()
	id, err := s.Add(ctx, e)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(id, "mem-"), id)
	e.Topics[0] = "changed"
	e.Metadata["source"] = "changed"

	list, err := s.List(ctx, memory.Filter{})
	require.NoError(t, err)
	got := list[0]
	assert.Equal(t, id, got.ID)
	assert.Equal(t, []string{"drinks", "tea"}, got.Topics, "trimmed, empty and repeated topics dropped")
	assert.Equal(t, map[string]string{"source": "chat"}, got.Metadata)
	assert.False(t, got.CreatedAt.Before(before.Round(0)))
	got.Topics[0] = "changed again"
	got.Metadata["source"] = "changed again"

	docs, err := s.Retrieve(ctx, "tea", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"drinks", "tea"}, docs[0].Metadata[memory.TopicsKey])
	assert.Equal(t, "chat", docs[0].Metadata["source"])
}

func TestList(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ids := corpus(t, ctx, s)
	_, err := s.Add(ctx, memory.Entry{Text: "uses vim", Metadata: map[string]string{"source": "profile", "v": "1"}, CreatedAt: base.Add(time.Hour)})
	require.NoError(t, err)
	names := func(list []memory.Entry) []string {
		byID := map[string]string{}
		for n, id := range ids {
			byID[id] = n
		}
		out := []string{}
		for _, e := range list {
			if n, ok := byID[e.ID]; ok {
				out = append(out, n)
			} else {
				out = append(out, e.Text)
			}
		}
		return out
	}
	for _, c := range []struct {
		f    memory.Filter
		want []string
	}{
		{memory.Filter{}, []string{"uses vim", "fare", "city", "deploy", "peanut", "seat"}},
		{memory.Filter{Limit: 2}, []string{"uses vim", "fare"}},
		{memory.Filter{Topic: "Travel"}, []string{"city", "seat"}},
		{memory.Filter{Topic: "travel", Limit: 1}, []string{"city"}},
		{memory.Filter{Since: base.Add(3 * time.Minute)}, []string{"uses vim", "fare", "city"}},
		{memory.Filter{Metadata: map[string]string{"source": "profile"}}, []string{"uses vim"}},
		{memory.Filter{Metadata: map[string]string{"source": "profile", "v": "2"}}, []string{}},
	} {
		list, err := s.List(ctx, c.f)
		require.NoError(t, err)
		assert.Equal(t, c.want, names(list), "%+v", c.f)
	}
	list, err := s.List(memory.WithScope(ctx, "nobody"), memory.Filter{})
	require.NoError(t, err)
	assert.NotNil(t, list)
	assert.Empty(t, list)
}

func TestNewRefusesBadOptions(t *testing.T) {
	_, err := memory.New(memory.WithMaxEntries(0), memory.WithMaxEntrySize(-1), memory.WithScopeFunc(nil), memory.WithEmbedder(nil), nil)
	require.Error(t, err)
	for _, want := range []string{"WithMaxEntries: n must be at least 1, not 0", "WithMaxEntrySize: n must be at least 1, not -1", "WithScopeFunc: the function is nil", "WithEmbedder: the embedder is nil"} {
		assert.ErrorContains(t, err, want)
	}
}

// A Store is a run's memory: tools find it with tool.SearchMemory.
func TestSearchMemoryFindsTheStore(t *testing.T) {
	s := newStore(t)
	ctx := memory.WithScope(context.Background(), "ada")
	_, err := s.Add(ctx, memory.Entry{Text: "Ada prefers window seats"})
	require.NoError(t, err)
	_, err = s.Add(memory.WithScope(context.Background(), "bob"), memory.Entry{Text: "Bob prefers aisle seats"})
	require.NoError(t, err)

	run := tool.WithMemory(ctx, s)
	got, ok := tool.Memory(run)
	require.True(t, ok)
	assert.Same(t, s, got)
	docs, err := tool.SearchMemory(run, "seat preference", 0)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "Ada prefers window seats", docs[0].Content)
}

func TestConcurrentUse(t *testing.T) {
	s := newStore(t, memory.WithMaxEntries(50))
	var wg sync.WaitGroup
	for w := range 8 {
		ctx := memory.WithScope(context.Background(), fmt.Sprintf("user%d", w%2))
		wg.Go(func() {
			for i := range 40 {
				id, err := s.Add(ctx, memory.Entry{Text: fmt.Sprintf("worker %d wrote note %d about tea", w, i), Topics: []string{"tea"}})
				if !assert.NoError(t, err) {
					return
				}
				docs, err := s.Retrieve(ctx, "tea note", 5)
				assert.NoError(t, err)
				assert.NotEmpty(t, docs)
				_, err = s.List(ctx, memory.Filter{Topic: "tea", Limit: 3})
				assert.NoError(t, err)
				if i%3 == 0 {
					// Another worker's eviction may have taken it first.
					if err := s.Delete(ctx, id); err != nil {
						assert.ErrorIs(t, err, memory.ErrNotFound)
					}
				}
				if i%10 == 0 {
					assert.NoError(t, s.Save(new(strings.Builder)))
				}
			}
		})
	}
	wg.Wait()
	for u := range 2 {
		list, err := s.List(memory.WithScope(context.Background(), fmt.Sprintf("user%d", u)), memory.Filter{})
		require.NoError(t, err)
		assert.LessOrEqual(t, len(list), 50)
		assert.NotEmpty(t, list)
	}
}

func timeMinutes(n int) time.Duration { return time.Duration(n) * time.Minute }
