package state_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
)

// FuzzJSONUnmarshal feeds arbitrary bytes to the JSON serializer: it must
// never panic, must reject anything without the "tj1:" header, and whatever
// it accepts must survive a second round trip unchanged.
func FuzzJSONUnmarshal(f *testing.F) {
	for _, seed := range []string{
		"", "tj1:", "tj1:null", `tj1:{"a":[1,2,{"b":"c"}]}`, `tj1:"\u00e9\ud800"`,
		"tj1:1e999", `{"a":1}`, "tj2:{}", "te1:xxxxxxxxxxxxxxxxxxxxxxxxxxxx", "t", "tj", "tj1", "tj12345:{}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		err := state.JSON().Unmarshal(data, &v)
		if !bytes.HasPrefix(data, []byte("tj1:")) {
			require.ErrorIs(t, err, state.ErrFormat)
			return
		}
		if err != nil {
			return
		}
		again, err := state.JSON().Marshal(v)
		require.NoError(t, err)
		var w any
		require.NoError(t, state.JSON().Unmarshal(again, &w))
		require.Equal(t, v, w)
	})
}

// FuzzEncryptedUnmarshal feeds arbitrary bytes to the encrypting serializer:
// it must never panic, and must accept nothing but what was sealed under its
// key. (Fuzzing workers are separate processes, each sealing with its own
// random nonces, so acceptance is checked by content, not by bytes.)
func FuzzEncryptedUnmarshal(f *testing.F) {
	s, err := state.Encrypted(bytes.Repeat([]byte{0x42}, 32), state.JSON())
	require.NoError(f, err)
	sealedValue := map[string]any{"messages": []any{"hi"}, "step": 3.0}
	valid, err := s.Marshal(sealedValue)
	require.NoError(f, err)

	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:4+12])
	f.Add([]byte("te1:"))
	f.Add([]byte("tj1:{}"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		err := s.Unmarshal(data, &v)
		if err != nil {
			require.Nil(t, v, "nothing may be decoded from rejected data")
			return
		}
		require.Len(t, data, len(valid), "forged data was accepted")
		require.Equal(t, sealedValue, v, "forged data was accepted")
	})
}

// FuzzEncryptedUnmarshalBound feeds arbitrary bytes, read as the payload of
// an arbitrary place, to a serializer holding two keys: it must never
// panic, and must accept nothing but what was sealed, under one of its
// keys, for that very place.
func FuzzEncryptedUnmarshalBound(f *testing.F) {
	s, err := state.EncryptedKeys([]state.Key{
		{ID: "new", Secret: bytes.Repeat([]byte{0x42}, 32)},
		{ID: "old", Secret: bytes.Repeat([]byte{0x24}, 16)},
	}, state.JSON())
	require.NoError(f, err)
	home := state.Binding{ThreadID: "t", Namespace: "", CheckpointID: "c1"}
	sealedValue := map[string]any{"messages": []any{"hi"}}
	valid, err := s.MarshalBound(sealedValue, home)
	require.NoError(f, err)

	f.Add(valid, "t", "", "c1", "")
	f.Add(valid, "u", "", "c1", "")
	f.Add(valid, "t", "", "c2", "")
	f.Add(valid, "t", "", "c1", "c1/0")
	f.Add(valid[:len(valid)-1], "t", "", "c1", "")
	f.Add([]byte("te2:\x03old"), "t", "", "c1", "")
	f.Add([]byte("te2:\xff"), "t", "", "c1", "")
	f.Add([]byte("te2:"), "t", "", "c1", "")
	f.Fuzz(func(t *testing.T, data []byte, thread, ns, cp, task string) {
		at := state.Binding{ThreadID: thread, Namespace: ns, CheckpointID: cp, Write: task != "", TaskID: task}
		var v any
		err := s.UnmarshalBound(data, at, &v)
		if err != nil {
			require.Nil(t, v, "nothing may be decoded from rejected data")
			return
		}
		require.Equal(t, home, at, "data sealed for one place was accepted in another")
		require.Len(t, data, len(valid), "forged data was accepted")
		require.Equal(t, sealedValue, v, "forged data was accepted")
	})
}
