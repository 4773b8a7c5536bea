package streamlimit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/trellis-go/trellis/internal/bytesize"
)

// Limits bound one streamed reply. A zero or negative field is no limit.
type Limits struct {
	// Idle is the longest the server may send nothing: from the request
	// to the reply's headers, and between two reads of the body that
	// bring bytes. Time the reader spends away from the body (handling
	// what it read) does not count.
	Idle time.Duration
	// MaxEvent caps one server-sent event, in bytes as sent.
	MaxEvent int64
	// MaxTotal caps the whole body, in bytes.
	MaxTotal int64
}

// The limits a stream can reach. An *Error matches its own with errors.Is.
var (
	// ErrIdle: the server sent nothing for the idle timeout.
	ErrIdle = errors.New("stream idle timeout")
	// ErrEventTooLarge: one event of the stream exceeds its cap.
	ErrEventTooLarge = errors.New("stream event too large")
	// ErrTooLarge: the whole stream exceeds its cap.
	ErrTooLarge = errors.New("stream too large")
)

// Error is the error of a stream that reached one of its limits. Its
// message names the limit and its value.
type Error struct {
	// Limit is ErrIdle, ErrEventTooLarge or ErrTooLarge.
	Limit error
	// Idle is the idle timeout, for ErrIdle.
	Idle time.Duration
	// Bytes is the cap, for ErrEventTooLarge and ErrTooLarge.
	Bytes int64
}

// Error names the limit and its value.
func (e *Error) Error() string {
	if e.Limit == ErrIdle {
		return fmt.Sprintf("the server sent nothing for %v (the stream's idle timeout)", e.Idle)
	}
	size := bytesize.Format(e.Bytes)
	if e.Bytes >= 1<<10 {
		size += fmt.Sprintf(" (%d bytes)", e.Bytes)
	}
	if e.Limit == ErrEventTooLarge {
		return "an event of the stream exceeds " + size + ", the limit on one event"
	}
	return "the stream exceeds " + size + ", the limit on a whole reply"
}

// Unwrap returns the limit's sentinel.
func (e *Error) Unwrap() error { return e.Limit }

// Do sends req with send under the limits and returns the reply with its
// body bounded: a body read fails with an *Error once a limit is reached.
// The request is sent with a context of its own, derived from req's,
// which is canceled when the idle timeout runs out (that aborts a read or
// a wait for the headers in progress) and when the body is closed; the
// caller closes the body, as always. send is typically an http.Client's
// Do, or the next handler of an SDK's middleware.
func Do(req *http.Request, l Limits, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	w := &watch{idle: l.Idle, abort: cancel}
	w.arm()
	res, err := send(req.WithContext(ctx))
	fired := w.disarm()
	if err != nil || fired {
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		cancel()
		if fired {
			return nil, w.err()
		}
		return nil, err
	}
	if res.Body == nil {
		cancel()
		return res, nil
	}
	res.Body = &body{rc: res.Body, w: w, lim: l}
	return res, nil
}

// watch is the idle timer of one request. Its timer runs only while the
// request waits for the server: for the headers, or in a read of the body.
type watch struct {
	idle  time.Duration
	abort func()

	mu      sync.Mutex
	timer   *time.Timer
	armedAt time.Time
	armed   bool
	fired   bool
}

// arm starts the wait.
func (w *watch) arm() {
	if w.idle <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired {
		return
	}
	w.armed, w.armedAt = true, time.Now()
	if w.timer == nil {
		w.timer = time.AfterFunc(w.idle, w.expire)
	} else {
		w.timer.Reset(w.idle)
	}
}

// disarm ends the wait and reports whether the idle timeout ran out.
func (w *watch) disarm() bool {
	if w.idle <= 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if w.timer != nil {
		w.timer.Stop()
	}
	return w.fired
}

// expire is the timer's function. A run that comes late, for a wait that
// has ended (and maybe another begun since), does nothing.
func (w *watch) expire() {
	w.mu.Lock()
	if !w.armed || w.fired || time.Since(w.armedAt) < w.idle {
		w.mu.Unlock()
		return
	}
	w.fired = true
	w.mu.Unlock()
	w.abort()
}

func (w *watch) err() error { return &Error{Limit: ErrIdle, Idle: w.idle} }

// body is a reply's body under limits. Read is not called concurrently
// with itself (io.Reader's rule); Close may come from anywhere.
type body struct {
	rc  io.ReadCloser
	w   *watch
	lim Limits

	err   error // the limit reached, returned by every later read
	total int64 // bytes read
	event int64 // bytes of the current event
	line  int64 // bytes of the current line, without its end
	cr    bool  // the last byte was a CR: a LF that follows ends no line
}

// Read reads the body, failing with an *Error at a limit.
func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	b.w.arm()
	n, err := b.rc.Read(p)
	if b.w.disarm() {
		b.err = b.w.err()
		return 0, b.err
	}
	if n > 0 {
		if lerr := b.count(p[:n]); lerr != nil {
			// The bytes that reached the limit are not handed on: the
			// parser above never holds more than the cap.
			b.err = lerr
			b.w.abort()
			return 0, lerr
		}
	}
	return n, err
}

// count adds p to the counts, following the event stream's lines (which
// end with CRLF, LF or CR) to find the blank lines that end events.
func (b *body) count(p []byte) error {
	b.total += int64(len(p))
	if b.lim.MaxTotal > 0 && b.total > b.lim.MaxTotal {
		return &Error{Limit: ErrTooLarge, Bytes: b.lim.MaxTotal}
	}
	tooLarge := func() bool { return b.lim.MaxEvent > 0 && b.event > b.lim.MaxEvent }
	for len(p) > 0 {
		if b.cr {
			b.cr = false
			if p[0] == '\n' {
				// The rest of a CRLF.
				if b.event > 0 {
					b.event++
				}
				p = p[1:]
				if tooLarge() {
					break
				}
				continue
			}
		}
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			b.line += int64(len(p))
			b.event += int64(len(p))
			break
		}
		b.line += int64(i)
		if b.line == 0 {
			b.event = 0 // a blank line: the event ended
		} else {
			b.line = 0
			b.event += int64(i) + 1
		}
		b.cr = p[i] == '\r'
		p = p[i+1:]
		if tooLarge() {
			break
		}
	}
	if tooLarge() {
		return &Error{Limit: ErrEventTooLarge, Bytes: b.lim.MaxEvent}
	}
	return nil
}

// Close closes the body and releases the request's context.
func (b *body) Close() error {
	b.w.disarm()
	err := b.rc.Close()
	b.w.abort()
	return err
}
