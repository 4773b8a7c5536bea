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

// ring keeps the last bytes written to it, up to its size, and counts
// every byte ever written, so that a reader can tell which offsets of the
// stream it still holds.
type ring struct {
	buf   []byte // len(buf) is the size
	next  int    // where the next byte goes
	total int64  // bytes ever written
}

func newRing(size int) ring { return ring{buf: make([]byte, size)} }

func (r *ring) write(p []byte) {
	r.total += int64(len(p))
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.next = 0
		return
	}
	n := copy(r.buf[r.next:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
	}
	r.next = (r.next + len(p)) % len(r.buf)
}

// since returns a copy of the bytes from offset off (or from the oldest
// byte held, if that is later) to the end, and the offset they start at.
func (r *ring) since(off int64) ([]byte, int64) {
	from := max(off, r.total-int64(len(r.buf)), 0)
	n := int(r.total - from)
	if n <= 0 {
		return nil, r.total
	}
	out := make([]byte, n)
	start := (r.next - n + len(r.buf)) % len(r.buf)
	m := copy(out, r.buf[start:])
	if m < n {
		copy(out[m:], r.buf[:n-m])
	}
	return out, from
}

// leadingContinuation returns how many bytes at the start of b continue a
// character that began before b (at most utf8.UTFMax-1).
func leadingContinuation(b []byte) int {
	i := 0
	for i < len(b) && i < utf8.UTFMax-1 && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}

// incompleteTail returns how many bytes at the end of b are the start of a
// character whose other bytes have not been written yet.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// taskOutput is the output of a background task: the last bytes written,
// read incrementally. It is safe for concurrent use: the task's goroutine
// writes while calls read.
type taskOutput struct {
	mu   sync.Mutex
	ring ring
	read int64 // offset of the first byte not read yet
}

func newTaskOutput(size int) *taskOutput { return &taskOutput{ring: newRing(size)} }

// Write keeps p; it never fails.
func (o *taskOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ring.write(p)
	return len(p), nil
}

// unread returns the output written since the previous call and marks it
// read, with the number of unread bytes that were dropped because the
// buffer overflowed. Unless final is set, the start of a character whose
// other bytes have not come yet is kept for the next call.
func (o *taskOutput) unread(final bool) (text string, dropped int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, from := o.ring.since(o.read)
	if from > o.read {
		// The oldest byte held may continue a character that was dropped.
		skip := leadingContinuation(b)
		b = b[skip:]
		from += int64(skip)
	}
	dropped = from - o.read
	if !final {
		b = b[:len(b)-incompleteTail(b)]
	}
	o.read = from + int64(len(b))
	return string(b), dropped
}

// written returns how many bytes the task wrote in all.
func (o *taskOutput) written() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ring.total
}
