package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/trellis-go/trellis/internal/textcut"
)

// writeData writes the bytes of a new file version; a variable so that
// tests can make a write fail halfway.
var writeData = func(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// write replaces the file p with data so that p holds either its old
// content or the new one, never a cut: the data goes to a temporary file
// next to p, which is then renamed over p. A failed write (a full disk, a
// quota) leaves p as it was and removes the temporary file.
//
// The new version of an existing file gets its permission bits and, where
// the process may give it (as root may), its owner and group. The
// set-user-ID and set-group-ID bits are not carried over: a write by a
// process other than root clears them as well. A new file gets the mode
// the umask leaves of 0644, as a file created in place would. A file the
// process may not write is refused, as it would be in place, although the
// rename could replace it.
//
// The new content is synced to the disk before the rename, and on unix
// the directory after it, so that the rename too survives a crash of the
// system. A failure of that last sync is not reported: by then the rename
// has happened, every reader sees the new content, and a caller told that
// the write failed would be told wrong (and might make its edit again); a
// crash soon after could at worst bring back the old version whole.
//
// Where a rename would change more than the content, the file is written
// in place as before: p is a symbolic link (the rename would replace the
// link, not write through it) or has an owner the new file cannot be
// given, or no file can be created next to it (a directory the process
// may not write, holding a file it may).
//
// A file with more than one hard link is not written at all, whether
// through p itself or through a symbolic link to it: its other names may
// lie outside the workspace, and a write in place would reach them
// (ErrHardLinked).
func (w *Toolset) write(p string, data []byte) error {
	name := native(p)
	info, err := w.root.Lstat(name)
	var old fs.FileInfo // the file replaced, when there is one
	switch {
	case err == nil && info.Mode()&fs.ModeSymlink != 0:
		return w.writeInPlace(p, data)
	case err == nil && !info.Mode().IsRegular():
		return errors.New("not a regular file")
	case err == nil:
		if n := links(info); n > 1 {
			return &hardLinkedError{links: n}
		}
		if err := w.checkWritable(name); err != nil {
			return err
		}
		old = info
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	mode := fs.FileMode(0o644)
	if old != nil {
		mode = old.Mode().Perm()
	}
	tmp, f, err := w.createTemp(p, mode)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return w.writeInPlace(p, data)
		}
		return err
	}
	discard := func() {
		_ = f.Close()
		_ = w.root.Remove(tmp)
	}
	if old != nil {
		switch err := chownLike(f, old); {
		case errors.Is(err, fs.ErrPermission):
			// The process may not give the file to its owner: written in
			// place, it stays theirs.
			discard()
			return w.writeInPlace(p, data)
		case err != nil:
			discard()
			return err
		}
		// After the change of owner, which may clear bits, and because the
		// umask may have narrowed the mode the file was created with.
		if err := f.Chmod(mode); err != nil {
			discard()
			return err
		}
	}
	err = writeData(f, data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(tmp, name)
	}
	if err != nil {
		_ = w.root.Remove(tmp)
		return err
	}
	w.syncDir(path.Dir(p))
	return nil
}

// checkWritable returns the error of opening the existing file name for
// writing when the process may not (fs.ErrPermission); other failures,
// such as that of an executable being run, do not stop a rename.
func (w *Toolset) checkWritable(name string) error {
	f, err := w.root.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return err
		}
		return nil
	}
	return f.Close()
}

// chownLike gives f the owner and group of the file old describes, where
// they differ and are known.
func chownLike(f *os.File, old fs.FileInfo) error {
	uid, gid, ok := owner(old)
	if !ok {
		return nil
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if u, g, ok := owner(info); ok && u == uid && g == gid {
		return nil
	}
	return f.Chown(uid, gid)
}

// The name of a temporary file is the file's, shortened to maxTempBase
// bytes, between a dot and a random suffix: ".notes.txt.5f0c1e9a2b3d.tmp".
// Shortened, it stays within the 255 bytes most file systems allow a name
// whatever the file's own name.
const (
	maxTempBase = 100
	tempRandom  = 6 // random bytes, 12 hexadecimal digits
	tempExt     = ".tmp"
)

// maxTempTries bounds the attempts at a free temporary name; with 48
// random bits, a second attempt is already rare.
const maxTempTries = 100

// createTemp creates a new file next to p for its next version.
func (w *Toolset) createTemp(p string, mode fs.FileMode) (string, *os.File, error) {
	base := textcut.Prefix(path.Base(p), maxTempBase)
	var err error
	for range maxTempTries {
		var suffix [tempRandom]byte
		_, _ = rand.Read(suffix[:])
		tmp := native(path.Join(path.Dir(p), "."+base+"."+hex.EncodeToString(suffix[:])+tempExt))
		var f *os.File
		f, err = w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if !errors.Is(err, fs.ErrExist) {
			return tmp, f, err
		}
	}
	return "", nil, err
}

// isTempName reports whether a file named name looks like a temporary file
// of write, which list_files and grep leave out: one may be there for the
// moment of a write, or left by a process that was killed in the middle.
func isTempName(name string) bool {
	rest, ok := strings.CutSuffix(name, tempExt)
	if !ok || len(name) < len(".x.")+2*tempRandom+len(tempExt) || name[0] != '.' {
		return false
	}
	digits := rest[len(rest)-2*tempRandom:]
	if rest[len(rest)-2*tempRandom-1] != '.' {
		return false
	}
	for i := range len(digits) {
		if c := digits[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
