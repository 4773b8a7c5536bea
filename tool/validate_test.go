package tool

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const validateSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 2, "maxLength": 5},
    "limit": {"type": "integer", "minimum": 1, "maximum": 10},
    "mode": {"type": "string", "enum": ["fast", "slow"]},
    "ratio": {"type": "number", "exclusiveMaximum": 1},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": true},
    "when": {"type": "string", "format": "date-time"},
    "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "odd key": {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": false}
  },
  "required": ["query", "limit"],
  "additionalProperties": false
}`

func TestValidateListsEveryBadField(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(validateSchema))
	v, err := Parse([]byte(`{"query":"x","mode":"medium","ratio":1,"tags":["a","a","b"],"when":"yesterday","code":"ab","odd key":{"x":1.5,"y":2},"extra":true}`))
	require.NoError(t, err)
	err = s.Validate(v)
	var aerr *ArgumentError
	require.ErrorAs(t, err, &aerr)
	require.ErrorIs(t, err, ErrInvalidArguments)
	var paths []string
	for _, f := range aerr.Fields {
		paths = append(paths, f.Path)
	}
	assert.IsNonDecreasing(t, paths, "fields come in path order")
	assert.ElementsMatch(t, []FieldError{
		{`$.code`, `must match the pattern ^[A-Z]{3}$, got "ab"`},
		{`$.extra`, `unknown property (allowed: code, limit, mode, odd key, query, ratio, tags, when)`},
		{`$.limit`, `required property is missing`},
		{`$.mode`, `must be one of "fast", "slow", got "medium"`},
		{`$["odd key"].x`, `expected integer, got number 1.5`},
		{`$["odd key"].y`, `unknown property (allowed: x)`},
		{`$.query`, `must be at least 2 characters long, got 1`},
		{`$.ratio`, `must be < 1, got 1`},
		{`$.tags`, `must have at most 2 items, got 3`},
		{`$.tags`, `items must be unique, but items 0 and 1 are equal`},
		{`$.when`, `must be a valid date-time, got "yesterday"`},
	}, aerr.Fields)
}

func TestValidateNamesOneBrokenConstraintPerField(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(validateSchema))
	cases := map[string]struct{ path, msg string }{
		`{"query":"abcdef","limit":1}`:              {"$.query", "must be at most 5 characters long, got 6"},
		`{"query":"ab","limit":0}`:                  {"$.limit", "must be >= 1, got 0"},
		`{"query":"ab","limit":11}`:                 {"$.limit", "must be <= 10, got 11"},
		`{"query":"ab","limit":"many"}`:             {"$.limit", `expected integer, got string "many"`},
		`{"query":"ab","limit":1,"tags":["a","a"]}`: {"$.tags", "items must be unique, but items 0 and 1 are equal"},
		`{"query":"ab","limit":1,"tags":[1]}`:       {"$.tags[0]", "expected string, got number 1"},
		`[1,2]`:                                     {"$", "expected object, got array [1,2]"},
		`null`:                                      {"$", "expected object, got null"},
		`{"query":null,"limit":1}`:                  {"$.query", "expected string, got null"},
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			v, err := Parse([]byte(in))
			require.NoError(t, err)
			var aerr *ArgumentError
			require.ErrorAs(t, s.Validate(v), &aerr)
			require.Len(t, aerr.Fields, 1, "%v", aerr.Fields)
			assert.Equal(t, want.path, aerr.Fields[0].Path)
			assert.Equal(t, want.msg, aerr.Fields[0].Message)
		})
	}
}

func TestValidateAlternatives(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(`{"type":"object","properties":{"v":{"oneOf":[{"type":"integer"},{"type":"string","minLength":3}]}}}`))
	v, err := Parse([]byte(`{"v":"ab"}`))
	require.NoError(t, err)
	var aerr *ArgumentError
	require.ErrorAs(t, s.Validate(v), &aerr)
	require.Len(t, aerr.Fields, 1)
	assert.Equal(t, "$.v", aerr.Fields[0].Path)
	assert.Contains(t, aerr.Fields[0].Message, "matches none of the allowed alternatives")
	assert.Contains(t, aerr.Fields[0].Message, "expected integer")
	assert.Contains(t, aerr.Fields[0].Message, "at least 3 characters")
}

func TestValidateAcceptsGoodArguments(t *testing.T) {
	s := MustCompileSchema(json.RawMessage(validateSchema))
	v, err := Parse([]byte(`{"query":"abc","limit":3,"mode":"fast","ratio":0.5,"tags":["a"],"when":"2024-05-01T10:00:00Z","code":"ABC","odd key":{"x":2}}`))
	require.NoError(t, err)
	assert.NoError(t, s.Validate(v))
}

func TestCompileSchemaErrors(t *testing.T) {
	cases := map[string]string{
		"empty":            ``,
		"not JSON":         `{"type":`,
		"bad keyword type": `{"type":"object","properties":{"a":{"type":"strung"}}}`,
		"bad minimum":      `{"type":"integer","minimum":"one"}`,
		"remote ref":       `{"$ref":"https://example.com/schema.json"}`,
		"file ref":         `{"$ref":"other.json"}`,
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CompileSchema(json.RawMessage(raw))
			assert.ErrorIs(t, err, ErrInvalidSchema)
		})
	}
	// Local references and older drafts are fine.
	_, err := CompileSchema(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/definitions/a"}}}`))
	assert.NoError(t, err)
}

func TestArgumentErrorText(t *testing.T) {
	e := &ArgumentError{
		Tool:     "search",
		Fields:   []FieldError{{Path: "$.limit", Message: "must be >= 1, got 0"}, {Path: "$.query", Message: "required property is missing"}},
		Received: `{"limit":0}`,
	}
	assert.Equal(t, "invalid arguments for tool \"search\":\n- $.limit: must be >= 1, got 0\n- $.query: required property is missing\narguments received: {\"limit\":0}", e.Error())
	assert.ErrorIs(t, e, ErrInvalidArguments)
}

func TestArgumentErrorUnwrap(t *testing.T) {
	cause := errors.New("bad byte")
	e := &ArgumentError{Fields: []FieldError{{Path: "$", Message: "not JSON"}}, Cause: cause}
	assert.ErrorIs(t, e, cause)
	assert.Equal(t, "invalid arguments:\n- $: not JSON", e.Error())
}
