package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/internal/arguments"
)

type fuzzNested struct {
	Name  string            `json:"name" jsonschema:"minLength=1"`
	Score float32           `json:"score,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
}

type fuzzArgs struct {
	Query string       `json:"query" jsonschema:"maxLength=40"`
	Limit int8         `json:"limit,omitempty" jsonschema:"minimum=-5,maximum=100"`
	Count uint16       `json:"count,omitempty"`
	Big   int64        `json:"big,omitempty"`
	Ratio float64      `json:"ratio,omitempty"`
	On    *bool        `json:"on"`
	Mode  string       `json:"mode,omitempty" jsonschema:"enum=a,enum=b"`
	Tags  []string     `json:"tags,omitempty" jsonschema:"maxItems=4"`
	Pair  [2]int       `json:"pair,omitempty"`
	Items []fuzzNested `json:"items,omitempty"`
	Blob  []byte       `json:"blob,omitempty"`
	When  *time.Time   `json:"when,omitempty"`
	Free  any          `json:"free,omitempty"`
	Extra fuzzNested   `json:"extra"`
}

var argumentSeeds = []string{
	`{"query":"x","extra":{"name":"n"}}`,
	`{"query":"x","limit":"7","count":"65535","big":"9007199254740993","ratio":"1e-3","on":"TRUE","extra":{"name":5}}`,
	`{"query":12,"tags":"[\"a\",\"b\"]","items":[{"name":"i","score":"2.5"}],"extra":{"name":"n","attrs":{"k":1}}}`,
	`{"query":"x","pair":[1,2,3],"blob":"aGk=","when":"2024-01-01T00:00:00Z","free":{"x":[1,{}]},"extra":{"name":"n"}}`,
	`{"query":"x","limit":1000,"count":-1,"mode":"c","extra":{}}`,
	`{"query":"x","big":1e300,"extra":{"name":"n"},"on":null,"mode":null}`,
	`{"query":"x","count":1.5,"extra":{"name":"n"}}`,
	`{"query":"x","ratio":1e400,"extra":{"name":"n"}}`,
	`{"extra":"{\"name\":\"from string\"}","query":"q"}`,
	`[]`, `null`, `"str"`, `{`, ``,
}

// FuzzArguments runs model-shaped arguments through coercion, validation
// and decoding. Nothing may panic, and whatever passes validation must
// decode without error (the derived schema and the decoder agree), except
// for numbers beyond the range of their Go type, which the schema does not
// bound, and text of a []byte field that is not base64, which the schema
// states (contentEncoding) but validation, as JSON Schema defines it, does
// not assert: the decoder reports both as argument errors.
func FuzzArguments(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{'query': 'x', extra: {name: 'n'},}`), true)
	raw, err := SchemaFor[fuzzArgs]()
	if err != nil {
		f.Fatal(err)
	}
	sch, err := CompileSchema(raw)
	if err != nil {
		f.Fatal(err)
	}
	plan := arguments.Compile(sch.c, reflect.TypeFor[fuzzArgs](), nil)
	f.Fuzz(func(t *testing.T, in []byte, repair bool) {
		a, aerr := runArguments("fuzz", in, sch, nil, repair, true)
		if aerr != nil {
			if len(aerr.Fields) == 0 {
				t.Fatalf("argument error without fields for %q", in)
			}
			if aerr.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		_, errs := arguments.Value[fuzzArgs](plan, a.Value)
		for _, e := range fieldsOf(errs) {
			if !strings.Contains(e.Message, "range") && !strings.Contains(e.Message, "base64") {
				b, _ := json.Marshal(a.Value)
				t.Fatalf("validated arguments %s (from %q) failed to decode: %v", b, in, errs)
			}
		}
	})
}

// FuzzCompileSchema feeds arbitrary schemas to CompileSchema: it must
// compile or refuse, never panic, and a compiled schema must coerce and
// validate a value without panicking.
func FuzzCompileSchema(f *testing.F) {
	f.Add([]byte(coerceSchema), []byte(`{"i":"3","arr":["1"]}`))
	f.Add([]byte(validateSchema), []byte(`{"query":"x"}`))
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{}`))
	f.Add([]byte(`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`), []byte(`1`))
	f.Add([]byte(`{"anyOf":[{"type":"object","properties":{"a":{"$ref":"#"}}},{"type":"array","items":{"$ref":"#"}}]}`), []byte(`{"a":[{"a":"1"}]}`))
	f.Add([]byte(`{"items":[{"type":"integer"}],"type":"array"}`), []byte(`["1"]`))
	f.Add([]byte(`{"propertyNames":{"maxLength":2},"dependentRequired":{"a":["b"]},"properties":{"x":false},"unevaluatedProperties":false}`), []byte(`{"a":1,"x":2,"long":3}`))
	f.Add([]byte(`{"contains":{"const":1},"maxContains":1,"prefixItems":[true],"items":false,"not":{"maxItems":0}}`), []byte(`[1,1,2]`))
	f.Add([]byte(`{"oneOf":[{"minimum":0},{"multipleOf":2}],"maxLength":1e19}`), []byte(`4`))
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		s, err := CompileSchema(schema)
		if err != nil {
			return
		}
		v, err := Parse(value)
		if err != nil {
			return
		}
		v, _ = s.Coerce(v)
		_ = s.Validate(v)
	})
}

// FuzzPreparedArgumentsAreFinal checks what permission checks rely on:
// the arguments Prepare returns are final — preparing them again gives
// the same bytes, and the tool decodes from them the value it decodes from
// the arguments as received — so a check of them judges what the tool runs
// with.
func FuzzPreparedArgumentsAreFinal(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{'query': 'x', extra: {name: 'n'},}`), true)
	f.Add([]byte("```json\n{\"query\":\"x\",\"limit\":\"3\",\"extra\":{\"name\":\"n\"}}\n```"), true)
	f.Add([]byte(`{"query":"x","extra":{"name":"n"`), true)
	var got fuzzArgs
	tl := MustFunc("fuzz", "", func(_ context.Context, in fuzzArgs) (string, error) {
		got = in
		return "", nil
	})
	f.Fuzz(func(t *testing.T, in []byte, repair bool) {
		iv := NewInvoker(WithJSONRepair(repair))
		call := model.ToolCall{ID: "1", Name: "fuzz", Arguments: in}
		prepared, _, ok := iv.Prepare(tl, call)
		if !ok {
			return
		}
		again, _, ok := NewInvoker().Prepare(tl, prepared)
		if !ok || !bytes.Equal(again.Arguments, prepared.Arguments) {
			t.Fatalf("prepared %q (from %q) is not final: %q, %v", prepared.Arguments, in, again.Arguments, ok)
		}
		got = fuzzArgs{}
		r1 := iv.Invoke(context.Background(), tl, call)
		want := got
		got = fuzzArgs{}
		r2 := NewInvoker().Invoke(context.Background(), tl, prepared)
		if r1.IsError != r2.IsError || !reflect.DeepEqual(want, got) {
			t.Fatalf("the tool ran differently on %q and on its prepared form %q: %v %+v / %v %+v",
				in, prepared.Arguments, r1.IsError, want, r2.IsError, got)
		}
	})
}

// fieldsOf returns the problems err lists, none when it is nil.
func fieldsOf(err *arguments.Error) []arguments.FieldError {
	if err == nil {
		return nil
	}
	return err.Fields
}
