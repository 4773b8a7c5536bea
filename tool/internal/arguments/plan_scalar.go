package arguments

import (
	"encoding/json"
	"math"
	"math/big"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The keywords of single values: type, enum, const, format, minLength,
// maxLength, pattern, and the numeric bounds and multipleOf.

// scalarKeywords sets the single-value keywords of s at n. It reports
// false when coercion, following cn, sees the position's types otherwise
// than the validator, or an enum or const holds what the plan cannot
// compare.
func scalarKeywords(n *fastNode, s *jsonschema.Schema, cn *coerceNode) bool {
	for _, name := range s.Types {
		n.types |= typeBit(name)
	}
	if cn != nil && (cn.types != n.types || len(cn.prefix) > 0) {
		return false // coercion sees this position differently
	}
	if len(s.Enum) > 0 { // the validator ignores an empty enum
		e, ok := newFastEnum(s.Enum)
		if !ok {
			return false
		}
		n.enum = e
	}
	if len(s.Constant) > 0 { // a one-item slice, so that a const of null shows
		e, ok := newFastEnum(s.Constant[:1])
		if !ok {
			return false
		}
		n.konst = e
	}
	if s.Format != "" {
		f, ok := formatFunc(s.Format)
		if !ok {
			return false
		}
		n.format = f
	}
	n.minLen, n.maxLen = s.MinLength, s.MaxLength // -1 when absent, as at n
	n.pattern = s.Pattern
	n.num = newNumBounds(s)
	return true
}

// formatFunc returns the function the validator checks the format name
// with: the compiler takes it from formats, or else from the package's
// registry (which Trellis never writes). It reports false for a name only
// that registry knows, since it may have changed after compiling.
func formatFunc(name string) (func(any) bool, bool) {
	if f, ok := formats()[name]; ok {
		return f, true
	}
	_, ok := jsonschema.Formats[name]
	return nil, !ok // an unknown format is not asserted
}

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
