package streamlimit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bodyOf wraps a body in memory, as Do wraps a reply's.
func bodyOf(s string, l Limits) *body {
	return &body{rc: io.NopCloser(strings.NewReader(s)), w: &watch{idle: l.Idle, abort: func() {}}, lim: l}
}

func TestEventsWithinTheCapPassWhateverTheirLineEnds(t *testing.T) {
	ev := "data: " + strings.Repeat("x", 20) // 26 bytes, 27 with its line end
	for name, s := range map[string]string{
		"LF":           ev + "\n\n" + ev + "\n\n",
		"CRLF":         ev + "\r\n\r\n" + ev + "\r\n\r\n",
		"CR":           ev + "\r\r" + ev + "\r\r",
		"comments":     ": keep-alive\n\n" + ev + "\n\n: keep-alive\n\n" + ev + "\n\n",
		"two fields":   "event: x\n" + ev[:10] + "\n\n",
		"no last line": ev + "\n\n" + ev,
	} {
		t.Run(name, func(t *testing.T) {
			// One byte at a time, so that every line end straddles reads.
			got, err := io.ReadAll(iotest.OneByteReader(bodyOf(s, Limits{MaxEvent: 28})))
			require.NoError(t, err)
			assert.Equal(t, s, string(got))
			got, err = io.ReadAll(bodyOf(s, Limits{MaxEvent: 28}))
			require.NoError(t, err)
			assert.Equal(t, s, string(got))
		})
	}
}

func TestAnEventPastTheCapFails(t *testing.T) {
	for name, s := range map[string]string{
		"one long line":     "data: " + strings.Repeat("x", 100) + "\n\n",
		"many short lines":  strings.Repeat("data: x\n", 20) + "\n",
		"never ends":        "data: " + strings.Repeat("x", 100),
		"CRLF lines":        strings.Repeat("data: x\r\n", 20) + "\r\n",
		"after a small one": "data: x\n\n" + strings.Repeat("data: x\n", 20),
		"a JSON body":       `{"text": "` + strings.Repeat("x", 100) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := io.ReadAll(iotest.OneByteReader(bodyOf(s, Limits{MaxEvent: 64})))
			require.ErrorIs(t, err, ErrEventTooLarge)
			assert.LessOrEqual(t, len(got), 64+len("data: x\n\n"), "no more than the cap is handed on")
			var le *Error
			require.ErrorAs(t, err, &le)
			assert.Equal(t, int64(64), le.Bytes)
			assert.Contains(t, err.Error(), "64 bytes")
			assert.Contains(t, err.Error(), "one event")

			_, err = io.ReadAll(bodyOf(s, Limits{MaxEvent: 64}))
			require.ErrorIs(t, err, ErrEventTooLarge)
		})
	}
}

func TestAStreamPastItsTotalCapFails(t *testing.T) {
	s := strings.Repeat("data: x\n\n", 100)
	got, err := io.ReadAll(bodyOf(s, Limits{MaxEvent: 64, MaxTotal: 300}))
	require.ErrorIs(t, err, ErrTooLarge)
	assert.NotErrorIs(t, err, ErrEventTooLarge)
	assert.LessOrEqual(t, len(got), 300)
	assert.Contains(t, err.Error(), "300 bytes")
	assert.Contains(t, err.Error(), "whole reply")

	got, err = io.ReadAll(bodyOf(s, Limits{MaxTotal: int64(len(s))}))
	require.NoError(t, err)
	assert.Len(t, got, len(s))

	// The limit is sticky.
	b := bodyOf(s, Limits{MaxTotal: 10})
	_, err = io.ReadAll(b)
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = b.Read(make([]byte, 10))
	require.ErrorIs(t, err, ErrTooLarge)
}

// silent answers with the headers of an event stream, then sends nothing
// until the client leaves.
func silent(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, ": hello\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs
}

// within runs fn and fails the test when it takes longer than d.
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still waiting after %v", d)
	}
}

func TestASilentServerIsCutOffAfterTheIdleTimeout(t *testing.T) {
	hs := serve(t, silent)
	req, err := http.NewRequest(http.MethodGet, hs.URL, nil)
	require.NoError(t, err)
	res, err := Do(req, Limits{Idle: 300 * time.Millisecond}, hs.Client().Do)
	require.NoError(t, err)
	defer res.Body.Close()
	var got []byte
	within(t, 10*time.Second, func() { got, err = io.ReadAll(res.Body) })
	assert.Equal(t, ": hello\n\n", string(got), "what came before the silence is read")
	require.ErrorIs(t, err, ErrIdle)
	assert.NotErrorIs(t, err, context.Canceled, "the error is the limit, not the cancel that enforced it")
	assert.Contains(t, err.Error(), "300ms")
}

func TestAServerThatNeverAnswersIsCutOffAfterTheIdleTimeout(t *testing.T) {
	hs := serve(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	req, err := http.NewRequest(http.MethodGet, hs.URL, nil)
	require.NoError(t, err)
	within(t, 10*time.Second, func() {
		var res *http.Response
		res, err = Do(req, Limits{Idle: 50 * time.Millisecond}, hs.Client().Do)
		assert.Nil(t, res)
	})
	require.ErrorIs(t, err, ErrIdle)
}

func TestTheCallersCancelIsNotTakenForSilence(t *testing.T) {
	hs := serve(t, silent)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
	require.NoError(t, err)
	res, err := Do(req, Limits{Idle: time.Hour}, hs.Client().Do)
	require.NoError(t, err)
	defer res.Body.Close()
	cancel()
	within(t, 10*time.Second, func() { _, err = io.ReadAll(res.Body) })
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrIdle)
}

func TestAnEndlessEventIsCutOffAtItsCap(t *testing.T) {
	hs := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: ")
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	req, err := http.NewRequest(http.MethodGet, hs.URL, nil)
	require.NoError(t, err)
	res, err := Do(req, Limits{Idle: time.Minute, MaxEvent: 1 << 20}, hs.Client().Do)
	require.NoError(t, err)
	defer res.Body.Close()
	var got []byte
	within(t, 10*time.Second, func() { got, err = io.ReadAll(res.Body) })
	require.ErrorIs(t, err, ErrEventTooLarge)
	assert.LessOrEqual(t, len(got), 1<<20, "memory stays within the cap")
}

// The idle timer runs only while a read waits for the server: a reader
// that takes its time between reads is not cut off.
func TestTheTimerRunsOnlyWhileAReadWaits(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	b := &body{rc: io.NopCloser(readerFunc(func(p []byte) (int, error) {
		close(started)
		<-release
		return copy(p, "data: x\n\n"), nil
	})), w: &watch{idle: time.Hour, abort: func() {}}}
	go func() {
		<-started
		b.w.mu.Lock()
		armed := b.w.armed
		b.w.mu.Unlock()
		assert.True(t, armed, "armed during the read")
		close(release)
	}()
	_, err := b.Read(make([]byte, 64))
	require.NoError(t, err)
	b.w.mu.Lock()
	defer b.w.mu.Unlock()
	assert.False(t, b.w.armed, "disarmed between reads")
}

// A timer run that comes late, for a wait that has ended, cuts nothing.
func TestALateTimerRunIsIgnored(t *testing.T) {
	aborted := false
	w := &watch{idle: time.Hour, abort: func() { aborted = true }}
	w.arm()
	w.disarm()
	w.expire()
	w.arm() // a new wait, just begun
	w.expire()
	assert.False(t, w.disarm())
	assert.False(t, aborted)
}

func TestCloseReleasesTheRequest(t *testing.T) {
	hs := serve(t, silent)
	req, err := http.NewRequest(http.MethodGet, hs.URL, nil)
	require.NoError(t, err)
	var seen context.Context
	res, err := Do(req, Limits{}, func(r *http.Request) (*http.Response, error) {
		seen = r.Context()
		return hs.Client().Do(r)
	})
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Error(t, seen.Err(), "the request's context is released")
}

func TestErrorsMatchTheirLimitOnly(t *testing.T) {
	err := error(&Error{Limit: ErrIdle, Idle: time.Minute})
	assert.ErrorIs(t, err, ErrIdle)
	assert.False(t, errors.Is(err, ErrTooLarge))
	assert.Equal(t, "the server sent nothing for 1m0s (the stream's idle timeout)", err.Error())
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// The counts do not depend on how the bytes are split into reads, and a
// cap no smaller than the body never fails.
func FuzzCountsDoNotDependOnReads(f *testing.F) {
	f.Add([]byte("data: x\n\ndata: y\r\n\r\n"), uint16(8))
	f.Add([]byte("data: x\r\rdata: yy\r\n"), uint16(3))
	f.Add([]byte(": c\n\n\n\n\r\n\r"), uint16(1))
	f.Fuzz(func(t *testing.T, in []byte, max uint16) {
		l := Limits{MaxEvent: int64(max) + 1}
		whole, errWhole := io.ReadAll(bodyOf(string(in), l))
		bytewise, errBytes := io.ReadAll(iotest.OneByteReader(bodyOf(string(in), l)))
		if (errWhole == nil) != (errBytes == nil) {
			t.Fatalf("in one read: %v; byte by byte: %v", errWhole, errBytes)
		}
		if errWhole == nil && (!bytes.Equal(whole, in) || !bytes.Equal(bytewise, in)) {
			t.Fatal("the body changed")
		}
		if _, err := io.ReadAll(bodyOf(string(in), Limits{MaxEvent: int64(len(in)) + 1})); err != nil {
			t.Fatalf("a cap past the body's size failed: %v", err)
		}
	})
}
