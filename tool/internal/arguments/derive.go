package arguments

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// MaxDepth is how deeply the types of a derived schema may nest: a
// value may sit at most this many levels below the root, where a struct
// field, a slice or array element and a map value each go one level down.
// A type that nests deeper is an error at construction. A self-referencing type does not count
// against the cap: it is emitted once under $defs and referenced with $ref.
const MaxDepth = 32

// Derive derives the JSON Schema of t's JSON form, following the tag
// dialect documented in package tool and in docs/tools.md. Nested types
// are inlined, so the schema is one plain tree; only a type that contains
// itself is placed under $defs and referenced with $ref.
func Derive(t reflect.Type) (json.RawMessage, error) { return deriveSchema(t) }

// DeriveObject derives the schema of a tool's argument type, which must be
// a struct or a pointer to one.
func DeriveObject(t reflect.Type) (json.RawMessage, error) {
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: argument type %s is a %s, not a struct: a tool's arguments are a JSON object", ErrInvalidTool, t, st.Kind())
	}
	return deriveSchema(t)
}

func deriveSchema(t reflect.Type) (raw json.RawMessage, err error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil type", ErrInvalidTool)
	}
	if err := checkType(t, "$", 0, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}

	names := map[reflect.Type]string{}
	used := map[string]reflect.Type{}
	anon := 0
	namer := func(t reflect.Type) string {
		if n, ok := names[t]; ok {
			return n
		}
		base := t.Name()
		if base == "" {
			if t.Kind() != reflect.Struct {
				return ""
			}
			anon++
			base = "anonymous" + strconv.Itoa(anon)
		}
		base = sanitizeDefName(base)
		n := base
		for i := 2; used[n] != nil && used[n] != t; i++ {
			n = base + "_" + strconv.Itoa(i)
		}
		names[t], used[n] = n, t
		return n
	}
	r := &jsonschema.Reflector{
		Anonymous:     true,
		Namer:         namer,
		LookupComment: plainDescription,
		Mapper:        textTypeSchema,
	}
	defer func() {
		if p := recover(); p != nil {
			raw, err = nil, fmt.Errorf("%w: cannot derive a schema for %s: %v", ErrInvalidTool, t, p)
		}
	}()
	root := r.ReflectFromType(t)
	defs := root.Definitions
	root.Definitions = nil

	// Pointer fields are optional even without omitempty, and the schema
	// lists only the fields the decoder fills.
	for typ, name := range names {
		if def := defs[name]; def != nil && typ.Kind() == reflect.Struct {
			def.Required = dropOptionalPointers(typ, def.Required)
			dropInvisible(typ, def)
			for _, f := range visibleFields(typ) {
				if def.Properties == nil {
					break
				}
				if fs, ok := def.Properties.Get(f.name); ok {
					integerKeys(f.typ, fs)
				}
			}
		}
	}
	integerKeys(t, root)

	in := &inliner{defs: defs, needed: map[string]bool{}}
	out := in.walk(root)
	if len(in.needed) > 0 {
		out.Definitions = jsonschema.Definitions{}
		for done := map[string]bool{}; len(done) < len(in.needed); {
			for name := range in.needed {
				if done[name] {
					continue
				}
				done[name] = true
				in.stack = append(in.stack[:0], name)
				out.Definitions[name] = in.walk(defs[name])
			}
		}
	}
	out.Version, out.ID = "", ""
	return json.Marshal(out)
}

// checkEmbeddedPointers refuses a struct type t, at path, with a field
// promoted through a pointer to an unexported struct: the decoder, like
// encoding/json, cannot allocate it, so arguments could never fill the
// field.
func checkEmbeddedPointers(t reflect.Type, path string) error {
	for _, vf := range visibleFields(t) {
		typ := t
		for _, idx := range vf.index[:len(vf.index)-1] {
			f := typ.Field(idx)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				if !f.IsExported() {
					return fmt.Errorf("%w: %s embeds %s, a pointer to an unexported struct, whose field %q the arguments could never fill (the decoder cannot allocate it); embed the struct by value, export its type, or tag the embedded field json:\"-\"", ErrInvalidTool, path, f.Type, vf.name)
				}
				ft = ft.Elem()
			}
			typ = ft
		}
	}
	return nil
}

// The key patterns of maps with integer keys: the decoder reads "-1" into
// a signed key and refuses it, as it refuses "x", for an unsigned one.
const (
	digitsPattern       = "^[0-9]+$"
	signedDigitsPattern = "^-?[0-9]+$"
)

// integerKeys makes the schema s of type t, and the schemas of the values t
// holds down to the next struct, say which keys a map with integer keys
// takes: the reflector gives signed keys a pattern without the minus sign
// and unsigned keys none.
func integerKeys(t reflect.Type, s *jsonschema.Schema) {
	for s != nil && s.Ref == "" {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			t, s = t.Elem(), s.Items
		case reflect.Map:
			elem := s.AdditionalProperties
			switch t.Key().Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				if v, ok := s.PatternProperties[digitsPattern]; ok {
					delete(s.PatternProperties, digitsPattern)
					s.PatternProperties[signedDigitsPattern] = v
					elem = v
				}
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				if len(s.PatternProperties) == 0 {
					v := elem
					if v == nil {
						v = jsonschema.TrueSchema
					}
					s.PatternProperties = map[string]*jsonschema.Schema{digitsPattern: v}
					s.AdditionalProperties = jsonschema.FalseSchema
				}
			}
			t, s = t.Elem(), elem
		default:
			return
		}
	}
}

// dropInvisible removes from def, the schema of the struct type t, the
// properties no field receives under encoding/json's rules (see
// visibleFields): a name that embedded structs give twice at the same
// depth, unexported embedded types that are not structs. The reflector
// lists them; the decoder would drop what the model sends there.
func dropInvisible(t reflect.Type, def *jsonschema.Schema) {
	if def.Properties == nil {
		return
	}
	visible := map[string]bool{}
	for _, f := range visibleFields(t) {
		visible[f.name] = true
	}
	var drop []string
	for pair := def.Properties.Oldest(); pair != nil; pair = pair.Next() {
		if !visible[pair.Key] {
			drop = append(drop, pair.Key)
		}
	}
	for _, k := range drop {
		def.Properties.Delete(k)
	}
	if len(drop) > 0 {
		def.Required = slices.DeleteFunc(def.Required, func(n string) bool { return !visible[n] })
	}
}

func sanitizeDefName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '_'
	}, s)
}

// plainDescription lets a plain `description:"..."` tag describe a field
// when the jsonschema tag gives no description.
func plainDescription(t reflect.Type, field string) string {
	if field == "" || t.Kind() != reflect.Struct {
		return ""
	}
	f, ok := t.FieldByName(field)
	if !ok {
		return ""
	}
	return f.Tag.Get("description")
}

// fieldName returns the JSON name of a struct field, whether it is
// skipped, and whether it is an embedded struct whose fields are promoted.
func fieldName(f reflect.StructField) (name string, skip, promote bool) {
	jsonTag := f.Tag.Get("json")
	jsonName, _, _ := strings.Cut(jsonTag, ",")
	if jsonTag == "-" {
		return "", true, false
	}
	if s, _, _ := strings.Cut(f.Tag.Get("jsonschema"), ","); s == "-" {
		return "", true, false
	}
	if f.Anonymous && jsonName == "" {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return "", false, true
		}
	}
	if !f.IsExported() {
		return "", true, false
	}
	if jsonName == "" {
		jsonName = f.Name
	}
	return jsonName, false, false
}

// dropOptionalPointers removes from required the names of t's pointer
// fields that are not explicitly tagged jsonschema:"required".
func dropOptionalPointers(t reflect.Type, required []string) []string {
	if len(required) == 0 {
		return required
	}
	optional := map[string]bool{}
	var collect func(t reflect.Type, depth int)
	collect = func(t reflect.Type, depth int) {
		if depth > MaxDepth {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, skip, promote := fieldName(f)
			switch {
			case skip:
			case promote:
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				collect(ft, depth+1)
			case f.Type.Kind() == reflect.Pointer && !hasSchemaFlag(f, "required"):
				optional[name] = true
			}
		}
	}
	collect(t, 0)
	out := required[:0:0]
	for _, name := range required {
		if !optional[name] {
			out = append(out, name)
		}
	}
	return out
}

func hasSchemaFlag(f reflect.StructField, flag string) bool {
	for _, item := range strings.Split(f.Tag.Get("jsonschema"), ",") {
		if item == flag {
			return true
		}
	}
	return false
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
	customSchemaType    = reflect.TypeFor[interface{ JSONSchema() *jsonschema.Schema }]()
)

// textTypeSchema describes json.Number as a number, and a struct type that
// JSON carries as a string, because it decodes itself from text
// (netip.Addr, ...), as a string; nil leaves t to the reflector. Types that
// describe themselves (a JSONSchema method) or decode JSON themselves
// (time.Time, which the reflector knows) are left alone.
func textTypeSchema(t reflect.Type) *jsonschema.Schema {
	if t == jsonNumberType {
		return &jsonschema.Schema{Type: "number"} // a number kept as its text
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	pt := reflect.PointerTo(t)
	if t.Implements(customSchemaType) || pt.Implements(customSchemaType) || pt.Implements(jsonUnmarshalerType) || !pt.Implements(textUnmarshalerType) {
		return nil
	}
	return &jsonschema.Schema{Type: "string"}
}

// checkType rejects what cannot be an argument type before the reflector
// sees it: kinds with no JSON form, non-empty interfaces, map keys JSON
// cannot carry, and nesting deeper than MaxDepth.
func checkType(t reflect.Type, path string, depth int, onPath map[reflect.Type]bool) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w: %s nests deeper than %d levels", ErrInvalidTool, path, MaxDepth)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(customSchemaType) || reflect.PointerTo(t).Implements(customSchemaType) {
		return nil
	}
	if t == rawMessageType {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return fmt.Errorf("%w: %s has interface type %s; only the empty interface (any) can be decoded from JSON", ErrInvalidTool, path, t)
		}
		return nil
	case reflect.Slice, reflect.Array:
		return checkType(t.Elem(), path+"[]", depth+1, onPath)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			if !reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
				return fmt.Errorf("%w: %s is a map with key type %s, which JSON object keys cannot hold", ErrInvalidTool, path, t.Key())
			}
		}
		return checkType(t.Elem(), path+"{}", depth+1, onPath)
	case reflect.Struct:
		if onPath[t] {
			return nil // recursive: referenced through $defs
		}
		if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return nil // decodes itself (time.Time, ...)
		}
		if err := checkEmbeddedPointers(t, path); err != nil {
			return err
		}
		onPath[t] = true
		defer delete(onPath, t)
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, skip, promote := fieldName(f)
			if skip {
				continue
			}
			next, d := path+"."+name, depth+1
			if promote {
				next, d = path, depth
			}
			if err := checkType(f.Type, next, d, onPath); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("%w: %s has type %s, which has no JSON form", ErrInvalidTool, path, t)
	}
}

// inliner replaces the reflector's $refs by copies of their definitions,
// except a reference to a type that is being expanded already: that one
// stays a $ref, and its definition is kept.
type inliner struct {
	defs   jsonschema.Definitions
	stack  []string
	needed map[string]bool
}

const defsPrefix = "#/$defs/"

func (in *inliner) walk(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil || s == jsonschema.TrueSchema || s == jsonschema.FalseSchema {
		return s
	}
	if name, ok := strings.CutPrefix(s.Ref, defsPrefix); ok {
		def := in.defs[name]
		if def == nil {
			return s
		}
		for _, n := range in.stack {
			if n == name {
				in.needed[name] = true
				ref := *s
				return &ref
			}
		}
		in.stack = append(in.stack, name)
		body := in.walk(def)
		in.stack = in.stack[:len(in.stack)-1]
		merged := *body
		overlay(&merged, s)
		return &merged
	}
	c := *s
	c.Definitions = nil
	if s.Properties != nil {
		c.Properties = jsonschema.NewProperties()
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			c.Properties.Set(p.Key, in.walk(p.Value))
		}
	}
	c.Items = in.walk(s.Items)
	c.AdditionalProperties = in.walk(s.AdditionalProperties)
	c.PropertyNames = in.walk(s.PropertyNames)
	c.Contains = in.walk(s.Contains)
	c.Not = in.walk(s.Not)
	c.If, c.Then, c.Else = in.walk(s.If), in.walk(s.Then), in.walk(s.Else)
	c.ContentSchema = in.walk(s.ContentSchema)
	c.AllOf = in.walkList(s.AllOf)
	c.AnyOf = in.walkList(s.AnyOf)
	c.OneOf = in.walkList(s.OneOf)
	c.PrefixItems = in.walkList(s.PrefixItems)
	c.PatternProperties = in.walkMap(s.PatternProperties)
	c.DependentSchemas = in.walkMap(s.DependentSchemas)
	return &c
}

func (in *inliner) walkList(list []*jsonschema.Schema) []*jsonschema.Schema {
	if list == nil {
		return nil
	}
	out := make([]*jsonschema.Schema, len(list))
	for i, s := range list {
		out[i] = in.walk(s)
	}
	return out
}

func (in *inliner) walkMap(m map[string]*jsonschema.Schema) map[string]*jsonschema.Schema {
	if m == nil {
		return nil
	}
	out := make(map[string]*jsonschema.Schema, len(m))
	for k, s := range m {
		out[k] = in.walk(s)
	}
	return out
}

// overlay copies onto an inlined definition the keywords that tags set on
// the referring property.
func overlay(dst, ref *jsonschema.Schema) {
	if ref.Title != "" {
		dst.Title = ref.Title
	}
	if ref.Description != "" {
		dst.Description = ref.Description
	}
	if ref.Default != nil {
		dst.Default = ref.Default
	}
	if ref.Examples != nil {
		dst.Examples = ref.Examples
	}
	if ref.Deprecated {
		dst.Deprecated = true
	}
	if len(ref.Extras) > 0 {
		extras := make(map[string]any, len(dst.Extras)+len(ref.Extras))
		for k, v := range dst.Extras {
			extras[k] = v
		}
		for k, v := range ref.Extras {
			extras[k] = v
		}
		dst.Extras = extras
	}
}
