package state_test

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/state"
)

// TestMain checks every test of package state for leaked goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type snapshot struct {
	Messages []string          `json:"messages"`
	Count    int               `json:"count"`
	Labels   map[string]string `json:"labels,omitempty"`
	Note     string            `json:"note"`
}

func sampleSnapshot() snapshot {
	return snapshot{
		Messages: []string{"hello", "wörld", "<b>&</b>"},
		Count:    3,
		Labels:   map[string]string{"k": "v"},
		Note:     "line\nbreak \u0000 nul",
	}
}

func TestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   any
		out  func() any // returns a pointer to decode into
	}{
		{"struct", sampleSnapshot(), func() any { return new(snapshot) }},
		{"map", map[string]any{"a": 1.5, "b": []any{"x", true}}, func() any { return new(map[string]any) }},
		{"string", "plain <html> & text", func() any { return new(string) }},
		{"bytes", []byte{0, 1, 2, 255}, func() any { return new([]byte) }},
		{"nil", nil, func() any { return new(any) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := state.JSON().Marshal(tt.in)
			require.NoError(t, err)
			assert.True(t, bytes.HasPrefix(data, []byte("tj1:")), "output %q lacks the JSON v1 header", data)
			assert.False(t, bytes.HasSuffix(data, []byte("\n")), "output must not end with a newline")

			out := tt.out()
			require.NoError(t, state.JSON().Unmarshal(data, out))
			if tt.in == nil {
				assert.Nil(t, *(out.(*any)))
				return
			}
			assert.Equal(t, tt.in, deref(out))
		})
	}
}

func deref(p any) any {
	switch v := p.(type) {
	case *snapshot:
		return *v
	case *map[string]any:
		return *v
	case *string:
		return *v
	case *[]byte:
		return *v
	}
	panic(fmt.Sprintf("deref: unexpected %T", p))
}

func TestJSONDoesNotEscapeHTML(t *testing.T) {
	data, err := state.JSON().Marshal("<a&b>")
	require.NoError(t, err)
	assert.Equal(t, `tj1:"<a&b>"`, string(data))
}

func TestJSONMarshalErrorNamesType(t *testing.T) {
	_, err := state.JSON().Marshal(make(chan int))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chan int")
}

func TestJSONUnmarshalRejectsForeignData(t *testing.T) {
	tests := []struct {
		name  string
		data  []byte
		found string // substring the error must contain
	}{
		{"empty", nil, "empty data"},
		{"bare JSON", []byte(`{"count":1}`), `no format header (data is "{\"count\":1}")`},
		{"long bare JSON", []byte(`{"messages":["a","b","c","d"]}`), `data begins "{\"messages\":[\"a\""...`},
		{"encrypted data", []byte("te1:\x01\x02\x03"), `header "te1:" (AES-GCM encrypted, version 1)`},
		{"future version", []byte(`tj2:{"count":1}`), `header "tj2:" (JSON, version 2)`},
		{"unknown format", []byte(`tq7:abc`), `header "tq7:" (unknown format "q", version 7)`},
		{"header without version", []byte(`tj:{}`), "no format header"},
		{"prefix of header", []byte(`tj1`), "no format header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out snapshot
			err := state.JSON().Unmarshal(tt.data, &out)
			require.Error(t, err)
			assert.ErrorIs(t, err, state.ErrFormat)
			var fe *state.FormatError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "JSON", fe.Serializer)
			assert.Equal(t, "tj1:", fe.Want)
			assert.Contains(t, err.Error(), tt.found)
			assert.Contains(t, err.Error(), `expects format header "tj1:"`)
			assert.Equal(t, snapshot{}, out, "nothing may be decoded from rejected data")
		})
	}
}

func TestJSONUnmarshalBadBody(t *testing.T) {
	var out snapshot
	err := state.JSON().Unmarshal([]byte(`tj1:{"count":"three"}`), &out)
	require.Error(t, err)
	assert.NotErrorIs(t, err, state.ErrFormat)
	assert.Contains(t, err.Error(), "decode into *state_test.snapshot")

	err = state.JSON().Unmarshal([]byte(`tj1:{"count":1} trailing`), &out)
	require.Error(t, err, "trailing data after the JSON value must be rejected")
}

func key(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n) }

func TestEncryptedKeySizes(t *testing.T) {
	for _, n := range []int{0, 1, 15, 17, 23, 31, 33, 64} {
		t.Run(fmt.Sprintf("%d bytes rejected", n), func(t *testing.T) {
			s, err := state.Encrypted(key(n, 1), state.JSON())
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), fmt.Sprintf("got %d bytes", n))
		})
	}
	for _, n := range []int{16, 24, 32} {
		t.Run(fmt.Sprintf("%d bytes accepted", n), func(t *testing.T) {
			s, err := state.Encrypted(key(n, 1), state.JSON())
			require.NoError(t, err)
			data, err := s.Marshal(sampleSnapshot())
			require.NoError(t, err)
			var out snapshot
			require.NoError(t, s.Unmarshal(data, &out))
			assert.Equal(t, sampleSnapshot(), out)
		})
	}
}

func TestEncryptedNilInner(t *testing.T) {
	_, err := state.Encrypted(key(32, 1), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "inner serializer is nil")
}

func TestEncryptedHidesPlaintextAndUsesFreshNonces(t *testing.T) {
	s, err := state.Encrypted(key(32, 7), state.JSON())
	require.NoError(t, err)
	secret := "the launch code is 0000"
	a, err := s.Marshal(secret)
	require.NoError(t, err)
	b, err := s.Marshal(secret)
	require.NoError(t, err)

	assert.True(t, bytes.HasPrefix(a, []byte("te2:")))
	assert.NotContains(t, string(a), "launch code")
	assert.NotEqual(t, a, b, "two encryptions of one value must differ (random nonce)")
	// header + key ID length (the key's ID is "") + 8-byte place digest +
	// 12-byte nonce + inner output + 16-byte tag
	inner, err := state.JSON().Marshal(secret)
	require.NoError(t, err)
	assert.Len(t, a, 4+1+8+12+len(inner)+16)
}

func TestEncryptedKeyIsCopied(t *testing.T) {
	k := key(32, 9)
	s, err := state.Encrypted(k, state.JSON())
	require.NoError(t, err)
	data, err := s.Marshal(42)
	require.NoError(t, err)
	for i := range k {
		k[i] = 0
	}
	var out int
	require.NoError(t, s.Unmarshal(data, &out), "changing the caller's key slice must not change the serializer")
	assert.Equal(t, 42, out)
}

func TestEncryptedWrongKey(t *testing.T) {
	s1, err := state.Encrypted(key(32, 1), state.JSON())
	require.NoError(t, err)
	s2, err := state.Encrypted(key(32, 2), state.JSON())
	require.NoError(t, err)
	data, err := s1.Marshal(sampleSnapshot())
	require.NoError(t, err)

	var out snapshot
	err = s2.Unmarshal(data, &out)
	require.Error(t, err)
	assert.ErrorIs(t, err, state.ErrDecrypt)
	assert.Contains(t, err.Error(), "wrong key of that ID, or the data was altered")
	assert.Equal(t, snapshot{}, out)
}

func TestEncryptedDetectsEveryAlteredByte(t *testing.T) {
	s, err := state.Encrypted(key(16, 3), state.JSON())
	require.NoError(t, err)
	data, err := s.Marshal(sampleSnapshot())
	require.NoError(t, err)

	for i := range data {
		altered := bytes.Clone(data)
		altered[i] ^= 0x01
		var out snapshot
		err := s.Unmarshal(altered, &out)
		require.Error(t, err, "flipping a bit of byte %d went unnoticed", i)
		if i < 4 {
			assert.ErrorIs(t, err, state.ErrFormat, "byte %d is in the header", i)
		} else {
			assert.ErrorIs(t, err, state.ErrDecrypt, "byte %d", i)
		}
		assert.Equal(t, snapshot{}, out)
	}
}

func TestEncryptedTruncatedAndForeignData(t *testing.T) {
	s, err := state.Encrypted(key(24, 3), state.JSON())
	require.NoError(t, err)
	data, err := s.Marshal("value")
	require.NoError(t, err)
	jsonData, err := state.JSON().Marshal("value")
	require.NoError(t, err)

	tests := []struct {
		name    string
		data    []byte
		is      error
		message string
	}{
		{"empty", nil, state.ErrFormat, "empty data"},
		{"header only", []byte("te2:"), state.ErrDecrypt, "data is truncated (0 bytes after the header"},
		{"key ID and place only", data[:4+1+8], state.ErrDecrypt, "data is truncated (0 bytes after the key ID and place, need at least 28)"},
		{"shorter than nonce and tag", data[:20], state.ErrDecrypt, "data is truncated"},
		{"last byte cut", data[:len(data)-1], state.ErrDecrypt, "authentication failed"},
		{"extra byte", append(bytes.Clone(data), 0), state.ErrDecrypt, "authentication failed"},
		{"plain JSON data", jsonData, state.ErrFormat, `found header "tj1:" (JSON, version 1)`},
		{"future version", append([]byte("te3:"), data[4:]...), state.ErrFormat, `header "te3:" (AES-GCM encrypted, version 3)`},
		{"version 1", append([]byte("te1:"), data[4+1+8:]...), state.ErrFormat, "read only with state.ReadUnboundV1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out string
			err := s.Unmarshal(tt.data, &out)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.is)
			assert.Contains(t, err.Error(), tt.message)
			assert.Empty(t, out)
		})
	}
}

func TestEncryptedInnerErrorsPassThrough(t *testing.T) {
	s, err := state.Encrypted(key(32, 5), state.JSON())
	require.NoError(t, err)

	_, err = s.Marshal(func() {})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "encrypted serializer")
	assert.Contains(t, err.Error(), "func()")

	data, err := s.Marshal("not a number")
	require.NoError(t, err)
	var n int
	err = s.Unmarshal(data, &n)
	require.Error(t, err)
	assert.NotErrorIs(t, err, state.ErrDecrypt, "the data decrypted fine; the inner decode failed")
	assert.Contains(t, err.Error(), "decrypted data")
}

// gobSerializer shows that any Serializer plugs in, including inside Encrypted.
type gobSerializer struct{}

const gobHeader = "tg1:"

func (gobSerializer) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(gobHeader)
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (gobSerializer) Unmarshal(data []byte, v any) error {
	if !bytes.HasPrefix(data, []byte(gobHeader)) {
		return errors.New("gob serializer: missing header")
	}
	return gob.NewDecoder(bytes.NewReader(data[len(gobHeader):])).Decode(v)
}

func TestEncryptedWrapsAnySerializer(t *testing.T) {
	s, err := state.Encrypted(key(32, 4), gobSerializer{})
	require.NoError(t, err)
	data, err := s.Marshal(sampleSnapshot())
	require.NoError(t, err)
	var out snapshot
	require.NoError(t, s.Unmarshal(data, &out))
	assert.Equal(t, sampleSnapshot(), out)

	// The JSON serializer refuses gob data and names the unknown header.
	gobData, err := gobSerializer{}.Marshal(sampleSnapshot())
	require.NoError(t, err)
	err = state.JSON().Unmarshal(gobData, &out)
	assert.ErrorIs(t, err, state.ErrFormat)
	assert.Contains(t, err.Error(), `header "tg1:" (unknown format "g", version 1)`)
}

func TestFormatErrorMessage(t *testing.T) {
	err := &state.FormatError{Serializer: "JSON", Want: "tj1:", Found: "empty data"}
	assert.Equal(t, `state: JSON serializer expects format header "tj1:", found empty data: unrecognized serialization format`, err.Error())
	assert.ErrorIs(t, err, state.ErrFormat)
	assert.NotErrorIs(t, err, state.ErrDecrypt)
}

// rawSerializer writes JSON without a format header, as a third-party
// serializer might.
type rawSerializer struct{}

func (rawSerializer) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

func (rawSerializer) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Data that decrypts under the right key but that the inner serializer does
// not recognize is a format error; its message must not quote the decrypted
// bytes, which are the very data the encryption protects.
func TestEncryptedFormatErrorDoesNotShowPlaintext(t *testing.T) {
	k := key(32, 6)
	raw, err := state.Encrypted(k, rawSerializer{})
	require.NoError(t, err)
	viaJSON, err := state.Encrypted(k, state.JSON())
	require.NoError(t, err)

	for _, secret := range []string{"pin 4711", "the launch code is 0000, keep it safe"} {
		data, err := raw.Marshal(secret)
		require.NoError(t, err)
		var out string
		err = viaJSON.Unmarshal(data, &out)
		require.Error(t, err)
		assert.ErrorIs(t, err, state.ErrFormat)
		assert.NotErrorIs(t, err, state.ErrDecrypt, "the data decrypted fine")
		var fe *state.FormatError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "tj1:", fe.Want)
		assert.Contains(t, err.Error(), "decrypted data")
		assert.Contains(t, err.Error(), "no format header")
		for _, word := range []string{"pin", "4711", "launch", "code"} {
			assert.NotContains(t, err.Error(), word, "the error shows decrypted data")
		}
		assert.Empty(t, out)
	}

	// A recognized header is named: it says what the data is, not what it says.
	gobSealed, err := state.Encrypted(k, gobSerializer{})
	require.NoError(t, err)
	data, err := gobSealed.Marshal("secret value")
	require.NoError(t, err)
	var out string
	err = viaJSON.Unmarshal(data, &out)
	assert.ErrorIs(t, err, state.ErrFormat)
	assert.Contains(t, err.Error(), `header "tg1:" (unknown format "g", version 1)`)
}

// The inner serializer's decode errors may quote the data (encoding/json
// quotes numbers it cannot store, and strings a field's own decoder
// refuses); through Encrypted they must say what went wrong without it.
func TestEncryptedDecodeErrorDoesNotShowPlaintext(t *testing.T) {
	s, err := state.Encrypted(key(32, 8), state.JSON())
	require.NoError(t, err)

	type account struct {
		PIN    int8      `json:"pin"`
		Opened time.Time `json:"opened"`
	}
	tests := []struct {
		name    string
		value   any
		secret  string
		message string // what the error must still say
	}{
		{"number out of range", map[string]any{"pin": 31337}, "31337", `a JSON number cannot be stored in a Go int8 (field pin)`},
		{"string a field refuses", map[string]any{"opened": "born 1984 in Paris"}, "Paris", "*time.ParseError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := s.Marshal(tt.value)
			require.NoError(t, err)
			var out account
			err = s.Unmarshal(data, &out)
			require.Error(t, err)
			assert.NotErrorIs(t, err, state.ErrDecrypt, "the data decrypted fine")
			assert.NotContains(t, err.Error(), tt.secret, "the error shows decrypted data")
			assert.Contains(t, err.Error(), "decrypted data")
			assert.Contains(t, err.Error(), "*state_test.account")
			assert.Contains(t, err.Error(), tt.message)
		})
	}

	// The inner error is still there for errors.As.
	data, err := s.Marshal(map[string]any{"pin": 31337})
	require.NoError(t, err)
	var out account
	var te *json.UnmarshalTypeError
	require.ErrorAs(t, s.Unmarshal(data, &out), &te)
	assert.Equal(t, "pin", te.Field)
}
