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

// TestWriteSyncsTheDirectoryAfterTheRename checks that a write syncs the
// directory that holds the file once the file has its new content under
// its name, and that a failure of that sync does not make the write fail.
func TestWriteSyncsTheDirectoryAfterTheRename(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "notes.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	type syncCall struct {
		dir     os.FileInfo // the directory synced
		content string      // what the file held then
		entries []string    // what the directory held then
		err     error       // what the sync returned
	}
	var calls []syncCall
	var fail error // what the sync returns instead of its own result, when set
	saved := syncDirFile
	syncDirFile = func(f *os.File) error {
		info, err := f.Stat()
		if err != nil {
			t.Errorf("stat the directory synced: %v", err)
		}
		content, _ := os.ReadFile(filepath.Join(dir, "sub", "notes.txt"))
		c := syncCall{dir: info, content: string(content), entries: entries(t, filepath.Join(dir, "sub")), err: saved(f)}
		calls = append(calls, c)
		if fail != nil {
			return fail
		}
		return c.err
	}
	defer func() { syncDirFile = saved }()

	sub, err := os.Stat(filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		if len(calls) != 1 {
			t.Fatalf("the directory was synced %d times, want once", len(calls))
		}
		c := calls[0]
		calls = nil
		if c.dir == nil || !os.SameFile(c.dir, sub) {
			t.Errorf("the directory synced is not sub, which holds the file")
		}
		if c.content != want || len(c.entries) != 1 || c.entries[0] != "notes.txt" {
			t.Errorf("when the directory was synced, the file held %q and the directory %q: want %q, renamed, with no temporary file", c.content, c.entries, want)
		}
		if c.err != nil {
			t.Errorf("the sync of a directory of a temporary directory failed: %v", c.err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "sub", "notes.txt")); string(got) != want {
			t.Errorf("the file holds %q after the write, want %q", got, want)
		}
	}
	if err := ws.write("sub/notes.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	check("new\n")

	// A file system that refuses to sync, or fails to, does not undo a
	// write whose rename is done.
	for _, e := range []error{syscall.EINVAL, syscall.ENOTSUP, syscall.EIO} {
		fail = e
		want := "after " + e.Error() + "\n"
		if err := ws.write("sub/notes.txt", []byte(want)); err != nil {
			t.Errorf("write with the directory's sync failing with %v: %v", e, err)
		}
		check(want)
	}
	fail = nil

	// A file at the top of the workspace: its directory is the root.
	if err := ws.write("top.txt", []byte("top\n")); err != nil {
		t.Fatal(err)
	}
	root, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].dir == nil || !os.SameFile(calls[0].dir, root) || calls[0].err != nil {
		t.Errorf("a write at the top synced %d times, not the workspace's directory alone", len(calls))
	}
	calls = nil

	// A write that fails renames nothing, and syncs nothing.
	full := errors.New("no space left on device")
	savedWrite := writeData
	writeData = func(*os.File, []byte) error { return full }
	defer func() { writeData = savedWrite }()
	if err := ws.write("sub/notes.txt", []byte("lost\n")); !errors.Is(err, full) {
		t.Fatalf("write: got %v, want the disk's error", err)
	}
	if len(calls) != 0 {
		t.Errorf("a failed write synced the directory %d times", len(calls))
	}
}
