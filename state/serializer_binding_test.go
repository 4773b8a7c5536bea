package state_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
)

var here = state.Binding{ThreadID: "alice", Namespace: "", CheckpointID: "cp-2"}

// A payload sealed for one place opens there only: copied into another
// thread, namespace, checkpoint (an older checkpoint's payload put in place
// of a newer one is this case too) or task, it is refused with an error
// matching ErrMisplaced and ErrDecrypt, and nothing is decoded.
func TestEncryptedPayloadOpensOnlyWhereItWasSealed(t *testing.T) {
	s, err := state.Encrypted(key(32, 1), state.JSON())
	require.NoError(t, err)
	data, err := s.MarshalBound(sampleSnapshot(), here)
	require.NoError(t, err)
	var out snapshot
	require.NoError(t, s.UnmarshalBound(data, here, &out))
	assert.Equal(t, sampleSnapshot(), out)

	write := state.Binding{ThreadID: "alice", CheckpointID: "cp-2", Write: true, TaskID: "cp-2/0"}
	elsewhere := map[string]state.Binding{
		"another thread":         {ThreadID: "bob", CheckpointID: "cp-2"},
		"another namespace":      {ThreadID: "alice", Namespace: "/sub:1", CheckpointID: "cp-2"},
		"an older checkpoint":    {ThreadID: "alice", CheckpointID: "cp-1"},
		"a write of the same":    {ThreadID: "alice", CheckpointID: "cp-2", Write: true},
		"a task's write":         write,
		"fields shifted between": {ThreadID: "alic", Namespace: "e", CheckpointID: "cp-2"},
	}
	for name, at := range elsewhere {
		t.Run(name, func(t *testing.T) {
			var out snapshot
			err := s.UnmarshalBound(data, at, &out)
			require.ErrorIs(t, err, state.ErrMisplaced)
			require.ErrorIs(t, err, state.ErrDecrypt)
			var me *state.MisplacedError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, at, *me.At)
			assert.Contains(t, err.Error(), `thread "`+at.ThreadID+`"`)
			assert.Contains(t, err.Error(), "sealed for another place")
			assert.Equal(t, snapshot{}, out)
		})
	}

	// Tasks' writes are bound to their task.
	wdata, err := s.MarshalBound("output", write)
	require.NoError(t, err)
	var w string
	require.NoError(t, s.UnmarshalBound(wdata, write, &w))
	other := write
	other.TaskID = "cp-2/1"
	err = s.UnmarshalBound(wdata, other, &w)
	require.ErrorIs(t, err, state.ErrMisplaced)
	assert.Contains(t, err.Error(), `the write of task "cp-2/1" of checkpoint "cp-2"`)

	// Data bound to a place and data bound to none do not stand in for
	// each other.
	err = s.Unmarshal(data, &out)
	require.ErrorIs(t, err, state.ErrMisplaced)
	assert.Contains(t, err.Error(), "bound to no place")
	plain, err := s.Marshal(sampleSnapshot())
	require.NoError(t, err)
	require.ErrorIs(t, s.UnmarshalBound(plain, here, &out), state.ErrMisplaced)
}

// Rewriting the digest of the place a payload carries in clear, to pass it
// off as another place's, fails authentication.
func TestEncryptedPayloadWithForgedPlaceFails(t *testing.T) {
	s, err := state.Encrypted(key(32, 1), state.JSON())
	require.NoError(t, err)
	data, err := s.MarshalBound("secret", here)
	require.NoError(t, err)
	there := state.Binding{ThreadID: "bob", CheckpointID: "cp-2"}
	template, err := s.MarshalBound("x", there)
	require.NoError(t, err)
	const placeAt = 4 + 1 // header, key ID length, key ID ""
	forged := bytes.Clone(data)
	copy(forged[placeAt:placeAt+8], template[placeAt:placeAt+8])

	var out string
	err = s.UnmarshalBound(forged, there, &out)
	require.ErrorIs(t, err, state.ErrDecrypt)
	assert.NotErrorIs(t, err, state.ErrMisplaced)
	assert.Contains(t, err.Error(), "authentication failed")
	assert.Empty(t, out)
}

func TestBindingAssociatedDataIsUnambiguous(t *testing.T) {
	bindings := []state.Binding{
		{},
		{ThreadID: "a"},
		{Namespace: "a"},
		{CheckpointID: "a"},
		{TaskID: "a"},
		{Write: true},
		{Write: true, TaskID: "a"},
		{ThreadID: "ab", Namespace: "c"},
		{ThreadID: "a", Namespace: "bc"},
		{ThreadID: "a\x01b"},
		{ThreadID: "a", Namespace: "\x01b"},
	}
	seen := map[string]int{}
	for i, b := range bindings {
		ad := string(b.AssociatedData())
		if j, dup := seen[ad]; dup {
			t.Errorf("bindings %d (%+v) and %d (%+v) encode alike", j, bindings[j], i, b)
		}
		seen[ad] = i
	}
	cp := &state.Checkpoint{ThreadID: "t", Namespace: "n", ID: "c"}
	assert.Equal(t, state.Binding{ThreadID: "t", Namespace: "n", CheckpointID: "c"}, state.CheckpointBinding(cp))
	assert.Equal(t, state.Binding{ThreadID: "t", Namespace: "n", CheckpointID: "c", Write: true, TaskID: "c/0"}, state.WriteBinding(cp, "c/0"))
}

// Key rotation: the first key seals, every listed key opens what it
// sealed, and a key no longer listed is named in the error.
func TestEncryptedKeysRotate(t *testing.T) {
	k2024 := state.Key{ID: "2024", Secret: key(32, 1)}
	k2025 := state.Key{ID: "2025", Secret: key(16, 2)}
	k2026 := state.Key{ID: "2026", Secret: key(24, 3)}

	before, err := state.EncryptedKeys([]state.Key{k2024}, state.JSON())
	require.NoError(t, err)
	oldData, err := before.MarshalBound("sealed in 2024", here)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(oldData, []byte("te2:\x042024")), "the key's ID follows the header")

	rotated, err := state.EncryptedKeys([]state.Key{k2025, k2024}, state.JSON())
	require.NoError(t, err)
	var out string
	require.NoError(t, rotated.UnmarshalBound(oldData, here, &out), "an older listed key opens its data")
	assert.Equal(t, "sealed in 2024", out)
	newData, err := rotated.MarshalBound("sealed in 2025", here)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(newData, []byte("te2:\x042025")), "the first key seals")
	err = before.UnmarshalBound(newData, here, &out)
	require.ErrorIs(t, err, state.ErrDecrypt)
	assert.Contains(t, err.Error(), `sealed under key "2025", which is not among the serializer's keys ("2024")`)

	// Once the old key is dropped, its data no longer opens, and the error
	// says which key it needs.
	retired, err := state.EncryptedKeys([]state.Key{k2026, k2025}, state.JSON())
	require.NoError(t, err)
	require.NoError(t, retired.UnmarshalBound(newData, here, &out))
	assert.Equal(t, "sealed in 2025", out)
	err = retired.UnmarshalBound(oldData, here, &out)
	require.ErrorIs(t, err, state.ErrDecrypt)
	assert.NotErrorIs(t, err, state.ErrMisplaced)
	assert.Contains(t, err.Error(), `key "2024", which is not among the serializer's keys ("2026", "2025")`)

	// Another secret under a listed ID is a wrong key, not a missing one.
	impostor, err := state.EncryptedKeys([]state.Key{{ID: "2025", Secret: key(16, 9)}}, state.JSON())
	require.NoError(t, err)
	err = impostor.UnmarshalBound(newData, here, &out)
	require.ErrorIs(t, err, state.ErrDecrypt)
	assert.Contains(t, err.Error(), `authentication failed under key "2025"`)

	// Encrypted's key is the key of ID "": list it to rotate away from it.
	single, err := state.Encrypted(key(32, 4), state.JSON())
	require.NoError(t, err)
	singleData, err := single.MarshalBound("unnamed", here)
	require.NoError(t, err)
	fromSingle, err := state.EncryptedKeys([]state.Key{k2026, {Secret: key(32, 4)}}, state.JSON())
	require.NoError(t, err)
	require.NoError(t, fromSingle.UnmarshalBound(singleData, here, &out))
	assert.Equal(t, "unnamed", out)
}

func TestEncryptedKeysRefusesBadKeys(t *testing.T) {
	tests := []struct {
		name string
		keys []state.Key
		want string
	}{
		{"none", nil, "no keys"},
		{"duplicate IDs", []state.Key{{ID: "a", Secret: key(16, 1)}, {ID: "a", Secret: key(16, 2)}}, `ID "a" is given twice`},
		{"ID with a space", []state.Key{{ID: "a b", Secret: key(16, 1)}}, "not printable ASCII"},
		{"ID with a control byte", []state.Key{{ID: "a\x00", Secret: key(16, 1)}}, "not printable ASCII"},
		{"long ID", []state.Key{{ID: strings.Repeat("k", 65), Secret: key(16, 1)}}, "65 bytes long, more than 64"},
		{"short secret", []state.Key{{ID: "k1", Secret: key(32, 1)}, {ID: "k2", Secret: key(10, 1)}}, `key "k2" must be 16, 24 or 32 bytes (AES-128, -192 or -256), got 10 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := state.EncryptedKeys(tt.keys, state.JSON())
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// sealV1 seals v's JSON the way the first version of the encrypted format
// did: "te1:", a random nonce, the sealed data, with the header as its only
// associated data.
func sealV1(t *testing.T, secret []byte, v any) []byte {
	t.Helper()
	plain, err := state.JSON().Marshal(v)
	require.NoError(t, err)
	block, err := aes.NewCipher(secret)
	require.NoError(t, err)
	aead, err := cipher.NewGCMWithRandomNonce(block)
	require.NoError(t, err)
	return aead.Seal([]byte("te1:"), nil, plain, []byte("te1:"))
}

// Data written before payloads were bound (version 1) is refused by
// default — it opens anywhere, so reading it would let a copied payload
// through — and read, with any listed key, with ReadUnboundV1 while
// migrating.
func TestEncryptedVersion1DataIsReadOnlyWhenAllowed(t *testing.T) {
	oldKey := key(32, 5)
	v1 := sealV1(t, oldKey, "written by version 1")

	strict, err := state.EncryptedKeys([]state.Key{{ID: "new", Secret: key(32, 6)}, {ID: "old", Secret: oldKey}}, state.JSON())
	require.NoError(t, err)
	var out string
	err = strict.UnmarshalBound(v1, here, &out)
	require.ErrorIs(t, err, state.ErrFormat)
	assert.Contains(t, err.Error(), `found header "te1:" (AES-GCM encrypted, version 1)`)
	assert.Contains(t, err.Error(), "state.ReadUnboundV1")
	assert.Empty(t, out)

	migrating, err := state.EncryptedKeys([]state.Key{{ID: "new", Secret: key(32, 6)}, {ID: "old", Secret: oldKey}}, state.JSON(), state.ReadUnboundV1())
	require.NoError(t, err)
	require.NoError(t, migrating.UnmarshalBound(v1, here, &out))
	assert.Equal(t, "written by version 1", out)
	require.NoError(t, migrating.Unmarshal(v1, &out))
	fresh, err := migrating.MarshalBound("rewritten", here)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(fresh, []byte("te2:\x03new")), "new data is sealed in the current version, bound")

	wrong, err := state.Encrypted(key(32, 7), state.JSON(), state.ReadUnboundV1())
	require.NoError(t, err)
	err = wrong.Unmarshal(v1, &out)
	require.ErrorIs(t, err, state.ErrDecrypt)
	assert.Contains(t, err.Error(), "version 1 data: authentication failed under every key")
	altered := bytes.Clone(v1)
	altered[len(altered)-1] ^= 1
	require.ErrorIs(t, migrating.Unmarshal(altered, &out), state.ErrDecrypt)
	require.ErrorIs(t, migrating.Unmarshal([]byte("te1:short"), &out), state.ErrDecrypt)
}
