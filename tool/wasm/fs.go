package wasm

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// rootFS is a directory mounted into a guest, reached only through an
// os.Root: no path the guest names, however it combines "..", symbolic
// links and renames, leads outside the directory. wazero's own directory
// mount follows symbolic links wherever they point, and lets a guest make
// a link to "../..", so it is not used.
//
// Paths arrive relative to the mount and cleaned (wazero refuses those
// that climb out with "..").
type rootFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	readOnly bool
}

// rel turns a path from wazero into a name for the root.
func rel(p string) string {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// errno maps an error of os.Root to a WASI error number. Errors that carry
// no system error number, such as os.Root's refusal of a path that
// escapes it, become EPERM rather than EIO.
func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	e := experimentalsys.UnwrapOSError(err)
	if e == experimentalsys.EIO {
		var se syscall.Errno
		if !errors.As(err, &se) {
			return experimentalsys.EPERM
		}
	}
	return e
}

// OpenFile implements experimentalsys.FS.
func (f *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	name := rel(p)
	access := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	writes := access != experimentalsys.O_RDONLY || flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	if f.readOnly && writes {
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.EISDIR
		}
		return nil, experimentalsys.EROFS
	}
	var osFlag int
	switch access {
	case experimentalsys.O_RDWR:
		osFlag = os.O_RDWR
	case experimentalsys.O_WRONLY:
		osFlag = os.O_WRONLY
	default:
		osFlag = os.O_RDONLY
	}
	if flag&experimentalsys.O_APPEND != 0 {
		osFlag |= os.O_APPEND
	}
	if flag&experimentalsys.O_CREAT != 0 {
		osFlag |= os.O_CREATE
	}
	if flag&experimentalsys.O_EXCL != 0 {
		osFlag |= os.O_EXCL
	}
	if flag&experimentalsys.O_TRUNC != 0 {
		osFlag |= os.O_TRUNC
	}
	if flag&(experimentalsys.O_SYNC|experimentalsys.O_DSYNC|experimentalsys.O_RSYNC) != 0 {
		osFlag |= os.O_SYNC
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		if info, err := f.root.Lstat(name); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && access != experimentalsys.O_RDONLY {
		return nil, experimentalsys.EISDIR
	}
	file, err := f.root.OpenFile(name, osFlag|openNonblock, perm)
	if err != nil {
		return nil, errno(err)
	}
	if e := plain(file); e != 0 {
		_ = file.Close()
		return nil, e
	}
	rf, e := f.wrap(file, name, flag&experimentalsys.O_APPEND != 0)
	if e != 0 {
		return nil, e
	}
	if flag&experimentalsys.O_DIRECTORY != 0 || strings.HasSuffix(p, "/") {
		if dir, e := rf.IsDir(); e != 0 || !dir {
			_ = rf.Close()
			if e == 0 {
				e = experimentalsys.ENOTDIR
			}
			return nil, e
		}
	}
	return rf, 0
}

// Lstat implements experimentalsys.FS.
func (f *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	info, err := f.root.Lstat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(info), 0
}

// Stat implements experimentalsys.FS.
func (f *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	info, err := f.root.Stat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(info), 0
}

// Readlink implements experimentalsys.FS.
func (f *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	target, err := f.root.Readlink(rel(p))
	if err != nil {
		return "", errno(err)
	}
	return target, 0
}

// Mkdir implements experimentalsys.FS.
func (f *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	e := errno(f.root.Mkdir(rel(p), perm))
	if e == experimentalsys.ENOTDIR {
		e = experimentalsys.ENOENT
	}
	return e
}

// Chmod implements experimentalsys.FS.
func (f *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	return errno(f.root.Chmod(rel(p), perm))
}

// Rename implements experimentalsys.FS.
func (f *rootFS) Rename(from, to string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	return errno(f.root.Rename(rel(from), rel(to)))
}

// Rmdir implements experimentalsys.FS.
func (f *rootFS) Rmdir(p string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	name := rel(p)
	info, err := f.root.Lstat(name)
	if err != nil {
		return errno(err)
	}
	if !info.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errno(f.root.Remove(name))
}

// Unlink implements experimentalsys.FS.
func (f *rootFS) Unlink(p string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	name := rel(p)
	info, err := f.root.Lstat(name)
	if err != nil {
		return errno(err)
	}
	if info.IsDir() {
		return experimentalsys.EISDIR
	}
	return errno(f.root.Remove(name))
}

// Link implements experimentalsys.FS.
func (f *rootFS) Link(oldPath, newPath string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	return errno(f.root.Link(rel(oldPath), rel(newPath)))
}

// Symlink implements experimentalsys.FS. The root follows no link out of
// it, but other programs on the host would, so a guest may only make links
// whose target is a relative path that descends from the link's directory:
// a ".." could climb through a linked directory to somewhere a lexical
// check does not see.
func (f *rootFS) Symlink(target, link string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	if target == "" || path.IsAbs(target) || strings.ContainsAny(target, "\\\x00") {
		return experimentalsys.EPERM
	}
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			return experimentalsys.EPERM
		}
	}
	return errno(f.root.Symlink(target, rel(link)))
}

// Utimens implements experimentalsys.FS.
func (f *rootFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	return errno(f.root.Chtimes(rel(p), timeOf(atim), timeOf(mtim)))
}

// timeOf converts a WASI timestamp; UTIME_OMIT becomes the zero time,
// which Chtimes leaves unchanged.
func timeOf(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// handoff is the fs.FS through which wazero's adapter takes a file that
// rootFS has opened: the first Open returns that file, and later ones
// (wazero reopens a directory to read it again) open through the root.
type handoff struct {
	root  *os.Root
	first *os.File
}

func (h *handoff) Open(name string) (fs.File, error) {
	if f := h.first; f != nil {
		h.first = nil
		return f, nil
	}
	f, err := h.root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	if e := plain(f); e != 0 {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: e}
	}
	return f, nil
}

// plain refuses a file that is neither a regular file nor a directory: a
// FIFO, a device or a socket the host left in a mounted directory, whose
// reads and writes could wait for ever in a host call, where neither the
// time limit nor Close can stop them.
func plain(f *os.File) experimentalsys.Errno {
	info, err := f.Stat()
	if err != nil {
		return errno(err)
	}
	if !info.Mode().IsRegular() && !info.IsDir() {
		return experimentalsys.ENOTSUP
	}
	return 0
}

// rootFile is a file or directory opened through a rootFS. wazero's
// adapter of fs.File does most of the work (reading, seeking, listing a
// directory); rootFile adds what a writable file needs.
type rootFile struct {
	experimentalsys.File
	fs     *rootFS
	f      *os.File // the file as opened; a directory may be reopened
	name   string   // relative to the root
	append bool
	closed bool
}

// wrap hands file, opened as name, to wazero's adapter.
func (f *rootFS) wrap(file *os.File, name string, appending bool) (*rootFile, experimentalsys.Errno) {
	adapter := &sysfs.AdaptFS{FS: &handoff{root: f.root, first: file}}
	inner, e := adapter.OpenFile(name, experimentalsys.O_RDONLY, 0)
	if e != 0 {
		_ = file.Close()
		return nil, e
	}
	return &rootFile{File: inner, fs: f, f: file, name: name, append: appending}, 0
}

// IsAppend implements experimentalsys.File.
func (r *rootFile) IsAppend() bool { return r.append }

// SetAppend implements experimentalsys.File. An open file's append mode
// cannot be changed portably, so only the current mode is accepted.
func (r *rootFile) SetAppend(enable bool) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if enable != r.append {
		return experimentalsys.ENOSYS
	}
	return 0
}

// Pwrite implements experimentalsys.File.
func (r *rootFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if r.closed {
		return 0, experimentalsys.EBADF
	}
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if r.append {
		// os.File refuses WriteAt on a file opened to append; POSIX
		// appends whatever the offset.
		return r.Write(buf)
	}
	return r.File.Pwrite(buf, off)
}

// Truncate implements experimentalsys.File.
func (r *rootFile) Truncate(size int64) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if size < 0 {
		return experimentalsys.EINVAL
	}
	if dir, _ := r.IsDir(); dir {
		return experimentalsys.EISDIR
	}
	if r.fs.readOnly {
		return experimentalsys.EBADF
	}
	return errno(r.f.Truncate(size))
}

// Sync implements experimentalsys.File.
func (r *rootFile) Sync() experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if r.fs.readOnly {
		return 0 // nothing was written
	}
	if dir, _ := r.IsDir(); dir {
		return 0 // a directory may have been reopened; its entries are the host's to sync
	}
	return errno(r.f.Sync())
}

// Datasync implements experimentalsys.File.
func (r *rootFile) Datasync() experimentalsys.Errno { return r.Sync() }

// Utimens implements experimentalsys.File.
func (r *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if r.fs.readOnly {
		return experimentalsys.EROFS
	}
	return errno(r.fs.root.Chtimes(r.name, timeOf(atim), timeOf(mtim)))
}

// Close implements experimentalsys.File.
func (r *rootFile) Close() experimentalsys.Errno {
	if r.closed {
		return 0
	}
	r.closed = true
	return r.File.Close()
}
