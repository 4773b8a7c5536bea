package store

import (
	"bytes"
	"encoding/json"
	"strings"
)

// IndexText returns the text embedded for value under fields (see
// WithIndex), and false when value has none of the fields or fields is
// empty.
func IndexText(value json.RawMessage, fields []string) (string, bool) {
	if len(fields) == 0 {
		return "", false
	}
	var doc any
	if err := json.Unmarshal(value, &doc); err != nil {
		return "", false
	}
	var parts []string
	for _, f := range fields {
		v, ok := doc, true
		if f != "$" {
			v, ok = lookup(doc, strings.Split(f, "."))
		}
		if !ok || v == nil {
			continue
		}
		if s, isStr := v.(string); isStr {
			if s != "" {
				parts = append(parts, s)
			}
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		parts = append(parts, string(b))
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "\n"), true
}

// ValidateValue checks that value is a JSON object; the error matches
// ErrInvalid.
func ValidateValue(value json.RawMessage) error {
	if !json.Valid(value) {
		return invalid("value is not valid JSON")
	}
	if t := bytes.TrimLeft(value, " \t\n\r"); len(t) > 0 && t[0] == '{' {
		return nil
	}
	return invalid("value is not a JSON object")
}

// ValidateOp checks an op's namespace, key and value; the error matches
// ErrInvalid.
func ValidateOp(op Op) error {
	if err := ValidateNamespace(op.Namespace); err != nil {
		return err
	}
	if err := ValidateKey(op.Key); err != nil {
		return err
	}
	if op.TTL < 0 {
		return invalid("negative TTL")
	}
	if op.Value != nil {
		return ValidateValue(op.Value)
	}
	return nil
}
