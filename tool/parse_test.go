package tool

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanonicalJSON(t *testing.T) {
	a, err := CanonicalJSON(json.RawMessage(` {"b": [1, {"d":2,"c":"x"}], "a": null} `))
	require.NoError(t, err)
	assert.Equal(t, `{"a":null,"b":[1,{"c":"x","d":2}]}`, string(a))
	b, err := CanonicalJSON(json.RawMessage(`{"a":null,"b":[1,{"d":2,"c":"x"}]}`))
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c, err := CanonicalJSON(json.RawMessage(`{"s":"<é>"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"s":"\u003cé\u003e"}`, string(c))
	_, err = CanonicalJSON(json.RawMessage(`{`))
	assert.Error(t, err)
}
