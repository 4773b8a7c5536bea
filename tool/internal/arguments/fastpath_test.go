package arguments

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireValidatorAccepts fails the test unless the validator itself
// accepts args, which a fast path accepted. It asks the validator without
// Validate's shortcut, which shares the fast path's plan.
func requireValidatorAccepts(t *testing.T, sch *Schema, args []byte) {
	t.Helper()
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	v, err := Parse(args)
	require.NoError(t, err, "the fast path accepted %q, which does not parse", args)
	require.NoError(t, sch.validator.Validate(v), "the fast path accepted %q, which the validator refuses", args)
}

// checkOnly runs the validate-only fast plan of schema over args. It fails
// the test when the fast path accepts arguments that the full pipeline
// rejects or would change.
func checkOnly(t *testing.T, schema, args string) bool {
	t.Helper()
	sch := mustCompileSchema(json.RawMessage(schema))
	plan := sch.validatePlan()
	accepted := plan != nil && fastDecode(plan, []byte(args), reflect.Value{})
	if accepted {
		requireValidatorAccepts(t, sch, []byte(args))
		a, aerr := Full(json.RawMessage(args), sch, nil, false, false)
		require.Nil(t, aerr, "the fast path accepted %s, which the pipeline refuses", args)
		want := args
		if strings.TrimSpace(args) == "" {
			want = "{}"
		}
		require.Equal(t, want, string(a.Raw), "the fast path accepted %s, which coercion changes", args)
	}
	return accepted
}

func TestFastPathKeywords(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		accept []string
		// decline lists arguments the fast path leaves to the pipeline:
		// invalid ones, and valid ones that coercion changes.
		decline []string
	}{
		{
			name:    "types",
			schema:  `{"type":"object","properties":{"s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},"z":{"type":"null"},"o":{"type":"object"},"a":{"type":"array"},"u":{"type":["string","null"]}}}`,
			accept:  []string{`{}`, ``, ` `, `{"s":"x","i":-3,"n":1.5e3,"b":false,"z":null,"o":{"k":[1]},"a":[1,"x"],"u":null}`, `{"n":7}`, `{"u":"v"}`, `{"i":0}`, `{"i":-0}`},
			decline: []string{`{"s":3}`, `{"i":"3"}`, `{"i":1.0}`, `{"i":1e2}`, `{"n":"2.5"}`, `{"b":"true"}`, `{"z":"null"}`, `{"o":"{}"}`, `{"a":"[1]"}`, `{"s":null}`, `{"i":null}`, `[]`, `"x"`, `{"s":"x"} x`, `{"s":"x",}`, "\v{}"},
		},
		{
			name:    "root type",
			schema:  `{"type":"object"}`,
			accept:  []string{`{"any":"thing","n":[1,{"x":null}]}`},
			decline: []string{`null`, `1`, `[{}]`},
		},
		{
			name:    "enum and const",
			schema:  `{"type":"object","properties":{"e":{"enum":["a",2,null,true,{"k":1}]},"c":{"const":"x"},"n":{"enum":[1.5,3]}}}`,
			accept:  []string{`{"e":"a"}`, `{"e":2}`, `{"e":null}`, `{"e":true}`, `{"c":"x"}`, `{"n":1.5}`, `{"n":3}`, `{"n":1.50}`, `{"n":3.0}`},
			decline: []string{`{"e":"b"}`, `{"e":3}`, `{"e":false}`, `{"e":{"k":1}}`, `{"c":"y"}`, `{"c":null}`, `{"n":2}`, `{"n":15e-1}`},
		},
		{
			name:    "strings",
			schema:  `{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":4},"p":{"type":"string","pattern":"^[a-z]+\\d$"},"f":{"type":"string","format":"email"},"t":{"type":"string","format":"date-time"}}}`,
			accept:  []string{`{"s":"ab"}`, `{"s":"éèêë"}`, `{"s":"a\u00e9"}`, `{"p":"abc1"}`, `{"f":"a@b.c"}`, `{"t":"2024-02-29T12:30:00Z"}`},
			decline: []string{`{"s":"a"}`, `{"s":"abcde"}`, `{"s":"éèêëé"}`, `{"p":"ABC1"}`, `{"p":"abc"}`, `{"f":"nope"}`, `{"t":"yesterday"}`, `{"s":12}`},
		},
		{
			name:    "numbers",
			schema:  `{"type":"object","properties":{"i":{"type":"integer","minimum":-3,"maximum":10},"x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},"m":{"type":"integer","multipleOf":5},"f":{"type":"number","multipleOf":0.5},"r":{"type":"number","minimum":0.1},"h":{"type":"integer","exclusiveMaximum":10.5}}}`,
			accept:  []string{`{"i":-3}`, `{"i":10}`, `{"x":0.5}`, `{"x":1e-9}`, `{"m":-15}`, `{"m":0}`, `{"r":0.1}`, `{"r":0.10000000000000001}`, `{"r":100}`, `{"h":10}`},
			decline: []string{`{"i":-4}`, `{"i":11}`, `{"i":9007199254740993}`, `{"x":0}`, `{"x":1}`, `{"x":1.0}`, `{"m":7}`, `{"f":1.5}`, `{"r":0.09999999999999999}`, `{"h":11}`, `{"i":"5"}`},
		},
		{
			name:    "numbers beyond float64 precision",
			schema:  `{"type":"object","properties":{"x":{"type":"number","maximum":1}}}`,
			accept:  []string{`{"x":1}`, `{"x":0.99999999999999999999}`},
			decline: []string{`{"x":1.00000000000000000001}`, `{"x":1e400}`},
		},
		{
			name:    "arrays",
			schema:  `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3},"u":{"type":"array","uniqueItems":true},"any":{"type":"array"}}}`,
			accept:  []string{`{"a":[1]}`, `{"a":[1,2,3]}`, `{"u":["a","b",1,2,true,false,null]}`, `{"u":[]}`, `{"any":[{"x":[]},"s",1.5]}`},
			decline: []string{`{"a":[]}`, `{"a":[1,2,3,4]}`, `{"a":["1"]}`, `{"u":["a","a"]}`, `{"u":[1,1]}`, `{"u":[1,-0,0]}`, `{"u":["a","\u0061"]}`, `{"u":[{},{}]}`, `{"u":[1.5]}`, `{"a":[1,]}`},
		},
		{
			name:    "objects",
			schema:  `{"type":"object","properties":{"r":{"type":"string"},"o":{"type":"integer"},"n":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"],"additionalProperties":false}},"required":["r"],"additionalProperties":false}`,
			accept:  []string{`{"r":"x"}`, `{"r":"x","o":1,"n":{"k":"v"}}`, ` { "r" : "x" , "n" : { "k" : "" } } `},
			decline: []string{`{}`, `{"o":1}`, `{"r":"x","extra":1}`, `{"r":"x","n":{}}`, `{"r":"x","n":{"k":"v","z":1}}`, `{"r":"x","r":"y"}`, `{"r":"x","o":null}`},
		},
		{
			name:    "additional properties",
			schema:  `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer","maximum":5}}`,
			accept:  []string{`{"a":"x","b":1,"c":5}`},
			decline: []string{`{"b":6}`, `{"b":"1"}`, `{"a":1}`},
		},
		{
			name:    "boolean schemas",
			schema:  `{"type":"object","properties":{"t":true,"f":false,"i":{"items":true}}}`,
			accept:  []string{`{"t":{"anything":[1,"2"]}}`, `{"t":null}`, `{"i":[1,"x"]}`},
			decline: []string{`{"f":1}`, `{"f":null}`},
		},
		{
			name:    "keywords left to the pipeline",
			schema:  `{"type":"object","properties":{"one":{"oneOf":[{"type":"string"},{"type":"integer"}]},"any":{"anyOf":[{"type":"string"}]},"all":{"allOf":[{"type":"string"}]},"not":{"not":{"type":"string"}},"ref":{"$ref":"#/$defs/s"},"pp":{"type":"object","patternProperties":{"^x":{"type":"string"}}},"dep":{"type":"object","dependentRequired":{"a":["b"]}},"pn":{"type":"object","propertyNames":{"maxLength":3}},"mp":{"type":"object","minProperties":1},"pre":{"type":"array","prefixItems":[{"type":"string"}]},"con":{"type":"array","contains":{"type":"string"}},"ue":{"type":"object","unevaluatedProperties":false},"cond":{"if":{"type":"string"},"then":{"minLength":2}},"ok":{"type":"string"}},"$defs":{"s":{"type":"string"}}}`,
			accept:  []string{`{"ok":"x"}`},
			decline: []string{`{"one":"x"}`, `{"any":"x"}`, `{"all":"x"}`, `{"not":1}`, `{"ref":"x"}`, `{"pp":{}}`, `{"dep":{}}`, `{"pn":{}}`, `{"mp":{"a":1}}`, `{"pre":[]}`, `{"con":["x"]}`, `{"ue":{}}`, `{"cond":"xy"}`},
		},
		{
			name:    "older drafts",
			schema:  `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}},"t":{"type":"array","items":[{"type":"string"}]},"x":{"type":"number","exclusiveMaximum":3}}}`,
			accept:  []string{`{"a":[1,2],"x":2.5}`},
			decline: []string{`{"a":["1"]}`, `{"t":["x"]}`, `{"x":3}`},
		},
		{
			name:    "syntax",
			schema:  `{"type":"object"}`,
			accept:  []string{`{"s":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`, "{\"s\":\"\xff\"}"},
			decline: []string{`{"s":"\x"}`, "{\"s\":\"\n\"}", `{"s":"\u00"}`, `{"s":01}`, `{"s":1.}`, `{"s":tru}`, `{"s":[1 2]}`, `{"s" 1}`, `{1:1}`, `{"s":1`, `{"s":"`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, a := range c.accept {
				assert.True(t, checkOnly(t, c.schema, a), "should take the fast path: %s", a)
			}
			for _, a := range c.decline {
				assert.False(t, checkOnly(t, c.schema, a), "should be left to the pipeline: %s", a)
			}
		})
	}
}

// typedCase checks the typed fast path of a tool with arguments T against
// the full pipeline: when the fast path accepts, the pipeline must accept
// the same arguments and decode the same value. It reports whether the fast
// path accepted.
type typedCase struct {
	name   string
	schema *Schema
	check  func(t *testing.T, args []byte, repair bool) bool
}

func typed[T any](name string, schema string) typedCase {
	ft, err := planFor[T](schema)
	if err != nil {
		panic(err)
	}
	return typedCase{name: name, schema: ft.schema, check: func(t *testing.T, args []byte, repair bool) bool {
		t.Helper()
		got, fastOK := fastArguments[T](ft.fast, args)
		a, aerr := Full(args, ft.schema, nil, repair, true)
		var want T
		var errs []FieldError
		if aerr == nil {
			want, errs = decodeValue[T](ft.decode, a.Value)
		}
		if fastOK {
			requireValidatorAccepts(t, ft.schema, args)
			if aerr != nil || len(errs) > 0 {
				t.Fatalf("%s: the fast path accepted %q, which the pipeline refuses: %v %v", name, args, aerr, errs)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: for %q the fast path decoded\n%#v\nthe pipeline\n%#v", name, args, got, want)
			}
		}
		if ft.fast != nil && ft.fast.flat != nil {
			// The flat shortcut takes only what the typed plan takes, and
			// stores what it stores.
			fl, flOK := flatArguments[T](ft.fast.flat, args, false)
			tv, tOK := typedArguments[T](ft.fast, args)
			if flOK && !tOK {
				t.Fatalf("%s: the flat plan accepted %q, which the typed plan declines", name, args)
			}
			if flOK && !reflect.DeepEqual(fl, tv) {
				t.Fatalf("%s: for %q the flat plan decoded\n%#v\nthe typed plan\n%#v", name, args, fl, tv)
			}
			// Reading shared arguments in place takes and stores the same.
			sh, shOK := flatArguments[T](ft.fast.flat, args, true)
			if shOK != flOK || !reflect.DeepEqual(sh, fl) {
				t.Fatalf("%s: for %q the flat plan on shared arguments decoded\n%#v (%v)\nand on others\n%#v (%v)", name, args, sh, shOK, fl, flOK)
			}
		}
		if plan := ft.schema.validatePlan(); plan != nil && fastDecode(plan, args, reflect.Value{}) {
			requireValidatorAccepts(t, ft.schema, args)
			b, berr := Full(args, ft.schema, nil, repair, false)
			if berr != nil {
				t.Fatalf("%s: the validate-only fast path accepted %q, which the pipeline refuses: %v", name, args, berr)
			}
			if want := bytes.TrimSpace(args); len(want) > 0 && !bytes.Equal(b.Raw, args) {
				t.Fatalf("%s: the validate-only fast path accepted %q, which coercion changes to %s", name, args, b.Raw)
			}
		}
		return fastOK
	}}
}

type handPoint struct{ X, Y int }

type handArgs struct {
	Name   string         `json:"name"`
	Kind   string         `json:"kind"`
	Level  int            `json:"level"`
	Ratio  float64        `json:"ratio"`
	Step   *int64         `json:"step"`
	Code   string         `json:"code"`
	Email  string         `json:"email"`
	Tags   []string       `json:"tags"`
	IDs    []int          `json:"ids"`
	Counts map[string]int `json:"counts"`
	Opt    *string        `json:"opt"`
	Free   any            `json:"free"`
	Fixed  string         `json:"fixed"`
	Num    float32        `json:"num"`
	Whole  float64        `json:"whole"`
	Point  handPoint      `json:"point"`
	Choice any            `json:"choice"`
	Small  uint8          `json:"small"`
	Pair   [2]string      `json:"pair"`
}

const handSchema = `{"type":"object","additionalProperties":false,"required":["name","kind"],
"properties":{
 "name":{"type":"string","minLength":2,"maxLength":10},
 "kind":{"enum":["a","b",3,null,true]},
 "level":{"type":"integer","minimum":-3,"exclusiveMaximum":10.5,"multipleOf":2},
 "ratio":{"type":"number","exclusiveMinimum":0.1,"maximum":1e2},
 "step":{"type":["integer","null"],"maximum":9007199254740993},
 "code":{"type":"string","pattern":"^[A-Z]{3}$"},
 "email":{"type":"string","format":"email"},
 "tags":{"type":"array","items":{"type":"string"},"uniqueItems":true,"minItems":1,"maxItems":4},
 "ids":{"type":"array","uniqueItems":true},
 "counts":{"type":"object","properties":{"special":{"type":"integer","minimum":100}},"additionalProperties":{"type":"integer"}},
 "opt":{"type":"string","const":"yes"},
 "free":{"type":"object"},
 "fixed":{"const":"x"},
 "num":{"type":"number"},
 "whole":{"type":"integer"},
 "point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x"]},
 "choice":{"oneOf":[{"type":"string"},{"type":"integer"}]},
 "ghost":{"type":"string"},
 "small":{"type":"integer"},
 "pair":{"type":"array","items":{"type":"string"}}
}}`

// shapeLevel decodes itself from text.
type shapeLevel string

func (l *shapeLevel) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty level")
	}
	*l = shapeLevel(strings.ToUpper(string(b)))
	return nil
}

type shapeBase struct {
	ID   int    `json:"id"`
	Note string `json:"note,omitempty"`
}

// ShapeMore is embedded by pointer; it is exported, so the decoder can
// allocate it.
type ShapeMore struct {
	More string `json:"more,omitempty"`
}

// shapeArgs has a field of every shape the typed fast path stores itself or
// hands to the decoder.
type shapeArgs struct {
	shapeBase
	*ShapeMore
	S      string              `json:"s,omitempty"`
	P      *int                `json:"p,omitempty"`
	PP     **string            `json:"pp,omitempty"`
	L      []int               `json:"l,omitempty"`
	A      [3]string           `json:"a,omitempty"`
	Bytes  []byte              `json:"bytes,omitempty"`
	M      map[string][]string `json:"m,omitempty"`
	Any    any                 `json:"any,omitempty"`
	Raw    json.RawMessage     `json:"raw,omitempty"`
	When   *time.Time          `json:"when,omitempty"`
	Level  shapeLevel          `json:"level,omitempty"`
	Quoted int                 `json:"quoted,omitempty,string"`
	U16    uint16              `json:"u16,omitempty"`
	F32    float32             `json:"f32,omitempty"`
	Nested []shapeBase         `json:"nested,omitempty"`
	NoTag  string              `json:",omitempty"`
	Num    json.Number         `json:"num,omitempty"`
	NumP   *json.Number        `json:"nump,omitempty"`
}

// handSeed is valid arguments for handArgs that the fast path accepts.
const handSeed = `{"name":"ab","kind":"a","level":4,"ratio":100,"step":9007199254740993,"code":"ABC","email":"a@b.co","tags":["x","y"],"ids":[1,2],"counts":{"special":100,"n":-1},"opt":"yes","fixed":"x","num":1.5,"whole":3,"small":255,"pair":["p","q","r"]}`

type recursiveArgs struct {
	Name     string          `json:"name"`
	Children []recursiveArgs `json:"children,omitempty"`
}

type timeArgs struct {
	At    time.Time  `json:"at"`
	Until *time.Time `json:"until,omitempty"`
	Every string     `json:"every,omitempty" jsonschema:"enum=day,enum=week"`
}

var typedCases = []typedCase{
	typed[benchArgs]("plain", ""),
	typed[constrainedArgs]("constrained", ""),
	typed[fuzzArgs]("fuzz", ""),
	typed[shapeArgs]("shapes", ""),
	typed[handArgs]("hand", handSchema),
	typed[map[string]any]("map", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"string"}}},"required":["a"]}`),
	typed[map[string]int]("int_map", `{"type":"object","properties":{"big":{"type":"integer","minimum":100}},"additionalProperties":{"type":"integer","maximum":5}}`),
	typed[recursiveArgs]("recursive", ""),
	typed[*timeArgs]("time", ""),
	typed[flatArgs]("flat", ""),
	typed[flatHand]("flat_hand", flatHandSchema),
	typed[oneString]("one_string", ""),
}

// flatBase is embedded by value in flatArgs.
type flatBase struct {
	ID int `json:"id"`
}

// flatLevel is a named string type.
type flatLevel string

// flatArgs has scalar fields of every kind the flat plan stores.
type flatArgs struct {
	flatBase
	S     string    `json:"s"`
	B     bool      `json:"b,omitempty"`
	I     int       `json:"i,omitempty"`
	I8    int8      `json:"i8,omitempty"`
	I16   int16     `json:"i16,omitempty"`
	I32   int32     `json:"i32,omitempty"`
	I64   int64     `json:"i64,omitempty"`
	U     uint      `json:"u,omitempty"`
	U8    uint8     `json:"u8,omitempty"`
	U16   uint16    `json:"u16,omitempty"`
	U32   uint32    `json:"u32,omitempty"`
	U64   uint64    `json:"u64,omitempty"`
	F32   float32   `json:"f32,omitempty"`
	F64   float64   `json:"f64,omitempty"`
	Level flatLevel `json:"level,omitempty" jsonschema:"enum=low,enum=high"`
	Limit int       `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50"`
}

// flatHand is a flat struct with a schema written by hand, with the
// keywords a flat plan checks.
type flatHand struct {
	Name  string  `json:"name"`
	Code  string  `json:"code"`
	Email string  `json:"email"`
	Step  int     `json:"step"`
	Ratio float64 `json:"ratio"`
	On    bool    `json:"on"`
	Ghost string  `json:"-"`
}

const flatHandSchema = `{"type":"object","required":["name"],"additionalProperties":false,"properties":{
 "name":{"type":"string","minLength":2,"maxLength":5},
 "code":{"type":"string","pattern":"^[A-Z]+$"},
 "email":{"type":"string","format":"email"},
 "step":{"type":"integer","multipleOf":3,"exclusiveMinimum":0},
 "ratio":{"type":"number","maximum":1.5,"enum":[0.5,1,1.5]},
 "on":{"const":true},
 "ghost":{"type":"string"}
}}`

// typedSeeds are arguments for the typed cases, valid and not, in the
// shapes models send.
var typedSeeds = []string{
	string(benchRaw),
	`{"query":"","limit":0,"exact":false,"weight":0,"tags":[]}`,
	`{"query":"weather","limit":"10","exact":"true","weight":"0.5","tags":"[\"a\"]"}`,
	`{"query":"x","extra":{"name":"n","score":2.5,"attrs":{"k":"v"}},"on":true,"mode":"a","tags":["a","b"],"pair":[1,2],"items":[{"name":"i"}],"blob":"aGk=","when":"2024-01-01T00:00:00Z","free":{"x":[1,{}]},"count":65535,"big":9007199254740993,"ratio":-1e-3,"limit":-5}`,
	`{"query":"x","extra":{"name":"n"},"pair":[1],"on":null}`,
	`{"s":"x","b":true,"i":-3,"i8":127,"i64":9007199254740993,"u":7,"f32":1.5,"f64":-2.25e10,"p":5,"pp":"deep","l":[1,2,3],"a":["x","y"],"bytes":"aGVsbG8=","m":{"k":["v1","v2"]},"inner":{"id":4,"shade":"blue","level":65535,"scores":{"a":0.5}},"any":{"n":1,"list":[1.5,"x",null,true]},"raw":{"keep":[1, 2],"<":"&"},"when":"2024-02-29T12:30:00+02:00","addr":"192.168.1.10","quoted":"42","quoted_s":"\"text\"","NoTag":"n"}`,
	`{"s":null,"p":null,"l":null,"m":null,"any":null,"raw":null,"pp":null,"inner":null,"when":null}`,
	`{"id":1,"note":"n","more":"m","s":"x","p":5,"pp":"deep","l":[1,2],"a":["x","y","z"],"bytes":"aGVsbG8=","m":{"k":["v"],"e":[]},"any":{"n":1,"list":[1.5,"x",null,true]},"raw":{"keep":[1, 2],"<":"&"},"when":"2024-02-29T12:30:00+02:00","level":"high","quoted":"42","u16":65535,"f32":1.5,"nested":[{"id":2},{"id":3,"note":""}],"NoTag":"t"}`,
	`{"id":1,"flag":true}`,
	`{"id":1,"num":12.50,"nump":-1e400}`,
	`{"id":1,"num":"12.50","nump":null}`,
	`{"id":1,"level":"","raw":null,"any":null,"when":null,"p":null,"a":["1","2","3","4"],"u16":65536,"f32":1e39,"quoted":"x","bytes":"!!"}`,
	`{"id":1,"nested":[{"id":"2"}],"NoTag":1,"notag":"x"}`,
	`{"i8":128,"u":-1,"f32":1e39,"l":[],"a":["1","2","3","4"],"bytes":"!!","addr":"nope","quoted":"x"}`,
	handSeed,
	`{"name":"ab","kind":3}`,
	`{"name":"ab","kind":null,"step":null,"point":{"x":1},"free":{},"ghost":"g","choice":1,"ids":[1,"1"],"small":256,"tags":["x","x"],"level":11}`,
	`{"a":1,"b":["x"],"c":{"d":[1.5]}}`,
	`{"big":100,"x":5,"y":-7}`,
	`{"big":99,"x":"5"}`,
	`{"a":"1","b":[2]}`,
	`{"name":"root","children":[{"name":"kid"}]}`,
	`{"name":"leaf"}`,
	`{"at":"2024-01-01T00:00:00Z","until":"2024-01-02T00:00:00-05:00","every":"day"}`,
	`{"at":"not a time","every":"month"}`,
	`{"id":7,"s":"x","b":true,"i":-3,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,"u":7,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"f32":1.5,"f64":-2.25e10,"level":"low","limit":50}`,
	`{"id":7,"s":"\u00e9\n","i8":128,"u8":256,"f32":1e39,"level":"mid","limit":0.5}`,
	`{"s":"x","id":1,"i":1.0,"u":-1,"f64":1e400,"b":null}`,
	`  {"id":1, "s":"x"}  `,
	`{"name":"ab","code":"ABC","email":"a@b.co","step":9,"ratio":1.5,"on":true}`,
	`{"query":"x","limit":2,"exact":false}`,
	`{"query":"a\"b\u00e9","limit":-1}`,
	`{"name":"a","code":"abc","email":"nope","step":0,"ratio":0.7,"on":false,"ghost":"g"}`,
	`{"at":"2024-01-01T00:00:00Z","until":null}`,
	``, `{}`, `null`, `[]`,
}

func TestTypedFastPathMatchesPipeline(t *testing.T) {
	accepted := map[string]int{}
	for _, c := range typedCases {
		for _, s := range typedSeeds {
			for _, repair := range []bool{false, true} {
				if c.check(t, []byte(s), repair) {
					accepted[c.name]++
				}
			}
		}
	}
	// The fast path must not be vacuous: each case takes it for the
	// arguments written for it.
	for _, c := range typedCases {
		assert.Positive(t, accepted[c.name], "%s never took the fast path", c.name)
	}
}

func TestTypedFastPathAcceptsAndDecodes(t *testing.T) {
	hand, err := planFor[handArgs](handSchema)
	require.NoError(t, err)
	seven := int64(9007199254740993)
	yes := "yes"
	got, ok := fastArguments[handArgs](hand.fast, []byte(handSeed))
	require.True(t, ok)
	assert.Equal(t, handArgs{
		Name: "ab", Kind: "a", Level: 4, Ratio: 100, Step: &seven, Code: "ABC", Email: "a@b.co",
		Tags: []string{"x", "y"}, IDs: []int{1, 2}, Counts: map[string]int{"special": 100, "n": -1},
		Opt: &yes, Fixed: "x", Num: 1.5, Whole: 3, Small: 255, Pair: [2]string{"p", "q"},
	}, got)

	got, ok = fastArguments[handArgs](hand.fast, []byte(`{"name":"ab","kind":"a","free":{"k":[1]}}`))
	require.True(t, ok, "an any field whose schema asks for an object")
	assert.Equal(t, map[string]any{"k": []any{1.0}}, got.Free)

	for _, args := range []string{
		`{"name":"ab","kind":3}`,                         // valid, but 3 does not decode into a string
		`{"name":"ab","kind":"a","point":{"x":1}}`,       // x matches the field X only ignoring case
		`{"name":"ab","kind":"a","ghost":"g"}`,           // declared, but no field receives it
		`{"name":"ab","kind":"a","choice":"c"}`,          // oneOf
		`{"name":"ab","kind":"a","small":256}`,           // beyond uint8
		`{"name":"ab","kind":"a","whole":3.0}`,           // an integer written as a fraction
		`{"name":"ab","kind":"a","counts":{"n":"1"}}`,    // coerced
		`{"name":"ab","kind":"a","ids":[1,"1"]}`,         // valid, but "1" does not decode into an int
		`{"name":"ab","kind":"a","name":"cd"}`,           // a duplicate key
		`{"name":"ab","kind":"a","level":-2,"num":1e39}`, // beyond float32
	} {
		_, ok := fastArguments[handArgs](hand.fast, []byte(args))
		assert.False(t, ok, "should be left to the pipeline: %s", args)
	}

	// Empty arrays leave slices nil and objects make maps, as the decoder does.
	shapes := mustPlan[shapeArgs]("")
	d, ok := fastArguments[shapeArgs](shapes.fast, []byte(`{"id":1,"l":[],"m":{},"pp":"deep","raw":{"b":1,"a":"<"},"quoted":"7","any":[1,{"x":2}],"level":"up","more":"m","NoTag":"t"}`))
	require.True(t, ok)
	assert.Nil(t, d.L)
	assert.Equal(t, map[string][]string{}, d.M)
	require.NotNil(t, d.PP)
	assert.Equal(t, "deep", **d.PP)
	assert.Equal(t, 1, d.ID, "a promoted field")
	require.NotNil(t, d.ShapeMore, "an embedded pointer is allocated when one of its fields is set")
	assert.Equal(t, "m", d.More)
	assert.JSONEq(t, `{"a":"\u003c","b":1}`, string(d.Raw))
	assert.Equal(t, 7, d.Quoted)
	assert.Equal(t, []any{1.0, map[string]any{"x": 2.0}}, d.Any)
	assert.Equal(t, shapeLevel("UP"), d.Level)
	assert.Equal(t, "t", d.NoTag)
	d, ok = fastArguments[shapeArgs](shapes.fast, []byte(`{"id":1}`))
	require.True(t, ok)
	assert.Nil(t, d.ShapeMore, "an embedded pointer is allocated only when one of its fields is set")
	for _, args := range []string{
		`{"id":1,"flag":true}`,  // a field of an unexported embedded pointer cannot be set
		`{"id":1,"notag":"x"}`,  // matches NoTag only ignoring case
		`{"id":1,"level":""}`,   // UnmarshalText refuses it
		`{"id":1,"quoted":"x"}`, // not a number inside the string
	} {
		_, ok := fastArguments[shapeArgs](shapes.fast, []byte(args))
		assert.False(t, ok, "should be left to the pipeline: %s", args)
	}
}

func TestFastPlanIsBuiltOnlyWhereItCanApply(t *testing.T) {
	plain := mustPlan[searchArgs]("")
	assert.NotNil(t, plain.fast)
	prepared := Compile(plain.schema, plain.typ, func(m map[string]any) map[string]any { return m })
	assert.Nil(t, prepared.fast, "a PrepareArguments hook sees every call")
	anyOf, err := planFor[searchArgs](`{"anyOf":[{"type":"object"}]}`)
	require.NoError(t, err)
	assert.Nil(t, anyOf.fast, "a root the fast path cannot check")
	assert.Nil(t, mustPlan[decAll]("").fast,
		"a required property the fast path cannot check (mi has patternProperties)")
}

// TestFastPathDeclinesToTheFullPipeline checks, through Invoke, that what
// the fast path leaves alone still gets the pipeline's treatment: coercion,
// and error results listing every bad field, with the body not run.
// mutations returns variants of a JSON object: each property removed,
// each value replaced by values of every kind, an unknown property added,
// a property repeated. They are the shapes in which models get arguments
// almost right.
func mutations(seed string) []string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(seed), &obj); err != nil || obj == nil {
		return nil
	}
	replacements := []any{
		nil, true, false, 0, -1, 3, 2.5, 1e2, json.Number("1.0"), json.Number("9007199254740993"), json.Number("-0"),
		json.Number("1e400"), 256, 65536, -129, "", "x", "3", "true", "null", "[1]", `{"a":1}`, "2024-01-01T00:00:00Z",
		"aGk=", strings.Repeat("é", 50), []any{}, []any{"a", "a"}, []any{1, 2, 3, 4, 5}, map[string]any{}, map[string]any{"name": "n"},
	}
	marshal := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	var out []string
	for k, v := range obj {
		delete(obj, k)
		out = append(out, marshal(obj))
		for _, r := range replacements {
			obj[k] = r
			out = append(out, marshal(obj))
		}
		obj[k] = v
		if inner, ok := v.(map[string]any); ok {
			for _, m := range mutations(marshal(inner)) {
				var mv any
				_ = json.Unmarshal([]byte(m), &mv)
				obj[k] = mv
				out = append(out, marshal(obj))
			}
			obj[k] = v
		}
		if b := marshal(obj); len(b) > 2 {
			out = append(out, b[:len(b)-1]+`,`+strings.TrimPrefix(marshal(map[string]any{k: v}), "{"))
		}
	}
	obj["unknown"] = 1
	out = append(out, marshal(obj))
	return out
}

func TestFastPathMatchesPipelineOnMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("checks every mutation of every seed, seconds (skipped with -short)")
	}
	n := 0
	for _, c := range typedCases {
		for _, s := range typedSeeds {
			for _, m := range mutations(s) {
				c.check(t, []byte(m), false)
				n++
			}
		}
	}
	assert.Greater(t, n, 1000)
}

// FuzzFastPathMatchesPipeline feeds arguments to the typed and the
// validate-only fast paths of several tools and compares them with the
// full pipeline: whatever the fast path accepts, the pipeline accepts too,
// with the same decoded value and without coercing anything.
func FuzzFastPathMatchesPipeline(f *testing.F) {
	for i, s := range typedSeeds {
		f.Add(uint8(i), []byte(s), false)
		for _, m := range mutations(s)[:min(5, len(mutations(s)))] {
			f.Add(uint8(i), []byte(m), i%2 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte, repair bool) {
		typedCases[int(which)%len(typedCases)].check(t, args, repair)
	})
}

// FuzzFastValidateMatchesPipeline runs arbitrary schemas and values through
// the validate-only fast path: a value it accepts must pass the pipeline
// unchanged.
func FuzzFastValidateMatchesPipeline(f *testing.F) {
	f.Add([]byte(handSchema), []byte(handSeed))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"integer","minimum":1.5}},"additionalProperties":{"enum":[1,"x",null]}}`), []byte(`{"a":2,"b":"x"}`))
	f.Add([]byte(`{"properties":{"a":true},"additionalProperties":{"type":"integer"}}`), []byte(`{"a":"3"}`))
	f.Add([]byte(`{"type":"array","items":{"type":"string","maxLength":2},"uniqueItems":true}`), []byte(`["a","b"]`))
	f.Add([]byte(`{"type":["number","string"],"multipleOf":3,"pattern":"a"}`), []byte(`9`))
	f.Add([]byte(coerceSchema), []byte(`{"i":3,"arr":[1]}`))
	f.Add([]byte(validateSchema), []byte(`{"query":"x"}`))
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		sch, err := CompileSchema(schema)
		if err != nil {
			return
		}
		plan := sch.validatePlan()
		if v, err := Parse(value); err == nil && plan != nil {
			v, _ = sch.Coerce(v)
			if plan.validValue(v, 0) {
				require.NoError(t, sch.validator.Validate(v), "Validate's shortcut accepted %q for %s, which the validator refuses", value, schema)
			}
		}
		if plan == nil || !fastDecode(plan, value, reflect.Value{}) {
			return
		}
		a, aerr := Full(value, sch, nil, false, false)
		requireValidatorAccepts(t, sch, value)
		if aerr != nil {
			t.Fatalf("the fast path accepted %q for %s, which the pipeline refuses: %v", value, schema, aerr)
		}
		if len(bytes.TrimSpace(value)) > 0 && !bytes.Equal(a.Raw, value) {
			t.Fatalf("the fast path accepted %q for %s, which coercion changes to %s", value, schema, a.Raw)
		}
	})
}

// TestFastPlanKnowsEveryKeyword guards the plan builder against a new
// version of the validator: every exported field of its compiled schema
// must be one the builder checks, refuses or knows to be harmless. A field
// missing from this list means a keyword the fast path might overlook.
func TestFastPlanKnowsEveryKeyword(t *testing.T) {
	known := map[string]string{
		"Location": "harmless", "Draft": "harmless", "Always": "checked",
		"Format": "checked", "Ref": "refused", "RecursiveAnchor": "harmless", "RecursiveRef": "refused",
		"DynamicAnchor": "harmless", "DynamicRef": "refused",
		"Types": "checked", "Constant": "checked", "Enum": "checked", "Not": "refused",
		"AllOf": "refused", "AnyOf": "refused", "OneOf": "refused", "If": "refused",
		"Then": "refused", "Else": "refused",
		"MinProperties": "refused", "MaxProperties": "refused", "Required": "checked",
		"Properties": "checked", "PropertyNames": "refused", "RegexProperties": "refused",
		"PatternProperties": "refused", "AdditionalProperties": "checked", "Dependencies": "refused",
		"DependentRequired": "refused", "DependentSchemas": "refused", "UnevaluatedProperties": "refused",
		"MinItems": "checked", "MaxItems": "checked", "UniqueItems": "checked", "Items": "checked",
		"AdditionalItems": "refused", "PrefixItems": "refused", "Items2020": "checked",
		"Contains": "refused", "ContainsEval": "refused with contains", "MinContains": "refused with contains",
		"MaxContains": "refused with contains", "UnevaluatedItems": "refused",
		"MinLength": "checked", "MaxLength": "checked", "Pattern": "checked",
		"ContentEncoding": "annotation", "ContentMediaType": "annotation", "ContentSchema": "refused",
		"Minimum": "checked", "ExclusiveMinimum": "checked", "Maximum": "checked",
		"ExclusiveMaximum": "checked", "MultipleOf": "checked",
		"Title": "annotation", "Description": "annotation", "Default": "annotation",
		"Comment": "annotation", "ReadOnly": "annotation", "WriteOnly": "annotation",
		"Examples": "annotation", "Deprecated": "annotation", "Extensions": "refused",
	}
	st := reflect.TypeFor[jsonschema.Schema]()
	for i := range st.NumField() {
		if f := st.Field(i); f.IsExported() {
			assert.Contains(t, known, f.Name, "the validator has a schema field the fast path does not know")
		}
	}
}

func TestFlatPlanIsBuiltForScalarStructsOnly(t *testing.T) {
	flat := mustPlan[flatArgs]("")
	require.NotNil(t, flat.fast)
	assert.NotNil(t, flat.fast.flat, "every field is a scalar stored by value")
	for name, plan := range map[string]*fastNode{
		"a slice field":        mustPlan[benchArgs]("").fast,
		"pointers and more":    mustPlan[shapeArgs]("").fast,
		"a pointer to structs": mustPlan[*flatArgs]("").fast,
		"a time field":         mustPlan[timeArgs]("").fast,
	} {
		if plan != nil {
			assert.Nil(t, plan.flat, name)
		}
	}
}

// TestFlatArgumentsStayOnTheStack checks that decoding into a flat struct
// allocates only the copy of the text that the strings share.
func TestFlatArgumentsStayOnTheStack(t *testing.T) {
	flat := mustPlan[flatArgs]("")
	args := []byte(`{"id":7,"s":"x","i":-3,"f64":2.5,"level":"high"}`)
	var got flatArgs
	allocs := testing.AllocsPerRun(100, func() {
		var ok bool
		got, ok = fastArguments[flatArgs](flat.fast, args)
		if !ok {
			t.Fatal("declined")
		}
	})
	assert.Equal(t, flatArgs{flatBase: flatBase{ID: 7}, S: "x", I: -3, F64: 2.5, Level: "high"}, got)
	assert.Equal(t, 1.0, allocs)
}

// TestFlatPlanAtTheEdgesOfEachKind runs the values at and past the limits
// of every numeric kind through the flat plan, the typed plan and the
// pipeline (see typedCase), one field at a time.
func TestFlatPlanAtTheEdgesOfEachKind(t *testing.T) {
	var flat typedCase
	for _, c := range typedCases {
		if c.name == "flat" {
			flat = c
		}
	}
	limits := []string{
		"-9223372036854775809", "-9223372036854775808", "-2147483649", "-2147483648", "-32769", "-32768",
		"-129", "-128", "-1", "-0", "0", "1", "127", "128", "255", "256", "32767", "32768", "65535", "65536",
		"2147483647", "2147483648", "4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
		"18446744073709551615", "18446744073709551616", "1.5", "1e2", "1E-2", "3.4028234663852886e38",
		"3.5e38", "1e39", "1e400", "-1e400", "5e-324", "1e-400",
	}
	accepted := 0
	for _, field := range []string{"i", "i8", "i16", "i32", "i64", "u", "u8", "u16", "u32", "u64", "f32", "f64", "limit"} {
		for _, lit := range limits {
			if flat.check(t, []byte(`{"id":1,"s":"x","`+field+`":`+lit+`}`), false) {
				accepted++
			}
		}
	}
	assert.Greater(t, accepted, 100)
}

// oneString has a single string field: its flat plan reads the text in
// place and copies the one string alone.
type oneString struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
	Exact bool   `json:"exact,omitempty"`
}

// noString has no string field: decoding it allocates nothing.
type noString struct {
	Limit int     `json:"limit"`
	Ratio float64 `json:"ratio,omitempty"`
}

func TestFlatPlanCopiesALoneStringOnly(t *testing.T) {
	one := mustPlan[oneString]("")
	require.NotNil(t, one.fast.flat)
	require.True(t, one.fast.flat.inPlace)
	none := mustPlan[noString]("")
	require.True(t, none.fast.flat.inPlace)
	require.False(t, mustPlan[flatArgs]("").fast.flat.inPlace)

	for _, c := range []struct {
		args   string
		want   oneString
		allocs float64
	}{
		{`{"query":"weather in Oslo","limit":3}`, oneString{Query: "weather in Oslo", Limit: 3}, 1},
		{`{"query":"","exact":true}`, oneString{Exact: true}, 0},
		{`{"query":"caf\u00e9 \"x\""}`, oneString{Query: `café "x"`}, 1}, // unescaped into a string of its own
		{`{"query":"Zürich"}`, oneString{Query: "Zürich"}, 1},
	} {
		raw := []byte(c.args)
		var got oneString
		allocs := testing.AllocsPerRun(20, func() {
			var ok bool
			got, ok = fastArguments[oneString](one.fast, raw)
			if !ok {
				t.Fatalf("%s declined", c.args)
			}
		})
		assert.Equal(t, c.want, got)
		assert.Equal(t, c.allocs, allocs, c.args)
		// The string stored does not share the caller's bytes.
		for i := range raw {
			raw[i] = 'X'
		}
		assert.Equal(t, c.want, got, "after the arguments' bytes changed")
	}

	raw := []byte(`{"limit":7,"ratio":0.5}`)
	allocs := testing.AllocsPerRun(20, func() {
		if got, ok := fastArguments[noString](none.fast, raw); !ok || got.Limit != 7 {
			t.Fatal(got, ok)
		}
	})
	assert.Equal(t, 0.0, allocs)
}

func TestFlatPlanReadsSharedArgumentsInPlace(t *testing.T) {
	one, several := mustPlan[oneString](""), mustPlan[flatArgs]("")
	for _, c := range []struct {
		name string
		raw  []byte
		read func(raw []byte) (string, bool)
	}{
		{"one string", []byte(`{"query":"weather in Oslo","limit":3}`), func(raw []byte) (string, bool) {
			got, ok := FastShared[oneString](one, raw, true)
			return got.Query, ok
		}},
		{"several strings", []byte(`{"id":1,"s":"weather in Oslo","level":"high"}`), func(raw []byte) (string, bool) {
			got, ok := FastShared[flatArgs](several, raw, true)
			return got.S, ok
		}},
	} {
		var got string
		allocs := testing.AllocsPerRun(20, func() {
			var ok bool
			if got, ok = c.read(c.raw); !ok {
				t.Fatalf("%s: declined", c.name)
			}
		})
		assert.Equal(t, "weather in Oslo", got, c.name)
		assert.Zero(t, allocs, c.name)
		off := uintptr(unsafe.Pointer(unsafe.StringData(got))) - uintptr(unsafe.Pointer(unsafe.SliceData(c.raw)))
		assert.Less(t, off, uintptr(len(c.raw)), "%s: the string shares the arguments' memory", c.name)
	}
}
