package bytesize

import (
	"fmt"
	"strings"
)

// Format writes n bytes for people: "512 bytes", "64 KiB", "1.5 MiB".
func Format(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
