package state

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// encrypted seals the output of an inner serializer with AES-GCM.
//
// Its output is the header "te1:", a random 12-byte nonce, and the sealed
// inner output with its 16-byte authentication tag. The header is
// authenticated too, so it cannot be swapped without detection.
type encrypted struct {
	aead  cipher.AEAD
	inner Serializer
}

// Encrypted returns a serializer that encrypts the output of inner with
// AES-GCM under key, which must be 16, 24 or 32 bytes long (AES-128, AES-192
// or AES-256). Each message gets a fresh random nonce, so encrypting the same
// value twice gives different bytes.
//
// Unmarshal authenticates before it decrypts: data sealed under another key,
// or altered in any way, is an error matching ErrDecrypt, and data without
// the encrypted format header is an error matching ErrFormat. It never hands
// unauthenticated bytes to inner. When inner cannot decode what it decrypted,
// the error says why (a format error still matches ErrFormat, and errors.As
// reaches inner's error) without quoting any of the decrypted data.
//
// Keep the key outside the checkpoint store. A random nonce per message keeps
// GCM safe for about 2³² messages per key; rotate keys well before that.
func Encrypted(key []byte, inner Serializer) (Serializer, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("state: encryption key must be 16, 24 or 32 bytes (AES-128, -192 or -256), got %d bytes", len(key))
	}
	if inner == nil {
		return nil, errors.New("state: Encrypted: inner serializer is nil")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("state: encryption key: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("state: encryption key: %w", err)
	}
	return &encrypted{aead: aead, inner: inner}, nil
}

// Marshal encodes v with the inner serializer and seals the result.
func (e *encrypted) Marshal(v any) ([]byte, error) {
	plain, err := e.inner.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("state: encrypted serializer: %w", err)
	}
	out := make([]byte, len(encryptedHeaderV1), len(encryptedHeaderV1)+len(plain)+e.aead.Overhead())
	copy(out, encryptedHeaderV1)
	return e.aead.Seal(out, nil, plain, out[:len(encryptedHeaderV1)]), nil
}

// Unmarshal authenticates and decrypts data, then decodes it with the inner
// serializer.
func (e *encrypted) Unmarshal(data []byte, v any) error {
	sealed, err := checkHeader("encrypted", encryptedHeaderV1, data)
	if err != nil {
		return err
	}
	if need := e.aead.Overhead(); len(sealed) < need {
		return fmt.Errorf("state: encrypted serializer: data is truncated (%d bytes after the header, need at least %d): %w",
			len(sealed), need, ErrDecrypt)
	}
	plain, err := e.aead.Open(nil, nil, sealed, data[:len(encryptedHeaderV1)])
	if err != nil {
		return fmt.Errorf("state: encrypted serializer: authentication failed (wrong key, or the data was altered): %w", ErrDecrypt)
	}
	if err := e.inner.Unmarshal(plain, v); err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			// Its message may quote the data: here, the plaintext.
			return fmt.Errorf("state: encrypted serializer: decrypted data: %w", fe.withoutData())
		}
		return &decodeError{into: fmt.Sprintf("%T", v), err: err}
	}
	return nil
}

// decodeError reports decrypted data the inner serializer could not decode.
// Its message withholds the inner error's, which may quote the plaintext
// (encoding/json quotes the numbers it cannot store, and time.Time the text
// it cannot parse), and says instead what kind of error it was. errors.Is
// and errors.As reach the inner error.
type decodeError struct {
	into string // the type of the value decoded into
	err  error
}

func (e *decodeError) Error() string {
	return fmt.Sprintf("state: encrypted serializer: decrypted data does not decode into %s: %s", e.into, describeDecodeError(e.err))
}

func (e *decodeError) Unwrap() error { return e.err }

// describeDecodeError says what went wrong in err without quoting data.
func describeDecodeError(err error) string {
	var (
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case errors.As(err, &typeErr):
		kind, _, _ := strings.Cut(typeErr.Value, " ") // "number 31337": keep "number"
		msg := fmt.Sprintf("a JSON %s cannot be stored in a Go %v", kind, typeErr.Type)
		if typeErr.Field != "" {
			msg += fmt.Sprintf(" (field %s)", typeErr.Field)
		}
		return msg
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("invalid JSON at byte %d", syntaxErr.Offset)
	}
	inner := err
	for {
		next := errors.Unwrap(inner)
		if next == nil {
			break
		}
		inner = next
	}
	return fmt.Sprintf("the inner serializer failed with a %T (its message is withheld: it may quote the data)", inner)
}
