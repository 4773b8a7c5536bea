package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
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

	// A file with another hard link is written in place: both names see
	// the new content.
	if err := os.Link(filepath.Join(dir, "target.txt"), filepath.Join(dir, "other-name.txt")); err != nil {
		t.Fatal(err)
	}
	if err := ws.write("target.txt", []byte("newer\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "other-name.txt")); string(got) != "newer\n" {
		t.Errorf("the other hard link holds %q, want the new content", got)
	}

	// Nothing temporary is left behind.
	for _, name := range entries(t, dir) {
		if filepath.Ext(name) == ".tmp" {
			t.Errorf("a temporary file is left: %s", name)
		}
	}
}
