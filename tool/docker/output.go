package docker

import "strings"

// writeOutput writes a command's output, made valid UTF-8, ending with a
// line break; empty stands for no output.
func writeOutput(b *strings.Builder, text, empty string) {
	if text == "" {
		b.WriteString(empty + "\n")
		return
	}
	b.WriteString(strings.ToValidUTF8(text, "\uFFFD"))
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
}
