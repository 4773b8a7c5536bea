package tool

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const coerceSchema = `{
  "type": "object",
  "properties": {
    "n": {"type": "number"},
    "i": {"type": "integer"},
    "b": {"type": "boolean"},
    "s": {"type": "string"},
    "arr": {"type": "array", "items": {"type": "integer"}},
    "obj": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
    "nullable": {"type": ["string", "null"]},
    "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
    "ref": {"$ref": "#/$defs/count"},
    "req": {"type": "integer"},
    "free": {}
  },
  "required": ["req"],
  "$defs": {"count": {"type": "integer"}}
}`

func TestCoercion(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(coerceSchema))
	cases := []struct {
		name    string
		in      string
		want    string
		changed bool
	}{
		{"string to integer", `{"i":"3"}`, `{"i":3}`, true},
		{"string with spaces to integer", `{"i":" 42 "}`, `{"i":42}`, true},
		{"negative string to integer", `{"i":"-7"}`, `{"i":-7}`, true},
		{"integral decimal string to integer", `{"i":"3.0"}`, `{"i":3.0}`, true},
		{"fractional string stays for integer", `{"i":"3.5"}`, `{"i":"3.5"}`, false},
		{"string to number", `{"n":"2.5"}`, `{"n":2.5}`, true},
		{"exponent string to number", `{"n":"1e3"}`, `{"n":1e3}`, true},
		{"non-numeric string stays", `{"n":"ten"}`, `{"n":"ten"}`, false},
		{"hex is not a number", `{"n":"0x10"}`, `{"n":"0x10"}`, false},
		{"string true to boolean", `{"b":"true"}`, `{"b":true}`, true},
		{"string FALSE to boolean", `{"b":"FALSE"}`, `{"b":false}`, true},
		{"string yes stays", `{"b":"yes"}`, `{"b":"yes"}`, false},
		{"number to string", `{"s":12}`, `{"s":"12"}`, true},
		{"decimal to string", `{"s":1.50}`, `{"s":"1.50"}`, true},
		{"boolean stays for string", `{"s":true}`, `{"s":true}`, false},
		{"array items", `{"arr":["1",2,"3"]}`, `{"arr":[1,2,3]}`, true},
		{"JSON string to array", `{"arr":"[1, \"2\"]"}`, `{"arr":[1,2]}`, true},
		{"JSON string to object", `{"obj":"{\"deep\":\"true\"}"}`, `{"obj":{"deep":true}}`, true},
		{"nested object", `{"obj":{"deep":"false"}}`, `{"obj":{"deep":false}}`, true},
		{"null optional dropped", `{"i":null,"req":1}`, `{"req":1}`, true},
		{"null required kept", `{"req":null}`, `{"req":null}`, false},
		{"null allowed kept", `{"nullable":null}`, `{"nullable":null}`, false},
		{"string null to null", `{"nullable":"null"}`, `{"nullable":"null"}`, false},
		{"anyOf branch type", `{"either":"true"}`, `{"either":true}`, true},
		{"anyOf integer", `{"either":"5"}`, `{"either":5}`, true},
		{"through $ref", `{"ref":"9"}`, `{"ref":9}`, true},
		{"free property untouched", `{"free":"3"}`, `{"free":"3"}`, false},
		{"unknown property untouched", `{"zzz":"3"}`, `{"zzz":"3"}`, false},
		{"already right", `{"i":3,"n":2.5,"b":true,"s":"x"}`, `{"i":3,"n":2.5,"b":true,"s":"x"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse([]byte(tc.in))
			require.NoError(t, err)
			got, changed := s.Coerce(v)
			assert.Equal(t, tc.changed, changed)
			out, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(out))
		})
	}
}

func TestCoercionChangesInPlace(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(coerceSchema))
	v, err := Parse([]byte(`{"i":3,"obj":{"deep":true},"arr":[1,2]}`))
	require.NoError(t, err)
	m := v.(map[string]any)
	obj := m["obj"].(map[string]any)
	got, changed := s.Coerce(v)
	assert.False(t, changed)
	// The same map comes back: nothing was copied.
	gm := got.(map[string]any)
	gm["marker"] = true
	assert.Equal(t, true, m["marker"])
	assert.Equal(t, obj, gm["obj"])

	v, err = Parse([]byte(`{"i":"3"}`))
	require.NoError(t, err)
	m = v.(map[string]any)
	_, changed = s.Coerce(v)
	assert.True(t, changed)
	assert.Equal(t, json.Number("3"), m["i"], "the parsed map itself is updated")
}

func TestCoercionWithoutTypes(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(`true`))
	v := map[string]any{"a": "1"}
	got, changed := s.Coerce(v)
	assert.False(t, changed)
	assert.Equal(t, v, got)
}
