package artifact

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Dir is a Store that keeps artifacts as files under a root directory,
// which it never leaves: every file is reached through an os.Root, so a
// symbolic link inside the root that points out of it makes the operation
// fail rather than follow it.
//
// The layout is
//
//	ROOT/APP/USER/user/NAME/VERSION            the user's scope
//	ROOT/APP/USER/thread/THREAD/NAME/VERSION   a thread's scope
//
// where APP, USER, THREAD and NAME are escaped to be safe and distinct on
// any file system, even one that ignores case (lower-case ASCII letters,
// digits, '-' and '.' but at either end stay, but for the first letter of
// a name Windows keeps for a device, such as "nul"; '_' stands for an
// empty value, '%XX' for every other byte, and a hash for a value that
// would be longer than 120 bytes) and VERSION is the version's number. A
// version file holds a header (the name, media type, size, time and
// metadata) and the data; it is never changed once written.
//
// A Save writes the version to a temporary file in the artifact's folder,
// syncs it, and then claims the next version number by making a hard link
// to it named for the number, which fails if the number is taken: readers
// never see part of a version, and processes sharing the folder never get
// the same number (the one that loses the race takes the next). The file
// system must support hard links. A process that dies during a Save can
// leave a temporary file behind (named .tmp-*), which the store ignores.
// Within a process, Saves and Deletes of one name are serialized; Delete
// removes the artifact's folder, and another process's Save running at
// that moment may fail, or keep its version as the first of a new
// artifact.
type Dir struct {
	root  *os.Root
	opts  options
	seed  maphash.Seed
	locks [32]sync.Mutex
}

var _ Store = (*Dir)(nil)

// header is the first part of a version file, after the magic line.
type header struct {
	Name      string            `json:"name"`
	MediaType string            `json:"media_type"`
	Size      int64             `json:"size"`
	Saved     time.Time         `json:"saved"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// magic is the first line of a version file.
const magic = "trellis-artifact 1\n"

// maxHeader bounds the header of a version file: the largest metadata,
// escaped (a byte can take six, and each pair of a key of two or three
// bytes and an empty value six more), and the rest. Save refuses an
// artifact whose header would be larger.
const maxHeader = 10*MaxMetadataSize + 8<<10

// NewDir returns a store that keeps its artifacts under root, which it
// creates if it is missing. Close releases it.
func NewDir(root string, opts ...Option) (*Dir, error) {
	if root == "" {
		return nil, errors.New("artifact: NewDir: the root is empty")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("artifact: NewDir: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("artifact: NewDir: %w", err)
	}
	return &Dir{root: r, opts: newOptions(opts), seed: maphash.MakeSeed()}, nil
}

// Close releases the root directory. The store must not be used after.
func (d *Dir) Close() error { return d.root.Close() }

// segment escapes s into one path segment that is safe on any file
// system and distinct from that of any other string, ignoring case too.
// It never starts with '.', so that it is neither "." nor ".." nor a
// temporary file; it never ends with '.', which Windows drops ("a." would
// be "a"), and is never a name Windows keeps for a device ("con",
// "nul.txt", "com1").
func segment(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	device := isDeviceName(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		keep := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' && i > 0 && i < len(s)-1
		if keep && !(device && i == 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	if b.Len() > 120 {
		sum := sha256.Sum256([]byte(s))
		return "~" + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// isDeviceName reports whether s, kept as it is, would name a device on
// Windows: "con", "prn", "aux", "nul", "com1" to "com9" or "lpt1" to
// "lpt9", alone or before a '.' ("nul.txt"). Only lower-case letters are
// kept as they are.
func isDeviceName(s string) bool {
	base, _, _ := strings.Cut(s, ".")
	switch base {
	case "con", "prn", "aux", "nul":
		return true
	}
	return len(base) == 4 && (base[:3] == "com" || base[:3] == "lpt") && base[3] >= '1' && base[3] <= '9'
}

// scopeDir returns the folder of a scope's artifacts.
func scopeDir(s Scope) string {
	if s.Thread == "" {
		return filepath.Join(segment(s.App), segment(s.User), "user")
	}
	return filepath.Join(segment(s.App), segment(s.User), "thread", segment(s.Thread))
}

// lock returns the mutex that serializes the writes of a folder.
func (d *Dir) lock(dir string) *sync.Mutex {
	return &d.locks[maphash.String(d.seed, dir)%uint64(len(d.locks))]
}

// Save stores a as a new version of the artifact name (see Store and Dir).
func (d *Dir) Save(ctx context.Context, scope Scope, name string, a Artifact) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	a, err := Prepare(name, a, d.opts.maxSize)
	if err != nil {
		return 0, err
	}
	hb, err := json.Marshal(header{Name: name, MediaType: a.MediaType, Size: int64(len(a.Data)), Saved: d.opts.now().UTC(), Metadata: a.Metadata})
	if err != nil {
		return 0, fmt.Errorf("artifact: save %q: %w", name, err)
	}
	if len(hb) > maxHeader {
		return 0, fmt.Errorf("%w: artifact %q: its name, media type and metadata take %d bytes as the store writes them, more than %d", ErrTooLarge, name, len(hb), maxHeader)
	}
	dir := filepath.Join(scopeDir(scope.For(name)), segment(name))
	mu := d.lock(dir)
	mu.Lock()
	defer mu.Unlock()
	for attempt := 0; ; attempt++ {
		v, err := d.save(dir, hb, a.Data)
		// The folder went away under the save: another process deleted
		// the artifact. Try again, as the first version of a new one.
		if errors.Is(err, fs.ErrNotExist) && attempt < 2 {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("artifact: save %q: %w", name, err)
		}
		return v, nil
	}
}

func (d *Dir) save(dir string, hb, data []byte) (int, error) {
	if err := d.root.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	tmp := filepath.Join(dir, ".tmp-"+rand.Text())
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() { _ = d.root.Remove(tmp) }()
	w := bufio.NewWriter(f)
	_, _ = w.WriteString(magic)
	_, _ = w.Write(hb)
	_ = w.WriteByte('\n')
	_, _ = w.Write(data)
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	for range 1000 {
		vs, err := d.versionNumbers(dir)
		if err != nil {
			return 0, err
		}
		next := 1
		if len(vs) > 0 {
			next = vs[len(vs)-1] + 1
		}
		err = d.root.Link(tmp, filepath.Join(dir, strconv.Itoa(next)))
		if errors.Is(err, fs.ErrExist) {
			continue // another process took the number
		}
		if err != nil {
			return 0, err
		}
		d.syncDir(dir)
		return next, nil
	}
	return 0, errors.New("could not claim a version number: too many concurrent saves")
}

// syncDir syncs a folder so that a new link in it survives a crash. Its
// failure is not reported: the version is saved, and some file systems
// cannot sync a folder.
func (d *Dir) syncDir(dir string) {
	if f, err := d.root.Open(dir); err == nil {
		_ = f.Sync()
		_ = f.Close()
	}
}

// versionNumbers returns the versions present in an artifact's folder,
// in order; none when the folder is missing.
func (d *Dir) versionNumbers(dir string) ([]int, error) {
	ents, err := d.readDir(dir)
	if err != nil {
		return nil, err
	}
	var vs []int
	for _, e := range ents {
		if v, ok := parseVersion(e.Name()); ok {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs, nil
}

// readDir lists a folder of the root; nothing when it is missing.
func (d *Dir) readDir(dir string) ([]fs.DirEntry, error) {
	f, err := d.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	return ents, nil
}

// parseVersion reads a version file's name: a positive decimal number
// without leading zeros.
func parseVersion(s string) (int, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// Load returns a version of the artifact name, 0 for the latest (see
// Store).
func (d *Dir) Load(ctx context.Context, scope Scope, name string, version int) (Artifact, error) {
	if err := ctx.Err(); err != nil {
		return Artifact{}, err
	}
	if err := CheckName(name); err != nil {
		return Artifact{}, err
	}
	if err := checkVersion(name, version); err != nil {
		return Artifact{}, err
	}
	dir := filepath.Join(scopeDir(scope.For(name)), segment(name))
	vs, err := d.versionNumbers(dir)
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact: load %q: %w", name, err)
	}
	latest := 0
	if len(vs) > 0 {
		latest = vs[len(vs)-1]
	}
	if version == 0 {
		version = latest
	}
	if version == 0 || !slices.Contains(vs, version) {
		return Artifact{}, notFound(name, version, latest)
	}
	h, data, err := d.readVersion(dir, name, version)
	if errors.Is(err, fs.ErrNotExist) {
		return Artifact{}, notFound(name, version, 0) // deleted meanwhile
	}
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact: load %q version %d: %w", name, version, err)
	}
	return Artifact{Data: data, MediaType: h.MediaType, Metadata: h.Metadata}, nil
}

// openVersion opens a version file, which must be a regular file.
func (d *Dir) openVersion(dir string, version int) (*os.File, fs.FileInfo, error) {
	p := filepath.Join(dir, strconv.Itoa(version))
	fi, err := d.root.Lstat(p)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", p, fi.Mode().Type())
	}
	f, err := d.root.Open(p)
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readHeader reads the magic line and header of a version file from r and
// checks that it is the file of name, unless name is "". It returns the
// header and the bytes it took. r should stop after maxHeader bytes of
// header (see headerReader).
func readHeader(r *bufio.Reader, name string) (header, int64, error) {
	var h header
	line, err := r.ReadString('\n')
	if err != nil || line != magic {
		return h, 0, errors.New("not an artifact version file")
	}
	hl, err := r.ReadBytes('\n')
	if err != nil {
		return h, 0, fmt.Errorf("the header is cut, or longer than %d bytes: %w", maxHeader, err)
	}
	if err := json.Unmarshal(hl, &h); err != nil {
		return h, 0, fmt.Errorf("the header is corrupt: %w", err)
	}
	if h.Size < 0 {
		return h, 0, fmt.Errorf("the header is corrupt: it gives the size %d", h.Size)
	}
	if name != "" && h.Name != name {
		return h, 0, fmt.Errorf("the file holds artifact %q, not %q", h.Name, name)
	}
	return h, int64(len(line) + len(hl)), nil
}

// headerReader reads the header of the version file f, and no more than
// the longest header can take.
func headerReader(f *os.File) *bufio.Reader {
	return bufio.NewReader(io.LimitReader(f, int64(len(magic))+maxHeader))
}

// readVersion reads a version file whole.
func (d *Dir) readVersion(dir, name string, version int) (header, []byte, error) {
	f, fi, err := d.openVersion(dir, version)
	if err != nil {
		return header{}, nil, err
	}
	defer func() { _ = f.Close() }()
	h, n, err := readHeader(headerReader(f), name)
	if err != nil {
		return h, nil, err
	}
	if size := fi.Size() - n; size != h.Size {
		return h, nil, fmt.Errorf("the data is %d bytes, the header says %d", size, h.Size)
	}
	if _, err := f.Seek(n, io.SeekStart); err != nil {
		return h, nil, err
	}
	data := make([]byte, h.Size)
	if _, err := io.ReadFull(f, data); err != nil {
		return h, nil, fmt.Errorf("reading the data: %w", err)
	}
	return h, data, nil
}

// statVersion reads the header of a version file (see readHeader).
func (d *Dir) statVersion(dir, name string, version int) (Info, error) {
	f, _, err := d.openVersion(dir, version)
	if err != nil {
		return Info{}, err
	}
	defer func() { _ = f.Close() }()
	h, _, err := readHeader(headerReader(f), name)
	if err != nil {
		return Info{}, err
	}
	return Info{Name: h.Name, Version: version, Size: h.Size, MediaType: h.MediaType, Saved: h.Saved, Metadata: h.Metadata}, nil
}

// List describes the latest version of every artifact reachable from
// scope (see Store). Folders and files that are not the store's are
// skipped.
func (d *Dir) List(ctx context.Context, scope Scope) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := d.list(scope, func(name string) bool { return scope.Thread == "" || !IsUserName(name) })
	if err != nil {
		return nil, err
	}
	if scope.Thread != "" {
		user, err := d.list(scope.UserScope(), IsUserName)
		if err != nil {
			return nil, err
		}
		out = append(out, user...)
	}
	sortInfos(out)
	return out, nil
}

func (d *Dir) list(scope Scope, keep func(string) bool) ([]Info, error) {
	dir := scopeDir(scope)
	ents, err := d.readDir(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact: list: %w", err)
	}
	var out []Info
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		vs, err := d.versionNumbers(sub)
		if err != nil || len(vs) == 0 {
			continue
		}
		// The folder's name does not tell the artifact's (a long one is
		// hashed): its latest version does.
		in, err := d.statVersion(sub, "", vs[len(vs)-1])
		if err != nil || CheckName(in.Name) != nil || segment(in.Name) != e.Name() || !keep(in.Name) {
			continue // deleted meanwhile, or not the store's
		}
		out = append(out, in)
	}
	return out, nil
}

// Versions describes every version of the artifact name (see Store).
func (d *Dir) Versions(ctx context.Context, scope Scope, name string) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	dir := filepath.Join(scopeDir(scope.For(name)), segment(name))
	vs, err := d.versionNumbers(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact: versions of %q: %w", name, err)
	}
	out := make([]Info, 0, len(vs))
	for _, v := range vs {
		in, err := d.statVersion(dir, name, v)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("artifact: versions of %q: version %d: %w", name, v, err)
		}
		out = append(out, in)
	}
	if len(out) == 0 {
		return nil, notFound(name, 0, 0)
	}
	return out, nil
}

// Delete removes the artifact name with all its versions (see Store).
func (d *Dir) Delete(ctx context.Context, scope Scope, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckName(name); err != nil {
		return err
	}
	dir := filepath.Join(scopeDir(scope.For(name)), segment(name))
	mu := d.lock(dir)
	mu.Lock()
	defer mu.Unlock()
	vs, err := d.versionNumbers(dir)
	if err != nil {
		return fmt.Errorf("artifact: delete %q: %w", name, err)
	}
	if len(vs) == 0 {
		return notFound(name, 0, 0)
	}
	if err := d.root.RemoveAll(dir); err != nil {
		return fmt.Errorf("artifact: delete %q: %w", name, err)
	}
	return nil
}
