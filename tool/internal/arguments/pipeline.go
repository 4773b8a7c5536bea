package arguments

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Prepare is a tool's PrepareArguments hook: it rewrites the raw
// argument object before coercion and validation.
type Prepare func(map[string]any) map[string]any

// Arguments is the outcome of the argument pipeline.
type Arguments struct {
	// Value is the decoded, coerced, validated arguments (when parsed).
	Value any
	// Raw is JSON text equal to Value, or to the arguments received when
	// nothing had to be parsed.
	Raw json.RawMessage
}

// Check runs the argument pipeline, in order: JSON repair (when
// enabled), parsing, the PrepareArguments hook, coercion toward the schema,
// and validation. It parses only when something needs the decoded value;
// raw is re-encoded only when a step changed the arguments.
//
// When only the text is needed and there is no hook, the schema's fast plan
// checks the text first: arguments it accepts are valid JSON (so repair
// would leave them as they are) that coercion would not change and the
// validator accepts, so they are returned as they came.
func Check(received json.RawMessage, sch *Schema, prepare Prepare, repair, needValue bool) (Arguments, *Error) {
	if sch != nil && prepare == nil && !needValue {
		if plan := sch.validatePlan(); plan != nil && fastDecode(plan, received, reflect.Value{}) {
			// Accepted arguments start with "{" unless blank (read as {}).
			if len(received) == 0 || received[0] != '{' && len(bytes.TrimSpace(received)) == 0 {
				return Arguments{Raw: json.RawMessage("{}")}, nil
			}
			return Arguments{Raw: received}, nil
		}
	}
	return Full(received, sch, prepare, repair, needValue)
}

// Full is Check without the fast path.
func Full(received json.RawMessage, sch *Schema, prepare Prepare, repair, needValue bool) (Arguments, *Error) {
	raw := received
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if repair {
		fixed, err := Repair(raw)
		if err != nil {
			return Arguments{}, fieldError("arguments are not valid JSON and could not be repaired: "+err.Error(), err)
		}
		raw = fixed
	}
	if sch == nil && prepare == nil && !needValue {
		if !json.Valid(raw) {
			_, err := parseJSON(raw)
			return Arguments{}, syntaxError(err)
		}
		return Arguments{Raw: raw}, nil
	}
	v, err := parseJSON(raw)
	if err != nil {
		return Arguments{}, syntaxError(err)
	}
	changed := false
	if prepare != nil {
		if m, ok := v.(map[string]any); ok {
			m = prepare(m)
			if m == nil {
				m = map[string]any{}
			}
			cv, err := canonical(m)
			if err != nil {
				return Arguments{}, fieldError("PrepareArguments produced a value that is not JSON: "+err.Error(), err)
			}
			v, changed = cv, true
		}
	}
	if sch != nil {
		var c bool
		v, c = sch.Coerce(v)
		changed = changed || c
		if err := sch.Validate(v); err != nil {
			return Arguments{}, err
		}
	}
	if changed && !needValue {
		b, err := json.Marshal(v)
		if err != nil {
			return Arguments{}, fieldError(err.Error(), err)
		}
		raw = b
	}
	return Arguments{Value: v, Raw: raw}, nil
}

// syntaxError is the error of arguments that do not parse.
func syntaxError(err error) *Error {
	return fieldError("arguments are not valid JSON: "+err.Error(), err)
}

// fieldError is an error with one problem, at the root of the arguments.
func fieldError(msg string, cause error) *Error {
	return &Error{Fields: []FieldError{{Path: "$", Message: msg}}, Cause: cause}
}

// canonical makes a value that PrepareArguments may have filled with Go
// values (ints, []string, structs) into the form Parse produces. Values
// already in that form are kept as they are.
func canonical(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, json.Number, float64:
		return v, nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		s, _ := numberLiteral(x)
		return json.Number(s), nil
	case map[string]any:
		for k, item := range x {
			c, err := canonical(item)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case []any:
		for i, item := range x {
			c, err := canonical(item)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseJSON(b)
}
