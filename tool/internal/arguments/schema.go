package arguments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	// The validator is v5 rather than v6 for its dependency weight: v6 words
	// its errors through golang.org/x/text/message, which made
	// golang.org/x/text (7.0 MiB) part of every build that imports tool, and
	// so of every agent. v5 implements the same drafts (4, 6, 7, 2019-09,
	// 2020-12) and requires no module; its errors carry no structured kind,
	// so Validate reads each problem from the compiled schema (see
	// problem) to word it for the model.
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/trellis-go/trellis/internal/textcut"
)

var (
	errTrailingData = errors.New("unexpected data after the JSON value")
	errEmptyJSON    = errors.New("no JSON value")
)

// Schema is a compiled input schema: the validator and the coercion plan
// built from it, and the validate-only fast plan built on first use.
// Compile a schema once (CompileSchema) and reuse it; a Schema is safe for
// concurrent use.
type Schema struct {
	raw       json.RawMessage
	validator *jsonschema.Schema
	coercion  *coerceNode

	byLoc map[string]*jsonschema.Schema // every compiled position by its location, for the error messages

	planOnce sync.Once
	plan     *fastNode // the validate-only fast plan; nil when it would always decline
}

// validatePlan returns the schema's validate-only fast plan, built on first
// use, or nil.
func (s *Schema) validatePlan() *fastNode {
	s.planOnce.Do(func() {
		if p := newValidatePlan(s); !p.unsupported {
			s.plan = p
		}
	})
	return s.plan
}

const schemaURL = "mem://trellis/tool-input.json"

// refuseLoad is the compiler's loader: it reads nothing.
func refuseLoad(url string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("schema references %s: only references within the schema are allowed", url)
}

// formats are the formats asserted: the validator's own, and "semver".
// Every compiler gets this map, which is never written after it is built,
// so the fast plan checks a format with the very function the validator
// was compiled with (see formatFunc). "ip-address" and "uriref", names of
// draft 3, are annotations, as they were with v6.
var formats = sync.OnceValue(func() map[string]func(any) bool {
	m := maps.Clone(jsonschema.Formats)
	m["semver"] = isSemver
	m["ip-address"] = anyFormat
	m["uriref"] = anyFormat
	return m
})

func anyFormat(any) bool { return true }

// CompileSchema compiles a JSON Schema (draft 2020-12 unless its $schema
// names another draft). References outside the schema itself are refused:
// compiling never reads files or the network. Formats ("date-time",
// "email", ...) are asserted.
func CompileSchema(raw json.RawMessage) (s *Schema, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%w: empty schema", ErrInvalidSchema)
	}
	doc, err := decodeSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.Formats = formats()
	c.LoadURL = refuseLoad
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	defer func() {
		// The compiler panics on a pattern the meta-schema lets through
		// but Go's regexp package refuses.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w: %v", ErrInvalidSchema, r)
		}
	}()
	v, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	byLoc := map[string]*jsonschema.Schema{}
	indexSchema(v, byLoc)
	for loc, sub := range byLoc {
		if strings.HasPrefix(loc, schemaURL) {
			fixCounts(sub)
			if sub.Enum != nil && len(sub.Enum) == 0 && sub.Always == nil {
				// An empty enum allows no value; the validator would
				// ignore it.
				refuse := false
				sub.Always = &refuse
			}
		}
	}
	return &Schema{raw: slices.Clone(raw), validator: v, coercion: compileCoercion(doc), byLoc: byLoc}, nil
}

// fixCounts repairs the counts (minLength, maxItems, ...) the compiler
// converted from float64 beyond an int's range: such a count (the
// meta-schema allows no negative one) is at least 2^63, which no value
// reaches, but the conversion may have made it negative, and the
// validator would then refuse every value against a maximum, and accept
// every value against a minimum.
func fixCounts(s *jsonschema.Schema) {
	for _, n := range []*int{&s.MinLength, &s.MaxLength, &s.MinItems, &s.MaxItems,
		&s.MinProperties, &s.MaxProperties, &s.MinContains, &s.MaxContains} {
		if *n < -1 {
			*n = math.MaxInt
		}
	}
}

// decodeSchema decodes a schema's text as the compiler does: numbers as
// json.Number, nothing after the value.
func decodeSchema(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errTrailingData
	}
	return doc, nil
}

// MustCompileSchema is like CompileSchema but panics on error. It is meant
// for schemas written into the program.
func MustCompileSchema(raw json.RawMessage) *Schema {
	s, err := CompileSchema(raw)
	if err != nil {
		panic(err)
	}
	return s
}

// JSON returns the schema's text.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Coerce moves a decoded value (numbers as json.Number, as Parse decodes
// them) toward the schema and reports whether anything changed. Containers
// are changed in place; a value that already fits is not copied. See the
// package documentation for the rules.
func (s *Schema) Coerce(v any) (any, bool) { return coerce(v, s.coercion) }

// Validate checks a decoded value against the schema. It returns nil or an
// *Error listing every problem by JSON path, in path order.
func (s *Schema) Validate(v any) *Error {
	if plan := s.validatePlan(); plan != nil && plan.validValue(v, 0) {
		return nil
	}
	err := s.validator.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return fieldError(err.Error(), err)
	}
	f := flattener{byLoc: s.byLoc, root: v, plan: s.coercion}
	var fields []FieldError
	f.flatten(verr, &fields)
	if len(fields) == 0 {
		fields = append(fields, FieldError{Path: "$", Message: verr.Error()})
	}
	slices.SortStableFunc(fields, func(a, b FieldError) int { return strings.Compare(a.Path, b.Path) })
	fields = slices.Compact(fields)
	return &Error{Fields: fields, Cause: err}
}

// indexSchema records s and every schema it reaches by location.
func indexSchema(s *jsonschema.Schema, m map[string]*jsonschema.Schema) {
	if s == nil {
		return
	}
	if _, ok := m[s.Location]; ok {
		return
	}
	m[s.Location] = s
	for _, sub := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.DynamicRef, s.Not, s.If, s.Then, s.Else,
		s.PropertyNames, s.UnevaluatedProperties, s.Items2020, s.Contains, s.UnevaluatedItems, s.ContentSchema} {
		indexSchema(sub, m)
	}
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, sub := range list {
			indexSchema(sub, m)
		}
	}
	for _, sub := range s.Properties {
		indexSchema(sub, m)
	}
	for _, sub := range s.PatternProperties {
		indexSchema(sub, m)
	}
	for _, sub := range s.DependentSchemas {
		indexSchema(sub, m)
	}
	for _, dep := range s.Dependencies {
		if sub, ok := dep.(*jsonschema.Schema); ok {
			indexSchema(sub, m)
		}
	}
	for _, v := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch sub := v.(type) {
		case *jsonschema.Schema:
			indexSchema(sub, m)
		case []*jsonschema.Schema:
			for _, sub := range sub {
				indexSchema(sub, m)
			}
		}
	}
}

// flattener turns the validator's tree of errors into one FieldError per
// problem, each at the JSON path of the offending value.
type flattener struct {
	byLoc map[string]*jsonschema.Schema
	root  any
	plan  *coerceNode
}

func (f *flattener) flatten(e *jsonschema.ValidationError, out *[]FieldError) {
	kw := pointerTokens(e.KeywordLocation)
	last := ""
	if len(kw) > 0 {
		last = kw[len(kw)-1]
	}
	if len(e.Causes) > 0 && last != "anyOf" && last != "oneOf" && last != "minContains" {
		// A group: the schema, a reference, allOf, if/then/else, several
		// problems at one position.
		for _, c := range e.Causes {
			f.flatten(c, out)
		}
		return
	}
	loc := pointerTokens(e.InstanceLocation)
	at := func(loc []string, msg string) {
		*out = append(*out, FieldError{Path: jsonPath(f.root, loc), Message: msg})
	}
	if underPropertyNames(kw) && len(loc) > 0 {
		// The value checked is the last property's name.
		name := loc[len(loc)-1]
		at(loc, "invalid property name: "+problem(f.keyword(e, kw, name)))
		return
	}
	got := valueAt(f.root, loc)
	p := f.keyword(e, kw, got)
	switch p.kind {
	case "anyOf", "oneOf":
		if len(e.Causes) == 0 {
			at(loc, problem(p))
			return
		}
		var alts []string
		for _, c := range e.Causes {
			var sub []FieldError
			f.flatten(c, &sub)
			for _, fe := range sub {
				alts = append(alts, fe.Path+": "+fe.Message)
			}
		}
		msg := "matches none of the allowed alternatives"
		if len(alts) > 0 {
			msg += " (" + strings.Join(alts, "; or ") + ")"
		}
		at(loc, msg)
	case "required":
		obj, _ := got.(map[string]any)
		for _, name := range p.schema.Required {
			if _, ok := obj[name]; !ok {
				at(append(slices.Clip(loc), name), "required property is missing")
			}
		}
	case "dependentRequired", "dependencies":
		at(append(slices.Clip(loc), p.name), fmt.Sprintf("required property is missing (required when %s is present)", strconv.Quote(p.when)))
	case "additionalProperties":
		obj, _ := got.(map[string]any)
		names := make([]string, 0, len(obj))
		for name := range obj {
			if !declared(p.schema, name) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			at(append(slices.Clip(loc), name), f.unknown(loc))
		}
	case "false":
		// A false schema refuses whatever reaches it: word it for the
		// keyword that led there.
		switch p.via {
		case "additionalProperties", "unevaluatedProperties":
			if len(loc) > 0 {
				at(loc, f.unknown(loc[:len(loc)-1]))
				return
			}
		case "properties", "patternProperties":
			at(loc, "property not allowed")
			return
		}
		at(loc, "not allowed here")
	default:
		at(loc, problem(p))
	}
}

// unknown words a property that the object at loc does not allow.
func (f *flattener) unknown(loc []string) string {
	msg := "unknown property"
	if allowed := allowedProperties(f.root, f.plan, loc); len(allowed) > 0 {
		msg += " (allowed: " + strings.Join(allowed, ", ") + ")"
	}
	return msg
}

// declared reports whether s names the property in properties or
// patternProperties.
func declared(s *jsonschema.Schema, name string) bool {
	if _, ok := s.Properties[name]; ok {
		return true
	}
	for re := range s.PatternProperties {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// failure is one problem: the keyword that failed, the schema holding it,
// and the value checked.
type failure struct {
	kind   string             // the keyword, or "false" for a false schema
	schema *jsonschema.Schema // nil when the location is unknown
	got    any
	msg    string // the validator's own wording, the fallback
	via    string // for a false schema: the keyword that led to it
	name   string // dependentRequired: the missing property
	when   string // dependentRequired: the property that requires it
}

// keyword reads the problem e from the compiled schema.
func (f *flattener) keyword(e *jsonschema.ValidationError, kw []string, got any) failure {
	p := failure{got: got, msg: e.Message}
	abs := e.AbsoluteKeywordLocation
	if s := f.byLoc[abs]; s != nil && s.Always != nil && !*s.Always {
		p.kind, p.schema = "false", s
		if s.Enum != nil {
			p.kind = "enum" // empty
			return p
		}
		if n := len(kw); n >= 2 && isIndex(kw[n-1]) || n >= 2 && slices.Contains([]string{"properties", "patternProperties"}, kw[n-2]) {
			p.via = kw[n-2]
		} else if n >= 1 {
			p.via = kw[n-1]
		}
		return p
	}
	n := len(kw)
	if n >= 3 && isIndex(kw[n-1]) && (kw[n-3] == "dependentRequired" || kw[n-3] == "dependencies") {
		p.kind, p.schema = kw[n-3], f.byLoc[trimTokens(abs, 3)]
		p.when = kw[n-2]
		if p.schema != nil {
			i, _ := strconv.Atoi(kw[n-1])
			var names []string
			if p.kind == "dependentRequired" {
				names = p.schema.DependentRequired[p.when]
			} else {
				names, _ = p.schema.Dependencies[p.when].([]string)
			}
			if i < len(names) {
				p.name = names[i]
				return p
			}
		}
		p.kind = "" // fall back to the validator's wording
		return p
	}
	if n > 0 {
		p.kind, p.schema = kw[n-1], f.byLoc[trimTokens(abs, 1)]
	}
	return p
}

// problem words one validation problem for the model.
func problem(p failure) string {
	s, got := p.schema, p.got
	if s == nil {
		return p.msg
	}
	switch p.kind {
	case "type":
		if got == nil {
			return fmt.Sprintf("expected %s, got null", strings.Join(s.Types, " or "))
		}
		return fmt.Sprintf("expected %s, got %s %s", strings.Join(s.Types, " or "), jsonType(got), excerpt(got))
	case "enum":
		if len(s.Enum) == 0 {
			return fmt.Sprintf("no value is allowed (the enum is empty), got %s", excerpt(got))
		}
		return fmt.Sprintf("must be one of %s, got %s", joinValues(s.Enum), excerpt(got))
	case "const":
		if len(s.Constant) > 0 {
			return fmt.Sprintf("must be %s, got %s", excerpt(s.Constant[0]), excerpt(got))
		}
	case "minimum":
		return fmt.Sprintf("must be >= %s, got %s", ratText(s.Minimum), ratText(numberRat(got)))
	case "maximum":
		return fmt.Sprintf("must be <= %s, got %s", ratText(s.Maximum), ratText(numberRat(got)))
	case "exclusiveMinimum":
		return fmt.Sprintf("must be > %s, got %s", ratText(s.ExclusiveMinimum), ratText(numberRat(got)))
	case "exclusiveMaximum":
		return fmt.Sprintf("must be < %s, got %s", ratText(s.ExclusiveMaximum), ratText(numberRat(got)))
	case "multipleOf":
		return fmt.Sprintf("must be a multiple of %s, got %s", ratText(s.MultipleOf), ratText(numberRat(got)))
	case "minLength":
		if str, ok := got.(string); ok {
			return fmt.Sprintf("must be at least %d characters long, got %d", s.MinLength, utf8.RuneCountInString(str))
		}
	case "maxLength":
		if str, ok := got.(string); ok {
			return fmt.Sprintf("must be at most %d characters long, got %d", s.MaxLength, utf8.RuneCountInString(str))
		}
	case "pattern":
		if s.Pattern != nil {
			return fmt.Sprintf("must match the pattern %s, got %s", s.Pattern, excerpt(got))
		}
	case "format":
		return fmt.Sprintf("must be a valid %s, got %s", s.Format, excerpt(got))
	case "minItems":
		if a, ok := got.([]any); ok {
			return fmt.Sprintf("must have at least %d items, got %d", s.MinItems, len(a))
		}
	case "maxItems":
		if a, ok := got.([]any); ok {
			return fmt.Sprintf("must have at most %d items, got %d", s.MaxItems, len(a))
		}
	case "uniqueItems":
		var i, j int
		if _, err := fmt.Sscanf(p.msg, "items at index %d and %d are equal", &i, &j); err == nil {
			return fmt.Sprintf("items must be unique, but items %d and %d are equal", i, j)
		}
		return "items must be unique"
	case "minProperties":
		if o, ok := got.(map[string]any); ok {
			return fmt.Sprintf("must have at least %d properties, got %d", s.MinProperties, len(o))
		}
	case "maxProperties":
		if o, ok := got.(map[string]any); ok {
			return fmt.Sprintf("must have at most %d properties, got %d", s.MaxProperties, len(o))
		}
	case "minContains":
		return fmt.Sprintf("must have at least %d items matching the \"contains\" schema, got %d", s.MinContains, countContains(s, got))
	case "maxContains":
		return fmt.Sprintf("must have at most %d items matching the \"contains\" schema, got %d", s.MaxContains, countContains(s, got))
	case "additionalItems":
		if items, ok := s.Items.([]*jsonschema.Schema); ok {
			if a, ok := got.([]any); ok {
				return fmt.Sprintf("must have at most %d items, got %d", len(items), len(a))
			}
		}
	case "oneOf":
		var i, j int
		if _, err := fmt.Sscanf(p.msg, "valid against schemas at indexes %d and %d", &i, &j); err == nil {
			return fmt.Sprintf("matches more than one of the alternatives (%d and %d), and must match exactly one", i, j)
		}
		return "matches more than one of the alternatives, and must match exactly one"
	case "not":
		return "matches the schema under \"not\", which it must not match"
	}
	return p.msg
}

// countContains counts the items of got that match s's contains schema.
func countContains(s *jsonschema.Schema, got any) int {
	a, _ := got.([]any)
	n := 0
	for _, item := range a {
		if s.Contains != nil && s.Contains.Validate(item) == nil {
			n++
		}
	}
	return n
}

// jsonType names a decoded value's JSON type.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}

// numberRat returns a decoded number's exact value, or nil.
func numberRat(v any) *big.Rat {
	r, ok := new(big.Rat).SetString(fmt.Sprint(v))
	if !ok {
		return nil
	}
	return r
}

// pointerTokens splits a location of the validator, a JSON pointer whose
// tokens are also URL-path-escaped, into its tokens.
func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil {
			t = u
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// trimTokens removes the last n tokens of a location.
func trimTokens(loc string, n int) string {
	for range n {
		i := strings.LastIndexByte(loc, '/')
		if i < 0 {
			return ""
		}
		loc = loc[:i]
	}
	return loc
}

func isIndex(tok string) bool {
	if tok == "" {
		return false
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// underPropertyNames reports whether a keyword path passes through
// propertyNames, so that the value checked is a property's name.
func underPropertyNames(kw []string) bool {
	for i := 0; i < len(kw); i++ {
		switch kw[i] {
		case "propertyNames":
			return true
		case "properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions",
			"allOf", "anyOf", "oneOf", "prefixItems":
			i++ // the next token is a name or an index
		case "items", "additionalItems":
			if i+1 < len(kw) && isIndex(kw[i+1]) {
				i++
			}
		}
	}
	return false
}

func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func joinValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = excerpt(v)
	}
	return strings.Join(parts, ", ")
}

// excerpt renders a value as short JSON.
func excerpt(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 80
	if len(b) > max {
		return textcut.Prefix(string(b), max) + "…"
	}
	return string(b)
}

// jsonPath renders an instance location as a JSON path: $.a.b[0]["odd key"].
func jsonPath(root any, loc []string) string {
	var b strings.Builder
	b.WriteByte('$')
	cur := root
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
			continue
		case map[string]any:
			cur = v[tok]
		default:
			cur = nil
		}
		if isIdentifier(tok) {
			b.WriteString("." + tok)
		} else {
			b.WriteString("[" + strconv.Quote(tok) + "]")
		}
	}
	return b.String()
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '-' && i > 0:
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func valueAt(root any, loc []string) any {
	cur := root
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		case map[string]any:
			cur = v[tok]
		default:
			return nil
		}
	}
	return cur
}

// allowedProperties lists the properties the schema names for the object at
// loc, for the message about an unknown property.
func allowedProperties(root any, plan *coerceNode, loc []string) []string {
	n := plan
	cur := root
	for _, tok := range loc {
		if n == nil {
			return nil
		}
		switch v := cur.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			if i < len(n.prefix) {
				n = n.prefix[i]
			} else {
				n = n.items
			}
			if i >= 0 && i < len(v) {
				cur = v[i]
			}
		case map[string]any:
			next := n.props[tok]
			if next == nil {
				next = n.additional
			}
			n, cur = next, v[tok]
		default:
			return nil
		}
	}
	if n == nil || len(n.props) == 0 {
		return nil
	}
	names := make([]string, 0, len(n.props))
	for name := range n.props {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
