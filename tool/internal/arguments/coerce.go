package arguments

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// typeSet is a set of JSON Schema types. The zero set allows any type.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tInteger
	tNumber
	tString
	tArray
	tObject
)

func typeBit(name string) typeSet {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBoolean
	case "integer":
		return tInteger
	case "number":
		return tNumber
	case "string":
		return tString
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return 0
}

// coerceNode is what coercion needs to know of one schema: the types it
// allows and the schemas of the values inside.
type coerceNode struct {
	types      typeSet
	props      map[string]*coerceNode
	required   map[string]bool
	additional *coerceNode
	items      *coerceNode
	prefix     []*coerceNode
}

func (n *coerceNode) allows(t typeSet) bool {
	return n.types == 0 || n.types&t != 0
}

// coerceCompiler builds coercion nodes from a schema document, resolving
// local references ("#", "#/$defs/...", "#/definitions/...").
type coerceCompiler struct {
	root  any
	byRef map[string]*coerceNode
	depth int
}

func compileCoercion(doc any) *coerceNode {
	c := &coerceCompiler{root: doc, byRef: map[string]*coerceNode{}}
	return c.node(doc)
}

func (c *coerceCompiler) node(v any) *coerceNode {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil // boolean schema or garbage: no coercion
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > 256 {
		return nil
	}
	if ref, ok := obj["$ref"].(string); ok {
		if n, ok := c.byRef[ref]; ok {
			return n
		}
		target, ok := resolvePointer(c.root, ref)
		if !ok {
			return nil
		}
		n := &coerceNode{}
		c.byRef[ref] = n
		if t := c.node(target); t != nil {
			*n = *t
		}
		c.fill(n, obj)
		return n
	}
	n := &coerceNode{}
	c.fill(n, obj)
	return n
}

// fill adds to n what the schema object obj says.
func (c *coerceCompiler) fill(n *coerceNode, obj map[string]any) {
	switch t := obj["type"].(type) {
	case string:
		n.types |= typeBit(t)
	case []any:
		for _, item := range t {
			if s, ok := item.(string); ok {
				n.types |= typeBit(s)
			}
		}
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		if n.props == nil {
			n.props = make(map[string]*coerceNode, len(props))
		}
		for name, sub := range props {
			if sn := c.node(sub); sn != nil {
				n.props[name] = sn
			}
		}
	}
	if req, ok := obj["required"].([]any); ok {
		if n.required == nil {
			n.required = make(map[string]bool, len(req))
		}
		for _, r := range req {
			if s, ok := r.(string); ok {
				n.required[s] = true
			}
		}
	}
	if ap, ok := obj["additionalProperties"]; ok {
		n.additional = c.node(ap)
	}
	if items, ok := obj["items"]; ok {
		switch items := items.(type) {
		case []any: // draft 4-7 tuple form
			for _, it := range items {
				n.prefix = append(n.prefix, c.node(it))
			}
		default:
			n.items = c.node(items)
		}
	}
	if prefix, ok := obj["prefixItems"].([]any); ok {
		for _, it := range prefix {
			n.prefix = append(n.prefix, c.node(it))
		}
	}
	// Alternatives: a value may take any type a branch allows; object and
	// array branches lend their sub-schemas.
	var branchTypes typeSet
	sawBranch, anyBranch := false, false
	for _, key := range [...]string{"anyOf", "oneOf"} {
		list, ok := obj[key].([]any)
		if !ok {
			continue
		}
		for _, b := range list {
			bn := c.node(b)
			sawBranch = true
			if bn == nil || bn.types == 0 {
				anyBranch = true
				continue
			}
			branchTypes |= bn.types
			c.borrow(n, bn)
		}
	}
	if sawBranch && n.types == 0 && !anyBranch {
		n.types = branchTypes
	}
	if list, ok := obj["allOf"].([]any); ok {
		for _, b := range list {
			if bn := c.node(b); bn != nil {
				if n.types == 0 {
					n.types = bn.types
				}
				c.borrow(n, bn)
				for k := range bn.required {
					if n.required == nil {
						n.required = map[string]bool{}
					}
					n.required[k] = true
				}
			}
		}
	}
}

// borrow copies into n the child schemas of a branch that n lacks.
func (c *coerceCompiler) borrow(n, b *coerceNode) {
	for name, p := range b.props {
		if n.props == nil {
			n.props = map[string]*coerceNode{}
		}
		if _, ok := n.props[name]; !ok {
			n.props[name] = p
		}
	}
	if n.items == nil {
		n.items = b.items
	}
	if n.additional == nil {
		n.additional = b.additional
	}
}

// resolvePointer resolves a local reference within the document root.
func resolvePointer(root any, ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if frag == "" {
		return root, true
	}
	if frag[0] != '/' {
		return nil, false
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// coerce moves v toward what n allows, in place where v is a container,
// and reports whether anything changed. Only values whose kind differs from
// every type the schema allows are touched:
//
//   - a string that spells a number becomes that number where an integer or
//     a number is wanted ("3" → 3, " 2.5 " → 2.5);
//   - "true" or "false" (any case) becomes a boolean where a boolean is wanted;
//   - a number becomes its decimal text where a string is wanted;
//   - a string holding a JSON array or object is parsed where one is wanted;
//   - "null" becomes null where null is wanted;
//   - a null property that is not required and whose schema does not allow
//     null is removed, as if the model had left it out.
func coerce(v any, n *coerceNode) (any, bool) {
	if n == nil {
		return v, false
	}
	kind := kindOf(v)
	if kind != 0 && !n.allows(kind) && !(kind == tInteger && n.allows(tNumber)) && !(kind == tNumber && n.types&tInteger != 0 && isIntegral(v)) {
		if nv, ok := convert(v, kind, n); ok {
			v = nv
			kind = kindOf(v)
			changed := true
			if kind == tObject || kind == tArray {
				v, _ = coerceChildren(v, n)
			}
			return v, changed
		}
		return v, false
	}
	return coerceChildren(v, n)
}

func coerceChildren(v any, n *coerceNode) (any, bool) {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		if n.props == nil && n.additional == nil {
			return v, false
		}
		for k, item := range v {
			child := n.props[k]
			if child == nil {
				child = n.additional
			}
			if child == nil {
				continue
			}
			if item == nil && !n.required[k] && child.types != 0 && !child.allows(tNull) {
				delete(v, k)
				changed = true
				continue
			}
			if nv, ok := coerce(item, child); ok {
				v[k] = nv
				changed = true
			}
		}
	case []any:
		if n.items == nil && n.prefix == nil {
			return v, false
		}
		for i, item := range v {
			child := n.items
			if i < len(n.prefix) {
				child = n.prefix[i]
			}
			if nv, ok := coerce(item, child); ok {
				v[i] = nv
				changed = true
			}
		}
	}
	return v, changed
}

// kindOf returns the JSON type of a decoded value; integral numbers report
// tInteger. It returns 0 for values that are not JSON.
func kindOf(v any) typeSet {
	switch v := v.(type) {
	case nil:
		return tNull
	case bool:
		return tBoolean
	case string:
		return tString
	case json.Number:
		if isIntegerLiteral(string(v)) {
			return tInteger
		}
		return tNumber
	case float64:
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			return tInteger
		}
		return tNumber
	case float32:
		if float64(v) == math.Trunc(float64(v)) && !math.IsInf(float64(v), 0) {
			return tInteger
		}
		return tNumber
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return tInteger
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	return 0
}

// isIntegral reports whether a number has no fractional part ("3.0", 1e2).
func isIntegral(v any) bool {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
	case float64:
		return v == math.Trunc(v) && !math.IsInf(v, 0)
	}
	return false
}

// isIntegerLiteral reports whether s is a JSON number with no fraction or
// exponent.
func isIntegerLiteral(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isJSONNumber reports whether s follows the JSON number grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// convert turns v, of the given kind, into a value of a type n allows.
func convert(v any, kind typeSet, n *coerceNode) (any, bool) {
	switch kind {
	case tString:
		s := strings.TrimSpace(v.(string))
		if n.allows(tInteger) || n.allows(tNumber) {
			if isJSONNumber(s) {
				if n.allows(tNumber) || isIntegerLiteral(s) || isIntegral(json.Number(s)) {
					return json.Number(s), true
				}
			}
		}
		if n.allows(tBoolean) {
			switch strings.ToLower(s) {
			case "true":
				return true, true
			case "false":
				return false, true
			}
		}
		if n.allows(tNull) && s == "null" {
			return nil, true
		}
		if (n.allows(tObject) && strings.HasPrefix(s, "{")) || (n.allows(tArray) && strings.HasPrefix(s, "[")) {
			if parsed, err := parseJSON([]byte(s)); err == nil {
				if k := kindOf(parsed); n.allows(k) {
					return parsed, true
				}
			}
		}
	case tInteger, tNumber:
		if n.allows(tString) {
			return numberText(v), true
		}
	}
	return nil, false
}

// numberText renders a decoded number as JSON would.
func numberText(v any) string {
	switch v := v.(type) {
	case json.Number:
		return string(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// parseJSON decodes one JSON value, numbers as json.Number, and rejects
// trailing data.
func parseJSON(raw []byte) (any, error) { return parseJSONFast(raw) }
