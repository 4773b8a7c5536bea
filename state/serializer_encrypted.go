package state

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Key is an AES key of an encrypting serializer (EncryptedKeys), with the
// ID that names it in front of each payload it seals.
type Key struct {
	// ID names the key. It is stored in clear with each payload the key
	// seals, so that a serializer holding several keys knows which one
	// opens it: up to 64 bytes of printable ASCII without spaces. ""
	// names the key of Encrypted.
	ID string
	// Secret is the AES key: 16, 24 or 32 bytes (AES-128, -192 or -256).
	Secret []byte
}

// EncryptedOption configures Encrypted and EncryptedKeys.
type EncryptedOption func(*encryptedConfig)

type encryptedConfig struct {
	readV1 bool
}

// ReadUnboundV1 lets the serializer also open data sealed by the first
// version of the encrypted format (header "te1:", written before payloads
// were bound to their place), with any of its keys. Such data is bound to
// nothing: whoever can write to the store can copy it into another thread
// or checkpoint, and it opens there. Use it only while migrating: until
// every checkpoint written before the upgrade is pruned or deleted (or its
// thread has moved past it and its history is not read). Without it, such
// data is refused with an error matching ErrFormat that names this option.
func ReadUnboundV1() EncryptedOption {
	return func(c *encryptedConfig) { c.readV1 = true }
}

// encrypted seals the output of an inner serializer with AES-GCM.
//
// Its output (version 2) is the header "te2:", the length of the sealing
// key's ID in one byte and the ID, an 8-byte digest of the place the data
// is bound to (to tell a misplaced payload from an altered one), a random
// 12-byte nonce, and the sealed inner output with its 16-byte
// authentication tag. Everything before the nonce and the binding's
// associated data (Binding.AssociatedData, or a fixed "unbound" value for
// Marshal) are authenticated with it.
type encrypted struct {
	keys   []sealKey // keys[0] seals
	byID   map[string]cipher.AEAD
	inner  Serializer
	readV1 bool
}

type sealKey struct {
	id   string
	aead cipher.AEAD
}

// placeDigestLen is the length of the digest of the binding a payload
// carries in clear.
const placeDigestLen = 8

// maxKeyIDLen is the longest key ID.
const maxKeyIDLen = 64

// Encrypted returns a serializer that encrypts the output of inner with
// AES-GCM under key, which must be 16, 24 or 32 bytes long (AES-128, AES-192
// or AES-256). It is EncryptedKeys with the one key of ID "".
func Encrypted(key []byte, inner Serializer, opts ...EncryptedOption) (BoundSerializer, error) {
	return EncryptedKeys([]Key{{Secret: key}}, inner, opts...)
}

// EncryptedKeys returns a serializer that encrypts the output of inner with
// AES-GCM under keys[0], and decrypts with whichever of keys sealed the data
// (its ID is stored with it). To rotate keys, put the new key first and
// keep the old ones after it for as long as data sealed under them is read;
// each payload written from then on is sealed under the new one. Key IDs
// must differ. Each message gets a fresh random nonce, so encrypting the
// same value twice gives different bytes.
//
// The serializer is a BoundSerializer: what MarshalBound seals for one
// place (a checkpoint of a thread, or a task's write against it) opens only
// there, so a payload copied into another thread or checkpoint, or an
// older checkpoint's payload put in place of a newer one, is refused with
// an error matching ErrMisplaced (and ErrDecrypt). Marshal seals for no
// place, and what it wrote opens only with Unmarshal.
//
// Unmarshal and UnmarshalBound authenticate before they decrypt: data
// sealed under a key the serializer does not hold, under another key of the
// same ID, or altered in any way is an error matching ErrDecrypt, and data
// without the encrypted format header is an error matching ErrFormat. They
// never hand unauthenticated bytes to inner. When inner cannot decode what
// they decrypted, the error says why (a format error still matches
// ErrFormat, and errors.As reaches inner's error) without quoting any of
// the decrypted data. Data of the first, unbound version of the format is
// refused unless ReadUnboundV1 is given.
//
// Keep the keys outside the checkpoint store. A random nonce per message
// keeps GCM safe for about 2³² messages per key; rotate keys well before
// that.
func EncryptedKeys(keys []Key, inner Serializer, opts ...EncryptedOption) (BoundSerializer, error) {
	if len(keys) == 0 {
		return nil, errors.New("state: EncryptedKeys: no keys")
	}
	if inner == nil {
		return nil, errors.New("state: Encrypted: inner serializer is nil")
	}
	var cfg encryptedConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	e := &encrypted{inner: inner, readV1: cfg.readV1, byID: make(map[string]cipher.AEAD, len(keys))}
	for i, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			return nil, fmt.Errorf("state: encryption key %d: %w", i, err)
		}
		if _, dup := e.byID[k.ID]; dup {
			return nil, fmt.Errorf("state: encryption key %d: ID %q is given twice", i, k.ID)
		}
		switch len(k.Secret) {
		case 16, 24, 32:
		default:
			return nil, fmt.Errorf("state: encryption key %s must be 16, 24 or 32 bytes (AES-128, -192 or -256), got %d bytes", keyName(k.ID), len(k.Secret))
		}
		block, err := aes.NewCipher(k.Secret) // copies the key
		if err != nil {
			return nil, fmt.Errorf("state: encryption key %s: %w", keyName(k.ID), err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("state: encryption key %s: %w", keyName(k.ID), err)
		}
		e.keys = append(e.keys, sealKey{id: k.ID, aead: aead})
		e.byID[k.ID] = aead
	}
	return e, nil
}

func checkKeyID(id string) error {
	if len(id) > maxKeyIDLen {
		return fmt.Errorf("key ID is %d bytes long, more than %d", len(id), maxKeyIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("key ID %q: byte %d is not printable ASCII other than a space", id, i)
		}
	}
	return nil
}

// keyName names a key in a message.
func keyName(id string) string {
	if id == "" {
		return `"" (the unnamed key)`
	}
	return strconv.Quote(id)
}

// Marshal encodes v with the inner serializer and seals the result, bound
// to no place.
func (e *encrypted) Marshal(v any) ([]byte, error) {
	return e.seal(v, []byte(unboundDomain))
}

// MarshalBound encodes v with the inner serializer and seals the result,
// bound to the place at.
func (e *encrypted) MarshalBound(v any, at Binding) ([]byte, error) {
	return e.seal(v, at.AssociatedData())
}

func (e *encrypted) seal(v any, ad []byte) ([]byte, error) {
	plain, err := e.inner.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("state: encrypted serializer: %w", err)
	}
	k := e.keys[0]
	n := len(encryptedHeaderV2) + 1 + len(k.id) + placeDigestLen
	out := make([]byte, 0, n+len(plain)+k.aead.NonceSize()+k.aead.Overhead())
	out = append(out, encryptedHeaderV2...)
	out = append(out, byte(len(k.id)))
	out = append(out, k.id...)
	digest := sha256.Sum256(ad)
	out = append(out, digest[:placeDigestLen]...)
	return k.aead.Seal(out, nil, plain, append(out[:n:n], ad...)), nil
}

// Unmarshal authenticates and decrypts data sealed by Marshal, then decodes
// it with the inner serializer.
func (e *encrypted) Unmarshal(data []byte, v any) error {
	return e.open(data, []byte(unboundDomain), nil, v)
}

// UnmarshalBound authenticates and decrypts data sealed by MarshalBound
// for the place at, then decodes it with the inner serializer.
func (e *encrypted) UnmarshalBound(data []byte, at Binding, v any) error {
	return e.open(data, at.AssociatedData(), &at, v)
}

func (e *encrypted) open(data, ad []byte, at *Binding, v any) error {
	if e.readV1 && len(data) >= len(encryptedHeaderV1) && string(data[:len(encryptedHeaderV1)]) == encryptedHeaderV1 {
		return e.openV1(data, v)
	}
	rest, err := checkHeader("encrypted", encryptedHeaderV2, data)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) && len(data) >= len(encryptedHeaderV1) && string(data[:len(encryptedHeaderV1)]) == encryptedHeaderV1 {
			return fmt.Errorf("%w; data of version 1 is bound to no checkpoint, and is read only with state.ReadUnboundV1 (while migrating)", err)
		}
		return err
	}
	if len(rest) < 1 || len(rest) < 1+int(rest[0])+placeDigestLen {
		return fmt.Errorf("state: encrypted serializer: data is truncated (%d bytes after the header, too few for its key ID and place): %w", len(rest), ErrDecrypt)
	}
	idLen := int(rest[0])
	id := string(rest[1 : 1+idLen])
	place := rest[1+idLen : 1+idLen+placeDigestLen]
	n := len(encryptedHeaderV2) + 1 + idLen + placeDigestLen
	sealed := data[n:]
	aead, ok := e.byID[id]
	if !ok {
		return fmt.Errorf("state: encrypted serializer: the data was sealed under key %s, which is not among the serializer's keys (%s): %w",
			keyName(id), e.keyList(), ErrDecrypt)
	}
	if digest := sha256.Sum256(ad); !bytes.Equal(place, digest[:placeDigestLen]) {
		return &MisplacedError{At: at}
	}
	if need := aead.NonceSize() + aead.Overhead(); len(sealed) < need {
		return fmt.Errorf("state: encrypted serializer: data is truncated (%d bytes after the key ID and place, need at least %d): %w",
			len(sealed), need, ErrDecrypt)
	}
	plain, err := aead.Open(nil, nil, sealed, append(data[:n:n], ad...))
	if err != nil {
		return fmt.Errorf("state: encrypted serializer: authentication failed under key %s (a wrong key of that ID, or the data was altered): %w", keyName(id), ErrDecrypt)
	}
	return e.decode(plain, v)
}

// openV1 opens data of the first version of the format: the header "te1:",
// a nonce, and the sealed inner output, with the header as associated data
// and no key ID, so each key is tried in turn.
func (e *encrypted) openV1(data []byte, v any) error {
	sealed := data[len(encryptedHeaderV1):]
	for _, k := range e.keys {
		if len(sealed) < k.aead.NonceSize()+k.aead.Overhead() {
			return fmt.Errorf("state: encrypted serializer: version 1 data is truncated (%d bytes after the header): %w", len(sealed), ErrDecrypt)
		}
		if plain, err := k.aead.Open(nil, nil, sealed, data[:len(encryptedHeaderV1)]); err == nil {
			return e.decode(plain, v)
		}
	}
	return fmt.Errorf("state: encrypted serializer: version 1 data: authentication failed under every key (%s): wrong keys, or the data was altered: %w", e.keyList(), ErrDecrypt)
}

// decode hands decrypted data to the inner serializer.
func (e *encrypted) decode(plain []byte, v any) error {
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

func (e *encrypted) keyList() string {
	names := make([]string, len(e.keys))
	for i, k := range e.keys {
		names[i] = keyName(k.id)
	}
	return strings.Join(names, ", ")
}

// MisplacedError reports encrypted data read from a place other than the
// one it was sealed for (BoundSerializer): copied from another thread,
// namespace, checkpoint or task, or an older payload put in place of a
// newer one. It matches ErrMisplaced and ErrDecrypt with errors.Is.
type MisplacedError struct {
	// At is where the data was read, nil when it was read bound to no
	// place (Unmarshal).
	At *Binding
}

// Error implements error.
func (e *MisplacedError) Error() string {
	where := "bound to no place (Unmarshal)"
	if b := e.At; b != nil {
		where = fmt.Sprintf("as checkpoint %q of thread %q", b.CheckpointID, b.ThreadID)
		if b.Namespace != "" {
			where += fmt.Sprintf(" in namespace %q", b.Namespace)
		}
		if b.Write {
			where = fmt.Sprintf("as the write of task %q of ", b.TaskID) + strings.TrimPrefix(where, "as ")
		}
	}
	return fmt.Sprintf("state: encrypted serializer: data read %s was sealed for another place: copied from another thread, namespace, checkpoint or task, or an older payload put in its place: %v", where, ErrMisplaced)
}

// Is reports whether target is ErrMisplaced or ErrDecrypt.
func (e *MisplacedError) Is(target error) bool { return target == ErrMisplaced || target == ErrDecrypt }

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
