package store

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Query selects the items of a search.
type Query struct {
	// Text, when not empty, makes the search one by meaning: the items
	// nearest to Text come first, each with its Score. It needs a store
	// with an Embedder (else ErrNoEmbedder).
	Text string
	// Filter keeps only the items whose value meets every condition.
	Filter []Cond
	// Limit is the most items returned (10 when zero); Offset skips that
	// many first.
	Limit, Offset int
	// MinScore, in a search by meaning, drops the items whose Score is
	// below it.
	MinScore float64
}

// DefaultLimit is the number of items a search returns when Query.Limit is
// zero.
const DefaultLimit = 10

// Operator compares a field of an item's value with a Cond's value.
type Operator string

// The operators of a condition.
const (
	OpEq  Operator = "eq"
	OpNe  Operator = "ne"
	OpGt  Operator = "gt"
	OpGte Operator = "gte"
	OpLt  Operator = "lt"
	OpLte Operator = "lte"
)

// Cond is one condition of a filter: the field at Path (dot-separated
// object keys, "author.name") compared with Value by Op. Equality applies
// to any JSON value (objects and arrays compare by content); the ranges
// compare numbers with numbers and strings with strings, and a field of
// another type, or missing, does not meet them. A missing field is not
// equal to anything and differs from everything.
type Cond struct {
	Path  string
	Op    Operator
	Value any
}

// Eq is the condition that the field at path equals v.
func Eq(path string, v any) Cond { return Cond{Path: path, Op: OpEq, Value: v} }

// Ne is the condition that the field at path differs from v.
func Ne(path string, v any) Cond { return Cond{Path: path, Op: OpNe, Value: v} }

// Gt is the condition that the field at path is above v.
func Gt(path string, v any) Cond { return Cond{Path: path, Op: OpGt, Value: v} }

// Gte is the condition that the field at path is v or above.
func Gte(path string, v any) Cond { return Cond{Path: path, Op: OpGte, Value: v} }

// Lt is the condition that the field at path is below v.
func Lt(path string, v any) Cond { return Cond{Path: path, Op: OpLt, Value: v} }

// Lte is the condition that the field at path is v or below.
func Lte(path string, v any) Cond { return Cond{Path: path, Op: OpLte, Value: v} }

// Filter is a compiled list of conditions, ready to test values.
type Filter struct {
	conds []compiledCond
}

type compiledCond struct {
	path []string
	op   Operator
	want any // decoded JSON: nil, bool, float64, string, []any, map[string]any
}

// CompileFilter checks conds and prepares them. The error matches
// ErrInvalid.
func CompileFilter(conds []Cond) (*Filter, error) {
	f := &Filter{conds: make([]compiledCond, 0, len(conds))}
	for i, c := range conds {
		if c.Path == "" {
			return nil, invalid("filter condition %d: empty path", i)
		}
		path := strings.Split(c.Path, ".")
		for _, p := range path {
			if p == "" {
				return nil, invalid("filter condition %d: path %q has an empty part", i, c.Path)
			}
		}
		raw, err := json.Marshal(c.Value)
		if err != nil {
			return nil, invalid("filter condition %d: value: %v", i, err)
		}
		var want any
		if err := json.Unmarshal(raw, &want); err != nil {
			return nil, invalid("filter condition %d: value: %v", i, err)
		}
		switch c.Op {
		case OpEq, OpNe:
		case OpGt, OpGte, OpLt, OpLte:
			switch want.(type) {
			case float64, string:
			default:
				return nil, invalid("filter condition %d: %s needs a number or a string, got %T", i, c.Op, c.Value)
			}
		default:
			return nil, invalid("filter condition %d: unknown operator %q", i, c.Op)
		}
		f.conds = append(f.conds, compiledCond{path: path, op: c.Op, want: want})
	}
	return f, nil
}

// Equalities returns the filter's equality conditions, their values
// decoded as encoding/json decodes into an any (nil, bool, float64,
// string, []any, map[string]any). SQL backends narrow their scans with
// them; Match still decides.
func (f *Filter) Equalities() []Cond {
	if f == nil {
		return nil
	}
	var out []Cond
	for _, c := range f.conds {
		if c.op == OpEq {
			out = append(out, Cond{Path: strings.Join(c.path, "."), Op: OpEq, Value: c.want})
		}
	}
	return out
}

// Conds returns every condition of the filter, in order, their values
// decoded as in Equalities. SQL backends turn the ones they can express
// into SQL, so that only matching rows are read; Match still decides.
func (f *Filter) Conds() []Cond {
	if f == nil {
		return nil
	}
	out := make([]Cond, len(f.conds))
	for i, c := range f.conds {
		out[i] = Cond{Path: strings.Join(c.path, "."), Op: c.op, Value: c.want}
	}
	return out
}

// Empty reports whether the filter has no condition.
func (f *Filter) Empty() bool { return f == nil || len(f.conds) == 0 }

// Match reports whether the JSON object value meets every condition. A
// value that is not valid JSON meets none.
func (f *Filter) Match(value json.RawMessage) bool {
	if f.Empty() {
		return true
	}
	var doc any
	if err := json.Unmarshal(value, &doc); err != nil {
		return false
	}
	return f.MatchDecoded(doc)
}

// MatchDecoded is Match on a value already decoded by encoding/json into
// an any.
func (f *Filter) MatchDecoded(doc any) bool {
	for _, c := range f.conds {
		got, ok := lookup(doc, c.path)
		if !c.match(got, ok) {
			return false
		}
	}
	return true
}

func lookup(doc any, path []string) (any, bool) {
	for _, p := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[p]; !ok {
			return nil, false
		}
	}
	return doc, true
}

func (c compiledCond) match(got any, present bool) bool {
	switch c.op {
	case OpEq:
		return present && equal(got, c.want)
	case OpNe:
		return !present || !equal(got, c.want)
	}
	if !present {
		return false
	}
	cmp, ok := compare(got, c.want)
	if !ok {
		return false
	}
	switch c.op {
	case OpGt:
		return cmp > 0
	case OpGte:
		return cmp >= 0
	case OpLt:
		return cmp < 0
	default:
		return cmp <= 0
	}
}

func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// NamespaceQuery selects the namespaces ListNamespaces returns.
type NamespaceQuery struct {
	// Prefix keeps the namespaces that begin with these labels (all when
	// empty).
	Prefix []string
	// MaxDepth, when positive, cuts longer namespaces to their first
	// MaxDepth labels (the cut ones count once).
	MaxDepth int
	// Limit is the most namespaces returned (100 when zero); Offset skips
	// that many first.
	Limit, Offset int
}

// Validate checks q; the error matches ErrInvalid.
func (q NamespaceQuery) Validate() error {
	if q.MaxDepth < 0 || q.Limit < 0 || q.Offset < 0 {
		return invalid("negative max depth, limit or offset")
	}
	return ValidatePrefix(q.Prefix)
}

// Validate checks q; the error matches ErrInvalid.
func (q Query) Validate() error {
	if q.Limit < 0 || q.Offset < 0 {
		return invalid("negative limit or offset")
	}
	return nil
}

// String formats a condition for messages.
func (c Cond) String() string { return fmt.Sprintf("%s %s %v", c.Path, c.Op, c.Value) }
