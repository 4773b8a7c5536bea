package arguments

import "strings"

// isSemver is the "semver" format: a version as Semantic Versioning 2.0.0
// writes it (MAJOR.MINOR.PATCH, then an optional -pre-release and an
// optional +build, each of dot-separated identifiers). Values other than
// strings pass, as for every format.
func isSemver(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true
	}
	if core, build, ok := strings.Cut(s, "+"); ok {
		if !identifiers(build, false) {
			return false
		}
		s = core
	}
	if core, pre, ok := strings.Cut(s, "-"); ok {
		if !identifiers(pre, true) {
			return false
		}
		s = core
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if !numericIdentifier(p) {
			return false
		}
	}
	return true
}

// identifiers checks dot-separated identifiers of [0-9A-Za-z-]; numeric
// ones have no leading zero when numeric is set (pre-release).
func identifiers(s string, numeric bool) bool {
	for id := range strings.SplitSeq(s, ".") {
		if id == "" {
			return false
		}
		digits := true
		for _, c := range id {
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				digits = false
			default:
				return false
			}
		}
		if numeric && digits && !numericIdentifier(id) {
			return false
		}
	}
	return true
}

// numericIdentifier checks a number without a leading zero.
func numericIdentifier(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
