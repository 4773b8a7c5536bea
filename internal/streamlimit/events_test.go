package streamlimit

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type readEvent struct {
	data string
	cut  bool
}

func readAll(t *testing.T, r io.Reader, max int) ([]readEvent, error) {
	t.Helper()
	e := NewEvents(r, max)
	var out []readEvent
	for range 100 {
		data, cut, err := e.Next()
		if err != nil {
			return out, err
		}
		out = append(out, readEvent{string(data), cut})
	}
	t.Fatal("the reader did not end")
	return nil, nil
}

func TestEventsReadsDataWhateverTheLineEnds(t *testing.T) {
	stream := ": keep-alive\r\n\r\n" +
		"event: message\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"retry: 100\n\n" + // no data: no event
		"data:no-space\r\r" +
		"data\n\n" + // a data field without a value: an event of no data
		"data: cut short"
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(stream),
		"byte a time": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, r, 64)
			require.ErrorIs(t, err, io.EOF)
			assert.Equal(t, []readEvent{{"{\"a\":\n1}", false}, {"no-space", false}, {"", false}, {"cut short", true}}, got)
		})
	}
}

func TestEventsCapsOneEventsData(t *testing.T) {
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
			require.ErrorIs(t, err, ErrEventTooLarge)
			assert.Equal(t, "an event of the stream exceeds 64 bytes, the limit on one event", err.Error())
		})
	}
}
