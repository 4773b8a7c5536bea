package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/internal/arguments"
)

type kindsAddress struct {
	Street string `json:"street" description:"street and number"`
	City   string `json:"city" jsonschema:"description=city name" description:"ignored: the jsonschema description wins"`
}

type kindsPaging struct {
	Page int `json:"page,omitempty" jsonschema:"minimum=1"`
}

type kindsTree struct {
	Label    string      `json:"label"`
	Children []kindsTree `json:"children,omitempty"`
}

// kindsArgs holds every supported field kind.
type kindsArgs struct {
	kindsPaging                 // embedded: fields promoted
	Text        string          `json:"text" jsonschema:"description=free text,minLength=1,maxLength=200"`
	Choice      string          `json:"choice" jsonschema:"enum=red,enum=green"`
	Pattern     string          `json:"pattern,omitempty" jsonschema:"pattern=^[a-z]+$"`
	Flag        bool            `json:"flag"`
	Int         int             `json:"int" jsonschema:"minimum=0,maximum=10"`
	Int8        int8            `json:"int8,omitempty"`
	Int64       int64           `json:"int64,omitzero"`
	Uint        uint            `json:"uint,omitempty"`
	Float32     float32         `json:"float32,omitempty"`
	Float64     float64         `json:"float64" jsonschema:"exclusiveMinimum=0"`
	Optional    *string         `json:"optional"`
	Forced      *int            `json:"forced" jsonschema:"required"`
	List        []string        `json:"list" jsonschema:"minItems=1,uniqueItems=true"`
	Array       [2]int          `json:"array,omitempty"`
	Bytes       []byte          `json:"bytes,omitempty"`
	Counts      map[string]int  `json:"counts,omitempty"`
	ByID        map[int]string  `json:"by_id,omitempty"`
	Address     kindsAddress    `json:"address"`
	Addresses   []kindsAddress  `json:"addresses,omitempty"`
	When        time.Time       `json:"when,omitempty"`
	Raw         json.RawMessage `json:"raw,omitempty"`
	Anything    any             `json:"anything,omitempty"`
	Tree        *kindsTree      `json:"tree,omitempty"`
	GoName      string          // no json tag: the Go name
	Skipped     string          `json:"-"`
	Hidden      string          `json:"hidden" jsonschema:"-"`
	unexport    string
	Meta        map[string]any `json:"meta,omitempty"`
}

const kindsSchema = `{
  "$defs": {
    "kindsTree": {
      "type": "object",
      "properties": {
        "label": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/kindsTree"}}
      },
      "additionalProperties": false,
      "required": ["label"]
    }
  },
  "type": "object",
  "properties": {
    "page": {"type": "integer", "minimum": 1},
    "text": {"type": "string", "description": "free text", "minLength": 1, "maxLength": 200},
    "choice": {"type": "string", "enum": ["red", "green"]},
    "pattern": {"type": "string", "pattern": "^[a-z]+$"},
    "flag": {"type": "boolean"},
    "int": {"type": "integer", "minimum": 0, "maximum": 10},
    "int8": {"type": "integer"},
    "int64": {"type": "integer"},
    "uint": {"type": "integer"},
    "float32": {"type": "number"},
    "float64": {"type": "number", "exclusiveMinimum": 0},
    "optional": {"type": "string"},
    "forced": {"type": "integer"},
    "list": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true},
    "array": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    "bytes": {"type": "string", "contentEncoding": "base64"},
    "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    "by_id": {"type": "object", "patternProperties": {"^-?[0-9]+$": {"type": "string"}}, "additionalProperties": false},
    "address": {
      "type": "object",
      "properties": {
        "street": {"type": "string", "description": "street and number"},
        "city": {"type": "string", "description": "city name"}
      },
      "additionalProperties": false,
      "required": ["street", "city"]
    },
    "addresses": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "street": {"type": "string", "description": "street and number"},
          "city": {"type": "string", "description": "city name"}
        },
        "additionalProperties": false,
        "required": ["street", "city"]
      }
    },
    "when": {"type": "string", "format": "date-time"},
    "raw": true,
    "anything": true,
    "tree": {
      "type": "object",
      "properties": {
        "label": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/kindsTree"}}
      },
      "additionalProperties": false,
      "required": ["label"]
    },
    "GoName": {"type": "string"},
    "meta": {"type": "object"}
  },
  "additionalProperties": false,
  "required": ["text", "choice", "flag", "int", "float64", "forced", "list", "address", "GoName"]
}`

func TestSchemaForEveryFieldKind(t *testing.T) {
	got, err := SchemaFor[kindsArgs]()
	require.NoError(t, err)
	assert.JSONEq(t, kindsSchema, string(got))

	// The derived schema is what a typed tool publishes, and it compiles.
	ft, err := NewFunc("kinds", "every kind", func(_ context.Context, in kindsArgs) (string, error) { return "", nil })
	require.NoError(t, err)
	assert.JSONEq(t, kindsSchema, string(ft.Definition().InputSchema))
}

func TestSchemaRequiredRules(t *testing.T) {
	type args struct {
		Plain     string  `json:"plain"`
		Omit      string  `json:"omit,omitempty"`
		Zero      string  `json:"zero,omitzero"`
		Ptr       *string `json:"ptr"`
		PtrForced *string `json:"ptr_forced" jsonschema:"required"`
		OmitReq   string  `json:"omit_req,omitempty" jsonschema:"required"`
	}
	raw, err := SchemaFor[args]()
	require.NoError(t, err)
	var s struct {
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	assert.Equal(t, []string{"plain", "ptr_forced", "omit_req"}, s.Required)
}

func TestSchemaForNonObjectTypes(t *testing.T) {
	raw, err := SchemaFor[[]string]()
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"array","items":{"type":"string"}}`, string(raw))

	raw, err = SchemaFor[map[string]float64]()
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","additionalProperties":{"type":"number"}}`, string(raw))

	raw, err = SchemaFor[*kindsAddress]()
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"street"`)
	assert.NotContains(t, string(raw), "$defs", "a non-recursive nested type is inlined")
	assert.NotContains(t, string(raw), "$schema")
}

func TestSchemaRejectsBadArgumentTypes(t *testing.T) {
	type withChan struct {
		C chan int `json:"c"`
	}
	type withFunc struct {
		Inner struct {
			F func() `json:"f"`
		} `json:"inner"`
	}
	type withComplex struct {
		X complex128 `json:"x"`
	}
	type withIface struct {
		E error `json:"e"`
	}
	type withBadKey struct {
		M map[[2]int]string `json:"m"`
	}
	fn := func(context.Context, withChan) (string, error) { return "", nil }
	_, err := NewFunc("bad", "", fn)
	require.ErrorIs(t, err, ErrInvalidTool)
	assert.Contains(t, err.Error(), "$.c")

	for name, call := range map[string]func() error{
		"func": func() error {
			_, err := NewFunc("bad", "", func(context.Context, withFunc) (string, error) { return "", nil })
			return err
		},
		"complex": func() error {
			_, err := NewFunc("bad", "", func(context.Context, withComplex) (string, error) { return "", nil })
			return err
		},
		"interface": func() error {
			_, err := NewFunc("bad", "", func(context.Context, withIface) (string, error) { return "", nil })
			return err
		},
		"map key": func() error {
			_, err := NewFunc("bad", "", func(context.Context, withBadKey) (string, error) { return "", nil })
			return err
		},
		"not a struct": func() error {
			_, err := NewFunc("bad", "", func(context.Context, string) (string, error) { return "", nil })
			return err
		},
		"slice": func() error {
			_, err := NewFunc("bad", "", func(context.Context, []int) (string, error) { return "", nil })
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, ErrInvalidTool)
			assert.Contains(t, err.Error(), `tool "bad"`)
		})
	}
	_, err = NewFunc("bad", "", func(context.Context, string) (string, error) { return "", nil })
	assert.Contains(t, err.Error(), "not a struct")
}

// deep0 to deep33 nest structs 34 levels deep.
type (
	deep0  struct{ N deep1 }
	deep1  struct{ N deep2 }
	deep2  struct{ N deep3 }
	deep3  struct{ N deep4 }
	deep4  struct{ N deep5 }
	deep5  struct{ N deep6 }
	deep6  struct{ N deep7 }
	deep7  struct{ N deep8 }
	deep8  struct{ N deep9 }
	deep9  struct{ N deep10 }
	deep10 struct{ N deep11 }
	deep11 struct{ N deep12 }
	deep12 struct{ N deep13 }
	deep13 struct{ N deep14 }
	deep14 struct{ N deep15 }
	deep15 struct{ N deep16 }
	deep16 struct{ N deep17 }
	deep17 struct{ N deep18 }
	deep18 struct{ N deep19 }
	deep19 struct{ N deep20 }
	deep20 struct{ N deep21 }
	deep21 struct{ N deep22 }
	deep22 struct{ N deep23 }
	deep23 struct{ N deep24 }
	deep24 struct{ N deep25 }
	deep25 struct{ N deep26 }
	deep26 struct{ N deep27 }
	deep27 struct{ N deep28 }
	deep28 struct{ N deep29 }
	deep29 struct{ N deep30 }
	deep30 struct{ N deep31 }
	deep31 struct{ N deep32 }
	deep32 struct{ N deep33 }
	deep33 struct{ Leaf string }
)

func TestSchemaDepthCap(t *testing.T) {
	_, err := SchemaFor[deep2]() // Leaf sits 32 levels below the root: allowed
	require.NoError(t, err)
	_, err = SchemaFor[deep1]() // 33 levels: refused
	require.ErrorIs(t, err, ErrInvalidTool)
	assert.Contains(t, err.Error(), "deeper than 32 levels")
}

func TestSchemaRecursiveTypesUseDefs(t *testing.T) {
	type expr struct {
		Op   string `json:"op"`
		And  []expr `json:"and,omitempty"`
		Or   []expr `json:"or,omitempty"`
		Not  *expr  `json:"not,omitempty"`
		Leaf string `json:"leaf,omitempty"`
	}
	raw, err := SchemaFor[expr]()
	require.NoError(t, err)
	// The schema stays small however the recursion branches.
	assert.Less(t, len(raw), 1200)
	s, err := CompileSchema(raw)
	require.NoError(t, err)
	v, err := Parse([]byte(`{"op":"and","and":[{"op":"leaf","leaf":"a"},{"op":"not","not":{"op":"leaf","bogus":1}}]}`))
	require.NoError(t, err)
	verr := s.Validate(v)
	var aerr *ArgumentError
	require.ErrorAs(t, verr, &aerr)
	require.Len(t, aerr.Fields, 1)
	assert.Equal(t, "$.and[1].not.bogus", aerr.Fields[0].Path)
}

func TestToolNames(t *testing.T) {
	fn := func(context.Context, kindsAddress) (string, error) { return "", nil }
	for _, ok := range []string{"a", "get_weather", "Tool-2", "x123456789012345678901234567890123456789012345678901234567890123"} {
		_, err := NewFunc(ok, "", fn)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "has space", "dot.ted", "ünicode", "x1234567890123456789012345678901234567890123456789012345678901234"} {
		_, err := NewFunc(bad, "", fn)
		assert.ErrorIs(t, err, ErrInvalidTool, bad)
	}
}

func TestPointerToStructArguments(t *testing.T) {
	ft, err := NewFunc("addr", "", func(_ context.Context, in *kindsAddress) (string, error) {
		return in.Street + ", " + in.City, nil
	})
	require.NoError(t, err)
	r, err := ft.Call(context.Background(), "c1", json.RawMessage(`{"street":"Main St 1","city":"Berlin"}`))
	require.NoError(t, err)
	assert.Equal(t, "Main St 1, Berlin", r.Text())
}

// TestSchemaGuideExample keeps the example in docs/tools.md true.
func TestSchemaGuideExample(t *testing.T) {
	type Args struct {
		City  string  `json:"city" jsonschema:"description=City name,minLength=1"`
		Days  int     `json:"days,omitempty" jsonschema:"minimum=1,maximum=7"`
		Units *string `json:"units" jsonschema:"enum=metric,enum=imperial"`
	}
	raw, err := SchemaFor[Args]()
	require.NoError(t, err)
	assert.JSONEq(t, `{
  "type": "object",
  "properties": {
    "city": {"type": "string", "minLength": 1, "description": "City name"},
    "days": {"type": "integer", "minimum": 1, "maximum": 7},
    "units": {"type": "string", "enum": ["metric", "imperial"]}
  },
  "additionalProperties": false,
  "required": ["city"]
}`, string(raw))
}

func TestSchemaDescriptionTags(t *testing.T) {
	type args struct {
		A string   `json:"a" jsonschema_description:"free text, with commas"`
		B string   `json:"b" description:"plain tag"`
		C string   `json:"c" jsonschema:"description=from jsonschema" description:"loses"`
		D string   `json:"d" jsonschema:"description=escaped\\, comma"`
		E []string `json:"e" jsonschema:"enum=x,enum=y"`
		F string   `json:"f" jsonschema_extras:"x-unit=kg"`
		G *int     `json:"g" jsonschema:"nullable"`
	}
	raw, err := SchemaFor[args]()
	require.NoError(t, err)
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	assert.Equal(t, "free text, with commas", s.Properties["a"]["description"])
	assert.Equal(t, "plain tag", s.Properties["b"]["description"])
	assert.Equal(t, "from jsonschema", s.Properties["c"]["description"])
	assert.Equal(t, "escaped, comma", s.Properties["d"]["description"])
	assert.Equal(t, map[string]any{"type": "string", "enum": []any{"x", "y"}}, s.Properties["e"]["items"])
	assert.Equal(t, "kg", s.Properties["f"]["x-unit"])
	assert.Equal(t, []any{map[string]any{"type": "integer"}, map[string]any{"type": "null"}}, s.Properties["g"]["oneOf"])

	// A nullable field accepts null, and coercion still reaches it.
	ft := MustFunc("n", "", func(_ context.Context, in args) (string, error) {
		if in.G == nil {
			return "nil", nil
		}
		return "set", nil
	})
	base := `"a":"","b":"","c":"","d":"","e":[],"f":""`
	assert.Equal(t, "nil", Invoke(context.Background(), ft, model.ToolCall{ID: "1", Name: "n", Arguments: json.RawMessage(`{` + base + `,"g":null}`)}).Text())
	assert.Equal(t, "set", Invoke(context.Background(), ft, model.ToolCall{ID: "1", Name: "n", Arguments: json.RawMessage(`{` + base + `,"g":"4"}`)}).Text())
}

func TestSchemaTagsOnNestedStructFields(t *testing.T) {
	type inner struct {
		V int `json:"v"`
	}
	type args struct {
		In inner `json:"in" jsonschema:"title=Inner part,description=the inner part" jsonschema_extras:"x-kind=part"`
	}
	raw, err := SchemaFor[args]()
	require.NoError(t, err)
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	in := s.Properties["in"]
	assert.Equal(t, "Inner part", in["title"])
	assert.Equal(t, "the inner part", in["description"])
	assert.Equal(t, "part", in["x-kind"])
	assert.Equal(t, "object", in["type"], "the nested struct is inlined under its tags")
}

// hostArgs has a field of a struct type that decodes itself from text.
type hostArgs struct {
	Addr netip.Addr  `json:"addr"`
	Via  *netip.Addr `json:"via,omitempty"`
	When time.Time   `json:"when,omitempty"`
}

func TestSchemaOfTextTypesIsAString(t *testing.T) {
	got, err := SchemaFor[hostArgs]()
	require.NoError(t, err)
	var doc struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(got, &doc))
	assert.Equal(t, "string", doc.Properties["addr"]["type"], "netip.Addr is carried as text: %s", got)
	assert.Equal(t, "string", doc.Properties["via"]["type"], "through a pointer too: %s", got)
	assert.Equal(t, "date-time", doc.Properties["when"]["format"], "time.Time keeps its own description: %s", got)

	// The schema and the decoding agree: a string decodes, an object is
	// refused with the field named.
	ft := MustFunc("ping", "", func(_ context.Context, in hostArgs) (string, error) { return in.Addr.String(), nil })
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "c1", Name: "ping", Arguments: json.RawMessage(`{"addr":"192.168.1.10"}`)})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "192.168.1.10", r.Text())
	r = Invoke(context.Background(), ft, model.ToolCall{ID: "c2", Name: "ping", Arguments: json.RawMessage(`{"addr":{}}`)})
	assert.True(t, r.IsError)
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "addr")
	r = Invoke(context.Background(), ft, model.ToolCall{ID: "c3", Name: "ping", Arguments: json.RawMessage(`{"addr":"not an address"}`)})
	assert.True(t, r.IsError, "text the type refuses is an argument error: %s", r.Text())
	assert.Contains(t, r.Text(), "addr")
}

// signedKeyArgs has maps with integer keys, signed and not, at several
// depths.
type signedKeyArgs struct {
	Signed   map[int]string             `json:"signed"`
	Unsigned map[uint16]string          `json:"unsigned"`
	Nested   []map[int8]map[int64]*bool `json:"nested,omitempty"`
	Inner    *struct {
		ByID map[int32]int `json:"by_id"`
	} `json:"inner,omitempty"`
}

func TestSchemaSignedMapKeysAcceptNegatives(t *testing.T) {
	raw, err := SchemaFor[signedKeyArgs]()
	require.NoError(t, err)
	assert.JSONEq(t, `{
	  "type": "object",
	  "properties": {
	    "signed": {"type": "object", "patternProperties": {"^-?[0-9]+$": {"type": "string"}}, "additionalProperties": false},
	    "unsigned": {"type": "object", "patternProperties": {"^[0-9]+$": {"type": "string"}}, "additionalProperties": false},
	    "nested": {"type": "array", "items": {"type": "object", "additionalProperties": false, "patternProperties": {"^-?[0-9]+$":
	      {"type": "object", "additionalProperties": false, "patternProperties": {"^-?[0-9]+$": {"type": "boolean"}}}}}},
	    "inner": {"type": "object", "additionalProperties": false, "required": ["by_id"], "properties": {
	      "by_id": {"type": "object", "additionalProperties": false, "patternProperties": {"^-?[0-9]+$": {"type": "integer"}}}}}
	  },
	  "additionalProperties": false,
	  "required": ["signed", "unsigned"]
	}`, string(raw))

	raw, err = SchemaFor[map[int]bool]()
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","patternProperties":{"^-?[0-9]+$":{"type":"boolean"}},"additionalProperties":false}`, string(raw))
	raw, err = SchemaFor[map[uint]any]()
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","patternProperties":{"^[0-9]+$":true},"additionalProperties":false}`, string(raw))

	// What the schema promises, the tool takes: a negative key of a signed
	// map, and still not one of an unsigned map.
	var got signedKeyArgs
	tl := MustFunc("keys", "Takes keyed maps.", func(_ context.Context, a signedKeyArgs) (string, error) {
		got = a
		return "ok", nil
	})
	inv := NewInvoker()
	r := inv.Invoke(context.Background(), tl, model.ToolCall{ID: "c1", Name: "keys",
		Arguments: []byte(`{"signed":{"-3":"minus three","4":"four"},"unsigned":{},"nested":[{"-1":{"-9":true}}],"inner":{"by_id":{"-7":7}}}`)})
	require.False(t, r.IsError, "%s", r.Text())
	assert.Equal(t, map[int]string{-3: "minus three", 4: "four"}, got.Signed)
	require.Len(t, got.Nested, 1)
	assert.True(t, *got.Nested[0][-1][-9])
	assert.Equal(t, map[int32]int{-7: 7}, got.Inner.ByID)

	r = inv.Invoke(context.Background(), tl, model.ToolCall{ID: "c2", Name: "keys",
		Arguments: []byte(`{"signed":{},"unsigned":{"-1":"x"}}`)})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), `$.unsigned["-1"]`)
}

type amountArgs struct {
	Amount json.Number  `json:"amount"`
	Fee    *json.Number `json:"fee,omitempty"`
}

// json.Number holds a number's text: its schema says number, and the
// decoding keeps the digits the model sent.
func TestSchemaOfJSONNumberIsANumber(t *testing.T) {
	got, err := SchemaFor[amountArgs]()
	require.NoError(t, err)
	var doc struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(got, &doc))
	assert.Equal(t, "number", doc.Properties["amount"]["type"], "%s", got)
	assert.Equal(t, "number", doc.Properties["fee"]["type"], "%s", got)

	ft := MustFunc("pay", "", func(_ context.Context, in amountArgs) (string, error) {
		fee := "none"
		if in.Fee != nil {
			fee = in.Fee.String()
		}
		return in.Amount.String() + " " + fee, nil
	})
	for _, c := range []struct{ args, want string }{
		{`{"amount":12.50}`, "12.50 none"},
		{`{"amount":-1e400,"fee":0.10}`, "-1e400 0.10"},
		{`{"amount":"12.50","fee":" 3 "}`, "12.50 3"},
		{`{"amount":9007199254740993,"fee":null}`, "9007199254740993 none"},
	} {
		r := Invoke(context.Background(), ft, model.ToolCall{ID: "c", Name: "pay", Arguments: json.RawMessage(c.args)})
		require.False(t, r.IsError, "%s: %s", c.args, r.Text())
		assert.Equal(t, c.want, r.Text(), c.args)
	}
	in, ok := arguments.Fast[amountArgs](ft.plan, json.RawMessage(`{"amount":12.50,"fee":-0}`))
	require.True(t, ok, "the fast path takes a number")
	assert.Equal(t, json.Number("12.50"), in.Amount)
	require.NotNil(t, in.Fee)
	assert.Equal(t, json.Number("-0"), *in.Fee)
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "c", Name: "pay", Arguments: json.RawMessage(`{"amount":"12.50 USD"}`)})
	assert.True(t, r.IsError, "text that is not a number is refused: %s", r.Text())
	assert.Contains(t, r.Text(), "$.amount")
}

// hiddenPage is unexported: embedded through a pointer, its fields cannot
// be filled by decoding.
type hiddenPage struct {
	Page int `json:"page"`
}

func TestSchemaRefusesAnEmbeddedPointerToAnUnexportedStruct(t *testing.T) {
	type outer struct {
		*hiddenPage
		Name string `json:"name"`
	}
	_, err := NewFunc("pages", "", func(context.Context, outer) (string, error) { return "", nil })
	require.ErrorIs(t, err, ErrInvalidTool)
	assert.Contains(t, err.Error(), "*tool.hiddenPage")
	assert.Contains(t, err.Error(), "embed the struct by value")

	// By value, or left out, it is fine.
	type byValue struct {
		hiddenPage
		Name string `json:"name"`
	}
	tl, err := NewFunc("pages", "", func(_ context.Context, in byValue) (string, error) { return fmt.Sprint(in.Page, in.Name), nil })
	require.NoError(t, err)
	assert.Equal(t, "2x", Invoke(context.Background(), tl, model.ToolCall{ID: "c", Name: "pages", Arguments: []byte(`{"page":2,"name":"x"}`)}).Text())
	type leftOut struct {
		*hiddenPage `json:"-"`
		Name        string `json:"name"`
	}
	_, err = NewFunc("pages", "", func(context.Context, leftOut) (string, error) { return "", nil })
	require.NoError(t, err)
}
