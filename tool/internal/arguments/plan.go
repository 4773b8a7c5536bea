package arguments

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Plan checks a tool's arguments against its schema and decodes them into
// values of one Go type. It holds the two ways there are to do it: the
// one-pass plan (see "The fast path" in fastplan.go, with its flat
// shortcut in fastflat.go), which reads the JSON text once and stores the
// values as it checks them, and the full pipeline (parse, prepare, coerce,
// validate, decode) it falls back to. Both give the same value for the
// arguments the one-pass plan accepts. A Plan is safe for concurrent use.
type Plan struct {
	schema  *Schema
	typ     reflect.Type
	prepare Prepare
	decode  decodeFunc
	fast    *fastNode // nil when every call takes the full pipeline
}

// Compile builds the plan that checks arguments against s and decodes them
// into values of type t. With a prepare hook every call takes the full
// pipeline, which runs the hook.
func Compile(s *Schema, t reflect.Type, prepare Prepare) *Plan {
	p := &Plan{schema: s, typ: t, prepare: prepare, decode: newDecoder(t)}
	if prepare == nil {
		p.fast = newTypedPlan(s, t)
	}
	return p
}

// Schema returns the schema the plan checks.
func (p *Plan) Schema() *Schema { return p.schema }

// Decode checks raw and decodes it into dst, a pointer to a value of the
// plan's type: in one pass when the one-pass plan accepts it, else through
// the full pipeline (without JSON repair). It returns nil or an *Error
// that lists every problem.
func (p *Plan) Decode(raw json.RawMessage, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem() != p.typ {
		return fmt.Errorf("arguments: Decode needs a non-nil *%s, got %T", p.typ, dst)
	}
	if p.fast != nil {
		if fastDecode(p.fast, raw, v.Elem()) {
			return nil
		}
		// The plan may have stored part of the value before it declined.
		v.Elem().SetZero()
	}
	a, err := Full(raw, p.schema, p.prepare, false, true)
	if err != nil {
		return err
	}
	if err := p.DecodeValue(a.Value, dst); err != nil {
		return err
	}
	return nil
}

// DecodeValue decodes v, arguments that passed the pipeline (as Check
// returns them), into dst, a pointer to a value of the plan's type. It
// returns nil or an *Error with every value that does not fit.
func (p *Plan) DecodeValue(v any, dst any) *Error {
	errs := decodeInto(p.decode, v, reflect.ValueOf(dst).Elem())
	if len(errs) > 0 {
		return &Error{Fields: errs}
	}
	return nil
}

// Fast decodes raw into a T in one pass, or reports false when the plan
// has no one-pass plan or it declines raw; the full pipeline (Check, then
// Value) then gives the outcome. T must be the plan's type. A plan with a
// flat shortcut tries that first.
func Fast[T any](p *Plan, raw json.RawMessage) (T, bool) { return FastShared[T](p, raw, false) }

// FastShared is Fast for arguments whose memory, with shared, never
// changes (they are a run state's, which nothing writes in place): the
// strings the flat shortcut stores then share raw's memory instead of
// being copied out of it.
func FastShared[T any](p *Plan, raw json.RawMessage, shared bool) (T, bool) {
	if p.fast == nil {
		var zero T
		return zero, false
	}
	if p.fast.flat != nil {
		if in, ok := flatArguments[T](p.fast.flat, raw, shared); ok {
			return in, true
		}
	}
	return typedArguments[T](p.fast, raw)
}

// typedArguments is Fast through the typed plan alone.
func typedArguments[T any](plan *fastNode, raw json.RawMessage) (T, bool) {
	var in T
	if !fastDecode(plan, raw, reflect.ValueOf(&in).Elem()) {
		var zero T
		return zero, false
	}
	return in, true
}

// Value decodes v, arguments that passed the pipeline, into a T, the
// plan's type. It returns the value or an *Error with every value that
// does not fit.
func Value[T any](p *Plan, v any) (T, *Error) {
	in, errs := decodeValue[T](p.decode, v)
	if len(errs) > 0 {
		return in, &Error{Fields: errs}
	}
	return in, nil
}
