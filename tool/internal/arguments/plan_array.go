package arguments

import (
	"reflect"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The keywords of arrays: items (one schema for every item), minItems,
// maxItems, uniqueItems.

// arrayKeywords sets the array keywords of s at n and returns the schema
// of every item (nil when there is none). It reports false for the tuple
// form of items, which the plan does not check.
func arrayKeywords(n *fastNode, s *jsonschema.Schema) (*jsonschema.Schema, bool) {
	n.minItems, n.maxItems = s.MinItems, s.MaxItems // -1 when absent, as at n
	n.unique = s.UniqueItems
	if s.Items2020 != nil { // draft 2020-12, where items is one schema
		return s.Items2020, true
	}
	if s.Items != nil { // earlier drafts
		is, ok := s.Items.(*jsonschema.Schema)
		if !ok {
			return nil, false // the tuple form
		}
		return is, true
	}
	return nil, true
}

// items builds the position of n's items, of schema itemSchema, where
// coercion uses cn's.
func (b *planBuilder) items(n *fastNode, itemSchema *jsonschema.Schema, cn *coerceNode, depth int) {
	var it reflect.Type
	if n.bind == bindSlice || n.bind == bindArray {
		it = n.typ.Elem()
	}
	if itemSchema != nil {
		var icn *coerceNode
		if cn != nil {
			icn = cn.items
		}
		n.items = b.node(itemSchema, icn, n.elem(it), depth+1)
	} else if it != nil {
		n.items = b.anyNode(it)
	}
}
