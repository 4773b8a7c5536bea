package arguments

import (
	"reflect"
	"regexp"

	"github.com/santhosh-tekuri/jsonschema/v5"
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
	format func(any) bool // the validator's own format function

	minLen, maxLen int // -1 when absent
	pattern        *regexp.Regexp

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
// and (in a typed plan) values go into a t. Each family of keywords has
// its file: plan_scalar.go (type, enum, const, format, strings, numbers),
// plan_array.go (items and their counts), plan_object.go (properties,
// required, additionalProperties) and plan_bind.go (the Go type).
func (b *planBuilder) node(s *jsonschema.Schema, cn *coerceNode, t reflect.Type, depth int) *fastNode {
	if s == nil || depth > maxFastDepth {
		return unsupportedNode()
	}
	n := &fastNode{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	if s.Always != nil {
		// true accepts everything, and coercion must have nothing to do
		// here; false refuses everything.
		if !*s.Always || cn != nil {
			return unsupportedNode()
		}
		n.anyValue = true
		return b.bindType(n, t)
	}
	if !fastKeywordsOnly(s) || !scalarKeywords(n, s, cn) {
		return unsupportedNode()
	}
	itemSchema, ok := arrayKeywords(n, s)
	if !ok || !objectKeywords(n, s) {
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
	b.items(n, itemSchema, cn, depth)
	if !b.properties(n, s, cn, depth) {
		return unsupportedNode()
	}
	return n
}

// elem returns the Go type of n's children, of type et: none where n
// stores nothing itself.
func (n *fastNode) elem(et reflect.Type) reflect.Type {
	if n.bind == bindNone || n.bind == bindGeneric {
		return nil
	}
	return et
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
		if ps, ok := s.Properties[name]; !ok || ps.Always != nil {
			return false
		}
	}
	for name, ps := range s.Properties {
		if _, ok := cn.props[name]; !ok && ps.Always == nil {
			return false
		}
	}
	if (cn.additional != nil) != (extra == extraSchema) {
		return false
	}
	return (cn.items != nil) == (items != nil && items.Always == nil)
}

// fastKeywordsOnly reports whether s uses only keywords the fast path
// checks (see the list above). The validator reads minContains and
// maxContains only with contains, which is refused, and contentEncoding and
// contentMediaType are annotations: content is not asserted.
func fastKeywordsOnly(s *jsonschema.Schema) bool {
	return s.Ref == nil && s.RecursiveRef == nil && s.DynamicRef == nil &&
		s.Not == nil && len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0 &&
		s.If == nil && s.Then == nil && s.Else == nil &&
		s.MaxProperties < 0 && s.MinProperties < 0 && s.PropertyNames == nil && !s.RegexProperties &&
		len(s.PatternProperties) == 0 && len(s.Dependencies) == 0 &&
		len(s.DependentRequired) == 0 && len(s.DependentSchemas) == 0 &&
		s.UnevaluatedProperties == nil &&
		s.Contains == nil &&
		s.AdditionalItems == nil && len(s.PrefixItems) == 0 && s.UnevaluatedItems == nil &&
		s.ContentSchema == nil &&
		len(s.Extensions) == 0
}
