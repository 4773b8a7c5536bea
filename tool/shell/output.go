package shell

import "strings"

// forModel makes output text fit a model's input: invalid UTF-8 (binary
// output) becomes U+FFFD.
func forModel(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
