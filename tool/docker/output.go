package docker

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/textcut"
)

// capture is a command's output: it keeps the first limit bytes and the
// last limit-limit/2 bytes written, which is all that text can show, so
// that a command writing gigabytes costs little memory.
type capture struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte // the last bytes written, at most 2*keep
	keep  int    // how many bytes of tail text may show
	total int64
}

func newCapture(limit int) *capture {
	return &capture{limit: limit, keep: limit - limit/2}
}

// Write keeps what text may show of p; it never fails.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.limit - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	if len(p) >= c.keep {
		c.tail = append(c.tail[:0], p[len(p)-c.keep:]...)
		return len(p), nil
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*c.keep {
		// Amortised: the copy happens once per keep bytes written.
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.keep:]...)
	}
	return len(p), nil
}

// written returns how many bytes were written.
func (c *capture) written() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// text returns the output for the model: all of it when it fits the
// limit; otherwise its first limit/2 bytes and its last bytes, cut at
// character boundaries, with a line between them saying how many bytes
// were left out, which is omitted.
func (c *capture) text() (out string, omitted int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total <= int64(c.limit) {
		return string(c.head), 0
	}
	// head holds more than limit/2 bytes, so Prefix sees the byte after
	// the cut and does not split a character.
	head := textcut.Prefix(string(c.head), c.limit/2)
	tail := c.tail[max(0, len(c.tail)-c.keep):]
	for i := 0; i < len(tail) && i < utf8.UTFMax-1 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	omitted = c.total - int64(len(head)) - int64(len(tail))
	return head + fmt.Sprintf("\n[... %d bytes of output left out ...]\n", omitted) + string(tail), omitted
}

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
