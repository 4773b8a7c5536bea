package arguments

import (
	"reflect"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The keywords of objects: properties, required, additionalProperties.

// objectKeywords sets what n does with undeclared properties. It reports
// false when s declares more properties than the plan tracks or an
// additionalProperties the plan cannot read.
func objectKeywords(n *fastNode, s *jsonschema.Schema) bool {
	if len(s.Properties) > maxFastProps {
		return false
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
		if ap.Always != nil {
			// A boolean schema in schema form; the validator treats it
			// as the schema it is.
			if *ap.Always {
				n.extra = extraAny
			} else {
				n.extra = extraNone
			}
		} else {
			n.extra = extraSchema
		}
	default:
		return false
	}
	return true
}

// properties builds the positions of n's declared properties and of its
// undeclared ones, where coercion uses cn's. It reports false when every
// object at n would decline: a required property that is not declared, or
// that the plan cannot check or store.
func (b *planBuilder) properties(n *fastNode, s *jsonschema.Schema, cn *coerceNode, depth int) bool {
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
		prop.node = b.node(ps, pcn, n.elem(pt), depth+1)
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
			return false // required but not declared
		}
		if p := n.props[i]; p.node.unsupported || n.bind == bindStruct && !p.field {
			return false // every object here would decline
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
		n.additional = b.node(s.AdditionalProperties.(*jsonschema.Schema), acn, n.elem(at), depth+1)
	}
	if n.extra == extraAny && n.bind == bindMap {
		n.additional = b.anyNode(n.mapElem) // undeclared keys take any value
	}
	return true
}
