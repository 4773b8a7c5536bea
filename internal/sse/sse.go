package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/trellis-go/trellis/internal/streamlimit"
)

// Event is one server-sent event.
type Event struct {
	// ID is the event's id field, "" when it has none. (The format's
	// "last event ID" carries over to later events; readers that resume
	// a stream keep it themselves.)
	ID string
	// Type is the event's event field, "" when it has none (the format
	// then calls it a "message").
	Type string
	// Data is the event's data lines joined by line feeds.
	Data []byte
}

// ErrLineBreak is returned by Encode and Write for an event whose ID or
// type holds a line break, which would end the field early.
var ErrLineBreak = errors.New("sse: an event's id or type holds a line break")

// KeepAlive is a comment line that readers skip: written when a stream has
// nothing to send for a while, it keeps proxies from closing it.
const KeepAlive = ": keep-alive\n\n"

// Reader reads the events of a text/event-stream. It holds at most max
// bytes of one event's data, and of one line after its field name.
type Reader struct {
	r     *bufio.Reader
	max   int
	start bool // no byte read yet: a byte order mark may come
	// skipLF: the last line ended with a CR, so a LF that follows is
	// the rest of its CRLF, not an empty line.
	skipLF bool
}

// NewReader returns a reader of the events of r, whose data may be at
// most max bytes each.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 16<<10), max: max, start: true}
}

// Next returns the next event that has data: at least one data line, even
// an empty one. At the end of the stream it returns io.EOF; an event the
// stream ended before its blank line is discarded. An event whose data
// passes max bytes, or a line that does, fails with a *streamlimit.Error
// matching streamlimit.ErrEventTooLarge. Errors of the underlying reader
// are returned as they are.
func (r *Reader) Next() (Event, error) {
	var ev Event
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			return Event{}, err // io.EOF drops an event without its blank line
		}
		if len(line) == 0 {
			if hasData {
				return ev, nil
			}
			ev = Event{}
			continue
		}
		if line[0] == ':' {
			continue // a comment, often a keep-alive
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			if ev.Data == nil {
				ev.Data = []byte{}
			}
			ev.Data = append(ev.Data, value...)
			hasData = true
			if len(ev.Data) > r.max {
				return Event{}, &streamlimit.Error{Limit: streamlimit.ErrEventTooLarge, Bytes: int64(r.max)}
			}
		case "event":
			ev.Type = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 { // the format ignores an id holding NUL
				ev.ID = string(value)
			}
		}
		// retry and unknown fields are skipped
	}
}

// readLine reads one line without its end, of at most max bytes after a
// "data: " field name. A blank line comes back empty. The last line of a
// stream that ends without a line end is returned as a line too; the
// io.EOF that follows it drops the event it belongs to.
func (r *Reader) readLine() ([]byte, error) {
	if r.start {
		r.start = false
		if b, err := r.r.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
			_, _ = r.r.Discard(3)
		}
	}
	if r.skipLF {
		r.skipLF = false
		if b, err := r.r.Peek(1); err == nil && b[0] == '\n' {
			_, _ = r.r.Discard(1)
		}
	}
	line := []byte{}
	for {
		if r.r.Buffered() == 0 {
			if _, err := r.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(line) > 0 {
					return line, nil
				}
				return nil, err
			}
		}
		buf, _ := r.r.Peek(r.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := len(buf)
		if i >= 0 {
			n = i
		}
		line = append(line, buf[:n]...)
		if len(line) > r.max+len("data: ") {
			return nil, &streamlimit.Error{Limit: streamlimit.ErrEventTooLarge, Bytes: int64(r.max)}
		}
		if i < 0 {
			_, _ = r.r.Discard(n)
			continue
		}
		r.skipLF = buf[i] == '\r'
		_, _ = r.r.Discard(n + 1)
		return line, nil
	}
}

// Encode returns ev as it is sent: its id and event fields when set, one
// data line per line of its data (a CRLF, LF or CR in the data starts a
// new line, so the reader gets the lines back joined by line feeds), and
// the blank line that ends it. An event without data gets one empty data
// line, so that readers dispatch it. An ID or type holding a line break
// fails with ErrLineBreak.
func Encode(ev Event) ([]byte, error) {
	if strings.ContainsAny(ev.ID, "\r\n") || strings.ContainsAny(ev.Type, "\r\n") {
		return nil, ErrLineBreak
	}
	b := make([]byte, 0, len(ev.Data)+len(ev.ID)+len(ev.Type)+24)
	if ev.ID != "" {
		b = append(b, "id: "...)
		b = append(b, ev.ID...)
		b = append(b, '\n')
	}
	if ev.Type != "" {
		b = append(b, "event: "...)
		b = append(b, ev.Type...)
		b = append(b, '\n')
	}
	data := ev.Data
	for {
		b = append(b, "data: "...)
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			b = append(b, data...)
			b = append(b, '\n')
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(b, '\n'), nil
}

// Write writes ev to w in one Write call, encoded as Encode does.
func Write(w io.Writer, ev Event) error {
	b, err := Encode(ev)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
