package state

import (
	"errors"
	"fmt"
)

// Serializer turns values into bytes and back. The engine uses one to encode
// the payloads of checkpoints and pending writes; stores never look inside.
//
// Every serializer in this package starts its output with a short format
// header (for example "tj1:" for JSON, version 1) so that data written in
// another format, or by another version, is rejected with a clear error
// instead of being decoded into garbage. Any implementation may be plugged in;
// it should do the same.
type Serializer interface {
	// Marshal encodes v.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes data, produced by Marshal, into the value v points to.
	Unmarshal(data []byte, v any) error
}

// Errors reported by the serializers of this package.
var (
	// ErrFormat reports data that does not carry the format header the
	// serializer expects: it was written by another serializer, by another
	// version of this one, or is not serialized data at all.
	ErrFormat = errors.New("unrecognized serialization format")
	// ErrDecrypt reports encrypted data that cannot be opened: the key is
	// wrong or missing, the data was truncated or altered, or it was read
	// from another place than the one it was sealed for (ErrMisplaced).
	ErrDecrypt = errors.New("cannot decrypt data")
	// ErrMisplaced reports encrypted data read from another place than the
	// one it was sealed for (BoundSerializer): copied from another thread,
	// namespace, checkpoint or task, or an older payload put in place of a
	// newer one. Such an error matches ErrDecrypt too.
	ErrMisplaced = errors.New("encrypted data was sealed for another place")
)

// FormatError describes data whose format header is not the one a
// serializer expects. It matches ErrFormat with errors.Is.
type FormatError struct {
	// Serializer names the serializer that rejected the data.
	Serializer string
	// Want is the header the serializer expects, such as "tj1:".
	Want string
	// Found describes what the data starts with instead.
	Found string

	// redacted describes the data as Found does, but quotes none of it: it
	// stands in for Found when the data is decrypted plaintext.
	redacted string
}

// Error implements error.
func (e *FormatError) Error() string {
	return fmt.Sprintf("state: %s serializer expects format header %q, found %s: %v",
		e.Serializer, e.Want, e.Found, ErrFormat)
}

// Is reports whether target is ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// Format headers. Each is "t", a letter naming the format, a version number
// and a colon. A new version of a format gets a new number, never a new
// meaning for an old one.
const (
	jsonHeaderV1      = "tj1:"
	encryptedHeaderV1 = "te1:" // bound to no place; read with ReadUnboundV1
	encryptedHeaderV2 = "te2:"
)

// formatName returns a human-readable name for a header's format letter.
func formatName(letter byte) (string, bool) {
	switch letter {
	case 'j':
		return "JSON", true
	case 'e':
		return "AES-GCM encrypted", true
	}
	return "", false
}

// checkHeader verifies that data starts with want and returns what follows
// it. On mismatch it returns a *FormatError naming what was found.
func checkHeader(serializer, want string, data []byte) ([]byte, error) {
	if len(data) >= len(want) && string(data[:len(want)]) == want {
		return data[len(want):], nil
	}
	return nil, &FormatError{
		Serializer: serializer,
		Want:       want,
		Found:      describeHeader(data, true),
		redacted:   describeHeader(data, false),
	}
}

// withoutData returns a copy of e whose message quotes none of the data it
// describes, only a format header the data starts with, if any. A
// FormatError made outside this package, whose Found may quote anything,
// says only that the data was not recognized.
func (e *FormatError) withoutData() *FormatError {
	c := *e
	c.Found = c.redacted
	if c.Found == "" {
		c.Found = "data it does not recognize"
	}
	return &c
}

// describeHeader says, for an error message, what data starts with. Unless
// quote is set, it shows none of the data beyond a format header.
func describeHeader(data []byte, quote bool) string {
	if len(data) == 0 {
		return "empty data"
	}
	if hdr, letter, version, ok := parseHeader(data); ok {
		name, known := formatName(letter)
		if !known {
			return fmt.Sprintf("header %q (unknown format %q, version %s)", hdr, string(letter), version)
		}
		return fmt.Sprintf("header %q (%s, version %s)", hdr, name, version)
	}
	if !quote {
		return fmt.Sprintf("no format header (%d bytes)", len(data))
	}
	const show = 16
	if len(data) > show {
		return fmt.Sprintf("no format header (data begins %q...)", data[:show])
	}
	return fmt.Sprintf("no format header (data is %q)", data)
}

// parseHeader recognizes a header of the shape "t<letter><digits>:" with one
// to three digits.
func parseHeader(data []byte) (hdr string, letter byte, version string, ok bool) {
	if len(data) < 4 || data[0] != 't' || data[1] < 'a' || data[1] > 'z' {
		return "", 0, "", false
	}
	for i := 2; i < len(data) && i < 6; i++ {
		c := data[i]
		switch {
		case c >= '0' && c <= '9':
			continue
		case c == ':' && i > 2:
			return string(data[:i+1]), data[1], string(data[2:i]), true
		}
		break
	}
	return "", 0, "", false
}
