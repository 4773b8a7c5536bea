package arguments

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The decoder fills a Go value from an already decoded JSON value (the
// output of Parse, after coercion and validation) following the rules of
// encoding/json (field names, embedded structs, ",string", Unmarshaler and
// TextUnmarshaler, float64 numbers in interfaces), with four differences:
// an exact field name is preferred over a case-insensitive match whatever
// the key order, a json.RawMessage receives the value's compact form, an
// integer field accepts any integral number (1e2, 3.0) as JSON Schema's
// "integer" does, and an empty array leaves a slice nil (use a pointer to
// a slice to tell an empty list from a missing one). That way a typed tool
// parses its arguments once instead of decoding them to a map for
// validation and again into its struct. The plan for a type is built once,
// when the tool is built.

type pathSeg struct {
	key   string
	index int // -1 for a key
}

// decodeError is a problem found while decoding; its path is collected in
// reverse as the containers it sits in return.
type decodeError struct {
	rev []pathSeg
	msg string
}

type decodeState struct {
	errs []decodeError
}

func (d *decodeState) fail(format string, args ...any) {
	d.errs = append(d.errs, decodeError{msg: fmt.Sprintf(format, args...)})
}

// within adds seg to the paths of the errors found since mark.
func (d *decodeState) within(mark int, seg pathSeg) {
	for i := mark; i < len(d.errs); i++ {
		d.errs[i].rev = append(d.errs[i].rev, seg)
	}
}

func (e decodeError) fieldError() FieldError {
	var b strings.Builder
	b.WriteByte('$')
	for i := len(e.rev) - 1; i >= 0; i-- {
		s := e.rev[i]
		switch {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case isIdentifier(s.key):
			b.WriteString("." + s.key)
		default:
			b.WriteString("[" + strconv.Quote(s.key) + "]")
		}
	}
	return FieldError{Path: b.String(), Message: e.msg}
}

// decodeFunc stores v into dst, which is addressable and holds its zero
// value (or a value being filled, for pointers and embedded structs).
type decodeFunc func(d *decodeState, v any, dst reflect.Value)

type decoderBuilder struct {
	cache map[reflect.Type]*decodeFunc
}

// newDecoder returns the decode function for t.
func newDecoder(t reflect.Type) decodeFunc {
	b := &decoderBuilder{cache: map[reflect.Type]*decodeFunc{}}
	return b.build(t)
}

// decodeValue decodes v into a new T and returns the problems found, sorted
// by path.
func decodeValue[T any](fn decodeFunc, v any) (T, []FieldError) {
	var out T
	return out, decodeInto(fn, v, reflect.ValueOf(&out).Elem())
}

// decodeInto decodes v into dst and returns the problems found, sorted by
// path.
func decodeInto(fn decodeFunc, v any, dst reflect.Value) []FieldError {
	d := decodeState{}
	fn(&d, v, dst)
	if len(d.errs) == 0 {
		return nil
	}
	errs := make([]FieldError, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e.fieldError()
	}
	slices.SortStableFunc(errs, func(a, b FieldError) int { return strings.Compare(a.Path, b.Path) })
	return errs
}

func (b *decoderBuilder) build(t reflect.Type) decodeFunc {
	if p, ok := b.cache[t]; ok {
		if *p != nil {
			return *p
		}
		// t is being built: call through the slot, filled when done.
		return func(d *decodeState, v any, dst reflect.Value) { (*p)(d, v, dst) }
	}
	p := new(decodeFunc)
	b.cache[t] = p
	*p = b.make(t)
	return *p
}

func (b *decoderBuilder) make(t reflect.Type) decodeFunc {
	if t.Kind() == reflect.Pointer {
		return b.pointer(t)
	}
	if t == rawMessageType {
		return decodeRaw
	}
	if t == jsonNumberType {
		return decodeNumber
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return decodeUnmarshaler
	}
	kindFn := b.byKind(t)
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return func(d *decodeState, v any, dst reflect.Value) {
			s, ok := v.(string)
			if !ok {
				kindFn(d, v, dst)
				return
			}
			if err := dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				d.fail("%v", err)
			}
		}
	}
	return kindFn
}

func (b *decoderBuilder) byKind(t reflect.Type) decodeFunc {
	switch t.Kind() {
	case reflect.Bool:
		return decodeBool
	case reflect.String:
		return decodeString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return decodeUint
	case reflect.Float32, reflect.Float64:
		return decodeFloat
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return decodeAny
		}
		return func(d *decodeState, v any, dst reflect.Value) {
			if v != nil {
				d.fail("cannot decode into interface type %s", t)
			}
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(jsonUnmarshalerType) && !reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType) {
			return decodeBytes
		}
		return b.slice(t)
	case reflect.Array:
		return b.array(t)
	case reflect.Map:
		return b.mapOf(t)
	case reflect.Struct:
		return b.structOf(t)
	}
	return func(d *decodeState, v any, dst reflect.Value) {
		d.fail("cannot decode into %s", t)
	}
}

// typeName describes a decoded value's JSON type for messages.
func typeName(v any) string {
	switch kindOf(v) {
	case tNull:
		return "null"
	case tBoolean:
		return "boolean"
	case tInteger, tNumber:
		return "number"
	case tString:
		return "string"
	case tArray:
		return "array"
	case tObject:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func decodeBool(d *decodeState, v any, dst reflect.Value) {
	switch v := v.(type) {
	case nil:
	case bool:
		dst.SetBool(v)
	default:
		d.fail("expected boolean, got %s %s", typeName(v), excerpt(v))
	}
}

func decodeString(d *decodeState, v any, dst reflect.Value) {
	switch v := v.(type) {
	case nil:
	case string:
		dst.SetString(v)
	default:
		d.fail("expected string, got %s %s", typeName(v), excerpt(v))
	}
}

// numberLiteral returns the text of a number value.
func numberLiteral(v any) (string, bool) {
	switch v := v.(type) {
	case json.Number:
		return string(v), true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", false
		}
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32), true
	case int:
		return strconv.FormatInt(int64(v), 10), true
	case int8:
		return strconv.FormatInt(int64(v), 10), true
	case int16:
		return strconv.FormatInt(int64(v), 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint:
		return strconv.FormatUint(uint64(v), 10), true
	case uint8:
		return strconv.FormatUint(uint64(v), 10), true
	case uint16:
		return strconv.FormatUint(uint64(v), 10), true
	case uint32:
		return strconv.FormatUint(uint64(v), 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	}
	return "", false
}

// integralValue reads a JSON number literal (a fraction and an exponent
// allowed: 1e2, 3.0, -0.5e1) exactly, and returns its sign and magnitude.
// ok is false when the literal is not a number, is not integral, or has a
// magnitude beyond uint64.
func integralValue(s string) (neg bool, mag uint64, ok bool) {
	if !isJSONNumber(s) {
		return false, 0, false
	}
	if s[0] == '-' {
		neg, s = true, s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	shift := -len(frac) // the value is digits × 10^shift
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		return neg, 0, true // zero, whatever the exponent
	}
	if exp != "" {
		expNeg := exp[0] == '-'
		exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		if len(exp) > 6 {
			// |exponent| >= 10^6: far beyond uint64, or far below 1.
			return false, 0, false
		}
		e, _ := strconv.Atoi("0" + exp)
		if expNeg {
			e = -e
		}
		shift += e
	}
	if shift < 0 || len(digits)+shift > 20 {
		return false, 0, false // a fraction is left, or more than 20 digits
	}
	for i := 0; i < len(digits)+shift; i++ {
		c := uint64(0)
		if i < len(digits) {
			c = uint64(digits[i] - '0')
		}
		if mag > (math.MaxUint64-c)/10 {
			return false, 0, false
		}
		mag = mag*10 + c
	}
	return neg, mag, true
}

func decodeInt(d *decodeState, v any, dst reflect.Value) {
	if v == nil {
		return
	}
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	default:
		s, ok := numberLiteral(v)
		if !ok {
			d.fail("expected integer, got %s %s", typeName(v), excerpt(v))
			return
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			neg, mag, ok := integralValue(s)
			if !ok || !neg && mag > math.MaxInt64 || neg && mag > 1<<63 {
				d.fail("expected integer within range of %s, got %s", dst.Type(), s)
				return
			}
			i = int64(mag) // -(1<<63) wraps to itself
			if neg {
				i = -i
			}
		}
		n = i
	}
	if dst.OverflowInt(n) {
		d.fail("%d is out of range for %s", n, dst.Type())
		return
	}
	dst.SetInt(n)
}

func decodeUint(d *decodeState, v any, dst reflect.Value) {
	if v == nil {
		return
	}
	s, ok := numberLiteral(v)
	if !ok {
		d.fail("expected non-negative integer, got %s %s", typeName(v), excerpt(v))
		return
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		neg, mag, ok := integralValue(s)
		if !ok || neg && mag != 0 {
			d.fail("expected non-negative integer within range of %s, got %s", dst.Type(), s)
			return
		}
		n = mag
	}
	if dst.OverflowUint(n) {
		d.fail("%d is out of range for %s", n, dst.Type())
		return
	}
	dst.SetUint(n)
}

func decodeFloat(d *decodeState, v any, dst reflect.Value) {
	if v == nil {
		return
	}
	if f, ok := v.(float64); ok {
		if dst.OverflowFloat(f) {
			d.fail("%v is out of range for %s", f, dst.Type())
			return
		}
		dst.SetFloat(f)
		return
	}
	s, ok := numberLiteral(v)
	if !ok {
		d.fail("expected number, got %s %s", typeName(v), excerpt(v))
		return
	}
	f, err := strconv.ParseFloat(s, dst.Type().Bits())
	if err != nil {
		d.fail("%s is out of range for %s", s, dst.Type())
		return
	}
	dst.SetFloat(f)
}

// decodeNumber stores a number's text in a json.Number; like encoding/json
// it also takes a string that holds a number.
func decodeNumber(d *decodeState, v any, dst reflect.Value) {
	switch x := v.(type) {
	case nil:
	case string:
		if !isJSONNumber(x) {
			d.fail("expected number, got string %s", excerpt(x))
			return
		}
		dst.SetString(x)
	default:
		s, ok := numberLiteral(v)
		if !ok {
			d.fail("expected number, got %s %s", typeName(v), excerpt(v))
			return
		}
		dst.SetString(s)
	}
}

func decodeBytes(d *decodeState, v any, dst reflect.Value) {
	switch v := v.(type) {
	case nil:
	case string:
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			d.fail("expected base64 text: %v", err)
			return
		}
		dst.SetBytes(b)
	default:
		d.fail("expected base64 string, got %s %s", typeName(v), excerpt(v))
	}
}

// decodeAny stores v in an empty interface the way encoding/json does:
// numbers become float64.
func decodeAny(d *decodeState, v any, dst reflect.Value) {
	if v == nil {
		return
	}
	plain, err := plainValue(v)
	if err != nil {
		d.fail("%v", err)
		return
	}
	dst.Set(reflect.ValueOf(plain))
}

// plainValue converts the numbers in v to float64, in place for containers.
func plainValue(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", x)
		}
		return f, nil
	case map[string]any:
		for k, item := range x {
			p, err := plainValue(item)
			if err != nil {
				return nil, err
			}
			x[k] = p
		}
	case []any:
		for i, item := range x {
			p, err := plainValue(item)
			if err != nil {
				return nil, err
			}
			x[i] = p
		}
	}
	return v, nil
}

func decodeRaw(d *decodeState, v any, dst reflect.Value) {
	b, err := json.Marshal(v)
	if err != nil {
		d.fail("%v", err)
		return
	}
	dst.SetBytes(b)
}

func decodeUnmarshaler(d *decodeState, v any, dst reflect.Value) {
	b, err := json.Marshal(v)
	if err != nil {
		d.fail("%v", err)
		return
	}
	if err := dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
		d.fail("%v", err)
	}
}

func (b *decoderBuilder) pointer(t reflect.Type) decodeFunc {
	elem := b.build(t.Elem())
	return func(d *decodeState, v any, dst reflect.Value) {
		if v == nil {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.New(t.Elem()))
		}
		elem(d, v, dst.Elem())
	}
}

func (b *decoderBuilder) slice(t reflect.Type) decodeFunc {
	elem := b.build(t.Elem())
	return func(d *decodeState, v any, dst reflect.Value) {
		switch arr := v.(type) {
		case nil:
		case []any:
			if dst.Cap() < len(arr) {
				dst.Grow(len(arr) - dst.Len())
			}
			dst.SetLen(len(arr))
			for i, item := range arr {
				mark := len(d.errs)
				elem(d, item, dst.Index(i))
				d.within(mark, pathSeg{index: i})
			}
		default:
			d.fail("expected array, got %s %s", typeName(v), excerpt(v))
		}
	}
}

func (b *decoderBuilder) array(t reflect.Type) decodeFunc {
	elem := b.build(t.Elem())
	return func(d *decodeState, v any, dst reflect.Value) {
		switch arr := v.(type) {
		case nil:
		case []any:
			for i, item := range arr {
				if i >= dst.Len() {
					break
				}
				mark := len(d.errs)
				elem(d, item, dst.Index(i))
				d.within(mark, pathSeg{index: i})
			}
		default:
			d.fail("expected array, got %s %s", typeName(v), excerpt(v))
		}
	}
}

func (b *decoderBuilder) mapOf(t reflect.Type) decodeFunc {
	elem := b.build(t.Elem())
	key := mapKeyDecoder(t.Key())
	return func(d *decodeState, v any, dst reflect.Value) {
		switch obj := v.(type) {
		case nil:
		case map[string]any:
			if dst.IsNil() {
				dst.Set(reflect.MakeMapWithSize(t, len(obj)))
			}
			for k, item := range obj {
				mark := len(d.errs)
				kv, err := key(k)
				if err != nil {
					d.fail("invalid key: %v", err)
				} else {
					ev := reflect.New(t.Elem()).Elem()
					elem(d, item, ev)
					dst.SetMapIndex(kv, ev)
				}
				d.within(mark, pathSeg{key: k, index: -1})
			}
		default:
			d.fail("expected object, got %s %s", typeName(v), excerpt(v))
		}
	}
}

func mapKeyDecoder(kt reflect.Type) func(string) (reflect.Value, error) {
	if reflect.PointerTo(kt).Implements(textUnmarshalerType) {
		return func(s string) (reflect.Value, error) {
			kv := reflect.New(kt)
			err := kv.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
			return kv.Elem(), err
		}
	}
	switch kt.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(s string) (reflect.Value, error) {
			n, err := strconv.ParseInt(s, 10, 64)
			kv := reflect.New(kt).Elem()
			if err != nil || kv.OverflowInt(n) {
				return kv, fmt.Errorf("%q is not a %s", s, kt)
			}
			kv.SetInt(n)
			return kv, nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(s string) (reflect.Value, error) {
			n, err := strconv.ParseUint(s, 10, 64)
			kv := reflect.New(kt).Elem()
			if err != nil || kv.OverflowUint(n) {
				return kv, fmt.Errorf("%q is not a %s", s, kt)
			}
			kv.SetUint(n)
			return kv, nil
		}
	}
	return func(s string) (reflect.Value, error) {
		return reflect.ValueOf(s).Convert(kt), nil
	}
}

// structField is one JSON-visible field of a struct, possibly promoted from
// an embedded struct.
type structField struct {
	name   string
	index  []int
	tagged bool
	quoted bool
	typ    reflect.Type
	fn     decodeFunc
}

// visibleFields lists the fields encoding/json would decode into, with its
// rules for embedded structs: the shallowest field of a name wins, a tagged
// one wins among equals, and an ambiguous name is dropped.
func visibleFields(t reflect.Type) []structField {
	type level struct {
		typ   reflect.Type
		index []int
	}
	var all []structField
	visited := map[reflect.Type]bool{}
	current := []level{{typ: t}}
	for len(current) > 0 {
		var next []level
		for _, lv := range current {
			if visited[lv.typ] {
				continue
			}
			visited[lv.typ] = true
			for i := 0; i < lv.typ.NumField(); i++ {
				f := lv.typ.Field(i)
				ft := f.Type
				if f.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !f.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !f.IsExported() {
					continue
				}
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				index := append(slices.Clip(lv.index), i)
				if name == "" && f.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{typ: ft, index: index})
					continue
				}
				quoted := false
				qt := f.Type // ",string" looks through an unnamed pointer, as in encoding/json
				if qt.Name() == "" && qt.Kind() == reflect.Pointer {
					qt = qt.Elem()
				}
				for _, o := range strings.Split(opts, ",") {
					if o == "string" {
						switch qt.Kind() {
						case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
							reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
							quoted = true
						}
					}
				}
				tagged := name != ""
				if !tagged {
					name = f.Name
				}
				all = append(all, structField{name: name, index: index, tagged: tagged, quoted: quoted, typ: f.Type})
			}
		}
		current = next
	}
	// Dominance: per name, the shallowest; then the tagged; else drop.
	byName := map[string][]int{}
	for i, f := range all {
		byName[f.name] = append(byName[f.name], i)
	}
	var out []structField
	for i, f := range all {
		if winner(all, byName[f.name]) == i {
			out = append(out, f)
		}
	}
	return out
}

func winner(all []structField, group []int) int {
	if len(group) == 1 {
		return group[0]
	}
	minDepth := len(all[group[0]].index)
	for _, i := range group {
		minDepth = min(minDepth, len(all[i].index))
	}
	var shallow []int
	for _, i := range group {
		if len(all[i].index) == minDepth {
			shallow = append(shallow, i)
		}
	}
	if len(shallow) == 1 {
		return shallow[0]
	}
	tagged := -1
	for _, i := range shallow {
		if all[i].tagged {
			if tagged >= 0 {
				return -1
			}
			tagged = i
		}
	}
	return tagged
}

func (b *decoderBuilder) structOf(t reflect.Type) decodeFunc {
	fields := visibleFields(t)
	for i := range fields {
		fields[i].fn = b.build(fields[i].typ)
		if fields[i].quoted {
			fields[i].fn = quotedDecoder(fields[i].fn)
		}
	}
	set := func(d *decodeState, f *structField, key string, item any, dst reflect.Value) {
		mark := len(d.errs)
		if fv, ok := fieldByIndex(dst, f.index); ok {
			f.fn(d, item, fv)
		} else {
			d.fail("cannot set a field of an unexported embedded struct pointer")
		}
		d.within(mark, pathSeg{key: key, index: -1})
	}
	return func(d *decodeState, v any, dst reflect.Value) {
		switch obj := v.(type) {
		case nil:
		case map[string]any:
			// Look each field up by its exact name; only when some keys are
			// left over, match those case-insensitively as encoding/json does.
			matched := 0
			for i := range fields {
				if item, ok := obj[fields[i].name]; ok {
					matched++
					set(d, &fields[i], fields[i].name, item, dst)
				}
			}
			if matched == len(obj) {
				return
			}
			for key, item := range obj {
				if _, exact := fieldNamed(fields, key); exact {
					continue
				}
				for i := range fields {
					if strings.EqualFold(fields[i].name, key) {
						if _, taken := obj[fields[i].name]; !taken {
							set(d, &fields[i], key, item, dst)
						}
						break
					}
				}
			}
		default:
			d.fail("expected object, got %s %s", typeName(v), excerpt(v))
		}
	}
}

func fieldNamed(fields []structField, name string) (int, bool) {
	for i := range fields {
		if fields[i].name == name {
			return i, true
		}
	}
	return -1, false
}

// fieldByIndex returns the field at index, allocating embedded struct
// pointers on the way.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	if len(index) == 1 {
		return v.Field(index[0]), true
	}
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// quotedDecoder handles the ",string" option: the value arrives as a JSON
// string holding the literal.
func quotedDecoder(inner decodeFunc) decodeFunc {
	return func(d *decodeState, v any, dst reflect.Value) {
		switch s := v.(type) {
		case nil:
		case string:
			if dst.Kind() == reflect.String {
				var unq string
				if err := json.Unmarshal([]byte(s), &unq); err != nil {
					d.fail("expected a quoted JSON string inside the string, got %s", excerpt(s))
					return
				}
				dst.SetString(unq)
				return
			}
			lit, err := parseJSON([]byte(s))
			if err != nil {
				d.fail("expected a JSON literal inside the string, got %s", excerpt(s))
				return
			}
			inner(d, lit, dst)
		default:
			d.fail("expected string (the field uses the ,string option), got %s %s", typeName(v), excerpt(v))
		}
	}
}
