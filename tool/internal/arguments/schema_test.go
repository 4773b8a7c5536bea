package arguments

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateWordsEveryKeyword checks the message of each keyword family
// the model can meet: the validator's errors carry only a location and a
// text, and Validate reads what failed from the compiled schema.
func TestValidateWordsEveryKeyword(t *testing.T) {
	const draft7 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	cases := []struct {
		name, schema, value string
		want                []FieldError
	}{
		{"property names", `{"propertyNames":{"maxLength":3}}`, `{"abcd":1,"ok":2}`,
			[]FieldError{{"$.abcd", "invalid property name: must be at most 3 characters long, got 4"}}},
		{"dependent required", `{"dependentRequired":{"a":["b","c"]}}`, `{"a":1}`,
			[]FieldError{{"$.b", `required property is missing (required when "a" is present)`}, {"$.c", `required property is missing (required when "a" is present)`}}},
		{"dependencies of draft 7", `{` + draft7 + `"dependencies":{"a":["b"]}}`, `{"a":1}`,
			[]FieldError{{"$.b", `required property is missing (required when "a" is present)`}}},
		{"dependent schemas", `{"dependentSchemas":{"a":{"required":["z"]}}}`, `{"a":1}`,
			[]FieldError{{"$.z", "required property is missing"}}},
		{"a false property", `{"properties":{"x":false}}`, `{"x":1}`,
			[]FieldError{{"$.x", "property not allowed"}}},
		{"pattern properties are declared", `{"properties":{"x":{"type":"integer"}},"patternProperties":{"^p":{}},"additionalProperties":false}`, `{"x":1,"pq":2,"zz":3}`,
			[]FieldError{{"$.zz", "unknown property (allowed: x)"}}},
		{"unevaluated properties", `{"allOf":[{"properties":{"x":true}}],"unevaluatedProperties":false}`, `{"x":1,"y":2}`,
			[]FieldError{{"$.y", "unknown property"}}},
		{"items false after prefixItems", `{"prefixItems":[{"type":"integer"}],"items":false}`, `[1,2]`,
			[]FieldError{{"$[1]", "not allowed here"}}},
		{"additional items of draft 7", `{` + draft7 + `"items":[{"type":"integer"}],"additionalItems":false}`, `[1,2]`,
			[]FieldError{{"$", "must have at most 1 items, got 2"}}},
		{"one of, two match", `{"oneOf":[{"type":"integer"},{"minimum":0}]}`, `3`,
			[]FieldError{{"$", "matches more than one of the alternatives (0 and 1), and must match exactly one"}}},
		{"any of, none matches", `{"anyOf":[{"type":"integer"},{"type":"string"}]}`, `true`,
			[]FieldError{{"$", "matches none of the allowed alternatives ($: expected integer, got boolean true; or $: expected string, got boolean true)"}}},
		{"not", `{"not":{"type":"string"}}`, `"x"`,
			[]FieldError{{"$", `matches the schema under "not", which it must not match`}}},
		{"contains", `{"contains":{"type":"integer"},"minContains":2}`, `[1,"a"]`,
			[]FieldError{{"$", `must have at least 2 items matching the "contains" schema, got 1`}}},
		{"max contains", `{"contains":{"type":"integer"},"maxContains":1}`, `[1,2]`,
			[]FieldError{{"$", `must have at most 1 items matching the "contains" schema, got 2`}}},
		{"const", `{"const":{"a":1}}`, `{"a":2}`, []FieldError{{"$", `must be {"a":1}, got {"a":2}`}}},
		{"enum", `{"enum":[1,"a",null]}`, `2`, []FieldError{{"$", `must be one of 1, "a", null, got 2`}}},
		{"min properties", `{"minProperties":2}`, `{"a":1}`, []FieldError{{"$", "must have at least 2 properties, got 1"}}},
		{"max properties", `{"maxProperties":1}`, `{"a":1,"b":2}`, []FieldError{{"$", "must have at most 1 properties, got 2"}}},
		{"multiple of", `{"multipleOf":0.5}`, `0.7`, []FieldError{{"$", "must be a multiple of 0.5, got 0.7"}}},
		{"exclusive minimum", `{"exclusiveMinimum":0}`, `0`, []FieldError{{"$", "must be > 0, got 0"}}},
		{"exclusive maximum of draft 4", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":5,"exclusiveMaximum":true}`, `5`,
			[]FieldError{{"$", "must be < 5, got 5"}}},
		{"exact bounds", `{"maximum":9007199254740993}`, `9007199254740994`,
			[]FieldError{{"$", "must be <= 9007199254740993, got 9007199254740994"}}},
		{"semver", `{"format":"semver"}`, `"1.0"`, []FieldError{{"$", `must be a valid semver, got "1.0"`}}},
		{"if then else", `{"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]},"else":{"required":["c"]}}`, `{"a":2}`,
			[]FieldError{{"$.c", "required property is missing"}}},
		{"escaped names through a reference", `{"$defs":{"n":{"type":"integer"}},"properties":{"a/b~c d%":{"$ref":"#/$defs/n"}}}`, `{"a/b~c d%":"x"}`,
			[]FieldError{{`$["a/b~c d%"]`, `expected integer, got string "x"`}}},
		{"recursion", `{"$ref":"#/$defs/r","$defs":{"r":{"type":"object","properties":{"next":{"$ref":"#/$defs/r"},"v":{"type":"integer"}}}}}`, `{"next":{"next":{"v":"s"}}}`,
			[]FieldError{{"$.next.next.v", `expected integer, got string "s"`}}},
		{"unique by value", `{"uniqueItems":true}`, `[1,2,1.0]`, []FieldError{{"$", "items must be unique, but items 0 and 2 are equal"}}},
		{"a false schema", `false`, `1`, []FieldError{{"$", "not allowed here"}}},
		{"an empty enum", `{"properties":{"e":{"enum":[]}}}`, `{"e":1}`, []FieldError{{"$.e", "no value is allowed (the enum is empty), got 1"}}},
		{"draft 3 format names are annotations", `{"properties":{"a":{"format":"ip-address"},"b":{"format":"uriref"}},"required":["c"]}`, `{"a":"x","b":"\\"}`,
			[]FieldError{{"$.c", "required property is missing"}}},
		{"a count beyond an int", `{"properties":{"a":{"maxLength":1e19},"b":{"minItems":1e400}}}`, `{"a":"x","b":[1]}`,
			[]FieldError{{"$.b", "must have at least 9223372036854775807 items, got 1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := CompileSchema(json.RawMessage(c.schema))
			require.NoError(t, err)
			v, err := Parse([]byte(c.value))
			require.NoError(t, err)
			verr := s.Validate(v)
			require.NotNil(t, verr)
			assert.Equal(t, c.want, verr.Fields)
		})
	}
}

func TestCompileSchemaRefusesWhatItCannotRun(t *testing.T) {
	for name, raw := range map[string]string{
		"a pattern Go cannot run":     `{"pattern":"(?<=a)"}`,
		"a bad pattern property":      `{"patternProperties":{"(":{}}}`,
		"an unknown meta-schema":      `{"$schema":"https://example.com/x"}`,
		"data after the schema":       `{"type":"object"} x`,
		"a reference to another file": `{"properties":{"a":{"$ref":"other.json#/a"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CompileSchema(json.RawMessage(raw))
			assert.ErrorIs(t, err, ErrInvalidSchema)
		})
	}
}

func TestSemverFormat(t *testing.T) {
	for v, want := range map[any]bool{
		"1.2.3": true, "0.0.0": true, "1.2.3-alpha.1": true, "1.2.3-0a.x-y": true, "1.2.3+build.007": true,
		"1.2.3-rc.1+b": true, "10.20.30": true, 3: true, nil: true,
		"1.2": false, "01.2.3": false, "1.2.3-01": false, "1.2.3-": false, "1.2.3+": false,
		"1.2.3-a..b": false, "1.2.3-a_b": false, "v1.2.3": false, "1.2.3.4": false, "": false,
	} {
		assert.Equal(t, want, isSemver(v), "%v", v)
	}
}

// TestFastPlanChecksFormatsWithTheValidatorsFunction: the fast path must
// refuse exactly what the validator refuses, so it uses the function the
// validator was compiled with.
func TestFastPlanChecksFormatsWithTheValidatorsFunction(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(`{"type":"object","properties":{"v":{"type":"string","format":"semver"},"w":{"type":"string","format":"no-such-format"}}}`))
	plan := s.validatePlan()
	require.NotNil(t, plan)
	v := plan.props[plan.lookup("v")].node
	require.NotNil(t, v.format)
	assert.Equal(t, reflect.ValueOf(isSemver).Pointer(), reflect.ValueOf(v.format).Pointer())
	assert.Nil(t, plan.props[plan.lookup("w")].node.format, "an unknown format is not asserted, by either")
	for value, ok := range map[string]bool{`{"v":"1.2.3","w":"x"}`: true, `{"v":"1.2"}`: false} {
		_, aerr := Check([]byte(value), s, nil, false, false)
		assert.Equal(t, ok, aerr == nil, value)
	}
}

// TestValidateShortcutAgreesWithTheValidator runs the arguments of the
// fast path's tests, and their mutations, through Validate's shortcut and
// the validator, coerced as the pipeline coerces them: what the shortcut
// accepts, the validator accepts.
func TestValidateShortcutAgreesWithTheValidator(t *testing.T) {
	accepted, refused := 0, 0
	for _, c := range typedCases {
		sch := c.schema
		plan := sch.validatePlan()
		if plan == nil {
			continue
		}
		for _, seed := range typedSeeds {
			muts := mutations(seed)
			if testing.Short() {
				muts = muts[:min(len(muts), 3)]
			}
			for _, args := range append([]string{seed}, muts...) {
				v, err := Parse([]byte(args))
				if err != nil {
					continue
				}
				v, _ = sch.Coerce(v)
				verr := sch.validator.Validate(v)
				if plan.validValue(v, 0) {
					require.NoError(t, verr, "%s: the shortcut accepted %s, which the validator refuses", c.name, args)
					accepted++
				} else if verr != nil {
					refused++
				}
			}
		}
	}
	assert.Greater(t, accepted, 40, "the shortcut is not vacuous")
	assert.Greater(t, refused, 40)
}
