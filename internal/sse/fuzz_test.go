package sse

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/streamlimit"
)

// specEvents parses s the way the format's rules are written, line by line
// over the whole input: the reference FuzzReaderFollowsTheFormat checks
// Reader against. It returns the events and whether one passed max.
func specEvents(s []byte, max int) ([]Event, bool) {
	s = bytes.TrimPrefix(s, []byte("\xef\xbb\xbf"))
	var lines [][]byte
	for len(s) > 0 {
		i := bytes.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s) // a last line without its end: no blank line follows
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	var out []Event
	var ev Event
	var data []byte
	hasData := false
	for _, line := range lines {
		if len(line) > max+len("data: ") {
			return out, true
		}
		switch {
		case len(line) == 0:
			if hasData {
				ev.Data = append([]byte{}, data...)
				out = append(out, ev)
			}
			ev, data, hasData = Event{}, nil, false
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
				if len(data) > max {
					return out, true
				}
			case "event":
				ev.Type = string(value)
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					ev.ID = string(value)
				}
			}
		}
	}
	return out, false
}

func FuzzReaderFollowsTheFormat(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\r\n\r\nid: 1\revent: e\rdata\r\r"), 16)
	f.Add([]byte("\xef\xbb\xbf: c\n\ndata: cut"), 8)
	f.Add([]byte("data: one\ndata: two\n\ndata: three\n"), 4)
	f.Add([]byte("id: a\x00b\ndata:x\n\n"), 4)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = 1 + max&0x3f
		want, tooLarge := specEvents(in, max)
		var got []Event
		rd := NewReader(bytes.NewReader(in), max)
		var err error
		for {
			var ev Event
			if ev, err = rd.Next(); err != nil {
				break
			}
			got = append(got, ev)
		}
		if tooLarge {
			require.ErrorIs(t, err, streamlimit.ErrEventTooLarge)
		} else {
			require.ErrorIs(t, err, io.EOF)
		}
		require.Equal(t, len(want), len(got), "events of %q", in)
		for i := range want {
			assert.Equal(t, want[i].ID, got[i].ID)
			assert.Equal(t, want[i].Type, got[i].Type)
			assert.Equal(t, string(want[i].Data), string(got[i].Data))
		}
	})
}

// lineEnds matches the line ends Encode turns into line feeds.
var lineEnds = regexp.MustCompile("\r\n|\r")

func FuzzEncodeThenReadGivesTheEventBack(f *testing.F) {
	f.Add("1", "values", []byte("{\"a\":\n1}"))
	f.Add("", "", []byte(""))
	f.Add("x", "", []byte("a\r\nb\rc\n"))
	f.Fuzz(func(t *testing.T, id, typ string, data []byte) {
		b, err := Encode(Event{ID: id, Type: typ, Data: data})
		if err != nil {
			require.True(t, errors.Is(err, ErrLineBreak))
			return
		}
		rd := NewReader(bytes.NewReader(b), len(b))
		ev, err := rd.Next()
		require.NoError(t, err)
		if bytes.IndexByte([]byte(id), 0) < 0 {
			assert.Equal(t, id, ev.ID)
		}
		assert.Equal(t, typ, ev.Type)
		assert.Equal(t, string(lineEnds.ReplaceAll(data, []byte("\n"))), string(ev.Data))
		_, err = rd.Next()
		require.ErrorIs(t, err, io.EOF)
	})
}
