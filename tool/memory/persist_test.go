package memory_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/memory"
)

// filled returns a store with entries in two scopes.
func filled(t *testing.T, opts ...memory.Option) *memory.Store {
	t.Helper()
	s := newStore(t, opts...)
	ctx := context.Background()
	corpus(t, memory.WithScope(ctx, "ada"), s)
	_, err := s.Add(memory.WithScope(ctx, "bob"), memory.Entry{ID: "b1", Text: "Bob drinks coffee", Topics: []string{"drinks"},
		Metadata: map[string]string{"source": "chat"}, CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))})
	require.NoError(t, err)
	_, err = s.Add(ctx, memory.Entry{Text: "shared note about tea"})
	require.NoError(t, err)
	return s
}

// contents returns every entry and the results of a few searches of
// every scope of s.
func contents(t *testing.T, s *memory.Store) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, scope := range []string{"", "ada", "bob"} {
		ctx := memory.WithScope(context.Background(), scope)
		list, err := s.List(ctx, memory.Filter{})
		require.NoError(t, err)
		for i := range list {
			list[i].CreatedAt = list[i].CreatedAt.UTC() // the same instant
		}
		out[scope+"/list"] = list
		for _, q := range []string{"Lisbon flights", "coffee", "tea", ""} {
			docs, err := s.Retrieve(ctx, q, 10)
			require.NoError(t, err)
			out[scope+"/"+q] = docs
		}
	}
	return out
}

func TestSaveLoadRoundTrip(t *testing.T) {
	s := filled(t)
	var buf strings.Builder
	require.NoError(t, s.Save(&buf))
	assert.Contains(t, buf.String(), `"version": 1`)

	loaded := newStore(t)
	_, err := loaded.Add(context.Background(), memory.Entry{Text: "replaced by the load"})
	require.NoError(t, err)
	require.NoError(t, loaded.Load(context.Background(), strings.NewReader(buf.String())))
	assert.Equal(t, contents(t, s), contents(t, loaded))

	// A loaded store goes on as the original would.
	ctx := memory.WithScope(context.Background(), "bob")
	_, err = loaded.Add(ctx, memory.Entry{ID: "b1", Text: "again"})
	assert.ErrorIs(t, err, memory.ErrInvalidEntry, "its IDs are taken")
	id, err := loaded.Add(ctx, memory.Entry{Text: "Bob drinks coffee", Topics: []string{"drinks"}, CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC).Add(-2 * time.Hour)})
	require.NoError(t, err)
	docs, err := loaded.Retrieve(ctx, "coffee", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1", id}, []string{docs[0].ID, docs[1].ID}, "a tie goes to the newer")

	var empty strings.Builder
	require.NoError(t, newStore(t).Save(&empty))
	assert.JSONEq(t, `{"version":1,"entries":[]}`, empty.String())
}

func TestSaveFileLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "memory.json")
	ctx := context.Background()

	err := newStore(t).LoadFile(ctx, path)
	assert.ErrorIs(t, err, fs.ErrNotExist, "a first run finds no file")

	s := filled(t)
	require.NoError(t, s.SaveFile(path))
	info, err := os.Stat(path)
	require.NoError(t, err)
	if runtime.GOOS != "windows" {
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	}
	loaded := newStore(t)
	require.NoError(t, loaded.LoadFile(ctx, path))
	assert.Equal(t, contents(t, s), contents(t, loaded))

	// Saving again replaces the file and leaves no temporary file; a mode
	// the file was given stays.
	require.NoError(t, os.Chmod(path, 0o640))
	_, err = s.Add(ctx, memory.Entry{Text: "one more"})
	require.NoError(t, err)
	require.NoError(t, s.SaveFile(path))
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1)
	assert.Equal(t, "memory.json", names[0].Name())
	if runtime.GOOS != "windows" {
		info, err = os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), info.Mode().Perm())
	}
	require.NoError(t, loaded.LoadFile(ctx, path))
	list, err := loaded.List(ctx, memory.Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 2)

	// A file that cannot be written leaves the old one as it was.
	err = s.SaveFile(filepath.Join(dir, "missing", "memory.json"))
	assert.ErrorContains(t, err, "memory: saving "+filepath.Join(dir, "missing", "memory.json"))
	names, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, names, 1)
}

func TestLoadRefusesCorruptSnapshots(t *testing.T) {
	good := func() string {
		var buf strings.Builder
		require.NoError(t, filled(t).Save(&buf))
		return buf.String()
	}()
	for _, c := range []struct {
		name, data, want string
	}{
		{"empty", "", "memory: corrupt snapshot: it is empty"},
		{"cut", good[:len(good)/2], "it ends early, at byte"},
		{"not json", "memories: yes", "it is not valid JSON: invalid character 'm' looking for beginning of value, at byte 1"},
		{"bad byte", `{"version":1,"entries":[{"id":"a",}]}`, "it is not valid JSON"},
		{"trailing", good + "{}", "there is more after the snapshot's JSON object"},
		{"wrong type", `{"version":"one","entries":[]}`, "version holds a JSON string where a int belongs"},
		{"unknown field", `{"version":1,"entries":[],"extra":true}`, `unknown field "extra"`},
		{"version", `{"version":2,"entries":[]}`, "the snapshot has version 2; this store reads version 1"},
		{"no version", `{"entries":[]}`, "the snapshot has version 0"},
		{"null entry", `{"version":1,"entries":[null]}`, "entry 0 is null"},
		{"no id", `{"version":1,"entries":[{"text":"x y"}]}`, "entry 0: memory: invalid entry: an entry has no id"},
		{"no text", `{"version":1,"entries":[{"id":"a","text":""}]}`, `entry 0: memory: invalid entry: entry "a" has no text`},
		{"bad time", `{"version":1,"entries":[{"id":"a","text":"x y","created_at":"yesterday"}]}`, "parsing time"},
		{"duplicate", `{"version":1,"entries":[{"id":"a","text":"x y"},{"id":"a","text":"z w"}]}`, `entry 1: memory: invalid entry: scope "" has an entry with id "a" already`},
		{"too large", `{"version":1,"entries":[{"id":"a","text":"` + strings.Repeat("x", 101) + `"}]}`, `entry 0: memory: entry too large: entry "a" is 101 bytes`},
	} {
		s := filled(t, memory.WithMaxEntrySize(100))
		before := contents(t, s)
		err := s.Load(context.Background(), strings.NewReader(c.data))
		assert.ErrorIs(t, err, memory.ErrCorrupt, c.name)
		assert.ErrorContains(t, err, c.want, c.name)
		assert.Equal(t, before, contents(t, s), "%s: the store is as it was", c.name)
	}

	// A corrupt file: the error names it.
	path := filepath.Join(t.TempDir(), "memory.json")
	require.NoError(t, os.WriteFile(path, []byte(good[:len(good)-10]), 0o600))
	err := newStore(t).LoadFile(context.Background(), path)
	assert.ErrorIs(t, err, memory.ErrCorrupt)
	assert.ErrorContains(t, err, "it ends early")
	assert.ErrorContains(t, err, "(file "+path+")")
}

func TestLoadEvictsBeyondTheLimit(t *testing.T) {
	var buf strings.Builder
	require.NoError(t, filled(t).Save(&buf))
	s := newStore(t, memory.WithMaxEntries(2))
	require.NoError(t, s.Load(context.Background(), strings.NewReader(buf.String())))
	list, err := s.List(memory.WithScope(context.Background(), "ada"), memory.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "Flights to Lisbon are cheapest in February", list[0].Text, "the newest stay")
	list, err = s.List(memory.WithScope(context.Background(), "bob"), memory.Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 1)
}

func TestLoadFailsWithTheEmbedder(t *testing.T) {
	var buf strings.Builder
	require.NoError(t, filled(t).Save(&buf))
	s := newStore(t, memory.WithEmbedder(func(context.Context, []string) ([][]float32, error) {
		return nil, errors.New("model offline")
	}))
	err := s.Load(context.Background(), strings.NewReader(buf.String()))
	assert.ErrorIs(t, err, memory.ErrEmbedding)
	assert.ErrorContains(t, err, "model offline")
}
