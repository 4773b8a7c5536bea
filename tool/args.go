package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/trellis-go/trellis/model"
)

// prepareFunc is a tool's PrepareArguments hook.
type prepareFunc func(map[string]any) map[string]any

// preparerSource is implemented by this package's tools, which take their
// hook from WithPrepareArguments (nil when there is none).
type preparerSource interface {
	argumentPreparer() prepareFunc
}

// preparerOf returns t's PrepareArguments hook, or nil: the first in t's
// chain of wrappers (see As), whether set with WithPrepareArguments or by
// implementing ArgumentPreparer.
func preparerOf(t Tool) prepareFunc {
	for depth := 0; t != nil && depth < 64; depth++ {
		if p, ok := t.(ArgumentPreparer); ok {
			return p.PrepareArguments
		}
		if s, ok := t.(preparerSource); ok {
			if f := s.argumentPreparer(); f != nil {
				return f
			}
		}
		w, ok := t.(Wrapper)
		if !ok {
			break
		}
		t = w.Unwrap()
	}
	return nil
}

// arguments is the outcome of the argument pipeline.
type arguments struct {
	// value is the decoded, coerced, validated arguments (when parsed).
	value any
	// raw is JSON text equal to value, or to the arguments received when
	// nothing had to be parsed.
	raw json.RawMessage
}

// runArguments runs the argument pipeline, in order: JSON repair (when
// enabled), parsing, the PrepareArguments hook, coercion toward the schema,
// and validation. It parses only when something needs the decoded value;
// raw is re-encoded only when a step changed the arguments.
//
// When only the text is needed and there is no hook, the schema's fast plan
// checks the text first: arguments it accepts are valid JSON (so repair
// would leave them as they are) that coercion would not change and the
// validator accepts, so they are returned as they came.
func runArguments(toolName string, received json.RawMessage, sch *Schema, prepare prepareFunc, repair, needValue bool) (arguments, *ArgumentError) {
	if sch != nil && prepare == nil && !needValue {
		if plan := sch.validatePlan(); plan != nil && fastDecode(plan, received, reflect.Value{}) {
			// Accepted arguments start with "{" unless blank (read as {}).
			if len(received) == 0 || received[0] != '{' && len(bytes.TrimSpace(received)) == 0 {
				return arguments{raw: json.RawMessage("{}")}, nil
			}
			return arguments{raw: received}, nil
		}
	}
	return fullArguments(toolName, received, sch, prepare, repair, needValue)
}

// fullArguments is runArguments without the fast path.
func fullArguments(toolName string, received json.RawMessage, sch *Schema, prepare prepareFunc, repair, needValue bool) (arguments, *ArgumentError) {
	raw := received
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if repair {
		fixed, err := RepairJSON(raw)
		if err != nil {
			return arguments{}, &ArgumentError{
				Tool:     toolName,
				Fields:   []FieldError{{Path: "$", Message: "arguments are not valid JSON and could not be repaired: " + err.Error()}},
				Received: receivedText(received),
				Cause:    err,
			}
		}
		raw = fixed
	}
	if sch == nil && prepare == nil && !needValue {
		if !json.Valid(raw) {
			_, err := parseJSON(raw)
			return arguments{}, syntaxError(toolName, received, err)
		}
		return arguments{raw: raw}, nil
	}
	v, err := parseJSON(raw)
	if err != nil {
		return arguments{}, syntaxError(toolName, received, err)
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
				return arguments{}, &ArgumentError{
					Tool:     toolName,
					Fields:   []FieldError{{Path: "$", Message: "PrepareArguments produced a value that is not JSON: " + err.Error()}},
					Received: receivedText(received),
					Cause:    err,
				}
			}
			v, changed = cv, true
		}
	}
	if sch != nil {
		var c bool
		v, c = sch.Coerce(v)
		changed = changed || c
		if err := sch.Validate(v); err != nil {
			aerr := err.(*ArgumentError)
			aerr.Tool, aerr.Received = toolName, receivedText(received)
			return arguments{}, aerr
		}
	}
	if changed && !needValue {
		b, err := json.Marshal(v)
		if err != nil {
			return arguments{}, &ArgumentError{Tool: toolName, Fields: []FieldError{{Path: "$", Message: err.Error()}}, Received: receivedText(received), Cause: err}
		}
		raw = b
	}
	return arguments{value: v, raw: raw}, nil
}

func syntaxError(toolName string, received json.RawMessage, err error) *ArgumentError {
	return &ArgumentError{
		Tool:     toolName,
		Fields:   []FieldError{{Path: "$", Message: "arguments are not valid JSON: " + err.Error()}},
		Received: receivedText(received),
		Cause:    err,
	}
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

// argumentResult is the error result of arguments that failed the pipeline.
func argumentResult(err *ArgumentError) Result {
	return Result{
		Content:   []model.Part{model.TextPart(err.Error() + "\nThe tool did not run. Correct the arguments and call it again.")},
		Details:   err,
		IsError:   true,
		Status:    StatusFailed,
		ErrorCode: CodeInvalidArguments,
		Err:       err,
	}
}

// describeSchemaError builds the error result of a tool whose own schema
// does not compile.
func schemaErrorResult(toolName string, err error) Result {
	return ErrorResult(CodeInvalidSchema, fmt.Errorf("tool %q cannot run: its input schema is invalid: %w", toolName, err))
}
