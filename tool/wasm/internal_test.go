package wasm

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// openRoot mounts a fresh directory holding a.txt ("hello") and dir/,
// next to outside/secret.txt, which a link inside points to.
func openRoot(t *testing.T, readOnly bool) (*rootFS, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "mount")
	for _, d := range []string{filepath.Join(dir, "dir"), filepath.Join(base, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside", "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "out")); err != nil {
		t.Skipf("cannot make symbolic links here: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &rootFS{root: root, readOnly: readOnly}, dir
}

func TestRootFSReadOnly(t *testing.T) {
	f, dir := openRoot(t, true)
	for _, flag := range []experimentalsys.Oflag{
		experimentalsys.O_WRONLY, experimentalsys.O_RDWR, experimentalsys.O_RDONLY | experimentalsys.O_CREAT,
		experimentalsys.O_RDONLY | experimentalsys.O_TRUNC, experimentalsys.O_RDONLY | experimentalsys.O_APPEND,
	} {
		if _, e := f.OpenFile("a.txt", flag, 0o644); e != experimentalsys.EROFS {
			t.Errorf("OpenFile with flag %v: %v, want EROFS", flag, e)
		}
	}
	for name, e := range map[string]experimentalsys.Errno{
		"Mkdir":   f.Mkdir("new", 0o755),
		"Chmod":   f.Chmod("a.txt", 0o600),
		"Rename":  f.Rename("a.txt", "b.txt"),
		"Rmdir":   f.Rmdir("dir"),
		"Unlink":  f.Unlink("a.txt"),
		"Link":    f.Link("a.txt", "b.txt"),
		"Symlink": f.Symlink("a.txt", "b.txt"),
		"Utimens": f.Utimens("a.txt", 0, 0),
	} {
		if e != experimentalsys.EROFS {
			t.Errorf("%s: %v, want EROFS", name, e)
		}
	}
	file, e := f.OpenFile("a.txt", experimentalsys.O_RDONLY, 0)
	if e != 0 {
		t.Fatal(e)
	}
	defer file.Close()
	buf := make([]byte, 10)
	if n, e := file.Read(buf); e != 0 || string(buf[:n]) != "hello" {
		t.Errorf("Read: %q, %v", buf[:n], e)
	}
	if _, e := file.Write([]byte("x")); e != experimentalsys.EBADF {
		t.Errorf("Write to a read-only file: %v, want EBADF", e)
	}
	if e := file.Truncate(0); e != experimentalsys.EBADF {
		t.Errorf("Truncate: %v, want EBADF", e)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "hello" {
		t.Errorf("a.txt holds %q", b)
	}
}

func TestRootFSWritable(t *testing.T) {
	f, dir := openRoot(t, false)
	file, e := f.OpenFile("dir/new.txt", experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_EXCL, 0o644)
	if e != 0 {
		t.Fatal(e)
	}
	if n, e := file.Write([]byte("0123456789")); n != 10 || e != 0 {
		t.Fatalf("Write: %d, %v", n, e)
	}
	if _, e := file.Pwrite([]byte("AB"), 2); e != 0 {
		t.Fatal(e)
	}
	buf := make([]byte, 4)
	if n, e := file.Pread(buf, 1); e != 0 || string(buf[:n]) != "1AB4" {
		t.Errorf("Pread: %q, %v", buf[:n], e)
	}
	if e := file.Truncate(5); e != 0 {
		t.Fatal(e)
	}
	if st, e := file.Stat(); e != 0 || st.Size != 5 {
		t.Errorf("Stat: %+v, %v", st, e)
	}
	if off, e := file.Seek(0, io.SeekStart); off != 0 || e != 0 {
		t.Errorf("Seek: %d, %v", off, e)
	}
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if e := file.Utimens(experimentalsys.UTIME_OMIT, when.UnixNano()); e != 0 {
		t.Errorf("Utimens: %v", e)
	}
	if e := file.Sync(); e != 0 {
		t.Errorf("Sync: %v", e)
	}
	if e := file.Close(); e != 0 {
		t.Fatal(e)
	}
	if _, e := file.Write([]byte("x")); e != experimentalsys.EBADF {
		t.Errorf("Write after Close: %v, want EBADF", e)
	}
	info, err := os.Stat(filepath.Join(dir, "dir", "new.txt"))
	if err != nil || info.Size() != 5 || !info.ModTime().Equal(when) {
		t.Errorf("new.txt: %v, %v", info, err)
	}
	if _, e := f.OpenFile("dir/new.txt", experimentalsys.O_WRONLY|experimentalsys.O_CREAT|experimentalsys.O_EXCL, 0o644); e != experimentalsys.EEXIST {
		t.Errorf("O_EXCL on an existing file: %v", e)
	}

	// Appending ignores the offset, as POSIX does.
	app, e := f.OpenFile("a.txt", experimentalsys.O_WRONLY|experimentalsys.O_APPEND, 0)
	if e != 0 {
		t.Fatal(e)
	}
	if !app.IsAppend() {
		t.Error("IsAppend is false")
	}
	if _, e := app.Pwrite([]byte("!"), 0); e != 0 {
		t.Errorf("Pwrite in append mode: %v", e)
	}
	app.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "hello!" {
		t.Errorf("a.txt holds %q", b)
	}

	if e := f.Mkdir("dir2", 0o755); e != 0 {
		t.Error(e)
	}
	if e := f.Mkdir("missing/dir", 0o755); e != experimentalsys.ENOENT {
		t.Errorf("Mkdir in a missing directory: %v", e)
	}
	if e := f.Rename("dir/new.txt", "dir2/moved.txt"); e != 0 {
		t.Error(e)
	}
	if e := f.Rmdir("a.txt"); e != experimentalsys.ENOTDIR {
		t.Errorf("Rmdir of a file: %v", e)
	}
	if e := f.Unlink("dir2"); e != experimentalsys.EISDIR {
		t.Errorf("Unlink of a directory: %v", e)
	}
	if e := f.Unlink("dir2/moved.txt"); e != 0 {
		t.Error(e)
	}
	if e := f.Rmdir("dir2"); e != 0 {
		t.Error(e)
	}
	if e := f.Link("a.txt", "hard.txt"); e != 0 {
		t.Error(e)
	}
	if e := f.Chmod("a.txt", 0o600); e != 0 {
		t.Error(e)
	}

	// Links: inside is fine, outside is refused, and the host's link to
	// outside is not followed.
	if e := f.Symlink("dir/./sub", "down"); e != 0 {
		t.Errorf("a link down: %v", e)
	}
	if target, e := f.Readlink("down"); e != 0 || target != "dir/./sub" {
		t.Errorf("Readlink: %q, %v", target, e)
	}
	for _, target := range []string{"../a.txt", "../../outside", "/etc", "", "dir/../../x", "x/..", "a\\..\\b"} {
		if e := f.Symlink(target, "dir/esc"); e != experimentalsys.EPERM {
			t.Errorf("Symlink to %q: %v, want EPERM", target, e)
		}
	}
	if _, e := f.OpenFile("out/secret.txt", experimentalsys.O_RDONLY, 0); e == 0 {
		t.Error("opened a file through a link to outside")
	} else if e != experimentalsys.EPERM {
		t.Errorf("open through a link to outside: %v, want EPERM", e)
	}
	if _, e := f.Stat("out/secret.txt"); e == 0 {
		t.Error("stat through a link to outside")
	}
	if _, e := f.OpenFile("out/planted.txt", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o644); e == 0 {
		t.Error("created a file through a link to outside")
	}
	if st, e := f.Lstat("out"); e != 0 || st.Mode&fs.ModeSymlink == 0 {
		t.Errorf("Lstat of the link: %v, %v", st.Mode, e)
	}
	if _, e := f.OpenFile("out", experimentalsys.O_RDONLY|experimentalsys.O_NOFOLLOW, 0); e != experimentalsys.ELOOP {
		t.Errorf("O_NOFOLLOW on a link: %v, want ELOOP", e)
	}
	if _, e := f.OpenFile("a.txt", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0); e != experimentalsys.ENOTDIR {
		t.Errorf("O_DIRECTORY on a file: %v, want ENOTDIR", e)
	}
	if _, e := f.OpenFile("a.txt/", experimentalsys.O_RDONLY, 0); e != experimentalsys.ENOTDIR {
		t.Errorf("a file with a trailing slash: %v, want ENOTDIR", e)
	}
	if _, e := f.OpenFile("dir", experimentalsys.O_RDWR|experimentalsys.O_DIRECTORY, 0); e != experimentalsys.EISDIR {
		t.Errorf("a directory opened to write: %v, want EISDIR", e)
	}
}

func TestRootFSReaddirRewinds(t *testing.T) {
	f, dir := openRoot(t, false)
	d, e := f.OpenFile(".", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
	if e != 0 {
		t.Fatal(e)
	}
	defer d.Close()
	names := func() map[string]bool {
		t.Helper()
		entries, e := d.Readdir(-1)
		if e != 0 {
			t.Fatal(e)
		}
		m := map[string]bool{}
		for _, en := range entries {
			m[en.Name] = true
			if en.Ino == 0 {
				t.Errorf("%s has no serial number", en.Name)
			}
		}
		return m
	}
	if got := names(); len(got) != 3 || !got["a.txt"] || !got["dir"] || !got["out"] {
		t.Errorf("entries = %v", got)
	}
	if got := names(); len(got) != 0 {
		t.Errorf("a second read without rewinding gave %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "late.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e := d.Seek(0, io.SeekStart); e != 0 {
		t.Fatal(e)
	}
	if got := names(); len(got) != 4 || !got["late.txt"] {
		t.Errorf("entries after rewinding = %v", got)
	}
	if isDir, e := d.IsDir(); !isDir || e != 0 {
		t.Errorf("IsDir: %v, %v", isDir, e)
	}
}

func TestMemoryMinimum(t *testing.T) {
	header := []byte("\x00asm\x01\x00\x00\x00")
	for _, tc := range []struct {
		bin  []byte
		want uint32
		ok   bool
	}{
		{append(header, 0x05, 0x03, 0x01, 0x00, 0x2a), 42, true},
		{append(header, 0x05, 0x05, 0x01, 0x01, 0x80, 0x02, 0x90), 256, true},                        // min 256, max 144
		{append(header, 0x00, 0x02, 0x01, 'x', 0x05, 0x03, 0x01, 0x00, 0x07), 7, true},               // after a custom section
		{append(header, 0x05, 0x04, 0x01, 0x00, 0xff, 0xff), 0, false},                               // a cut number
		{append(header, 0x05, 0x09, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00), 0, false}, // too long
		{append(header, 0x01, 0x7f), 0, false},                                                       // a section longer than the module
		{header, 0, false},
		{nil, 0, false},
	} {
		got, ok := memoryMinimum(tc.bin)
		if got != tc.want || ok != tc.ok {
			t.Errorf("memoryMinimum(% x) = %d, %v; want %d, %v", tc.bin, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzMemoryMinimum(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x2a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if pages, ok := memoryMinimum(b); !ok && pages != 0 {
			t.Fatalf("not found but %d pages", pages)
		}
	})
}

func TestLimitAllocator(t *testing.T) {
	a := &limitAllocator{limit: 4 * pageSize}
	m := a.Allocate(pageSize, 65536*pageSize)
	b := m.Reallocate(pageSize)
	if len(b) != pageSize {
		t.Fatalf("initial size %d", len(b))
	}
	b[10] = 7
	b = m.Reallocate(3 * pageSize)
	if len(b) != 3*pageSize || b[10] != 7 || !bytes.Equal(b[pageSize:], make([]byte, 2*pageSize)) {
		t.Fatal("growing lost the content or left garbage")
	}
	if cap(b) > 4*pageSize {
		t.Errorf("capacity %d beyond the limit", cap(b))
	}
	if m.Reallocate(5*pageSize) != nil {
		t.Error("grew beyond the limit")
	}
	if a.refused.Load() != 5*pageSize || a.size.Load() != 3*pageSize || a.over.Load() {
		t.Errorf("refused %d, size %d, over %v", a.refused.Load(), a.size.Load(), a.over.Load())
	}
	if b := m.Reallocate(4 * pageSize); len(b) != 4*pageSize || b[10] != 7 {
		t.Error("could not grow to the limit")
	}
	m.Free()

	over := &limitAllocator{limit: pageSize}
	if b := over.Allocate(0, 0).Reallocate(2 * pageSize); len(b) != 2*pageSize || !over.over.Load() {
		t.Error("an initial size beyond the limit must be given, and remembered")
	}
}

func TestPrecheckRefusesCountsBeyondTheBytes(t *testing.T) {
	sect := func(id byte, body ...byte) []byte {
		return append([]byte{id, byte(len(body))}, body...)
	}
	header := []byte("\x00asm\x01\x00\x00\x00")
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0x0f}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for name, tc := range map[string]struct {
		bin  []byte
		want string
	}{
		"types":           {cat(header, sect(1, huge...)), "4294967295 types"},
		"parameters":      {cat(header, sect(1, cat([]byte{0x01, 0x60}, huge)...)), "parameters"},
		"import name":     {cat(header, sect(2, cat([]byte{0x01, 0x01, 'm'}, huge)...)), "bytes of an import name"},
		"functions":       {cat(header, sect(3, huge...)), "functions"},
		"globals":         {cat(header, sect(6, huge...)), "globals"},
		"export name":     {cat(header, sect(7, cat([]byte{0x01}, huge)...)), "bytes of an export name"},
		"element indices": {cat(header, sect(9, cat([]byte{0x01, 0x00, 0x41, 0x00, 0x0b}, huge)...)), "elements"},
		"element exprs":   {cat(header, sect(9, cat([]byte{0x01, 0x05, 0x70}, huge)...)), "elements"},
		"data bytes":      {cat(header, sect(11, cat([]byte{0x01, 0x00, 0x41, 0x00, 0x0b}, huge)...)), "bytes of a data segment"},
		"passive data":    {cat(header, sect(11, cat([]byte{0x01, 0x01}, huge)...)), "bytes of a data segment"},
		"function names":  {cat(header, sect(0, cat([]byte{0x04, 'n', 'a', 'm', 'e', 0x01, 0x05}, huge)...)), "names"},
		"local names":     {cat(header, sect(0, cat([]byte{0x04, 'n', 'a', 'm', 'e', 0x02, 0x07, 0x01, 0x00}, huge)...)), "names"},
		"custom name":     {cat(header, sect(0, huge...)), "custom section's name"},
		"body size":       {cat(header, sect(10, cat([]byte{0x01}, huge)...)), "bytes of a function body"},
	} {
		err := precheck(tc.bin)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
	// Well-formed sections pass.
	for name, bin := range map[string][]byte{
		"import kinds": cat(header, sect(2,
			0x04, 0x01, 'm', 0x01, 'f', 0x00, 0x00, // function
			0x01, 'm', 0x01, 't', 0x01, 0x70, 0x01, 0x01, 0x02, // table with a maximum
			0x01, 'm', 0x01, 'g', 0x03, 0x7f, 0x00, // global
			0x01, 'm', 0x01, 'x', 0x02, 0x00, 0x01, // memory
		)),
		"global exprs":   cat(header, sect(6, 0x03, 0x7f, 0x00, 0x41, 0x7f, 0x0b, 0x7c, 0x00, 0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b, 0x7d, 0x00, 0x43, 0, 0, 0, 0, 0x0b)),
		"extended const": cat(header, sect(6, 0x01, 0x7f, 0x00, 0x41, 0x01, 0x41, 0x02, 0x6a, 0x0b)),
		"v128 global":    cat(header, sect(6, 0x01, 0x7b, 0x00, 0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0x0b)),
		"typed locals":   cat(header, sect(10, 0x01, 0x07, 0x02, 0x01, 0x63, 0x70, 0x01, 0x7f, 0x0b)),
		"tables":         cat(header, sect(4, 0x02, 0x70, 0x00, 0x05, 0x40, 0x00, 0x6f, 0x01, 0x01, 0x02, 0xd0, 0x6f, 0x0b)),
		"start":          cat(header, sect(8, 0x00)),
		"module name":    cat(header, sect(0, 0x04, 'n', 'a', 'm', 'e', 0x00, 0x02, 0x01, 'm', 0x07, 0x01, 0xff)),
		"exports":        cat(header, sect(7, 0x01, 0x01, 'f', 0x00, 0x00)),
		"element forms":  cat(header, sect(9, 0x02, 0x02, 0x00, 0x41, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x07, 0x70, 0x01, 0xd2, 0x00, 0x0b)),
		"data forms":     cat(header, sect(11, 0x02, 0x02, 0x00, 0x41, 0x00, 0x0b, 0x01, 'x', 0x01, 0x00)),
		"locals":         cat(header, sect(10, 0x01, 0x06, 0x02, 0x02, 0x7f, 0x01, 0x7e, 0x0b)),
		"other custom":   cat(header, sect(0, 0x03, 'f', 'o', 'o', 0xff, 0xff)),
	} {
		if err := precheck(bin); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPrecheckFollowsWazerosGrammar feeds precheck modules that the old,
// fail-open precheck let through: each makes wazero's decoder allocate
// gigabytes (or fill them), which kills the process.
func TestPrecheckFollowsWazerosGrammar(t *testing.T) {
	header := []byte("\x00asm\x01\x00\x00\x00")
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0x0f}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	uleb := func(v uint32) []byte {
		var b []byte
		for ; v >= 0x80; v >>= 7 {
			b = append(b, byte(v)|0x80)
		}
		return append(b, byte(v))
	}
	sect := func(id byte, body ...byte) []byte { return cat([]byte{id}, uleb(uint32(len(body))), body) }
	v128 := cat([]byte{0xfd, 0x0c}, make([]byte, 16))
	// 400 functions of 50,000 locals each: 20 million in all.
	bodies := uleb(400)
	for range 400 {
		bodies = append(bodies, cat(uleb(6), []byte{0x01}, uleb(maxLocals), []byte{0x7f, 0x0b})...)
	}
	for name, tc := range map[string]struct {
		bin  []byte
		want string
	}{
		// A v128.const offset, then a segment of four billion bytes.
		"data after v128.const": {cat(header, sect(11, cat([]byte{0x02, 0x00}, v128, []byte{0x0b, 0x00, 0x01}, huge)...)), "bytes of a data segment"},
		// The same before four billion element expressions.
		"elements after v128.const": {cat(header, sect(9, cat([]byte{0x02, 0x04}, v128, []byte{0x0b, 0x00, 0x05, 0x70}, huge)...)), "elements"},
		// A typed reference local, then four billion i32 locals.
		"locals after a typed reference": {cat(header, sect(10, cat([]byte{0x01, 0x0a, 0x02, 0x01, 0x63, 0x70}, huge, []byte{0x7f, 0x0b})...)), "locals"},
		"locals in all":                  {cat(header, sect(10, bodies...)), "in all"},
		// A module name of four billion bytes.
		"module name": {cat(header, sect(0, cat([]byte{0x04, 'n', 'a', 'm', 'e', 0x00, 0x05}, huge)...)), "module name"},
		// A table import of a typed reference, then an import whose
		// module name claims four billion bytes.
		"import after a typed table": {cat(header, sect(2, cat([]byte{0x02, 0x01, 'm', 0x01, 't', 0x01, 0x63, 0x70, 0x00, 0x01}, huge)...)), "module name"},
		// A data segment whose offset runs into the next section, which
		// wazero then reads as the rest of the segment: its length is
		// four billion.
		"an item across sections":       {cat(header, sect(11, 0x01, 0x00, 0x41), sect(12, cat([]byte{0x0b}, huge, []byte{0, 0, 0, 0, 0})...)), "section 11"},
		"a parameter type across types": {cat(header, sect(1, cat([]byte{0x02, 0x60, 0x01, 0x63, 0x70, 0x00, 0x60}, huge)...)), "parameters"},
		"unknown opcode":                {cat(header, sect(6, 0x01, 0x7f, 0x00, 0xfc, 0x0b)), "unknown opcode"},
		"unknown section":               {cat(header, sect(14, 0x00)), "section id 14"},
		"bytes left over":               {cat(header, sect(3, 0x01, 0x00, 0x00)), "remain"},
	} {
		err := precheck(tc.bin)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
}
