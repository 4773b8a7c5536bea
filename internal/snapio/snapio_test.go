package snapio_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/snapio"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snap.json")
	write := func(text string) func(io.Writer) error {
		return func(w io.Writer) error {
			_, err := io.WriteString(w, text)
			return err
		}
	}
	require.NoError(t, snapio.WriteFile(path, write("one")))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "one", string(data))
	if runtime.GOOS != "windows" {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		require.NoError(t, os.Chmod(path, 0o644))
	}

	require.NoError(t, snapio.WriteFile(path, write("two")))
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	if runtime.GOOS != "windows" {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "the mode stays")
	}

	// A failed write leaves the file as it was, and no temporary file.
	err = snapio.WriteFile(path, func(w io.Writer) error {
		_, _ = io.WriteString(w, "half")
		return errors.New("disk on fire")
	})
	assert.EqualError(t, err, "disk on fire")
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, names, 1)

	assert.Error(t, snapio.WriteFile(filepath.Join(dir, "missing", "x.json"), write("x")))
}

func TestDecodeJSON(t *testing.T) {
	type snap struct {
		Version int      `json:"version"`
		Items   []string `json:"items"`
	}
	var s snap
	require.NoError(t, snapio.DecodeJSON(strings.NewReader(`{"version":1,"items":["a"]}`+"\n"), &s))
	assert.Equal(t, snap{1, []string{"a"}}, s)
	for data, want := range map[string]string{
		"":                                  "it is empty",
		`{"version":1,"items":[`:            "it ends early, at byte",
		`{"version":1,}`:                    "it is not valid JSON: invalid character '}' looking for beginning of object key string, at byte 14",
		`{"version":"one"}`:                 "version holds a JSON string where a int belongs, at byte 16",
		`{"version":1,"extra":true}`:        `unknown field "extra"`,
		`{"version":1} {}`:                  "there is more after the snapshot's JSON object (at byte 15)",
		`{"version":1,"items":["a"]} trash`: "there is more after the snapshot's JSON object",
	} {
		var s snap
		err := snapio.DecodeJSON(strings.NewReader(data), &s)
		assert.ErrorContains(t, err, want, data)
	}
}
