package arguments

import (
	"encoding/json"
	"reflect"
)

// mustCompileSchema compiles a schema written into a test.
func mustCompileSchema(raw json.RawMessage) *Schema {
	s, err := CompileSchema(raw)
	if err != nil {
		panic(err)
	}
	return s
}

// planFor compiles the plan of a tool whose arguments are a T, with the
// schema given, or derived from T when it is "" (as package tool does).
func planFor[T any](schema string) (*Plan, error) {
	raw := json.RawMessage(schema)
	if schema == "" {
		var err error
		if raw, err = DeriveObject(reflect.TypeFor[T]()); err != nil {
			return nil, err
		}
	}
	s, err := CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	return Compile(s, reflect.TypeFor[T](), nil), nil
}

// mustPlan is planFor that panics on error.
func mustPlan[T any](schema string) *Plan {
	p, err := planFor[T](schema)
	if err != nil {
		panic(err)
	}
	return p
}

// fastArguments is Fast over the one-pass plan root.
func fastArguments[T any](root *fastNode, raw json.RawMessage) (T, bool) {
	return Fast[T](&Plan{fast: root}, raw)
}
