//go:build unix

package workspace

import "os"

// syncDirFile syncs the open directory f; a variable so that tests can see
// when it is called and make it fail.
var syncDirFile = func(f *os.File) error { return f.Sync() }

// syncDir syncs the directory dir of the workspace (a clean path with /
// between segments), so that a rename in it is on the disk. It reports no
// error: write has renamed the file already (see there), and some file
// systems refuse to sync a directory at all (EINVAL, ENOTSUP).
func (w *Toolset) syncDir(dir string) {
	f, err := w.root.Open(native(dir))
	if err != nil {
		return
	}
	_ = syncDirFile(f)
	_ = f.Close()
}
