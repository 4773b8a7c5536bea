package state

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSONSerializer encodes values with encoding/json behind the format header
// "tj1:". It is the default serializer. The zero value is ready to use and
// safe for concurrent use.
type JSONSerializer struct{}

// JSON returns the default serializer: JSON with a version header.
func JSON() JSONSerializer { return JSONSerializer{} }

var _ Serializer = JSONSerializer{}

// Marshal encodes v as the header "tj1:" followed by its JSON encoding.
func (JSONSerializer) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(jsonHeaderV1)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("state: JSON serializer: encode %T: %w", v, err)
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil // Encode ends the value with a newline.
}

// Unmarshal decodes data written by Marshal into the value v points to. Data
// without the "tj1:" header is an error matching ErrFormat that says what
// the data starts with instead.
func (JSONSerializer) Unmarshal(data []byte, v any) error {
	body, err := checkHeader("JSON", jsonHeaderV1, data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("state: JSON serializer: decode into %T: %w", v, err)
	}
	return nil
}
