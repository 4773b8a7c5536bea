package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
)

// writeData writes the bytes of a new file version; a variable so that
// tests can make a write fail halfway.
var writeData = func(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// write replaces the file p with data so that p holds either its old
// content or the new one, never a cut: the data goes to a temporary file
// next to p, with p's permissions, which is then renamed over p. A failed
// write (a full disk, a quota) leaves p as it was and removes the
// temporary file.
//
// Where a rename would change more than the content, the file is written
// in place as before: p is a symbolic link (the rename would replace the
// link, not write through it) or has other hard links (they would keep the
// old content), or no file can be created next to it (a directory the
// process may not write, holding a file it may).
func (w *Toolset) write(p string, data []byte) error {
	name := native(p)
	mode := fs.FileMode(0o644)
	info, err := w.root.Lstat(name)
	switch {
	case err == nil && info.Mode()&fs.ModeSymlink != 0:
		return w.writeInPlace(p, data)
	case err == nil && !info.Mode().IsRegular():
		return errors.New("not a regular file")
	case err == nil:
		if links(info) > 1 {
			return w.writeInPlace(p, data)
		}
		mode = info.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	tmp, f, err := w.createTemp(p, mode)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return w.writeInPlace(p, data)
		}
		return err
	}
	err = writeData(f, data)
	if err == nil {
		// The umask may have narrowed the mode the file was created with.
		err = f.Chmod(mode)
	}
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
	}
	return err
}

// createTemp creates a new file next to p for its next version.
func (w *Toolset) createTemp(p string, mode fs.FileMode) (string, *os.File, error) {
	var suffix [6]byte
	for {
		_, _ = rand.Read(suffix[:])
		tmp := native(path.Join(path.Dir(p), "."+path.Base(p)+"."+hex.EncodeToString(suffix[:])+".tmp"))
		f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return tmp, f, err
	}
}
