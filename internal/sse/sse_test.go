package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/streamlimit"
)

// readAll reads r's events to the end and returns them with the error that
// ended the reading.
func readAll(t *testing.T, r io.Reader, max int) ([]Event, error) {
	t.Helper()
	rd := NewReader(r, max)
	var out []Event
	for range 1000 {
		ev, err := rd.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	t.Fatal("the reader did not end")
	return nil, nil
}

func TestReaderReadsEventsWhateverTheLineEnds(t *testing.T) {
	stream := "\xef\xbb\xbf: keep-alive\r\n\r\n" +
		"event: message\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"retry: 100\n\n" + // no data: no event
		"data:no-space\r\r" +
		"id: 7\ndata\n\n" + // a data field without a value: an event of no data
		"data:  two spaces\n\n"
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(stream),
		"byte a time": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, r, 64)
			require.ErrorIs(t, err, io.EOF)
			assert.Equal(t, []Event{
				{ID: "1", Type: "message", Data: []byte("{\"a\":\n1}")},
				{Data: []byte("no-space")},
				{ID: "7", Data: []byte{}},
				{Data: []byte(" two spaces")},
			}, got)
		})
	}
}

// TestReaderDiscardsAnEventCutOffByTheEndOfTheStream pins the format's
// rule: an event is dispatched at its blank line, so one the stream ends
// before (a server that forgot the last blank line, or a connection lost
// mid-event) is discarded, whatever line end its last line has.
func TestReaderDiscardsAnEventCutOffByTheEndOfTheStream(t *testing.T) {
	whole := "data: one\n\n"
	for name, tail := range map[string]string{
		"mid-line":          "data: two",
		"after a line end":  "data: two\n",
		"after a CRLF":      "data: two\r\n",
		"after a CR":        "data: two\r",
		"after a field":     "event: x\n",
		"after a data line": "data: two\ndata: three\n",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, strings.NewReader(whole+tail), 64)
			require.ErrorIs(t, err, io.EOF)
			assert.Equal(t, []Event{{Data: []byte("one")}}, got)
		})
	}
}

func TestReaderCapsOneEventsData(t *testing.T) {
	got, err := readAll(t, strings.NewReader("data: "+strings.Repeat("x", 64)+"\n\n"), 64)
	require.ErrorIs(t, err, io.EOF, "an event of exactly the cap is read")
	assert.Len(t, got, 1)

	for name, s := range map[string]string{
		"one line":   "data: " + strings.Repeat("x", 65) + "\n\n",
		"many lines": strings.Repeat("data: xxxxxxx\n", 10) + "\n",
		"no end":     "data: " + strings.Repeat("x", 1000),
		"long field": "event: " + strings.Repeat("x", 1000) + "\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readAll(t, strings.NewReader(s), 64)
			require.ErrorIs(t, err, streamlimit.ErrEventTooLarge)
			assert.Equal(t, "an event of the stream exceeds 64 bytes, the limit on one event", err.Error())
		})
	}
}

func TestReaderReturnsTheUnderlyingReadersError(t *testing.T) {
	boom := errors.New("boom")
	_, err := readAll(t, io.MultiReader(strings.NewReader("data: x\n\n"), iotest.ErrReader(boom)), 64)
	require.ErrorIs(t, err, boom)
}

func TestEncodeWritesFieldsAndOneDataLinePerLine(t *testing.T) {
	for name, c := range map[string]struct {
		ev   Event
		want string
	}{
		"data only":  {Event{Data: []byte(`{"a":1}`)}, "data: {\"a\":1}\n\n"},
		"all fields": {Event{ID: "4", Type: "values", Data: []byte("x")}, "id: 4\nevent: values\ndata: x\n\n"},
		"lines":      {Event{Data: []byte("a\nb\r\nc\rd")}, "data: a\ndata: b\ndata: c\ndata: d\n\n"},
		"no data":    {Event{Type: "end"}, "event: end\ndata: \n\n"},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, Write(&b, c.ev))
			assert.Equal(t, c.want, b.String())
		})
	}
	for _, ev := range []Event{{ID: "1\n2"}, {Type: "a\rb"}} {
		_, err := Encode(ev)
		require.ErrorIs(t, err, ErrLineBreak)
	}
}
