package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The stream types of a multiplexed stream's frames.
const (
	streamStdin  = 0 // written as standard output
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3 // an error of the daemon's, in place of output
)

// maxSystemMessage bounds how much of a daemon error frame is kept.
const maxSystemMessage = 4 << 10

// errBadFrame is the error of a stream that is not multiplexed.
var errBadFrame = errors.New("docker: malformed output stream")

// systemError is a daemon error that came in the output stream.
type systemError struct{ msg string }

func (e *systemError) Error() string { return "docker: the daemon reported: " + e.msg }

// demux copies the payloads of a multiplexed stream, the output of a
// command run without a terminal, to stdout and stderr, in the order they
// arrive. Each frame is an 8-byte header, [type, 0, 0, 0, size as a
// big-endian uint32], then size bytes of payload; type is 1 for standard
// output, 2 for standard error, 0 (standard input echoed, written to
// stdout) or 3 (an error of the daemon's). A payload is written as soon as
// a piece of it arrives, whatever its size, so a frame costs no memory of
// its size; a frame may be empty.
//
// demux returns nil when r ends between two frames, io.ErrUnexpectedEOF
// when it ends inside one, errBadFrame for an unknown type, a
// *systemError for a daemon error, and otherwise the error of r or of a
// writer.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		var w io.Writer
		var sys *strings.Builder
		switch hdr[0] {
		case streamStdin, streamStdout:
			w = stdout
		case streamStderr:
			w = stderr
		case streamSystem:
			sys = &strings.Builder{}
			w = &limitWriter{w: sys, n: maxSystemMessage}
		default:
			return fmt.Errorf("%w: unknown stream type %d", errBadFrame, hdr[0])
		}
		for size > 0 {
			n, err := r.Read(buf[:min(size, int64(len(buf)))])
			if n > 0 {
				size -= int64(n)
				if _, werr := w.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if err == io.EOF && size > 0 {
				return io.ErrUnexpectedEOF
			}
			if err != nil && err != io.EOF {
				return err
			}
		}
		if sys != nil {
			return &systemError{msg: strings.TrimSpace(strings.ToValidUTF8(sys.String(), "\uFFFD"))}
		}
	}
}

// limitWriter keeps the first n bytes written and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		l.n -= k
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
