package outbuf

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRing(t *testing.T) {
	r := newRing(4)
	b, from := r.since(0)
	assert.Empty(t, b)
	assert.Equal(t, int64(0), from)

	r.write([]byte("ab"))
	b, from = r.since(0)
	assert.Equal(t, "ab", string(b))
	assert.Equal(t, int64(0), from)

	r.write([]byte("cde")) // wraps: holds "bcde"
	b, from = r.since(0)
	assert.Equal(t, "bcde", string(b))
	assert.Equal(t, int64(1), from)
	b, from = r.since(3)
	assert.Equal(t, "de", string(b))
	assert.Equal(t, int64(3), from)

	r.write([]byte("0123456789")) // longer than the ring
	b, from = r.since(0)
	assert.Equal(t, "6789", string(b))
	assert.Equal(t, int64(11), from)
	b, from = r.since(15)
	assert.Empty(t, b)
	assert.Equal(t, int64(15), from)
}

func TestCaptureFits(t *testing.T) {
	c := NewCapture(10)
	fmt.Fprint(c, "hello")
	fmt.Fprint(c, "world")
	text, omitted := c.Text()
	assert.Equal(t, "helloworld", text)
	assert.Zero(t, omitted)
	assert.Equal(t, int64(10), c.Total())
}

func TestCaptureHeadAndTail(t *testing.T) {
	c := NewCapture(10)
	for i := range 10 {
		fmt.Fprintf(c, "%d", i) // "0123456789" twice: 20 bytes
	}
	for i := range 10 {
		fmt.Fprintf(c, "%d", i)
	}
	text, omitted := c.Text()
	assert.Equal(t, "01234"+OmittedNote(10)+"56789", text)
	assert.Equal(t, int64(10), omitted)
}

func TestCaptureRuneSafe(t *testing.T) {
	// 100 two-byte characters; a head of 5 bytes and a tail of 5 would
	// each split one.
	c := NewCapture(10)
	fmt.Fprint(c, strings.Repeat("é", 100))
	text, omitted := c.Text()
	assert.True(t, utf8.ValidString(text), "%q", text)
	assert.Equal(t, "éé"+OmittedNote(192)+"éé", text)
	assert.Equal(t, int64(192), omitted)
}

func TestIncompleteTail(t *testing.T) {
	assert.Equal(t, 0, incompleteTail([]byte("abc")))
	assert.Equal(t, 0, incompleteTail([]byte("aé")))
	assert.Equal(t, 1, incompleteTail([]byte("a\xc3")))
	assert.Equal(t, 2, incompleteTail([]byte("a\xe2\x82"))) // € cut after two bytes
	assert.Equal(t, 0, incompleteTail([]byte("a\xff")), "an invalid byte is not waited for")
	assert.Equal(t, 0, incompleteTail(nil))
}

func TestTaskOutputIncremental(t *testing.T) {
	o := NewTaskOutput(100)
	fmt.Fprint(o, "one\n")
	text, dropped := o.Unread(false)
	assert.Equal(t, "one\n", text)
	assert.Zero(t, dropped)
	text, _ = o.Unread(false)
	assert.Empty(t, text, "nothing new")

	// A character that has not been written whole waits for its end.
	fmt.Fprint(o, "two \xe2\x82")
	text, _ = o.Unread(false)
	assert.Equal(t, "two ", text)
	fmt.Fprint(o, "\xac\n")
	text, _ = o.Unread(false)
	assert.Equal(t, "€\n", text)

	// The final read takes everything, even a cut character.
	fmt.Fprint(o, "end\xe2")
	text, _ = o.Unread(true)
	assert.Equal(t, "end\xe2", text)
	assert.Equal(t, int64(16), o.Written())
}

func TestTaskOutputDrops(t *testing.T) {
	o := NewTaskOutput(5)
	fmt.Fprint(o, "abcdefgh")
	text, dropped := o.Unread(false)
	assert.Equal(t, "defgh", text)
	assert.Equal(t, int64(3), dropped)

	// A drop that splits a character skips the rest of it.
	fmt.Fprint(o, "xéyz") // 5 bytes: the ring holds exactly them
	fmt.Fprint(o, "wv")   // the ring now holds the second byte of é, then "yzwv"
	text, dropped = o.Unread(false)
	assert.True(t, utf8.ValidString(text), "%q", text)
	assert.Equal(t, "yzwv", text)
	assert.Equal(t, int64(3), dropped, "x and both bytes of é")
}

// FuzzCapture checks what a foreground result shows of any output: all of
// it when it fits, else a prefix and a suffix around the note, never a
// split character, with the omitted bytes accounted for.
// TestTaskOutputTinyBufferKeepsCharacters checks that a buffer asked to
// keep fewer bytes than a character has still passes characters on.
func TestTaskOutputTinyBufferKeepsCharacters(t *testing.T) {
	o := NewTaskOutput(1)
	_, _ = o.Write([]byte("é"))
	text, dropped := o.Unread(false)
	assert.Equal(t, "é", text)
	assert.Zero(t, dropped)
	_, _ = o.Write([]byte("ab€")) // five bytes: the first is dropped
	text, dropped = o.Unread(false)
	assert.Equal(t, "b€", text)
	assert.Equal(t, int64(1), dropped)
}

func FuzzCapture(f *testing.F) {
	f.Add([]byte("hello, world"), 5, 3)
	f.Add([]byte(strings.Repeat("日本語", 40)), 17, 7)
	f.Add([]byte("\xff\xfe binary \x00 data"), 4, 1)
	f.Fuzz(func(t *testing.T, data []byte, limit, chunk int) {
		limit = 1 + abs(limit)%200
		chunk = 1 + abs(chunk)%64
		c := NewCapture(limit)
		for rest := data; len(rest) > 0; {
			n := min(chunk, len(rest))
			_, _ = c.Write(rest[:n])
			rest = rest[n:]
		}
		text, omitted := c.Text()
		if len(data) <= limit {
			require.Equal(t, string(data), text)
			require.Zero(t, omitted)
			return
		}
		head, tail, ok := strings.Cut(text, OmittedNote(omitted))
		require.True(t, ok, "the note is missing from %q", text)
		require.True(t, bytes.HasPrefix(data, []byte(head)))
		require.True(t, bytes.HasSuffix(data, []byte(tail)))
		require.LessOrEqual(t, len(head), limit/2)
		require.LessOrEqual(t, len(tail), limit-limit/2)
		require.Equal(t, int64(len(data)), int64(len(head))+omitted+int64(len(tail)))
		if utf8.Valid(data) {
			require.True(t, utf8.ValidString(head) && utf8.ValidString(tail), "split character in %q", text)
		}
	})
}

// FuzzTaskOutput checks that reads of a background task's output, made
// between writes, return the output in order, whole characters at a time,
// with nothing lost when the buffer does not overflow.
func FuzzTaskOutput(f *testing.F) {
	f.Add([]byte("one\ntwo\nthree\n"), 3)
	f.Add([]byte("€€€ and ☃"), 2)
	f.Fuzz(func(t *testing.T, data []byte, chunk int) {
		chunk = 1 + abs(chunk)%16
		o := NewTaskOutput(len(data) + 1)
		var got strings.Builder
		for rest := data; len(rest) > 0; {
			n := min(chunk, len(rest))
			_, _ = o.Write(rest[:n])
			rest = rest[n:]
			text, dropped := o.Unread(false)
			require.Zero(t, dropped)
			if utf8.Valid(data) {
				require.True(t, utf8.ValidString(text), "split character in %q", text)
			}
			got.WriteString(text)
		}
		text, _ := o.Unread(true)
		got.WriteString(text)
		require.Equal(t, string(data), got.String())
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the smallest int
			return 0
		}
		return -n
	}
	return n
}
