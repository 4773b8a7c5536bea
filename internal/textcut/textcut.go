package textcut

import "unicode/utf8"

// Prefix returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence: s itself when it is no longer than n, "" when n
// is not positive.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Clip is Prefix with mark appended when s was shortened, such as "..." or
// " [cut]".
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + mark
}
