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

// ClipArgs clips each string among args, in place, as Clip does: the
// arguments of a message that echoes what a client sent, so that each
// string is quoted by a bounded prefix.
func ClipArgs(args []any, n int, mark string) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = Clip(s, n, mark)
		}
	}
}
