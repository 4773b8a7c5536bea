package arguments

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var repairCases = []struct {
	name, in, want string
}{
	{"valid stays", `{"a": [1, 2]}`, `{"a": [1, 2]}`},
	{"trailing comma in object", `{"a":1,}`, `{"a":1}`},
	{"trailing comma in array", `[1,2,]`, `[1,2]`},
	{"repeated commas", `{"a":1,,"b":2}`, `{"a":1,"b":2}`},
	{"missing comma", `{"a":1 "b":2}`, `{"a":1,"b":2}`},
	{"single quotes", `{'a': 'b', 'c': ['d']}`, `{"a":"b","c":["d"]}`},
	{"single-quoted with double quote inside", `{'say': 'he said "hi"'}`, `{"say":"he said \"hi\""}`},
	{"escaped single quote", `{'a': 'it\'s'}`, `{"a":"it's"}`},
	{"unquoted keys", `{name: "x", count_2: 3}`, `{"name":"x","count_2":3}`},
	{"unquoted key with dash", `{my-key: 1}`, `{"my-key":1}`},
	{"unquoted value", `{status: in progress, n: 1}`, `{"status":"in progress","n":1}`},
	{"code fence", "```json\n{\"a\": 1}\n```", `{"a": 1}`},
	{"code fence without language", "```\n{a: 1}\n```", `{"a":1}`},
	{"prose before", `Here you go: {"a": 1}`, `{"a": 1}`},
	{"prose after", `{"a": 1} hope that helps`, `{"a":1}`},
	{"python literals", `{"a": True, "b": False, "c": None}`, `{"a":true,"b":false,"c":null}`},
	{"js literals", `{"a": undefined, "b": NaN, "c": -Infinity}`, `{"a":null,"b":null,"c":null}`},
	{"comments", "{\n  // the name\n  \"a\": 1, /* two */ \"b\": 2\n}", `{"a":1,"b":2}`},
	{"numbers", `[+1, .5, 1., 01, -0.5e, 2E+]`, `[1,0.5,1,1,-0.5,2]`},
	{"truncated string", `{"a": "hel`, `{"a":"hel"}`},
	{"truncated object", `{"a": {"b": [1, 2`, `{"a":{"b":[1,2]}}`},
	{"truncated after colon", `{"a": 1, "b":`, `{"a":1}`},
	{"truncated after key", `{"a": 1, "b"`, `{"a":1}`},
	{"truncated literal", `{"a": tr`, `{"a":true}`},
	{"truncated number", `{"a": -`, `{"a":0}`},
	{"key without value", `{"a":, "b": 2}`, `{"b":2}`},
	{"raw newline in string", "{\"a\": \"line1\nline2\"}", `{"a":"line1\nline2"}`},
	{"invalid escape", `{"a": "C:\path"}`, `{"a":"C:\\path"}`},
	{"unicode escape", `{'a': '\u00e9'}`, `{"a":"é"}`},
	{"mismatched closer", `{"a": [1, 2}`, `{"a":[1,2]}`},
	{"backticks", "{`a`: `b`}", `{"a":"b"}`},
	{"equals as colon", `{a = 1}`, `{"a":1}`},
	{"top-level array", `[1, 'two', three]`, `[1,"two","three"]`},
	{"surrogate pair escape", `{'a': '\ud83d\ude00 \uD83D\uDE00'}`, `{"a":"😀 😀"}`},
	{"lone surrogate escapes", `{'a': '\ud83d x \ude00 \ud83d'}`, `{"a":"\ufffd x \ufffd \ufffd"}`},
	{"fence inside a string", "{\"code\": \"```go\\nx := 1\\n```\",}", "{\"code\":\"```go\\nx := 1\\n```\"}"},
	{"fence inside a fenced value", "```json\n{\"md\": \"```sh\\nls\\n```\",}\n```", "{\"md\":\"```sh\\nls\\n```\"}"},
	{"inline code before the fence", "Run ```ls``` first:\n```json\n{\"a\": 1,}\n```", `{"a":1}`},
	{"unescaped quotes in a value", `{"say": "he said "hi" to me", "n": 1}`, `{"say":"he said \"hi\" to me","n":1}`},
	{"unescaped quotes ending a value", `{"say": "he said "hi""}`, `{"say":"he said \"hi\""}`},
	{"unescaped quote in an array item", `["a "b" c", "d"]`, `["a \"b\" c","d"]`},
	{"apostrophe in a single-quoted string", `{'a': 'it's fine'}`, `{"a":"it's fine"}`},
	{"unescaped quote with a missing comma after", `{"a": "x "y" z" "b": 1}`, `{"a":"x \"y\" z","b":1}`},
	{"missing comma before a quoted key", `{"a": "x" "b": "y"}`, `{"a":"x","b":"y"}`},
	{"missing comma before an unquoted key", `{"a": "x" b: "y"}`, `{"a":"x","b":"y"}`},
	{"missing comma between strings", `["a" "b"]`, `["a","b"]`},
	{"missing comma on a new line", "{\"a\": \"x\"\n \"b\": 1,}", `{"a":"x","b":1}`},
	{"quotes around a path in code", `{"cmd": "grep "a b" file.txt",}`, `{"cmd":"grep \"a b\" file.txt"}`},
}

func TestRepair(t *testing.T) {
	for _, tc := range repairCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Repair([]byte(tc.in))
			require.NoError(t, err)
			assert.True(t, json.Valid(got), "%s", got)
			assert.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestRepairJSONKeepsValidInput(t *testing.T) {
	in := []byte(` {"a" : 1} `)
	got, err := Repair(in)
	require.NoError(t, err)
	assert.Same(t, &in[0], &got[0], "valid JSON is returned as it is")
}

func TestRepairJSONFailures(t *testing.T) {
	for _, in := range []string{"", "   ", "no json here", "```\n```", "}"} {
		_, err := Repair([]byte(in))
		assert.ErrorIs(t, err, ErrUnrepairable, "%q", in)
	}
	deep := make([]byte, 0, 2*maxRepairDepth+10)
	for i := 0; i < maxRepairDepth+5; i++ {
		deep = append(deep, '[')
	}
	_, err := Repair(deep)
	assert.ErrorContains(t, err, "nested deeper")
}

// FuzzRepairJSON checks that RepairJSON never panics and returns valid
// JSON or an error, and that valid JSON comes back unchanged.
func FuzzRepair(f *testing.F) {
	for _, tc := range repairCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(`{"a":"\ud83d"}`))
	f.Add([]byte("\xff{'\xfe': 1"))
	f.Add([]byte(`[{"a":[{"b":{"c":`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Repair(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Repair(%q) = %q: not valid JSON", in, out)
		}
		if json.Valid(in) && string(out) != string(in) {
			t.Fatalf("RepairJSON changed valid JSON %q into %q", in, out)
		}
		again, err := Repair(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("repaired output %q does not repair to itself: %q, %v", out, again, err)
		}
	})
}
