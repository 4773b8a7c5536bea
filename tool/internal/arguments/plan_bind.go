package arguments

import "reflect"

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
