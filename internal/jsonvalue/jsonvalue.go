package jsonvalue

import (
	"encoding/json"
	"fmt"
)

// Encode returns v in JSON or, when v does not encode, a JSON string
// naming v's type and the encoder's error.
func Encode(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprintf("(a %T that does not encode as JSON: %v)", v, err))
	}
	return b
}
