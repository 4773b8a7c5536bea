package arguments

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path is an optimization of the argument pipeline, never a second
// set of rules. A plan, built once per tool from the compiled schema (and,
// for a typed tool, from its argument type), reads the arguments' JSON text
// in one pass: it checks each value against the keywords of its schema and,
// for a typed tool, stores it straight into the argument value. It accepts
// only arguments that the full pipeline (parse, coerce, validate, decode)
// would accept unchanged, and then produces exactly what that pipeline
// produces. Whatever it is not sure of — a value that coercion would change,
// a missing or unknown property, a broken constraint, a keyword or a Go type
// it does not handle, a duplicate key — makes it decline, and the full
// pipeline runs from the start and gives its usual result, including the
// error result that lists every bad field.
//
// The plan is built from the validator's compiled schema rather than from
// the schema text, so that a keyword the validator enforces cannot be
// overlooked: a schema position that holds anything other than the keywords
// below is marked unsupported, and a value there declines.
//
//   - type, enum, const, format (by the validator's own format function);
//   - minLength, maxLength, pattern (by the validator's compiled pattern);
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum (exactly, with
//     rational arithmetic where floating point cannot decide), multipleOf for
//     integers;
//   - properties, required, additionalProperties;
//   - items (one schema for every item), minItems, maxItems, uniqueItems for
//     strings, integers, booleans and null;
//   - annotations (title, description, default, examples, ...).
//
// Coercion is checked too: a plan position must see the same types the
// coercion plan sees there, so that a value the fast path accepts is one
// coercion leaves alone.

// maxFastDepth bounds the schema depth a plan follows; deeper positions are
// unsupported. It stays below the coercion plan's own depth limit.
const maxFastDepth = 200

// maxFastProps is the most properties an object position may declare (the
// fast path tracks them in a 64-bit set).
const maxFastProps = 64

// extraRule says what an object position does with a property it does not
// declare.
type extraRule uint8

const (
	extraAny    extraRule = iota // allowed, any value
	extraNone                    // refused (additionalProperties: false)
	extraSchema                  // checked against additional
)

// bindKind says how a typed plan stores a value into Go.
type bindKind uint8

const (
	bindNone    bindKind = iota // validate only
	bindGeneric                 // parse the value and hand it to the pipeline's decoder
	bindString
	bindBool
	bindInt
	bindUint
	bindFloat
	bindStruct
	bindMap
	bindSlice
	bindArray
)

// fastNode is one position of a plan: what the schema asks of a value there
// and, in a typed plan, where the value goes.
type fastNode struct {
	// unsupported: a value here makes the fast path decline.
	unsupported bool
	// anyValue: the schema accepts every value and coercion leaves it
	// alone (true, or a schema of annotations only).
	anyValue bool

	types  typeSet // allowed JSON types; 0 allows every type
	enum   *fastEnum
	konst  *fastEnum
	format *jsonschema.Format

	minLen, maxLen int // -1 when absent
	pattern        jsonschema.Regexp

	num *numBounds

	minItems, maxItems int // -1 when absent
	unique             bool
	items              *fastNode // nil: every item is allowed

	props      []fastProp
	propIndex  map[string]int // for positions with many properties
	required   uint64         // bits of props that are required
	extra      extraRule
	additional *fastNode

	// Go binding (typed plans).
	bind    bindKind
	ptrs    int          // pointers to follow (allocating) before storing
	typ     reflect.Type // the type after the pointers
	dec     decodeFunc   // the pipeline's decoder for the type with its pointers
	keyOf   func(string) (reflect.Value, error)
	mapElem reflect.Type

	// flat is the root's flat shortcut, when it has one (see flatPlan).
	flat *flatPlan
}

// fastProp is a declared property of an object position.
type fastProp struct {
	name  string
	node  *fastNode
	index []int // the Go field (typed plans with a struct binding)
	field bool  // whether a Go field receives the property
}

// lookup returns the index of the property named key, or -1.
func (n *fastNode) lookup(key string) int {
	if n.propIndex != nil {
		if i, ok := n.propIndex[key]; ok {
			return i
		}
		return -1
	}
	for i := range n.props {
		if n.props[i].name == key {
			return i
		}
	}
	return -1
}

// allows reports whether the position's type keyword allows t.
func (n *fastNode) allows(t typeSet) bool { return n.types == 0 || n.types&t != 0 }

// fastEnum is an enum or const keyword, split by JSON type.
type fastEnum struct {
	strs                       []string
	hasTrue, hasFalse, hasNull bool
	ints                       []int64    // the integral numbers that fit in an int64
	rats                       []*big.Rat // every number
	containers                 bool       // arrays or objects among the values
}

func newFastEnum(values []any) (*fastEnum, bool) {
	e := &fastEnum{}
	for _, v := range values {
		switch v := v.(type) {
		case nil:
			e.hasNull = true
		case bool:
			if v {
				e.hasTrue = true
			} else {
				e.hasFalse = true
			}
		case string:
			e.strs = append(e.strs, v)
		case json.Number:
			r, ok := new(big.Rat).SetString(string(v))
			if !ok {
				return nil, false
			}
			e.rats = append(e.rats, r)
			if r.IsInt() && r.Num().IsInt64() {
				e.ints = append(e.ints, r.Num().Int64())
			}
		case []any, map[string]any:
			e.containers = true
		default:
			return nil, false // a value the schema parser does not produce
		}
	}
	return e, true
}

// numBounds are the numeric keywords of a position.
type numBounds struct {
	// lo and hi fold minimum, maximum and the exclusive bounds for integer
	// values: an int64 v passes iff lo <= v <= hi (and !none).
	lo, hi int64
	none   bool // no integer passes
	// The keywords, for other values.
	bounds []numBound
	// multipleOf; mult > 0 when it is an integer that fits in an int64.
	multipleOf *big.Rat
	mult       int64
}

// numBound is one of minimum, maximum, exclusiveMinimum, exclusiveMaximum.
type numBound struct {
	r *big.Rat
	f float64 // r rounded to the nearest float64
	// pass reports whether the comparison of value to bound (-1, 0, 1)
	// satisfies the keyword.
	pass func(cmp int) bool
}

func newNumBounds(s *jsonschema.Schema) *numBounds {
	if s.Minimum == nil && s.Maximum == nil && s.ExclusiveMinimum == nil && s.ExclusiveMaximum == nil && s.MultipleOf == nil {
		return nil
	}
	b := &numBounds{lo: math.MinInt64, hi: math.MaxInt64}
	lower := func(r *big.Rat) { // integers v >= ceil(r)
		c := ratCeil(r)
		switch {
		case c.Cmp(bigMaxInt64) > 0:
			b.none = true
		case c.Cmp(bigMinInt64) >= 0:
			b.lo = max(b.lo, c.Int64())
		}
	}
	upper := func(r *big.Rat) { // integers v <= floor(r)
		f := ratFloor(r)
		switch {
		case f.Cmp(bigMinInt64) < 0:
			b.none = true
		case f.Cmp(bigMaxInt64) <= 0:
			b.hi = min(b.hi, f.Int64())
		}
	}
	add := func(r *big.Rat, pass func(int) bool) {
		f, _ := r.Float64()
		b.bounds = append(b.bounds, numBound{r: r, f: f, pass: pass})
	}
	if r := s.Minimum; r != nil {
		lower(r)
		add(r, func(c int) bool { return c >= 0 })
	}
	if r := s.Maximum; r != nil {
		upper(r)
		add(r, func(c int) bool { return c <= 0 })
	}
	if r := s.ExclusiveMinimum; r != nil { // v > r: v >= floor(r)+1
		lower(new(big.Rat).SetInt(new(big.Int).Add(ratFloor(r), big.NewInt(1))))
		add(r, func(c int) bool { return c > 0 })
	}
	if r := s.ExclusiveMaximum; r != nil { // v < r: v <= ceil(r)-1
		upper(new(big.Rat).SetInt(new(big.Int).Sub(ratCeil(r), big.NewInt(1))))
		add(r, func(c int) bool { return c < 0 })
	}
	if b.lo > b.hi {
		b.none = true
	}
	if m := s.MultipleOf; m != nil {
		b.multipleOf = m
		if m.IsInt() && m.Num().IsInt64() && m.Sign() > 0 {
			b.mult = m.Num().Int64()
		}
	}
	return b
}

var (
	bigMaxInt64 = big.NewInt(math.MaxInt64)
	bigMinInt64 = big.NewInt(math.MinInt64)
)

// ratFloor returns the greatest integer <= r.
func ratFloor(r *big.Rat) *big.Int {
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean, and the denominator is positive
	return q
}

// ratCeil returns the least integer >= r.
func ratCeil(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// planBuilder builds the positions of one plan.
type planBuilder struct {
	dec *decoderBuilder // nil for a validate-only plan
}

// newValidatePlan builds the validate-only plan of a compiled schema.
func newValidatePlan(s *Schema) *fastNode {
	b := &planBuilder{}
	return b.node(s.validator, s.coercion, nil, 0)
}

// newTypedPlan builds the plan that validates arguments against s and
// stores them into a value of type t. It returns nil when the plan would
// decline every call.
func newTypedPlan(s *Schema, t reflect.Type) *fastNode {
	b := &planBuilder{dec: &decoderBuilder{cache: map[reflect.Type]*decodeFunc{}}}
	root := b.node(s.validator, s.coercion, t, 0)
	if root.unsupported {
		return nil
	}
	root.flat = newFlatPlan(root)
	return root
}

// unsupportedNode returns a position where every value declines.
func unsupportedNode() *fastNode { return &fastNode{unsupported: true} }

// node builds the position of the compiled schema s, where coercion uses cn
// and (in a typed plan) values go into a t.
func (b *planBuilder) node(s *jsonschema.Schema, cn *coerceNode, t reflect.Type, depth int) *fastNode {
	if s == nil || depth > maxFastDepth {
		return unsupportedNode()
	}
	n := &fastNode{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	if s.Bool != nil {
		// true accepts everything, and coercion must have nothing to do
		// here; false refuses everything.
		if !*s.Bool || cn != nil {
			return unsupportedNode()
		}
		n.anyValue = true
		return b.bindType(n, t)
	}
	if !fastKeywordsOnly(s) {
		return unsupportedNode()
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		for _, name := range s.Types.ToStrings() {
			n.types |= typeBit(name)
		}
	}
	if cn != nil && (cn.types != n.types || len(cn.prefix) > 0) {
		return unsupportedNode() // coercion sees this position differently
	}
	if s.Enum != nil {
		e, ok := newFastEnum(s.Enum.Values)
		if !ok {
			return unsupportedNode()
		}
		n.enum = e
	}
	if s.Const != nil {
		e, ok := newFastEnum([]any{*s.Const})
		if !ok {
			return unsupportedNode()
		}
		n.konst = e
	}
	n.format = s.Format
	if s.MinLength != nil {
		n.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
	}
	n.pattern = s.Pattern
	n.num = newNumBounds(s)

	// Arrays.
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	n.unique = s.UniqueItems
	var itemSchema *jsonschema.Schema
	if s.DraftVersion >= 2020 {
		itemSchema = s.Items2020
	} else if s.Items != nil {
		is, ok := s.Items.(*jsonschema.Schema)
		if !ok {
			return unsupportedNode() // the tuple form
		}
		itemSchema = is
	}

	// Objects.
	if len(s.Properties) > maxFastProps {
		return unsupportedNode()
	}
	switch ap := s.AdditionalProperties.(type) {
	case nil:
		n.extra = extraAny
	case bool:
		if ap {
			n.extra = extraAny
		} else {
			n.extra = extraNone
		}
	case *jsonschema.Schema:
		if ap.Bool != nil {
			// A boolean schema in schema form; the validator treats it
			// as the schema it is.
			if *ap.Bool {
				n.extra = extraAny
			} else {
				n.extra = extraNone
			}
		} else {
			n.extra = extraSchema
		}
	default:
		return unsupportedNode()
	}

	if cn != nil && !sameChildren(s, cn, itemSchema, n.extra) {
		return unsupportedNode()
	}
	n.anyValue = n.types == 0 && n.enum == nil && n.konst == nil && n.format == nil &&
		n.minLen < 0 && n.maxLen < 0 && n.pattern == nil && n.num == nil &&
		n.minItems < 0 && n.maxItems < 0 && !n.unique && itemSchema == nil &&
		len(s.Properties) == 0 && len(s.Required) == 0 && n.extra == extraAny
	if n.anyValue {
		return b.bindType(n, t)
	}

	n = b.bindType(n, t)
	if n.unsupported {
		return n
	}
	elem := func(et reflect.Type) reflect.Type { // the Go type of children
		if n.bind == bindNone || n.bind == bindGeneric {
			return nil
		}
		return et
	}

	// Items.
	var it reflect.Type
	if n.bind == bindSlice || n.bind == bindArray {
		it = n.typ.Elem()
	}
	if itemSchema != nil {
		var icn *coerceNode
		if cn != nil {
			icn = cn.items
		}
		n.items = b.node(itemSchema, icn, elem(it), depth+1)
	} else if it != nil {
		n.items = b.anyNode(it)
	}

	// Properties.
	var fields []structField
	if n.bind == bindStruct {
		fields = visibleFields(n.typ)
	}
	for name, ps := range s.Properties {
		var pcn *coerceNode
		if cn != nil {
			pcn = cn.props[name]
			if pcn == nil {
				pcn = cn.additional // what coercion falls back to
			}
		}
		prop := fastProp{name: name}
		var pt reflect.Type
		var quoted decodeFunc
		switch n.bind {
		case bindStruct:
			if i, ok := fieldNamed(fields, name); ok {
				f := fields[i]
				prop.index, prop.field, pt = f.index, true, f.typ
				if f.quoted {
					quoted = quotedDecoder(b.dec.build(f.typ))
				}
			}
		case bindMap:
			pt = n.mapElem
		}
		prop.node = b.node(ps, pcn, elem(pt), depth+1)
		if quoted != nil && !prop.node.unsupported {
			// A ",string" field: the value is checked as the schema
			// says and decoded as the pipeline does.
			c := *prop.node
			c.bind, c.ptrs, c.dec = bindGeneric, 0, quoted
			prop.node = &c
		}
		n.props = append(n.props, prop)
	}
	if len(n.props) > 8 {
		n.propIndex = make(map[string]int, len(n.props))
		for i, p := range n.props {
			n.propIndex[p.name] = i
		}
	}
	for _, r := range s.Required {
		i := n.lookup(r)
		if i < 0 {
			return unsupportedNode() // required but not declared
		}
		if p := n.props[i]; p.node.unsupported || n.bind == bindStruct && !p.field {
			return unsupportedNode() // every object here would decline
		}
		n.required |= 1 << i
	}
	if n.extra == extraSchema {
		var acn *coerceNode
		if cn != nil {
			acn = cn.additional
		}
		var at reflect.Type
		if n.bind == bindMap {
			at = n.mapElem
		}
		n.additional = b.node(s.AdditionalProperties.(*jsonschema.Schema), acn, elem(at), depth+1)
	}
	if n.extra == extraAny && n.bind == bindMap {
		n.additional = b.anyNode(n.mapElem) // undeclared keys take any value
	}
	return n
}

// anyNode is a position that accepts every value, stored into a t.
func (b *planBuilder) anyNode(t reflect.Type) *fastNode {
	return b.bindType(&fastNode{anyValue: true, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}, t)
}

// sameChildren reports whether the coercion plan cn has the children the
// compiled schema s has: the same object-schema properties, an
// additionalProperties schema exactly when s has one, and an items schema
// exactly when s has one. Both come from one schema text, so they differ
// only where coercion resolves a position differently from the validator;
// such a position is left to the full pipeline.
func sameChildren(s *jsonschema.Schema, cn *coerceNode, items *jsonschema.Schema, extra extraRule) bool {
	for name := range cn.props {
		if ps, ok := s.Properties[name]; !ok || ps.Bool != nil {
			return false
		}
	}
	for name, ps := range s.Properties {
		if _, ok := cn.props[name]; !ok && ps.Bool == nil {
			return false
		}
	}
	if (cn.additional != nil) != (extra == extraSchema) {
		return false
	}
	return (cn.items != nil) == (items != nil && items.Bool == nil)
}

// fastKeywordsOnly reports whether s uses only keywords the fast path
// checks (see the list above).
func fastKeywordsOnly(s *jsonschema.Schema) bool {
	return s.Ref == nil && s.RecursiveRef == nil && s.DynamicRef == nil &&
		s.Not == nil && len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0 &&
		s.If == nil && s.Then == nil && s.Else == nil &&
		s.MaxProperties == nil && s.MinProperties == nil && s.PropertyNames == nil &&
		len(s.PatternProperties) == 0 && len(s.Dependencies) == 0 &&
		len(s.DependentRequired) == 0 && len(s.DependentSchemas) == 0 &&
		s.UnevaluatedProperties == nil &&
		s.Contains == nil && s.MinContains == nil && s.MaxContains == nil &&
		s.AdditionalItems == nil && len(s.PrefixItems) == 0 && s.UnevaluatedItems == nil &&
		s.ContentEncoding == nil && s.ContentMediaType == nil && s.ContentSchema == nil &&
		len(s.Extensions) == 0
}

// bindType sets how values of type t are stored at n (nothing for a
// validate-only plan, t == nil). Its choices follow the pipeline's decoder:
// a type the fast path does not store itself is decoded by that decoder.
func (b *planBuilder) bindType(n *fastNode, t reflect.Type) *fastNode {
	if b.dec == nil || t == nil {
		return n
	}
	n.dec = b.dec.build(t)
	if n.anyValue {
		n.bind = bindGeneric
		return n
	}
	et := t
	for et.Kind() == reflect.Pointer {
		n.ptrs++
		et = et.Elem()
	}
	n.typ = et
	n.bind = bindGeneric
	if et == rawMessageType || et == jsonNumberType || reflect.PointerTo(et).Implements(jsonUnmarshalerType) || reflect.PointerTo(et).Implements(textUnmarshalerType) {
		n.ptrs = 0
		return n
	}
	switch et.Kind() {
	case reflect.Bool:
		n.bind = bindBool
	case reflect.String:
		n.bind = bindString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.bind = bindInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n.bind = bindUint
	case reflect.Float32, reflect.Float64:
		n.bind = bindFloat
	case reflect.Struct:
		n.bind = bindStruct
	case reflect.Slice:
		if et.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(et.Elem()).Implements(jsonUnmarshalerType) && !reflect.PointerTo(et.Elem()).Implements(textUnmarshalerType) {
			break // base64 text: the decoder's
		}
		n.bind = bindSlice
	case reflect.Array:
		n.bind = bindArray
	case reflect.Map:
		n.bind = bindMap
		n.keyOf = mapKeyDecoder(et.Key())
		n.mapElem = et.Elem()
	}
	if n.bind == bindGeneric {
		n.ptrs = 0
	}
	return n
}
