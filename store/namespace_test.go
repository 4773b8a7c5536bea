package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/store"
)

func TestEncodedNamespacesUnderAPrefixAreOneRange(t *testing.T) {
	p := store.EncodeNamespace([]string{"users", "u1"})
	end := store.PrefixEnd(p)
	for _, ns := range [][]string{{"users", "u1"}, {"users", "u1", "x"}, {"users", "u1", "\U0010ffff"}} {
		e := store.EncodeNamespace(ns)
		assert.True(t, e >= p && e < end, "%q is under the prefix", ns)
	}
	for _, ns := range [][]string{{"users", "u10"}, {"users", "u"}, {"users"}, {"users", "u1 "}, {"users", "u1!"}} {
		e := store.EncodeNamespace(ns)
		assert.False(t, e >= p && e < end, "%q is not under the prefix", ns)
	}
	assert.Equal(t, []string{"a", "b c"}, store.DecodeNamespace(store.EncodeNamespace([]string{"a", "b c"})))
	assert.Equal(t, "", store.PrefixEnd(""))
}

func TestIndexTextJoinsTheNamedFields(t *testing.T) {
	v := json.RawMessage(`{"text":"hello","n":3,"author":{"name":"Ana"},"empty":""}`)
	got, ok := store.IndexText(v, []string{"text", "author.name", "n", "missing", "empty"})
	assert.True(t, ok)
	assert.Equal(t, "hello\nAna\n3", got)
	_, ok = store.IndexText(v, []string{"missing"})
	assert.False(t, ok)
	whole, ok := store.IndexText(v, []string{"$"})
	assert.True(t, ok)
	assert.JSONEq(t, string(v), whole)
}

func TestFilterMatchesMissingFieldsAsDocumented(t *testing.T) {
	f, err := store.CompileFilter([]store.Cond{store.Ne("a", 1)})
	assert.NoError(t, err)
	assert.True(t, f.Match(json.RawMessage(`{}`)), "a missing field differs from everything")
	f, err = store.CompileFilter([]store.Cond{store.Lt("a", 1)})
	assert.NoError(t, err)
	assert.False(t, f.Match(json.RawMessage(`{}`)), "a missing field meets no range")
	assert.False(t, f.Match(json.RawMessage(`{"a":"0"}`)), "a string is not compared with a number")
	assert.False(t, f.Match(json.RawMessage(`not json`)))
}

// FuzzFilterMatch feeds the filter values from outside: it must never
// panic, whatever the JSON.
func FuzzFilterMatch(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,2]},"n":3}`), "a.b", 2.0)
	f.Add([]byte(`[]`), "x", 0.0)
	f.Fuzz(func(t *testing.T, doc []byte, path string, v float64) {
		conds := []store.Cond{store.Eq(path, v), store.Gt(path, v), store.Ne(path, "s")}
		flt, err := store.CompileFilter(conds)
		if err != nil {
			return
		}
		_ = flt.Match(doc)
		_, _ = store.IndexText(doc, []string{path, "$"})
	})
}
