package store

import (
	"strings"
	"unicode/utf8"
)

// separator ends every label of an encoded namespace. It may not appear in
// a label; being the byte below ' ', it makes the encoded namespaces under
// a prefix one range of strings: [p, p+"\x20").
const separator = "\x1f"

// ValidateNamespace checks a namespace: at least one label, each non-empty
// valid UTF-8 without the unit separator (U+001F) or NUL. The error matches
// ErrInvalid.
func ValidateNamespace(ns []string) error {
	if len(ns) == 0 {
		return invalid("empty namespace")
	}
	return validatePrefix(ns)
}

func validatePrefix(ns []string) error {
	for i, l := range ns {
		if l == "" {
			return invalid("namespace label %d is empty", i)
		}
		if !utf8.ValidString(l) || strings.ContainsAny(l, separator+"\x00") {
			return invalid("namespace label %d (%q) is not valid UTF-8 or holds U+001F or NUL", i, l)
		}
	}
	return nil
}

// ValidateKey checks a key: non-empty valid UTF-8 without NUL. The error
// matches ErrInvalid.
func ValidateKey(key string) error {
	if key == "" {
		return invalid("empty key")
	}
	if !utf8.ValidString(key) || strings.Contains(key, "\x00") {
		return invalid("key %q is not valid UTF-8 or holds NUL", key)
	}
	return nil
}

// EncodeNamespace returns ns as one string in which each label is followed
// by U+001F. Backends keep namespaces this way: the namespaces under a
// prefix p are the strings s with EncodeNamespace(p) <= s <
// PrefixEnd(p), compared bytewise.
func EncodeNamespace(ns []string) string {
	n := len(ns)
	for _, l := range ns {
		n += len(l)
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range ns {
		b.WriteString(l)
		b.WriteString(separator)
	}
	return b.String()
}

// PrefixEnd returns the least string above every encoded namespace under
// the encoded prefix p; for the empty prefix, which holds every namespace,
// it returns "".
func PrefixEnd(p string) string {
	if p == "" {
		return ""
	}
	return p[:len(p)-1] + "\x20"
}

// DecodeNamespace is the inverse of EncodeNamespace.
func DecodeNamespace(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, separator), separator)
}

// ValidatePrefix checks a search or list prefix: like ValidateNamespace,
// but the empty prefix (every namespace) is allowed.
func ValidatePrefix(prefix []string) error { return validatePrefix(prefix) }
