package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Op is one operation of a patch: "add", "remove" or "replace" (Diff uses
// no others; Apply also knows "move", "copy" and "test").
type Op struct {
	// Op is the operation.
	Op string `json:"op"`
	// Path points (RFC 6901) at where the operation applies.
	Path string `json:"path"`
	// From points at the value a move or copy takes.
	From string `json:"from,omitempty"`
	// Value is what add, replace and test put or compare.
	Value any `json:"value,omitempty"`
}

// MarshalJSON writes value for the operations that take one, even when it
// is null.
func (o Op) MarshalJSON() ([]byte, error) {
	switch o.Op {
	case "add", "replace", "test":
		return json.Marshal(struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}{o.Op, o.Path, o.Value})
	case "move", "copy":
		return json.Marshal(struct {
			Op   string `json:"op"`
			From string `json:"from"`
			Path string `json:"path"`
		}{o.Op, o.From, o.Path})
	}
	return json.Marshal(struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}{o.Op, o.Path})
}

// Diff returns a patch that turns a into b; empty when they are equal.
// Objects are compared member by member, arrays element by element when
// their lengths agree or one extends the other, and replaced whole
// otherwise; members are visited in sorted order, so the patch is
// deterministic.
func Diff(a, b any) []Op {
	var ops []Op
	diff("", a, b, &ops)
	return ops
}

func diff(path string, a, b any, ops *[]Op) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av))
		for k := range av {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if _, ok := bv[k]; !ok {
				*ops = append(*ops, Op{Op: "remove", Path: path + "/" + escape(k)})
			}
		}
		keys = keys[:0]
		for k := range bv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if old, ok := av[k]; ok {
				diff(path+"/"+escape(k), old, bv[k], ops)
			} else {
				*ops = append(*ops, Op{Op: "add", Path: path + "/" + escape(k), Value: bv[k]})
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(av), len(bv))
		if len(av) != len(bv) && !equal(av[:n], bv[:n]) {
			break // neither extends the other: replaced whole
		}
		for i := range n {
			diff(path+"/"+strconv.Itoa(i), av[i], bv[i], ops)
		}
		for i := len(av) - 1; i >= len(bv); i-- {
			*ops = append(*ops, Op{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
		}
		for i := len(av); i < len(bv); i++ {
			*ops = append(*ops, Op{Op: "add", Path: path + "/-", Value: bv[i]})
		}
		return
	}
	if !equal(a, b) {
		*ops = append(*ops, Op{Op: "replace", Path: path, Value: b})
	}
}

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }

func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

func unescape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

// Apply returns doc with the patch applied, or an error naming the
// operation that does not apply; doc is not changed (the result shares
// no container with it).
func Apply(doc any, ops []Op) (any, error) {
	out := clone(doc)
	for i, op := range ops {
		var err error
		switch op.Op {
		case "add":
			out, err = add(out, op.Path, clone(op.Value))
		case "remove":
			out, _, err = remove(out, op.Path)
		case "replace":
			if out, _, err = remove(out, op.Path); err == nil {
				out, err = add(out, op.Path, clone(op.Value))
			}
		case "move":
			var v any
			if out, v, err = remove(out, op.From); err == nil {
				out, err = add(out, op.Path, v)
			}
		case "copy":
			var v any
			if v, err = get(out, op.From); err == nil {
				out, err = add(out, op.Path, clone(v))
			}
		case "test":
			var v any
			if v, err = get(out, op.Path); err == nil && !equal(v, op.Value) {
				err = errors.New("the value differs")
			}
		default:
			err = fmt.Errorf("unknown op %q", op.Op)
		}
		if err != nil {
			return nil, fmt.Errorf("jsonpatch: operation %d (%s %q): %w", i, op.Op, op.Path, err)
		}
	}
	return out, nil
}

func tokens(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	if !strings.HasPrefix(path, "/") {
		return nil, errors.New("a path starts with /")
	}
	parts := strings.Split(path[1:], "/")
	for i := range parts {
		parts[i] = unescape(parts[i])
	}
	return parts, nil
}

func index(token string, n int, end bool) (int, error) {
	if end && token == "-" {
		return n, nil
	}
	i, err := strconv.Atoi(token)
	if err != nil || i < 0 || (token != "0" && strings.HasPrefix(token, "0")) {
		return 0, fmt.Errorf("%q is not an array index", token)
	}
	if i > n || (!end && i == n) {
		return 0, fmt.Errorf("index %d is out of range", i)
	}
	return i, nil
}

func get(doc any, path string) (any, error) {
	toks, err := tokens(path)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, tok := range toks {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			cur = v
		case []any:
			i, err := index(tok, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%q goes into a scalar", tok)
		}
	}
	return cur, nil
}

// add puts v at path and returns the new document.
func add(doc any, path string, v any) (any, error) {
	toks, err := tokens(path)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return v, nil
	}
	return put(doc, toks, v)
}

func put(cur any, toks []string, v any) (any, error) {
	tok := toks[0]
	last := len(toks) == 1
	switch c := cur.(type) {
	case map[string]any:
		if last {
			c[tok] = v
			return c, nil
		}
		child, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("no member %q", tok)
		}
		nv, err := put(child, toks[1:], v)
		if err != nil {
			return nil, err
		}
		c[tok] = nv
		return c, nil
	case []any:
		i, err := index(tok, len(c), last)
		if err != nil {
			return nil, err
		}
		if last {
			return slices.Insert(c, i, v), nil
		}
		nv, err := put(c[i], toks[1:], v)
		if err != nil {
			return nil, err
		}
		c[i] = nv
		return c, nil
	}
	return nil, fmt.Errorf("%q goes into a scalar", tok)
}

// remove takes the value at path out, returning the new document and it.
func remove(doc any, path string) (any, any, error) {
	toks, err := tokens(path)
	if err != nil {
		return nil, nil, err
	}
	if len(toks) == 0 {
		return nil, doc, nil
	}
	var removed any
	out, err := take(doc, toks, &removed)
	return out, removed, err
}

func take(cur any, toks []string, removed *any) (any, error) {
	tok := toks[0]
	last := len(toks) == 1
	switch c := cur.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("no member %q", tok)
		}
		if last {
			*removed = child
			delete(c, tok)
			return c, nil
		}
		nv, err := take(child, toks[1:], removed)
		if err != nil {
			return nil, err
		}
		c[tok] = nv
		return c, nil
	case []any:
		i, err := index(tok, len(c), false)
		if err != nil {
			return nil, err
		}
		if last {
			*removed = c[i]
			return slices.Delete(c, i, i+1), nil
		}
		nv, err := take(c[i], toks[1:], removed)
		if err != nil {
			return nil, err
		}
		c[i] = nv
		return c, nil
	}
	return nil, fmt.Errorf("%q goes into a scalar", tok)
}

// clone copies the containers of a decoded JSON value.
func clone(v any) any {
	switch c := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(c))
		for k, x := range c {
			out[k] = clone(x)
		}
		return out
	case []any:
		out := make([]any, len(c))
		for i, x := range c {
			out[i] = clone(x)
		}
		return out
	}
	return v
}
