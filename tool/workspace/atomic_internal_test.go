package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestFailedWriteKeepsTheFile checks that a write that fails halfway (a
// full disk) leaves the file as it was, and no temporary file behind.
func TestFailedWriteKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("the original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	full := errors.New("no space left on device")
	saved := writeData
	writeData = func(f *os.File, data []byte) error {
		_, _ = f.Write(data[:len(data)/2])
		return full
	}
	defer func() { writeData = saved }()

	if err := ws.write("notes.txt", []byte("a much longer replacement text\n")); !errors.Is(err, full) {
		t.Fatalf("write: got %v, want the disk's error", err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "the original\n" {
		t.Errorf("the file holds %q after a failed write, want the original", got)
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "notes.txt" {
		t.Errorf("the directory holds %q, want notes.txt alone", names)
	}

	// A new file that fails to be written is not created at all.
	if err := ws.write("new.txt", []byte("content")); !errors.Is(err, full) {
		t.Fatalf("write: got %v, want the disk's error", err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("the directory holds %q, want notes.txt alone", names)
	}
}

func TestWriteKeepsModeAndLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("skipped: permission bits and hard links are unix matters")
	}
	dir := t.TempDir()
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	// Permissions survive the rename.
	secret := filepath.Join(dir, "secret.env")
	if err := os.WriteFile(secret, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ws.write("secret.env", []byte("A=2\n")); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(secret); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("secret.env: mode %v (%v), want -rw-------", info.Mode().Perm(), err)
	}
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ws.write("run.sh", []byte("#!/bin/sh\necho hi\n")); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(script); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: mode %v (%v), want -rwxr-xr-x", info.Mode().Perm(), err)
	}

	// A symbolic link is written through, and stays a link.
	if err := os.WriteFile(filepath.Join(dir, "target.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := ws.write("link.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a symbolic link (%v)", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "target.txt")); string(got) != "new\n" {
		t.Errorf("target.txt holds %q, want the new content", got)
	}

	// A file with another hard link is not written, under either name
	// or through a symbolic link: both names keep the old content.
	if err := os.Link(filepath.Join(dir, "target.txt"), filepath.Join(dir, "other-name.txt")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"target.txt", "other-name.txt", "link.txt"} {
		if err := ws.write(name, []byte("newer\n")); !errors.Is(err, ErrHardLinked) {
			t.Errorf("writing %s: %v, want ErrHardLinked", name, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "other-name.txt")); string(got) != "new\n" {
		t.Errorf("the other hard link holds %q, want the old content", got)
	}

	// Nothing temporary is left behind.
	for _, name := range entries(t, dir) {
		if filepath.Ext(name) == ".tmp" {
			t.Errorf("a temporary file is left: %s", name)
		}
	}
}

// TestWriteFileWithALongName checks that a file whose name is near the
// 255 bytes a name may have is replaced: its temporary file's name, the
// file's with a prefix and a suffix added, would be too long.
func TestWriteFileWithALongName(t *testing.T) {
	dir := t.TempDir()
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, name := range []string{strings.Repeat("n", 250) + ".txt", strings.Repeat("é", 120) + ".md"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old\n"), 0o644); err != nil {
			t.Skipf("skipped: the file system refuses a long name: %v", err)
		}
		if err := ws.write(name, []byte("new\n")); err != nil {
			t.Fatalf("write %d bytes of name: %v", len(name), err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != "new\n" {
			t.Errorf("the file holds %q, want the new content", got)
		}
	}
	if names := entries(t, dir); len(names) != 2 {
		t.Errorf("the directory holds %q, want the two files alone", names)
	}
	for _, tmp := range []string{".a.0123456789ab.tmp", "." + strings.Repeat("x", maxTempBase) + ".fedcba987654.tmp"} {
		if !isTempName(tmp) {
			t.Errorf("isTempName(%q) = false", tmp)
		}
	}
	for _, name := range []string{"a.tmp", ".a.tmp", ".a.0123456789AB.tmp", ".a0123456789ab.tmp", "a.0123456789ab.tmp", ".a.0123456789ab.txt"} {
		if isTempName(name) {
			t.Errorf("isTempName(%q) = true", name)
		}
	}
}

// TestWalksLeaveOutTemporaryFiles checks that list_files and grep, which
// may run while a write is under way, do not show the write's temporary
// file, which holds part of the new content under another name.
func TestWalksLeaveOutTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("needle old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	invoke := func(name string, a map[string]any) string {
		raw, _ := json.Marshal(a)
		for _, tl := range ws.tools {
			if tool.Name(tl) == name {
				return tool.Invoke(context.Background(), tl, model.ToolCall{ID: "c", Name: name, Arguments: raw}).Text()
			}
		}
		t.Fatalf("no tool %s", name)
		return ""
	}
	var listed, found string
	saved := writeData
	writeData = func(f *os.File, data []byte) error {
		err := saved(f, data)
		// The temporary file is there, with the new content, not yet
		// renamed.
		listed = invoke(ListFilesName, map[string]any{"pattern": "**"})
		found = invoke(GrepName, map[string]any{"pattern": "needle"})
		return err
	}
	defer func() { writeData = saved }()
	if err := ws.write("notes.txt", []byte("needle new\n")); err != nil {
		t.Fatal(err)
	}
	if listed != "notes.txt" {
		t.Errorf("list_files during a write: %q, want notes.txt alone", listed)
	}
	if found != "notes.txt:1: needle old" {
		t.Errorf("grep during a write: %q, want the old line of notes.txt alone", found)
	}
}
