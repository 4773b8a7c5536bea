package server

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/store"
)

func TestStoreFilterReadsEqualitiesAndOperators(t *testing.T) {
	var filter map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(`{"n":{"$gt":1,"$lte":5},"kind":"note","tags":{"a":1}}`), &filter))
	conds, err := filterConds(filter)
	require.NoError(t, err)
	assert.ElementsMatch(t, []store.Cond{
		{Path: "n", Op: store.OpGt, Value: float64(1)},
		{Path: "n", Op: store.OpLte, Value: float64(5)},
		{Path: "kind", Op: store.OpEq, Value: "note"},
		{Path: "tags", Op: store.OpEq, Value: map[string]any{"a": float64(1)}},
	}, conds, "an object without operators is a value compared whole")
}

func FuzzStoreFilter(f *testing.F) {
	f.Add(`{"n":{"$gt":1}}`)
	f.Add(`{"a.b":"x","c":{"$ne":null}}`)
	f.Add(`{"n":{"$near":1}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var filter map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &filter) != nil {
			return
		}
		conds, err := filterConds(filter)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 422 {
				t.Fatalf("%q: a bad filter must be a 422 naming it, got %v", in, err)
			}
			return
		}
		if len(conds) < len(filter) {
			t.Fatalf("%q: %d fields became %d conditions", in, len(filter), len(conds))
		}
		if _, err := store.CompileFilter(conds); err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("%q: the store refused the conditions with %v", in, err)
		}
	})
}
