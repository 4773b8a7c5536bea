package jsonpatch

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

func TestDiff(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{`{"a":1}`, `{"a":1}`, `null`},
		{`{"a":1}`, `{"a":2}`, `[{"op":"replace","path":"/a","value":2}]`},
		{`{"a":1,"b":2}`, `{"b":2,"c":null}`, `[{"op":"remove","path":"/a"},{"op":"add","path":"/c","value":null}]`},
		{`{"x/y~z":1}`, `{"x/y~z":2}`, `[{"op":"replace","path":"/x~1y~0z","value":2}]`},
		{`{"cart":["a"]}`, `{"cart":["a","b","c"]}`, `[{"op":"add","path":"/cart/-","value":"b"},{"op":"add","path":"/cart/-","value":"c"}]`},
		{`{"cart":["a","b","c"]}`, `{"cart":["a"]}`, `[{"op":"remove","path":"/cart/2"},{"op":"remove","path":"/cart/1"}]`},
		{`{"cart":["a","b"]}`, `{"cart":["b"]}`, `[{"op":"replace","path":"/cart","value":["b"]}]`},
		{`[{"done":false},{"done":false}]`, `[{"done":true},{"done":false}]`, `[{"op":"replace","path":"/0/done","value":true}]`},
		{`{"a":{"b":1}}`, `{"a":[1]}`, `[{"op":"replace","path":"/a","value":[1]}]`},
		{`1`, `"x"`, `[{"op":"replace","path":"","value":"x"}]`},
	}
	for _, c := range cases {
		ops := Diff(decode(t, c.a), decode(t, c.b))
		got, err := json.Marshal(ops)
		require.NoError(t, err)
		assert.JSONEq(t, c.want, string(got), "%s → %s", c.a, c.b)
		out, err := Apply(decode(t, c.a), ops)
		require.NoError(t, err)
		assert.Equal(t, decode(t, c.b), out, "%s → %s", c.a, c.b)
	}
}

func TestApplyAllOpsAndErrors(t *testing.T) {
	doc := decode(t, `{"a":[1,2],"b":{"c":"x"}}`)
	ops := []Op{
		{Op: "move", From: "/b/c", Path: "/d"},
		{Op: "copy", From: "/a", Path: "/e"},
		{Op: "add", Path: "/a/0", Value: 0.0},
		{Op: "test", Path: "/d", Value: "x"},
	}
	out, err := Apply(doc, ops)
	require.NoError(t, err)
	assert.Equal(t, decode(t, `{"a":[0,1,2],"b":{},"d":"x","e":[1,2]}`), out)
	assert.Equal(t, decode(t, `{"a":[1,2],"b":{"c":"x"}}`), doc, "the input is not changed")

	for _, bad := range []Op{
		{Op: "remove", Path: "/nope"},
		{Op: "add", Path: "/a/5", Value: 1.0},
		{Op: "add", Path: "/a/01", Value: 1.0},
		{Op: "replace", Path: "/b/c/d", Value: 1.0},
		{Op: "test", Path: "/a/0", Value: 9.0},
		{Op: "add", Path: "no-slash", Value: 1.0},
		{Op: "frobnicate", Path: "/a"},
	} {
		_, err := Apply(doc, []Op{bad})
		assert.Error(t, err, "%+v", bad)
	}
}

// FuzzDiffApply checks that the patch Diff makes turns the first document
// into the second, also after a round trip through JSON.
func FuzzDiffApply(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":"x"}`), []byte(`{"a":[1,2,{"b":true},3],"d":{}}`))
	f.Add([]byte(`[1,2,3]`), []byte(`[3]`))
	f.Add([]byte(`{"~/":1}`), []byte(`{"~/":[],"":0}`))
	f.Fuzz(func(t *testing.T, ja, jb []byte) {
		var a, b any
		if json.Unmarshal(ja, &a) != nil || json.Unmarshal(jb, &b) != nil {
			return
		}
		ops := Diff(a, b)
		out, err := Apply(a, ops)
		if err != nil {
			t.Fatalf("Apply(Diff): %v (ops %+v)", err, ops)
		}
		if !reflect.DeepEqual(out, b) {
			t.Fatalf("Apply(Diff(a, b)) = %v, want %v", out, b)
		}
		wire, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		var back []Op
		if err := json.Unmarshal(wire, &back); err != nil {
			t.Fatal(err)
		}
		out, err = Apply(a, back)
		if err != nil || !reflect.DeepEqual(out, b) {
			t.Fatalf("after JSON: %v, %v; want %v", out, err, b)
		}
	})
}
