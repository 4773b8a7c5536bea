package outbuf

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/textcut"
)

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

// held returns the offset of the oldest byte the ring still holds.
func (r *ring) held() int64 { return max(0, r.total-int64(len(r.buf))) }

// since returns a copy of the bytes from offset off (or from the oldest
// byte held, if that is later) to the end, and the offset they start at.
func (r *ring) since(off int64) ([]byte, int64) {
	from := max(off, r.held())
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

// Capture is the output of a foreground command: it keeps the first limit
// bytes and the last limit-limit/2 bytes written, which is all that the
// result can show (see text), so that a command that writes gigabytes
// costs little memory. It is safe for concurrent use.
type Capture struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  ring
}

// NewCapture returns a Capture that keeps what a result of at most limit
// bytes can show.
func NewCapture(limit int) *Capture {
	return &Capture{limit: limit, tail: newRing(limit - limit/2)}
}

// Write keeps what text may show of p; it never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	c.tail.write(p)
	return len(p), nil
}

// Total returns how many bytes were written.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tail.total
}

// Text returns the output for the model: all of it when it fits the
// limit; otherwise its first limit/2 bytes and its last bytes, cut at
// character boundaries, with a line between them saying how many bytes
// were left out. omitted is that number.
func (c *Capture) Text() (out string, omitted int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := c.tail.total
	if total <= int64(c.limit) {
		return string(c.head), 0
	}
	// head holds more than limit/2 bytes, so Prefix sees the byte after the
	// cut and does not split a character.
	head := textcut.Prefix(string(c.head), c.limit/2)
	tailBytes, _ := c.tail.since(0)
	tail := string(tailBytes[leadingContinuation(tailBytes):])
	omitted = total - int64(len(head)) - int64(len(tail))
	return head + OmittedNote(omitted) + tail, omitted
}

// OmittedNote is the line that stands for n bytes left out of the middle
// of an output.
func OmittedNote(n int64) string {
	return fmt.Sprintf("\n[... %d bytes of output left out ...]\n", n)
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
// character whose remaining bytes have not been written yet.
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

// TaskOutput is the output of a background task: the last bytes written,
// read incrementally. It is safe for concurrent use.
type TaskOutput struct {
	mu   sync.Mutex
	ring ring
	read int64 // offset of the first byte not read yet
}

// NewTaskOutput returns a TaskOutput that keeps the last size bytes, and
// at least utf8.UTFMax, so that a whole character always fits (a smaller
// buffer would hold back a character's first bytes until they were
// dropped).
func NewTaskOutput(size int) *TaskOutput {
	return &TaskOutput{ring: newRing(max(size, utf8.UTFMax))}
}

// Write keeps p; it never fails.
func (o *TaskOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ring.write(p)
	return len(p), nil
}

// Unread returns the output written since the previous call and marks it
// read, with the number of unread bytes that were dropped because the
// buffer overflowed. Unless final is set, the start of a character whose
// other bytes have not come yet is kept for the next call.
func (o *TaskOutput) Unread(final bool) (text string, dropped int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, from := o.ring.since(o.read)
	if from > o.read {
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

// Written returns how many bytes the task wrote in all.
func (o *TaskOutput) Written() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ring.total
}
