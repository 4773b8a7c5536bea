package arguments

import (
	"encoding/json"
	"time"
)

// Argument types and schemas shared with package tool's tests.

// benchArgs is the five-field struct of the pipeline benchmarks: one field
// of each JSON type, described but not constrained.
type benchArgs struct {
	Query  string   `json:"query" jsonschema:"description=What to search for"`
	Limit  int      `json:"limit" jsonschema:"description=How many results"`
	Exact  bool     `json:"exact" jsonschema:"description=Match the whole phrase"`
	Weight float64  `json:"weight" jsonschema:"description=Relevance weight"`
	Tags   []string `json:"tags" jsonschema:"description=Tags to filter by"`
}

// constrainedArgs is benchArgs with the constraints a real tool often has;
// each constraint is one more check for the validator.
type constrainedArgs struct {
	Query  string   `json:"query" jsonschema:"description=What to search for,minLength=1,maxLength=200"`
	Limit  int      `json:"limit" jsonschema:"description=How many results,minimum=1,maximum=100"`
	Exact  bool     `json:"exact" jsonschema:"description=Match the whole phrase"`
	Weight float64  `json:"weight" jsonschema:"description=Relevance weight,minimum=0,maximum=1"`
	Tags   []string `json:"tags" jsonschema:"description=Tags to filter by,maxItems=10"`
}

var benchRaw = json.RawMessage(`{"query":"weather in Berlin","limit":10,"exact":true,"weight":0.75,"tags":["news","weather","europe"]}`)

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

type searchArgs struct {
	Query string   `json:"query" jsonschema:"minLength=1"`
	Limit int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50"`
	Tags  []string `json:"tags,omitempty"`
}

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
