package docker

import (
	"strings"

	"github.com/trellis-go/trellis/internal/bgtask"
)

// writeOutput writes a command's output, made valid UTF-8, ending with a
// line break; empty stands for no output.
func writeOutput(b *strings.Builder, text, empty string) { bgtask.WriteOutput(b, text, empty) }
