package jsonvalue_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/jsonvalue"
)

func TestEncodeGivesAValuesJSON(t *testing.T) {
	assert.JSONEq(t, `{"n":1}`, string(jsonvalue.Encode(map[string]int{"n": 1})))
}

// A value that does not encode becomes a JSON string that says so, rather
// than an error that would fail the run recording it.
func TestEncodeRecordsAValueThatDoesNotEncode(t *testing.T) {
	raw := jsonvalue.Encode(func() {})
	var s string
	require.NoError(t, json.Unmarshal(raw, &s))
	assert.Contains(t, s, "a func() that does not encode as JSON")
}
