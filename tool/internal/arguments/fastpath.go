package arguments

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// fastDecode runs a plan (see fastplan.go) over the arguments raw, storing
// them into dst, which holds a zero value, or only checking them when dst
// is not valid. It reports whether the arguments were accepted; when they
// were not, dst holds a partial value that must be thrown away.
//
// Like the pipeline, it reads empty arguments as {}. When it stores, it
// works on one copy of the text, so that the strings it stores share that
// copy rather than each taking an allocation of its own; when it only
// checks, nothing it reads outlives the call and it reads raw in place.
func fastDecode(root *fastNode, raw []byte, dst reflect.Value) bool {
	var text string
	if dst.IsValid() {
		text = string(raw)
	} else {
		text = unsafe.String(unsafe.SliceData(raw), len(raw))
	}
	d := fastDecoder{p: parser{s: text}}
	d.p.space()
	if d.p.i == len(d.p.s) {
		d.p = parser{s: "{}"}
	}
	if !d.value(root, dst, 0) {
		return false
	}
	d.p.space()
	return d.p.i == len(d.p.s)
}

// fastDecoder reads one argument text against a plan.
type fastDecoder struct {
	p parser
	// inPlace: p.s is the caller's memory, read in place; a string stored
	// from it must be copied first (see flatPlan).
	inPlace bool
}

// value reads the value at the parser's position, checks it against n and
// stores it into dst (when dst is valid and n is bound). depth is the
// parser's nesting depth, so that the fast path refuses exactly what the
// parser refuses.
func (d *fastDecoder) value(n *fastNode, dst reflect.Value, depth int) bool {
	if n.unsupported {
		return false
	}
	p := &d.p
	if n.anyValue {
		if !dst.IsValid() || n.bind == bindNone {
			return p.skip(depth) == nil
		}
		v, err := p.value(depth)
		return err == nil && decodeWith(n.dec, v, dst)
	}
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		s, err := p.str()
		if err != nil || !n.allows(tString) || !n.checkString(s) {
			return false
		}
		if !dst.IsValid() {
			return true
		}
		switch n.bind {
		case bindNone:
			return true
		case bindString:
			deref(n, dst).SetString(s)
			return true
		case bindGeneric:
			return decodeWith(n.dec, s, dst)
		}
		return false
	case c == '-' || c >= '0' && c <= '9':
		lit, err := p.numberText()
		return err == nil && d.number(n, lit, dst)
	case c == 't' || c == 'f':
		b := c == 't'
		lit := "false"
		if b {
			lit = "true"
		}
		if p.literal(lit) != nil || !n.allows(tBoolean) || !n.checkBool(b) {
			return false
		}
		if !dst.IsValid() {
			return true
		}
		switch n.bind {
		case bindNone:
			return true
		case bindBool:
			deref(n, dst).SetBool(b)
			return true
		case bindGeneric:
			return decodeWith(n.dec, b, dst)
		}
		return false
	case c == 'n':
		// A null the schema does not allow is one coercion may drop or the
		// validator refuses: the pipeline decides.
		if p.literal("null") != nil || !n.allows(tNull) || !n.checkNull() {
			return false
		}
		if !dst.IsValid() || n.bind == bindNone {
			return true
		}
		return decodeWith(n.dec, nil, dst)
	case c == '{' || c == '[':
		if c == '{' && !n.allows(tObject) || c == '[' && !n.allows(tArray) || n.enum != nil || n.konst != nil || n.format != nil {
			return false
		}
		if dst.IsValid() && n.bind == bindGeneric {
			// A type the decoder fills from a parsed value: check the
			// value, then parse it and hand it over.
			start := p.i
			if !d.container(n, reflect.Value{}, depth+1) {
				return false
			}
			p.i = start
			v, err := p.value(depth)
			return err == nil && decodeWith(n.dec, v, dst)
		}
		return d.container(n, dst, depth+1)
	}
	return false
}

// container reads the object or array at the parser's position; depth is
// its own.
func (d *fastDecoder) container(n *fastNode, dst reflect.Value, depth int) bool {
	if d.p.s[d.p.i] == '{' {
		return d.object(n, dst, depth)
	}
	return d.array(n, dst, depth)
}

// decodeWith stores v with the pipeline's decoder and reports whether it
// decoded without a problem.
func decodeWith(fn decodeFunc, v any, dst reflect.Value) bool {
	var ds decodeState
	fn(&ds, v, dst)
	return len(ds.errs) == 0
}

// deref follows n's pointers from dst, allocating as the decoder does.
func deref(n *fastNode, dst reflect.Value) reflect.Value {
	for range n.ptrs {
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		dst = dst.Elem()
	}
	return dst
}

func (n *fastNode) checkString(s string) bool {
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(s)
		if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
			return false
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return false
	}
	// A format checker may be the user's own: it gets a string of its own,
	// since s may be read in place from the caller's arguments.
	if n.format != nil && !n.format(strings.Clone(s)) {
		return false
	}
	return (n.enum == nil || n.enum.hasString(s)) && (n.konst == nil || n.konst.hasString(s))
}

func (n *fastNode) checkBool(b bool) bool {
	if n.format != nil && !n.format(b) {
		return false
	}
	return (n.enum == nil || n.enum.hasBool(b)) && (n.konst == nil || n.konst.hasBool(b))
}

func (n *fastNode) checkNull() bool {
	if n.format != nil && !n.format(nil) {
		return false
	}
	return (n.enum == nil || n.enum.hasNull) && (n.konst == nil || n.konst.hasNull)
}

func (e *fastEnum) hasString(s string) bool {
	for _, v := range e.strs {
		if v == s {
			return true
		}
	}
	return false
}

func (e *fastEnum) hasBool(b bool) bool {
	if b {
		return e.hasTrue
	}
	return e.hasFalse
}

// hasNumber reports whether the number lit (iv when intOK) is among the
// values, comparing as the validator does: as exact rationals.
func (e *fastEnum) hasNumber(lit string, iv int64, intOK bool) bool {
	if intOK {
		for _, v := range e.ints {
			if v == iv {
				return true
			}
		}
		return false // an int64 equals only an integral value that fits in an int64
	}
	if len(e.rats) == 0 {
		return false
	}
	r, ok := exactRat(lit)
	if !ok {
		return false
	}
	for _, v := range e.rats {
		if r.Cmp(v) == 0 {
			return true
		}
	}
	return false
}

// exactRat returns the exact value of a number literal, refusing literals
// with an exponent (whose expansion can be huge).
func exactRat(lit string) (*big.Rat, bool) {
	if strings.ContainsAny(lit, "eE") {
		return nil, false
	}
	return new(big.Rat).SetString(lit)
}

// numberOK checks the number lit against n: whether the position takes it,
// and its value as an int64 (iv, when intOK).
func (n *fastNode) numberOK(lit string) (iv int64, intOK, ok bool) {
	isInt := isIntegerLiteral(lit)
	if n.types != 0 && n.types&tNumber == 0 && !(isInt && n.types&tInteger != 0) {
		return 0, false, false // 1.0 for an integer, or a number where none is wanted
	}
	if isInt {
		v, err := strconv.ParseInt(lit, 10, 64)
		iv, intOK = v, err == nil
	}
	if n.num != nil && !n.num.check(lit, iv, intOK) {
		return 0, false, false
	}
	if n.format != nil && !n.format(json.Number(lit)) {
		return 0, false, false
	}
	if n.enum != nil && !n.enum.hasNumber(lit, iv, intOK) || n.konst != nil && !n.konst.hasNumber(lit, iv, intOK) {
		return 0, false, false
	}
	return iv, intOK, true
}

// number checks the number lit against n and stores it.
func (d *fastDecoder) number(n *fastNode, lit string, dst reflect.Value) bool {
	iv, intOK, ok := n.numberOK(lit)
	if !ok {
		return false
	}
	if !dst.IsValid() {
		return true
	}
	switch n.bind {
	case bindNone:
		return true
	case bindInt:
		if !intOK {
			return false // 1e2 or a huge integer: the decoder's rules
		}
		v := deref(n, dst)
		if v.OverflowInt(iv) {
			return false
		}
		v.SetInt(iv)
		return true
	case bindUint:
		u, err := strconv.ParseUint(lit, 10, 64)
		if err != nil {
			return false
		}
		v := deref(n, dst)
		if v.OverflowUint(u) {
			return false
		}
		v.SetUint(u)
		return true
	case bindFloat:
		f, err := strconv.ParseFloat(lit, n.typ.Bits())
		if err != nil {
			return false
		}
		deref(n, dst).SetFloat(f)
		return true
	case bindGeneric:
		return decodeWith(n.dec, json.Number(lit), dst)
	}
	return false
}

// check reports whether the number lit (iv when intOK) satisfies the
// bounds, exactly: integers against integer thresholds, other numbers by
// their nearest float64 where that decides and as exact rationals where it
// does not.
func (b *numBounds) check(lit string, iv int64, intOK bool) bool {
	if intOK {
		if b.none || iv < b.lo || iv > b.hi {
			return false
		}
		return b.multipleOf == nil || b.mult > 0 && iv%b.mult == 0
	}
	if b.multipleOf != nil {
		return false
	}
	if len(b.bounds) == 0 {
		return true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false
	}
	for _, bd := range b.bounds {
		// Rounding to the nearest float64 keeps order, so a strict order
		// of the floats is the order of the exact values; a tie is not.
		var c int
		switch {
		case math.IsInf(bd.f, 0) || f == bd.f:
			r, ok := exactRat(lit)
			if !ok {
				return false
			}
			c = r.Cmp(bd.r)
		case f < bd.f:
			c = -1
		default:
			c = 1
		}
		if !bd.pass(c) {
			return false
		}
	}
	return true
}

// object reads the object at the parser's position; depth is the object's.
func (d *fastDecoder) object(n *fastNode, dst reflect.Value, depth int) bool {
	if depth > maxParseDepth {
		return false
	}
	p := &d.p
	store := dst.IsValid() && n.bind != bindNone
	var obj reflect.Value
	if store {
		switch n.bind {
		case bindStruct:
			obj = deref(n, dst)
		case bindMap:
			obj = deref(n, dst)
			if obj.IsNil() {
				obj.Set(reflect.MakeMap(n.typ))
			}
		default:
			return false // a scalar type, or one the decoder fills from a parsed value
		}
	}
	p.i++ // {
	p.space()
	var seen uint64
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return n.required == 0
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return false
		}
		key, err := p.str()
		if err != nil {
			return false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !d.member(n, obj, store, key, &seen, depth) {
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
			return seen&n.required == n.required
		default:
			return false
		}
	}
}

// member reads the value of the property key of an object at n.
func (d *fastDecoder) member(n *fastNode, obj reflect.Value, store bool, key string, seen *uint64, depth int) bool {
	var child *fastNode
	if i := n.lookup(key); i >= 0 {
		bit := uint64(1) << i
		if *seen&bit != 0 {
			return false // a duplicate key: the pipeline keeps the last
		}
		*seen |= bit
		prop := &n.props[i]
		child = prop.node
		if store && n.bind == bindStruct {
			if !prop.field {
				return false // declared, but no field has its exact name
			}
			fv, ok := fieldByIndex(obj, prop.index)
			return ok && d.value(child, fv, depth)
		}
	} else {
		if n.bind == bindStruct || n.extra == extraNone {
			return false // unknown, or one the decoder might match ignoring case
		}
		child = n.additional
		if child == nil { // extraAny, checking only
			return d.p.skip(depth) == nil
		}
	}
	if !store {
		return d.value(child, reflect.Value{}, depth)
	}
	kv, err := n.keyOf(key)
	if err != nil || obj.MapIndex(kv).IsValid() {
		return false
	}
	ev := reflect.New(n.mapElem).Elem()
	if !d.value(child, ev, depth) {
		return false
	}
	obj.SetMapIndex(kv, ev)
	return true
}

// array reads the array at the parser's position; depth is the array's.
func (d *fastDecoder) array(n *fastNode, dst reflect.Value, depth int) bool {
	if depth > maxParseDepth {
		return false
	}
	p := &d.p
	store := dst.IsValid() && n.bind != bindNone
	var arr reflect.Value
	if store {
		switch n.bind {
		case bindSlice:
			// Count the items first, so that the slice is allocated once
			// and at its size.
			start := p.i
			count, ok := p.countItems(depth)
			p.i = start
			if !ok || !n.itemCountOK(count) {
				return false
			}
			arr = deref(n, dst)
			if count > 0 { // an empty array leaves the slice nil, as the decoder does
				arr.Grow(count)
				arr.SetLen(count)
			}
		case bindArray:
			arr = deref(n, dst)
		default:
			return false
		}
	}
	p.i++ // [
	p.space()
	var keys []uniqueKey
	if n.unique {
		keys = make([]uniqueKey, 0, 8)
	}
	count := 0
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return n.itemCountOK(0)
	}
	for {
		var ev reflect.Value
		if store && count < arr.Len() {
			ev = arr.Index(count)
		}
		start := p.i
		if n.items == nil {
			if p.skip(depth) != nil {
				return false
			}
		} else if !d.value(n.items, ev, depth) {
			return false
		}
		if n.unique {
			k, ok := uniqueKeyOf(p.s[start:p.i])
			if !ok || len(keys) >= maxFastUnique {
				return false
			}
			for _, o := range keys {
				if o == k {
					return false
				}
			}
			keys = append(keys, k)
		}
		count++
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			return n.itemCountOK(count)
		default:
			return false
		}
	}
}

func (n *fastNode) itemCountOK(count int) bool {
	return (n.minItems < 0 || count >= n.minItems) && (n.maxItems < 0 || count <= n.maxItems)
}

// countItems counts the items of the array at the parser's position,
// checking their syntax; depth is the array's.
func (p *parser) countItems(depth int) (int, bool) {
	p.i++ // [
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		return 0, true
	}
	count := 0
	for {
		if p.skip(depth) != nil {
			return 0, false
		}
		count++
		p.space()
		if p.i >= len(p.s) {
			return 0, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			return count, true
		default:
			return 0, false
		}
	}
}

// maxFastUnique is the most items the fast path compares for uniqueItems.
const maxFastUnique = 64

// uniqueKey identifies a scalar item for uniqueItems: two items are equal
// as JSON values exactly when their keys are equal.
type uniqueKey struct {
	kind byte // '"' string, 'i' integer, 't' true, 'f' false, 'n' null
	s    string
	i    int64
}

// uniqueKeyOf returns the key of an item's text; ok is false for items the
// fast path does not compare (containers, numbers other than int64
// integers).
func uniqueKeyOf(text string) (uniqueKey, bool) {
	switch c := text[0]; {
	case c == '"':
		p := parser{s: text}
		s, err := p.str()
		return uniqueKey{kind: '"', s: s}, err == nil
	case c == 't' || c == 'f' || c == 'n':
		return uniqueKey{kind: c}, true
	case c == '-' || c >= '0' && c <= '9':
		if !isIntegerLiteral(text) {
			return uniqueKey{}, false
		}
		v, err := strconv.ParseInt(text, 10, 64)
		return uniqueKey{kind: 'i', i: v}, err == nil
	}
	return uniqueKey{}, false
}
