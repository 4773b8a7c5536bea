package arguments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

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

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s: only references within the schema are allowed", url)
}

// CompileSchema compiles a JSON Schema (draft 2020-12 unless its $schema
// names another draft). References outside the schema itself are refused:
// compiling never reads files or the network. Formats ("date-time",
// "email", ...) are asserted.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%w: empty schema", ErrInvalidSchema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	v, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	return &Schema{raw: slices.Clone(raw), validator: v, coercion: compileCoercion(doc)}, nil
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
	err := s.validator.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return fieldError(err.Error(), err)
	}
	var fields []FieldError
	flatten(verr, v, s.coercion, &fields)
	if len(fields) == 0 {
		fields = append(fields, FieldError{Path: "$", Message: verr.Error()})
	}
	slices.SortStableFunc(fields, func(a, b FieldError) int { return strings.Compare(a.Path, b.Path) })
	fields = slices.Compact(fields)
	return &Error{Fields: fields, Cause: err}
}

// flatten turns the validator's tree of errors into one FieldError per
// problem, each at the JSON path of the offending value.
func flatten(e *jsonschema.ValidationError, root any, plan *coerceNode, out *[]FieldError) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			flatten(c, root, plan, out)
		}
		return
	case *kind.Required:
		for _, name := range k.Missing {
			*out = append(*out, FieldError{Path: jsonPath(root, append(slices.Clip(e.InstanceLocation), name)), Message: "required property is missing"})
		}
		return
	case *kind.AdditionalProperties:
		allowed := allowedProperties(root, plan, e.InstanceLocation)
		for _, name := range k.Properties {
			msg := "unknown property"
			if len(allowed) > 0 {
				msg += " (allowed: " + strings.Join(allowed, ", ") + ")"
			}
			*out = append(*out, FieldError{Path: jsonPath(root, append(slices.Clip(e.InstanceLocation), name)), Message: msg})
		}
		return
	case *kind.AnyOf, *kind.OneOf:
		var alts []string
		for _, c := range e.Causes {
			var sub []FieldError
			flatten(c, root, plan, &sub)
			for _, f := range sub {
				alts = append(alts, f.Path+": "+f.Message)
			}
		}
		msg := e.ErrorKind.LocalizedString(printer())
		if _, ok := k.(*kind.AnyOf); ok || len(alts) > 0 {
			msg = "matches none of the allowed alternatives"
		}
		if len(alts) > 0 {
			msg += " (" + strings.Join(alts, "; or ") + ")"
		}
		*out = append(*out, FieldError{Path: jsonPath(root, e.InstanceLocation), Message: msg})
		return
	}
	*out = append(*out, FieldError{Path: jsonPath(root, e.InstanceLocation), Message: describe(e.ErrorKind, valueAt(root, e.InstanceLocation))})
}

// printer words the validator's messages that describe does not.
func printer() *message.Printer { return message.NewPrinter(language.English) }

// describe words one validation problem for the model.
func describe(k jsonschema.ErrorKind, got any) string {
	switch k := k.(type) {
	case *kind.Type:
		if got == nil {
			return fmt.Sprintf("expected %s, got null", strings.Join(k.Want, " or "))
		}
		return fmt.Sprintf("expected %s, got %s %s", strings.Join(k.Want, " or "), k.Got, excerpt(got))
	case *kind.Enum:
		return fmt.Sprintf("must be one of %s, got %s", joinValues(k.Want), excerpt(got))
	case *kind.Const:
		return fmt.Sprintf("must be %s, got %s", excerpt(k.Want), excerpt(got))
	case *kind.Minimum:
		return fmt.Sprintf("must be >= %s, got %s", ratText(k.Want), ratText(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("must be <= %s, got %s", ratText(k.Want), ratText(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be > %s, got %s", ratText(k.Want), ratText(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be < %s, got %s", ratText(k.Want), ratText(k.Got))
	case *kind.MultipleOf:
		return fmt.Sprintf("must be a multiple of %s, got %s", ratText(k.Want), ratText(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long, got %d", k.Want, k.Got)
	case *kind.Pattern:
		return fmt.Sprintf("must match the pattern %s, got %s", k.Want, excerpt(got))
	case *kind.Format:
		return fmt.Sprintf("must be a valid %s, got %s", k.Want, excerpt(got))
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items, got %d", k.Want, k.Got)
	case *kind.UniqueItems:
		return fmt.Sprintf("items must be unique, but items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties, got %d", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties, got %d", k.Want, k.Got)
	}
	return k.LocalizedString(printer())
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
