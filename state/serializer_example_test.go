package state_test

import (
	"errors"
	"fmt"

	"github.com/trellis-go/trellis/state"
)

func ExampleJSON() {
	type counter struct {
		Count int `json:"count"`
	}
	s := state.JSON()

	data, err := s.Marshal(counter{Count: 3})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(data))

	var back counter
	if err := s.Unmarshal(data, &back); err != nil {
		panic(err)
	}
	fmt.Println(back.Count)

	// Data without the header is refused, with a message saying what it is.
	err = s.Unmarshal([]byte(`{"count":3}`), &back)
	fmt.Println(errors.Is(err, state.ErrFormat))
	fmt.Println(err)
	// Output:
	// tj1:{"count":3}
	// 3
	// true
	// state: JSON serializer expects format header "tj1:", found no format header (data is "{\"count\":3}"): unrecognized serialization format
}

func ExampleEncrypted() {
	key := []byte("0123456789abcdef0123456789abcdef") // 32 bytes: AES-256; load yours from a secret store
	s, err := state.Encrypted(key, state.JSON())
	if err != nil {
		panic(err)
	}

	data, err := s.Marshal([]string{"hello", "world"})
	if err != nil {
		panic(err)
	}
	var back []string
	if err := s.Unmarshal(data, &back); err != nil {
		panic(err)
	}
	fmt.Println(back)

	// Another key cannot open it, and says so.
	other, err := state.Encrypted([]byte("fedcba9876543210fedcba9876543210"), state.JSON())
	if err != nil {
		panic(err)
	}
	err = other.Unmarshal(data, &back)
	fmt.Println(errors.Is(err, state.ErrDecrypt))
	fmt.Println(err)
	// Output:
	// [hello world]
	// true
	// state: encrypted serializer: authentication failed under key "" (the unnamed key) (a wrong key of that ID, or the data was altered): cannot decrypt data
}

func ExampleEncryptedKeys() {
	oldKey := state.Key{ID: "2025-01", Secret: []byte("0123456789abcdef")} // load yours from a secret store
	newKey := state.Key{ID: "2025-07", Secret: []byte("fedcba9876543210fedcba9876543210")}
	at := state.Binding{ThreadID: "user-42", CheckpointID: "cp-1"}

	before, err := state.EncryptedKeys([]state.Key{oldKey}, state.JSON())
	if err != nil {
		panic(err)
	}
	data, err := before.MarshalBound("sealed under the old key", at)
	if err != nil {
		panic(err)
	}

	// The new key seals from now on; the old one still opens what it sealed.
	rotated, err := state.EncryptedKeys([]state.Key{newKey, oldKey}, state.JSON())
	if err != nil {
		panic(err)
	}
	var back string
	if err := rotated.UnmarshalBound(data, at, &back); err != nil {
		panic(err)
	}
	fmt.Println(back)

	// The payload opens only where it was sealed.
	elsewhere := state.Binding{ThreadID: "user-43", CheckpointID: "cp-1"}
	err = rotated.UnmarshalBound(data, elsewhere, &back)
	fmt.Println(errors.Is(err, state.ErrMisplaced))
	// Output:
	// sealed under the old key
	// true
}
