package arguments

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unsafe"
)

// A flat plan is a typed plan's shortcut for argument structs whose
// declared properties all go into fields of scalar kinds (strings, bools,
// integers, floats), stored by value: it reads the arguments exactly as
// the typed plan does — the same checks, in the same order — and stores
// each value at its field's offset instead of going through reflect, so
// that the argument value can live on its caller's stack. Whatever it does
// not store itself (a null, an object or array where a scalar goes) makes
// it decline, and the typed plan reads the arguments from the start. Its
// object loop repeats fastDecoder.object's on purpose: shared helpers
// cost a call per member, a few percent of a trivial tool call.

// flatPlan is the flat shortcut of a typed plan whose root is a struct.
type flatPlan struct {
	typ    reflect.Type // the struct type the offsets belong to
	root   *fastNode
	fields []flatField // by property index, as root.props
	// inPlace: the struct has at most one string field, so the text is
	// read where it is and the one string stored is copied alone, rather
	// than copying the whole text for the strings to share.
	inPlace bool
	// quoted holds, by property index, the property's name followed by
	// the closing quote, as the arguments spell it when they spell it
	// plainly; "" for a name a plain spelling does not give (it needs
	// escapes). Arguments usually name the properties in their declared
	// order, and a key that matches the next property's spelling is
	// known without reading it as a string and looking it up.
	quoted []string
}

// flatField is where a property's value goes.
type flatField struct {
	off  uintptr
	kind reflect.Kind
}

// newFlatPlan returns the flat plan of the typed plan root, or nil when
// one of its properties goes where a flat plan does not store (a pointer, a
// container, a type with a decoder of its own).
func newFlatPlan(root *fastNode) *flatPlan {
	if root == nil || root.unsupported || root.anyValue || root.bind != bindStruct || root.ptrs != 0 {
		return nil
	}
	fp := &flatPlan{typ: root.typ, root: root, fields: make([]flatField, len(root.props))}
	strs := 0
	for i, p := range root.props {
		if !p.field || p.node.unsupported {
			continue // a value here declines, as in the typed plan
		}
		c := p.node
		if c.anyValue || c.ptrs != 0 {
			return nil
		}
		switch c.bind {
		case bindString, bindBool, bindInt, bindUint, bindFloat:
		default:
			return nil
		}
		off, ok := fieldOffset(root.typ, p.index)
		if !ok || c.typ.Kind() == reflect.Uintptr && c.typ.Size() != 8 {
			return nil
		}
		fp.fields[i] = flatField{off: off, kind: c.typ.Kind()}
		if c.bind == bindString {
			strs++
		}
	}
	fp.inPlace = strs <= 1
	fp.quoted = make([]string, len(root.props))
	for i, p := range root.props {
		if plainRun(p.name, 0) == len(p.name) {
			fp.quoted[i] = p.name + `"`
		}
	}
	return fp
}

// fieldOffset returns the offset in a t of the field at index, a path
// through embedded structs, which must all be embedded by value.
func fieldOffset(t reflect.Type, index []int) (uintptr, bool) {
	var off uintptr
	for k, x := range index {
		if t.Kind() != reflect.Struct {
			return 0, false
		}
		f := t.Field(x)
		off += f.Offset
		t = f.Type
		if k < len(index)-1 && t.Kind() != reflect.Struct {
			return 0, false // through a pointer: the decoder would allocate
		}
	}
	return off, true
}

// decode reads raw into the struct at base, which holds a zero value of
// fp.typ, and reports whether it took the arguments; when it did not, the
// struct holds a partial value that must be thrown away. Like fastDecode,
// it reads empty arguments as {}, and the strings it stores never share
// raw's memory: they share one copy of the text, or, when the struct has
// a single string field, that string is copied alone. With shared, raw's
// memory never changes (see FastShared), and the strings share it.
func (fp *flatPlan) decode(raw []byte, base unsafe.Pointer, shared bool) bool {
	var d fastDecoder
	switch {
	case shared:
		// raw's memory never changes: the strings may share it.
		d.p.s = unsafe.String(unsafe.SliceData(raw), len(raw))
	case fp.inPlace:
		d.p.s = unsafe.String(unsafe.SliceData(raw), len(raw))
		d.inPlace = true
	default:
		d.p.s = string(raw)
	}
	p := &d.p
	p.space()
	if p.i == len(p.s) {
		d.p = parser{s: "{}"}
	}
	n := fp.root
	// The root position, as fastDecoder.value and object read it.
	if p.i >= len(p.s) || p.s[p.i] != '{' || !n.allows(tObject) || n.enum != nil || n.konst != nil || n.format != nil {
		return false
	}
	p.i++ // {
	p.space()
	var seen uint64
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return n.required == 0 && d.end()
	}
	next := 0 // the property expected next, in declared order
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return false
		}
		i := -1
		if next < len(fp.quoted) {
			if q := fp.quoted[next]; q != "" && strings.HasPrefix(p.s[p.i+1:], q) {
				i, p.i = next, p.i+1+len(q)
			}
		}
		if i < 0 {
			key, err := p.str()
			if err != nil {
				return false
			}
			if i = n.lookup(key); i < 0 {
				return false // unknown, or one the decoder might match ignoring case
			}
		}
		next = i + 1
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		bit := uint64(1) << i
		if seen&bit != 0 {
			return false // a duplicate key: the pipeline keeps the last
		}
		seen |= bit
		if !n.props[i].field || !d.flatValue(n.props[i].node, fp.fields[i], base) {
			return false
		}
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			return seen&n.required == n.required && d.end()
		default:
			return false
		}
	}
}

// sameType reports whether a and b are one type: reflect.Types are
// pointers of the runtime's, one per type, so comparing their words is
// a == b without the runtime's general interface comparison.
func sameType(a, b reflect.Type) bool {
	// Word by word: the arrays compared whole go through memequal.
	wa, wb := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return wa[0] == wb[0] && wa[1] == wb[1]
}

// inText reports whether s is a piece of text (the parser returns a
// string without escapes as a slice of its text, and a string with escapes
// as a string of its own).
func inText(s, text string) bool {
	if len(s) == 0 {
		return false
	}
	off := uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.StringData(text)))
	return off < uintptr(len(text))
}

// end reports whether only white space follows.
func (d *fastDecoder) end() bool {
	d.p.space()
	return d.p.i == len(d.p.s)
}

// flatValue reads the scalar at the parser's position, checks it against n
// as fastDecoder.value does, and stores it into the field f of the struct
// at base.
func (d *fastDecoder) flatValue(n *fastNode, f flatField, base unsafe.Pointer) bool {
	if n.unsupported {
		return false
	}
	p := &d.p
	if p.i >= len(p.s) {
		return false
	}
	ptr := unsafe.Add(base, f.off)
	switch c := p.s[p.i]; {
	case c == '"':
		s, err := p.str()
		if err != nil || !n.allows(tString) || !n.checkString(s) || n.bind != bindString {
			return false
		}
		if d.inPlace && inText(s, d.p.s) {
			s = strings.Clone(s) // read in place: raw's memory
		}
		*(*string)(ptr) = s
		return true
	case c == '-' || c >= '0' && c <= '9':
		lit, err := p.numberText()
		if err != nil {
			return false
		}
		iv, intOK, ok := n.numberOK(lit)
		return ok && storeNumber(n.bind, f.kind, lit, iv, intOK, ptr)
	case c == 't' || c == 'f':
		b := c == 't'
		lit := "false"
		if b {
			lit = "true"
		}
		if p.literal(lit) != nil || !n.allows(tBoolean) || !n.checkBool(b) || n.bind != bindBool {
			return false
		}
		*(*bool)(ptr) = b
		return true
	}
	return false // null, an object or an array: the typed plan's
}

// storeNumber stores the number lit (iv when intOK) into the field at ptr,
// of kind k, as the typed plan stores it into a position bound as bind; it
// reports false where the typed plan declines (a fraction for an integer,
// a value out of the field's range).
func storeNumber(bind bindKind, k reflect.Kind, lit string, iv int64, intOK bool, ptr unsafe.Pointer) bool {
	switch bind {
	case bindInt:
		if !intOK {
			return false // 1e2 or a huge integer: the decoder's rules
		}
		switch k {
		case reflect.Int8:
			if iv < math.MinInt8 || iv > math.MaxInt8 {
				return false
			}
			*(*int8)(ptr) = int8(iv)
		case reflect.Int16:
			if iv < math.MinInt16 || iv > math.MaxInt16 {
				return false
			}
			*(*int16)(ptr) = int16(iv)
		case reflect.Int32:
			if iv < math.MinInt32 || iv > math.MaxInt32 {
				return false
			}
			*(*int32)(ptr) = int32(iv)
		case reflect.Int:
			if iv < math.MinInt || iv > math.MaxInt {
				return false
			}
			*(*int)(ptr) = int(iv)
		case reflect.Int64:
			*(*int64)(ptr) = iv
		default:
			return false
		}
		return true
	case bindUint:
		u, err := strconv.ParseUint(lit, 10, 64)
		if err != nil {
			return false
		}
		switch k {
		case reflect.Uint8:
			if u > math.MaxUint8 {
				return false
			}
			*(*uint8)(ptr) = uint8(u)
		case reflect.Uint16:
			if u > math.MaxUint16 {
				return false
			}
			*(*uint16)(ptr) = uint16(u)
		case reflect.Uint32:
			if u > math.MaxUint32 {
				return false
			}
			*(*uint32)(ptr) = uint32(u)
		case reflect.Uint:
			if u > math.MaxUint {
				return false
			}
			*(*uint)(ptr) = uint(u)
		case reflect.Uint64:
			*(*uint64)(ptr) = u
		case reflect.Uintptr: // 64 bits wide (see newFlatPlan)
			*(*uintptr)(ptr) = uintptr(u)
		default:
			return false
		}
		return true
	case bindFloat:
		switch k {
		case reflect.Float32:
			f, err := strconv.ParseFloat(lit, 32)
			if err != nil {
				return false
			}
			*(*float32)(ptr) = float32(f)
		case reflect.Float64:
			f, err := strconv.ParseFloat(lit, 64)
			if err != nil {
				return false
			}
			*(*float64)(ptr) = f
		default:
			return false
		}
		return true
	}
	return false
}

// flatArguments decodes args into an In through the flat plan fp, or
// reports false when fp is nil, is not In's, or declines them.
func flatArguments[In any](fp *flatPlan, args json.RawMessage, shared bool) (In, bool) {
	var in In
	if fp == nil || !sameType(fp.typ, reflect.TypeFor[In]()) || !fp.decode(args, unsafe.Pointer(&in), shared) {
		var zero In
		return zero, false
	}
	return in, true
}
