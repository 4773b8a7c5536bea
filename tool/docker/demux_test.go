package docker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/outbuf"
)

func frame(stream byte, payload string) []byte {
	hdr := make([]byte, 8, 8+len(payload))
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	return append(hdr, payload...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestDemux(t *testing.T) {
	for _, tc := range []struct {
		name           string
		in             []byte
		stdout, stderr string
		err            error
		errText        string
	}{
		{"empty", nil, "", "", nil, ""},
		{"frames", cat(frame(1, "out1 "), frame(2, "err"), frame(0, "in "), frame(1, ""), frame(1, "out2")), "out1 in out2", "err", nil, ""},
		{"header cut", frame(1, "abc")[:5], "", "", io.ErrUnexpectedEOF, ""},
		{"payload cut", frame(1, "abcdef")[:11], "abc", "", io.ErrUnexpectedEOF, ""},
		{"unknown type", cat(frame(1, "ok"), frame(7, "?")), "ok", "", errBadFrame, ""},
		{"system error", cat(frame(1, "a"), frame(3, "exec failed\n"), frame(1, "never")), "a", "", nil, "the daemon reported: exec failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range map[string]io.Reader{
				"whole":    bytes.NewReader(tc.in),
				"one byte": iotest.OneByteReader(bytes.NewReader(tc.in)),
				"half":     iotest.HalfReader(bytes.NewReader(tc.in)),
			} {
				var out, errOut bytes.Buffer
				err := demux(r, &out, &errOut)
				if out.String() != tc.stdout || errOut.String() != tc.stderr {
					t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
				}
				switch {
				case tc.errText != "":
					if err == nil || !strings.Contains(err.Error(), tc.errText) {
						t.Errorf("err %v, want %q", err, tc.errText)
					}
				case !errors.Is(err, tc.err):
					t.Errorf("err %v, want %v", err, tc.err)
				}
			}
		})
	}
}

// A huge declared size costs no memory: the payload is copied as it comes.
func TestDemuxHugeFrame(t *testing.T) {
	in := []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'x'}
	var out bytes.Buffer
	if err := demux(bytes.NewReader(in), &out, &out); err != io.ErrUnexpectedEOF || out.String() != "x" {
		t.Errorf("err %v, out %q", err, out.String())
	}
}

func TestCapture(t *testing.T) {
	c := outbuf.NewCapture(10)
	for _, p := range []string{"héllo", " wor", "ld and more", "!", strings.Repeat("z", 30), "tail€"} {
		_, _ = c.Write([]byte(p))
	}
	text, omitted := c.Text()
	// The limit is 10: the head keeps 5 bytes, "héll", and the tail its
	// last 5, "il€"; a cut never splits a character.
	if text != "héll\n[... 49 bytes of output left out ...]\nil€" {
		t.Errorf("text %q", text)
	}
	if !utf8.ValidString(text) || omitted != 49 || c.Total() != 59 {
		t.Errorf("text %q omitted %d written %d", text, omitted, c.Total())
	}
	small := outbuf.NewCapture(100)
	_, _ = small.Write([]byte("short"))
	if text, omitted := small.Text(); text != "short" || omitted != 0 {
		t.Errorf("%q %d", text, omitted)
	}
}

// FuzzDemux checks that any stream demultiplexes without panicking, that
// no byte is invented, and that how the stream is cut into reads changes
// nothing; a stream built of frames comes back as their payloads.
func FuzzDemux(f *testing.F) {
	f.Add(cat(frame(1, "hello\n"), frame(2, "oops\n"), frame(1, "")), []byte("ab"))
	f.Add(frame(3, "error"), []byte(""))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 9, 'a'}, []byte("x"))
	f.Add([]byte{9, 9, 9}, []byte{})
	f.Fuzz(func(t *testing.T, raw, payloads []byte) {
		var out1, err1 bytes.Buffer
		e1 := demux(bytes.NewReader(raw), &out1, &err1)
		var out2, err2 bytes.Buffer
		e2 := demux(iotest.OneByteReader(bytes.NewReader(raw)), &out2, &err2)
		if out1.String() != out2.String() || err1.String() != err2.String() || (e1 == nil) != (e2 == nil) {
			t.Fatalf("whole and byte-wise reads differ: %q/%q %v vs %q/%q %v", out1.String(), err1.String(), e1, out2.String(), err2.String(), e2)
		}
		if out1.Len()+err1.Len() > len(raw) {
			t.Fatalf("%d bytes out of %d in", out1.Len()+err1.Len(), len(raw))
		}
		// Frames built from payloads, one byte of it per frame type choice.
		var stream []byte
		var wantOut, wantErr strings.Builder
		for i := 0; i < len(payloads); i += 3 {
			p := string(payloads[i:min(i+3, len(payloads))])
			typ := byte(1 + int(p[0])%2)
			stream = append(stream, frame(typ, p)...)
			if typ == 1 {
				wantOut.WriteString(p)
			} else {
				wantErr.WriteString(p)
			}
		}
		var out, errOut bytes.Buffer
		if err := demux(iotest.HalfReader(bytes.NewReader(stream)), &out, &errOut); err != nil || out.String() != wantOut.String() || errOut.String() != wantErr.String() {
			t.Fatalf("framed payloads: err %v, got %q/%q want %q/%q", err, out.String(), errOut.String(), wantOut.String(), wantErr.String())
		}
	})
}
