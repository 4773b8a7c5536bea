package streamlimit

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Events reads a text/event-stream (server-sent events) and returns the
// data of each event: its data lines joined by a line feed. Comments and
// the other fields (event, id, retry) are skipped. Lines end with CRLF, LF
// or CR, as the format allows all three; a line ended by a CR is returned
// at once, without waiting for the byte after it. It holds at most max
// bytes of one event's data, and of one line after its field name.
type Events struct {
	r   *bufio.Reader
	max int
	// skipLF: the last line ended with a CR, so a LF that follows is
	// the rest of its CRLF, not an empty line.
	skipLF bool
}

// NewEvents returns a reader of the events of r, whose data may be at
// most max bytes each.
func NewEvents(r io.Reader, max int) *Events {
	return &Events{r: bufio.NewReaderSize(r, 16<<10), max: max}
}

// Next returns the data of the next event that has some: at least one
// data line, even an empty one. At the end of the stream it returns the
// data of an event the stream ended before its blank line, with cut true
// (the format says to drop it; some servers forget the last blank line),
// and then io.EOF. An event whose data passes max bytes, or a line that
// does, fails with an *Error matching ErrEventTooLarge. Errors of the
// underlying reader are returned as they are.
func (e *Events) Next() (data []byte, cut bool, err error) {
	hasData := false
	for {
		line, err := e.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				return data, true, nil
			}
			return nil, false, err
		}
		if len(line) == 0 {
			if hasData {
				return data, false, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment, often a keep-alive
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) != "data" {
			continue // event, id, retry
		}
		if hasData {
			data = append(data, '\n')
		}
		data = append(data, value...)
		hasData = true
		if len(data) > e.max {
			return nil, false, &Error{Limit: ErrEventTooLarge, Bytes: int64(e.max)}
		}
	}
}

// readLine reads one line without its end, of at most max bytes after a
// "data: " field name. A blank line comes back empty.
func (e *Events) readLine() ([]byte, error) {
	if e.skipLF {
		e.skipLF = false
		if b, err := e.r.Peek(1); err == nil && b[0] == '\n' {
			_, _ = e.r.Discard(1)
		}
	}
	line := []byte{}
	for {
		if e.r.Buffered() == 0 {
			if _, err := e.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(line) > 0 {
					return line, nil
				}
				return nil, err
			}
		}
		buf, _ := e.r.Peek(e.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := len(buf)
		if i >= 0 {
			n = i
		}
		line = append(line, buf[:n]...)
		if len(line) > e.max+len("data: ") {
			return nil, &Error{Limit: ErrEventTooLarge, Bytes: int64(e.max)}
		}
		if i < 0 {
			_, _ = e.r.Discard(n)
			continue
		}
		e.skipLF = buf[i] == '\r'
		_, _ = e.r.Discard(n + 1)
		return line, nil
	}
}
