package arguments

import "encoding/json"

// validValue reports whether a decoded value (as Parse decodes it: maps,
// slices, strings, json.Number, booleans and nil) passes the schema, by the
// checks of the validate-only plan n. It is Validate's shortcut for the
// usual case, arguments that are right once coerced: the validator
// allocates for every object, array and bound it checks, the plan for
// none of them. Like the fast path it answers true only when sure; false
// leaves the value to the validator, which also words the problems.
func (n *fastNode) validValue(v any, depth int) bool {
	if n.unsupported || depth > maxParseDepth {
		return false
	}
	if n.anyValue {
		return true
	}
	switch v := v.(type) {
	case nil:
		return n.allows(tNull) && n.checkNull()
	case bool:
		return n.allows(tBoolean) && n.checkBool(v)
	case string:
		return n.allows(tString) && n.checkString(v)
	case json.Number:
		// Only the text of a JSON number: the plan reads number literals.
		p := parser{s: string(v)}
		if p.s == "" {
			return false
		}
		if lit, err := p.numberText(); err != nil || len(lit) != len(p.s) {
			return false
		}
		_, _, ok := n.numberOK(p.s)
		return ok
	case map[string]any:
		if !n.allows(tObject) || n.enum != nil || n.konst != nil || n.format != nil {
			return false
		}
		var seen uint64
		for key, val := range v {
			child := n.additional
			if i := n.lookup(key); i >= 0 {
				seen |= 1 << i
				child = n.props[i].node
			} else if n.extra == extraNone {
				return false
			}
			if child != nil && !child.validValue(val, depth+1) {
				return false // child is nil for any value (extraAny)
			}
		}
		return seen&n.required == n.required
	case []any:
		if !n.allows(tArray) || n.enum != nil || n.konst != nil || n.format != nil || !n.itemCountOK(len(v)) {
			return false
		}
		if n.unique && len(v) > maxFastUnique {
			return false
		}
		var keys [maxFastUnique]uniqueKey
		for i, item := range v {
			if n.items != nil && !n.items.validValue(item, depth+1) {
				return false
			}
			if n.unique {
				k, ok := uniqueKeyOfValue(item)
				if !ok {
					return false
				}
				for _, o := range keys[:i] {
					if o == k {
						return false
					}
				}
				keys[i] = k
			}
		}
		return true
	}
	return false // a type Parse does not produce
}

// uniqueKeyOfValue is uniqueKeyOf for a decoded item.
func uniqueKeyOfValue(v any) (uniqueKey, bool) {
	switch v := v.(type) {
	case nil:
		return uniqueKey{kind: 'n'}, true
	case bool:
		if v {
			return uniqueKey{kind: 't'}, true
		}
		return uniqueKey{kind: 'f'}, true
	case string:
		return uniqueKey{kind: '"', s: v}, true
	case json.Number:
		if string(v) == "" {
			return uniqueKey{}, false
		}
		return uniqueKeyOf(string(v))
	}
	return uniqueKey{}, false
}
