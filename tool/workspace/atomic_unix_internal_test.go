//go:build unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestNewFileModeFollowsTheUmask checks that a new file gets the mode the
// umask leaves of 0644, as one created in place would, and that an
// existing file keeps its own whatever the umask.
func TestNewFileModeFollowsTheUmask(t *testing.T) {
	dir := t.TempDir()
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	shared := filepath.Join(dir, "shared.txt")
	if err := os.WriteFile(shared, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o664); err != nil {
		t.Fatal(err)
	}

	// The umask is the process's: no other test of the package runs in
	// parallel with this one.
	defer syscall.Umask(syscall.Umask(0o077))
	if err := ws.write("private.txt", []byte("secret\n")); err != nil {
		t.Fatal(err)
	}
	if err := ws.write("shared.txt", []byte("shared\n")); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(dir, "private.txt")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("a new file under the umask 077: mode %v (%v), want -rw-------", info.Mode().Perm(), err)
	}
	if info, err := os.Stat(shared); err != nil || info.Mode().Perm() != 0o664 {
		t.Errorf("an existing file: mode %v (%v), want -rw-rw-r--", info.Mode().Perm(), err)
	}
}

// ownerOf returns the user and group that own the file name.
func ownerOf(t *testing.T, name string) (int, int) {
	t.Helper()
	info, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := owner(info)
	return uid, gid
}

// TestWriteKeepsTheOwner checks that a file replaced by root (an agent in
// a container, editing a mounted project) stays its owner's rather than
// becoming root's.
func TestWriteKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: only root may give a file to another user")
	}
	dir := t.TempDir()
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	name := filepath.Join(dir, "theirs.txt")
	if err := os.WriteFile(name, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(name, 1234, 4321); err != nil {
		t.Fatal(err)
	}
	if err := ws.write("theirs.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if uid, gid := ownerOf(t, name); uid != 1234 || gid != 4321 {
		t.Errorf("the file is owned by %d:%d after the write, want 1234:4321", uid, gid)
	}
	if info, err := os.Stat(name); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want -rw-r-----", info.Mode().Perm(), err)
	}
	if got, _ := os.ReadFile(name); string(got) != "new\n" {
		t.Errorf("the file holds %q", got)
	}
}

// TestWriteRefusesAReadOnlyFile checks that a file the process may not
// write is not replaced, although its directory would let a rename
// replace it: a write in place would be refused.
func TestWriteRefusesAReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("skipped: root may write any file")
	}
	dir := t.TempDir()
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	name := filepath.Join(dir, "frozen.txt")
	if err := os.WriteFile(name, []byte("keep\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := ws.write("frozen.txt", []byte("changed\n")); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("write of a read-only file: %v, want permission denied", err)
	}
	if got, _ := os.ReadFile(name); string(got) != "keep\n" {
		t.Errorf("the read-only file holds %q", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("the directory holds %q", names)
	}
}
