package middleware

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCacheKeyCanonical(t *testing.T) {
	cases := []struct {
		a, b  string
		equal bool
	}{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`{"a": [1, {"y":null,"x":true}]}`, ` {"a":[1,{"x":true,"y":null}]} `, true},
		{``, `{}`, true},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":1}`, `{"a":1.0}`, false}, // numbers are kept as written
		{`{"a":"x,y"}`, `{"a":"x","y":1}`, false},
		{`["a","b"]`, `["b","a"]`, false},
	}
	for _, tc := range cases {
		ka, oka := cacheKey("t", json.RawMessage(tc.a))
		kb, okb := cacheKey("t", json.RawMessage(tc.b))
		assert.True(t, oka && okb, "%s / %s", tc.a, tc.b)
		assert.Equal(t, tc.equal, ka == kb, "%s / %s", tc.a, tc.b)
	}
	_, ok := cacheKey("t", json.RawMessage(`{"a":`))
	assert.False(t, ok)
	k1, _ := cacheKey("t1", json.RawMessage(`{}`))
	k2, _ := cacheKey("t2", json.RawMessage(`{}`))
	assert.NotEqual(t, k1, k2, "the tool's name is part of the key")
}

// FuzzCacheKey checks that the key never panics and does not depend on
// insignificant space.
func FuzzCacheKey(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[true,false,null]}`, `{"nested":{"z":"é","a":"\u00e9"}}`, `[1,2,3]`, `"text"`, `{"a":`, `nul`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		key, ok := cacheKey("tool", data)
		if !ok || !json.Valid(data) {
			return
		}
		var compact, indented bytes.Buffer
		if json.Compact(&compact, data) != nil || json.Indent(&indented, data, " ", "\t") != nil {
			return
		}
		for _, form := range [][]byte{compact.Bytes(), indented.Bytes()} {
			k, ok := cacheKey("tool", form)
			if !ok || k != key {
				t.Fatalf("key of %q differs from key of %q", form, data)
			}
		}
	})
}
