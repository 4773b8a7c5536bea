package state_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
)

type item struct {
	ID   string
	Body string
}

func (i item) Key() string { return i.ID }

func TestReplace(t *testing.T) {
	r := state.Replace[string]()
	v, err := r("cur", nil)
	require.NoError(t, err)
	assert.Equal(t, "cur", v)
	v, err = r("cur", []state.Change[string]{{Node: "a", Before: "cur", After: "new"}})
	require.NoError(t, err)
	assert.Equal(t, "new", v)
	_, err = r("cur", []state.Change[string]{{Node: "a", After: "x"}, {Node: "b", After: "y"}})
	var ce *state.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"a", "b"}, ce.Nodes)
	ce.Field = "Answer"
	assert.Contains(t, ce.Error(), `field Answer written by 2 nodes in one superstep ("a", "b")`)
}

func TestLastWrite(t *testing.T) {
	v, err := state.LastWrite[int]()(1, []state.Change[int]{{Node: "a", After: 2}, {Node: "b", After: 3}})
	require.NoError(t, err)
	assert.Equal(t, 3, v)
}

func TestAppend(t *testing.T) {
	r := state.Append[int]()
	cur := []int{1, 2}
	v, err := r(cur, []state.Change[[]int]{
		{Node: "a", Before: cur, After: []int{1, 2, 3}},
		{Node: "send", Before: nil, After: []int{10, 11}},
		{Node: "b", Before: cur, After: []int{1, 2, 4}},
	})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 10, 11, 4}, v)
	assert.Equal(t, len(v), cap(v), "the result has no spare capacity to alias")
	assert.Equal(t, []int{1, 2}, cur)

	_, err = r(cur, []state.Change[[]int]{{Node: "trim", Before: cur, After: cur[:1]}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "trim" shortened an append-only slice from 2 to 1`)
}

func TestMergeMap(t *testing.T) {
	r := state.MergeMap[string, []int]()
	cur := map[string][]int{"keep": {1}, "drop": {2}, "edit": {3}}
	v, err := r(cur, []state.Change[map[string][]int]{
		{Node: "a", Before: cur, After: map[string][]int{"keep": {1}, "edit": {30}, "new": {4}}},
		{Node: "b", Before: cur, After: map[string][]int{"keep": {1}, "drop": {2}, "edit": {3}, "other": {5}}},
	})
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"keep": {1}, "edit": {30}, "new": {4}, "other": {5}}, v,
		"b left edit as it found it, so a's change stands; a deleted drop")
	assert.Len(t, cur, 3)
}

func TestSum(t *testing.T) {
	v, err := state.Sum[float64]()(1.5, []state.Change[float64]{
		{Node: "a", Before: 1.5, After: 2.5},
		{Node: "b", Before: 1.5, After: 0.5},
		{Node: "send", Before: 0, After: 10},
	})
	require.NoError(t, err)
	assert.InDelta(t, 11.5, v, 1e-9)
}

func TestKeyed(t *testing.T) {
	r := state.Keyed[item]()
	cur := []item{{"1", "one"}, {"2", "two"}, {"3", "three"}}
	cases := []struct {
		name    string
		changes []state.Change[[]item]
		want    []item
	}{
		{"append new", []state.Change[[]item]{{Node: "a", Before: cur, After: append(append([]item{}, cur...), item{"4", "four"})}},
			[]item{{"1", "one"}, {"2", "two"}, {"3", "three"}, {"4", "four"}}},
		{"upsert in place", []state.Change[[]item]{{Node: "a", Before: cur, After: []item{{"1", "one"}, {"2", "TWO"}, {"3", "three"}}}},
			[]item{{"1", "one"}, {"2", "TWO"}, {"3", "three"}}},
		{"remove by absence", []state.Change[[]item]{{Node: "a", Before: cur, After: []item{{"1", "one"}, {"3", "three"}}}},
			[]item{{"1", "one"}, {"3", "three"}}},
		{"two tasks add the same key: later replaces", []state.Change[[]item]{
			{Node: "a", Before: cur, After: append(append([]item{}, cur...), item{"x", "from a"})},
			{Node: "b", Before: cur, After: append(append([]item{}, cur...), item{"x", "from b"})},
		}, []item{{"1", "one"}, {"2", "two"}, {"3", "three"}, {"x", "from b"}}},
		{"one removes, another edits another", []state.Change[[]item]{
			{Node: "a", Before: cur, After: []item{{"2", "two"}, {"3", "three"}}},
			{Node: "b", Before: cur, After: []item{{"1", "one"}, {"2", "two"}, {"3", "THREE"}}},
		}, []item{{"2", "two"}, {"3", "THREE"}}},
		{"removed then re-added by a send", []state.Change[[]item]{
			{Node: "a", Before: cur, After: []item{{"2", "two"}, {"3", "three"}}},
			{Node: "send", Before: nil, After: []item{{"1", "again"}}},
		}, []item{{"2", "two"}, {"3", "three"}, {"1", "again"}}},
		{"empty keys always append", []state.Change[[]item]{
			{Node: "a", Before: cur, After: append(append([]item{}, cur...), item{"", "anon"})},
			{Node: "b", Before: cur, After: append(append([]item{}, cur...), item{"", "anon"})},
		}, []item{{"1", "one"}, {"2", "two"}, {"3", "three"}, {"", "anon"}, {"", "anon"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := r(cur, c.changes)
			require.NoError(t, err)
			assert.Equal(t, c.want, v)
			assert.Equal(t, []item{{"1", "one"}, {"2", "two"}, {"3", "three"}}, cur, "current is not modified")
		})
	}
}

func TestFold(t *testing.T) {
	longest := state.Fold(func(acc, v string) string {
		if len(v) > len(acc) {
			return v
		}
		return acc
	})
	v, err := longest("ab", []state.Change[string]{{Node: "a", After: "abcd"}, {Node: "b", After: "abc"}})
	require.NoError(t, err)
	assert.Equal(t, "abcd", v)
}

// Elements without a key that a task passed through (in its input and
// unchanged in its output) are not appended again: model.User and
// model.System messages have no ID, and two parallel nodes on a
// conversation would repeat every such message.
func TestKeyedKeepsUnkeyedElementsATaskPassedThrough(t *testing.T) {
	r := state.Keyed[item]()
	cur := []item{{"", "system prompt"}, {"", "user question"}}
	v, err := r(cur, []state.Change[[]item]{
		{Node: "a", Before: cur, After: append(append([]item{}, cur...), item{"a1", "from a"})},
		{Node: "b", Before: cur, After: append(append([]item{}, cur...), item{"b1", "from b"})},
	})
	require.NoError(t, err)
	assert.Equal(t, []item{{"", "system prompt"}, {"", "user question"}, {"a1", "from a"}, {"b1", "from b"}}, v)
}

func TestKeyedAppendsAnUnkeyedElementATaskAddedTwice(t *testing.T) {
	r := state.Keyed[item]()
	cur := []item{{"", "hi"}}
	v, err := r(cur, []state.Change[[]item]{
		{Node: "a", Before: cur, After: []item{{"", "hi"}, {"", "hi"}, {"", "new"}}},
	})
	require.NoError(t, err)
	assert.Equal(t, []item{{"", "hi"}, {"", "hi"}, {"", "new"}}, v, "one of the two equal elements is the input's, the other is new")
}

// A task that passes through elements sharing a key, changing none of
// them, leaves them as they were: each is compared with the input's
// elements of that key, not only with the last of them.
func TestKeyedLeavesElementsSharingAKeyThatATaskPassedThrough(t *testing.T) {
	r := state.Keyed[item]()
	cur := []item{{"1", "first"}, {"2", "two"}, {"1", "second"}}
	v, err := r(cur, []state.Change[[]item]{
		{Node: "a", Before: cur, After: append(append([]item{}, cur...), item{"a", "from a"})},
		{Node: "b", Before: cur, After: append(append([]item{}, cur...), item{"b", "from b"})},
	})
	require.NoError(t, err)
	assert.Equal(t, []item{{"1", "first"}, {"2", "two"}, {"1", "second"}, {"a", "from a"}, {"b", "from b"}}, v)
	assert.Equal(t, []item{{"1", "first"}, {"2", "two"}, {"1", "second"}}, cur, "current is not modified")
}
