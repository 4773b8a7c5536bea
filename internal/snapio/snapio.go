package snapio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes the file at path with write, atomically: to a temporary
// file in the same directory, synced to the disk, then renamed over path,
// so that path holds the old contents or the new ones whole, never a part.
// The file is readable by its owner alone (mode 0600) unless it existed
// before, when it keeps its mode. On an error the temporary file is removed
// and path is left as it was.
func WriteFile(path string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	mode := os.FileMode(0o600)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	// The directory is synced for the rename to outlast a crash; where a
	// directory cannot be opened or synced (Windows), the rename stands.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// DecodeJSON decodes the one JSON value r holds into v, refusing fields v
// does not declare and anything after the value. Its errors describe what
// is wrong for a person ("it is empty", "it ends early, at byte 120", "it
// is not valid JSON: ..., at byte 3", a field of the wrong type, an unknown
// field); the caller wraps them in its own error.
func DecodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describe(dec, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("there is more after the snapshot's JSON object (at byte %d)", dec.InputOffset())
	}
	return nil
}

// describe says what a failure to decode a snapshot means.
func describe(dec *json.Decoder, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("it is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("it ends early, at byte %d (a write cut short?)", dec.InputOffset())
	case errors.As(err, &syntax):
		return fmt.Errorf("it is not valid JSON: %w, at byte %d", err, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("%s holds a JSON %s where a %s belongs, at byte %d", typ.Field, typ.Value, typ.Type, typ.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return err
}
