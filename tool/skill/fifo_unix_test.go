//go:build unix

package skill_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/skill"
)

// mkfifo makes a named pipe at path, or skips the test where that cannot
// be done.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("named pipes are not available: %v", err)
	}
}

// within runs fn and fails the test when it has not returned after a few
// seconds; it then opens the pipe for writing, which releases a reader
// waiting for a writer, so that fn returns and no goroutine is left.
func within(t *testing.T, pipe string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("still waiting after 5s: it opened the named pipe %s", pipe)
		if w, err := os.OpenFile(pipe, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
		<-done
	}
}

// A named pipe where SKILL.md should be is an invalid skill, found without
// opening it: opening a pipe waits for a writer that may never come.
func TestASkillFileThatIsANamedPipeIsInvalid(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"good/SKILL.md": skillMD("good", "A good skill.", "Body.")})
	pipe := filepath.Join(dir, "pipe", skill.FileName)
	mkfifo(t, pipe)
	within(t, pipe, func() {
		r, err := skill.Open(dir, skill.WithSkipInvalid())
		require.NoError(t, err)
		defer r.Close()
		assert.Equal(t, []string{"good"}, r.Names())
		require.Len(t, r.Problems(), 1)
		assert.ErrorContains(t, r.Problems()[0], "not a regular file")
	})
}

// skill_read_file refuses a named pipe without opening it.
func TestSkillReadFileRefusesANamedPipe(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"good/SKILL.md": skillMD("good", "A good skill.", "Body.")})
	pipe := filepath.Join(dir, "good", "pipe.txt")
	mkfifo(t, pipe)
	r := open(t, dir)
	ts, err := skill.Tools(r)
	require.NoError(t, err)
	within(t, pipe, func() {
		res := call(t, ts, skill.ReadFileName, map[string]string{"name": "good", "path": "pipe.txt"})
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text(), "not a regular file")
	})
}
