package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/trellis-go/trellis/internal/bytesize"
)

// DefaultMaxDepth is how deep under the root Open and FromFS look for
// skills unless WithMaxDepth says otherwise: 1, the root's own
// subdirectories.
const DefaultMaxDepth = 1

// maxDepthLimit is the largest depth WithMaxDepth accepts.
const maxDepthLimit = 16

// maxWalk bounds the entries visited when a skill's files are listed.
const maxWalk = 10000

// maxScan bounds the directory entries a scan looks at in search of
// skills: links between directories can make a tree of few directories
// look like one of billions (a link to "." in each), and a scan follows
// them as deep as WithMaxDepth allows.
const maxScan = 20_000

// Option configures a Repository.
type Option func(*config)

type config struct {
	maxDepth    int
	skipInvalid bool
	problems    []string
}

// WithMaxDepth sets how deep under the root skills are looked for
// (DefaultMaxDepth unless set): 1 looks at the root's subdirectories
// only, 2 also at theirs (so that skills can be grouped, as in
// "office/pdf-tools/SKILL.md"), and so on; n must be 1 to 16. A skill's
// directory is never searched for more skills: everything under it is
// the skill's.
func WithMaxDepth(n int) Option {
	return func(c *config) {
		if n < 1 || n > maxDepthLimit {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxDepth: n must be 1 to %d, not %d", maxDepthLimit, n))
		}
		c.maxDepth = n
	}
}

// WithSkipInvalid makes a scan skip the skills it cannot load instead of
// failing: Open, FromFS and Reload succeed with the valid skills, and
// Problems returns the errors of the others. Of two skills with one name,
// the first found (in the order of their paths) is kept.
func WithSkipInvalid() Option { return func(c *config) { c.skipInvalid = true } }

// Repository is a set of skills found under a root directory (Open) or in
// a file system (FromFS). It is a snapshot, as of its creation or the last
// Reload, of every skill's SKILL.md and list of files; the content of a
// resource file is read when it is asked for. A Repository is safe for
// concurrent use, Reload included.
type Repository struct {
	cfg   config
	label string   // the root as Open was given it; "" for FromFS
	root  *os.Root // nil for FromFS
	fsys  fs.FS    // root.FS() or the file system given to FromFS

	mu     sync.Mutex // serializes Reload and Close
	snap   atomic.Pointer[snapshot]
	closed atomic.Bool
}

// snapshot is the result of one scan.
type snapshot struct {
	skills   []*Skill // sorted by name
	byName   map[string]*Skill
	problems []error
}

// Open scans the directory root for skills and returns the repository
// that holds them. A skill is a subdirectory of root (at most
// WithMaxDepth levels down) that holds a file SKILL.md; other
// subdirectories are passed by, and names that start with "." are never
// looked at. Every access goes through an os.Root opened on root, and each
// skill's files through one opened on its directory: a symbolic link is
// followed only where it stays inside root (for the skills' directories)
// or inside the skill's own directory (for SKILL.md and the resource
// files). A link where a skill's directory could be that leads outside
// root is an invalid skill; a resource link that leads outside its skill
// is not listed and cannot be read. A link back to a directory the scan
// came through is passed by, and a scan that has looked at 20,000 files
// and directories in search of skills stops there, with a problem that
// says so.
//
// An invalid skill (see ErrInvalidSkill) fails Open with an error that
// names every bad skill's file, unless WithSkipInvalid is given. root must
// exist and be a directory. Close the repository when it is no longer
// used.
func Open(root string, opts ...Option) (*Repository, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("skill: %q is not a directory", root)
	}
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	r := &Repository{cfg: c, label: root, root: rt, fsys: rt.FS()}
	if err := r.load(); err != nil {
		_ = rt.Close()
		return nil, err
	}
	return r, nil
}

// FromFS scans the file system fsys for skills, as Open scans a
// directory, and returns the repository that holds them: for skills
// shipped inside a program with embed.FS, or kept in memory. Symbolic
// links in fsys (one that implements fs.ReadLinkFS) are never followed: a
// SKILL.md that is a link is an invalid skill, linked directories are
// passed by, linked resource files are not listed and cannot be read.
// Error paths name files by their paths in fsys.
func FromFS(fsys fs.FS, opts ...Option) (*Repository, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if fsys == nil {
		return nil, errors.New("skill: FromFS: the file system is nil")
	}
	r := &Repository{cfg: c, fsys: fsys}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func newConfig(opts []Option) (config, error) {
	c := config{maxDepth: DefaultMaxDepth}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if len(c.problems) > 0 {
		return c, fmt.Errorf("skill: %s", strings.Join(c.problems, "; "))
	}
	return c, nil
}

// Reload scans the repository again and replaces its skills with what it
// finds. Calls of the tools that run meanwhile see the old skills or the
// new ones, never a mix. Without WithSkipInvalid, a scan that finds an
// invalid skill changes nothing and returns its error, as does a root that
// can no longer be read.
func (r *Repository) Reload() error {
	return r.load()
}

// load scans the repository and installs the result.
func (r *Repository) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return ErrClosed
	}
	snap, err := r.scan()
	if err != nil {
		return err
	}
	if len(snap.problems) > 0 && !r.cfg.skipInvalid {
		return errors.Join(snap.problems...)
	}
	r.snap.Store(snap)
	return nil
}

// Close releases the repository's directory. Its methods and the calls of
// its tools fail afterwards with an error that matches ErrClosed. Closing
// a repository from FromFS only marks it closed.
func (r *Repository) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Swap(true) {
		return nil
	}
	if r.root != nil {
		return r.root.Close()
	}
	return nil
}

// Skills returns the repository's skills, sorted by name; nil after
// Close.
func (r *Repository) Skills() []Skill {
	snap := r.current()
	if snap == nil {
		return nil
	}
	out := make([]Skill, len(snap.skills))
	for i, s := range snap.skills {
		out[i] = s.clone()
	}
	return out
}

// Names returns the names of the repository's skills, sorted; nil after
// Close.
func (r *Repository) Names() []string {
	snap := r.current()
	if snap == nil {
		return nil
	}
	out := make([]string, len(snap.skills))
	for i, s := range snap.skills {
		out[i] = s.Name
	}
	return out
}

// Get returns the skill with the given name; ok is false when the
// repository has none (or is closed).
func (r *Repository) Get(name string) (s Skill, ok bool) {
	snap := r.current()
	if snap == nil {
		return Skill{}, false
	}
	if p := snap.byName[name]; p != nil {
		return p.clone(), true
	}
	return Skill{}, false
}

// Problems returns the errors of the skills the last scan skipped (with
// WithSkipInvalid), each an *InvalidSkillError that names the file at
// fault; nil when there were none.
func (r *Repository) Problems() []error {
	snap := r.current()
	if snap == nil {
		return nil
	}
	return slices.Clone(snap.problems)
}

// current returns the snapshot in force, nil after Close.
func (r *Repository) current() *snapshot {
	if r.closed.Load() {
		return nil
	}
	return r.snap.Load()
}

// display returns the path of p (slash-separated, relative to the
// repository's root) for error messages.
func (r *Repository) display(p string) string {
	if r.root == nil {
		return p
	}
	return filepath.Join(r.label, filepath.FromSlash(p))
}

// skillFS returns a file system confined to the skill directory dir and
// the function that releases it.
func (r *Repository) skillFS(dir string) (fs.FS, func(), error) {
	if r.root == nil {
		return &linkFreeFS{fsys: r.fsys, dir: dir}, func() {}, nil
	}
	sub, err := r.root.OpenRoot(filepath.FromSlash(dir))
	if err != nil {
		return nil, nil, err
	}
	return sub.FS(), func() { _ = sub.Close() }, nil
}

// scanner holds the state of one scan.
type scanner struct {
	r        *Repository
	byName   map[string]*Skill
	skills   []*Skill
	problems []error
	seen     int  // the directory entries looked at
	stopped  bool // seen passed maxScan
}

func (r *Repository) scan() (*snapshot, error) {
	sc := &scanner{r: r, byName: map[string]*Skill{}}
	if err := sc.dir(".", 0, nil); err != nil {
		return nil, err
	}
	slices.SortFunc(sc.skills, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	return &snapshot{skills: sc.skills, byName: sc.byName, problems: sc.problems}, nil
}

func (sc *scanner) problem(p string, err error) {
	sc.problems = append(sc.problems, &InvalidSkillError{Path: sc.r.display(p), Err: err})
}

// dir looks at the directory dir, depth levels under the root: it is a
// skill when it holds a SKILL.md, and otherwise its subdirectories are
// looked at while depth allows. A link to dir or to a directory above it
// on the way (up) is passed by. Only a root that cannot be read is an
// error; the rest are problems.
func (sc *scanner) dir(dir string, depth int, up []fs.FileInfo) error {
	if sc.stopped {
		return nil
	}
	entries, err := fs.ReadDir(sc.r.fsys, dir)
	if sc.seen += len(entries); sc.seen > maxScan {
		sc.stopped = true
		sc.problem(dir, fmt.Errorf("the scan stopped here, having looked at more than %d files and directories in search of skills (links between directories count each time they are followed); keep fewer under the root, or lower WithMaxDepth", maxScan))
		return nil
	}
	if err != nil {
		if dir == "." {
			if sc.r.root == nil {
				return fmt.Errorf("skill: reading the file system's root: %w", err)
			}
			return fmt.Errorf("skill: reading %s: %w", sc.r.label, err)
		}
		sc.problem(dir, fmt.Errorf("the directory cannot be read: %w", cause(err)))
		return nil
	}
	for _, e := range entries {
		if e.Name() != FileName {
			continue
		}
		file := path.Join(dir, FileName)
		if depth == 0 {
			sc.problem(file, errors.New("a skill is a subdirectory of the root, not the root itself; move this file and what goes with it into a directory of its own"))
			break
		}
		sc.skill(dir, e)
		return nil
	}
	if depth >= sc.r.cfg.maxDepth {
		return nil
	}
	if sc.r.root != nil {
		// The directories on the way, for links that lead back to one.
		if info, err := fs.Stat(sc.r.fsys, dir); err == nil {
			up = append(slices.Clip(up), info)
		}
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := path.Join(dir, e.Name())
		switch {
		case e.IsDir():
			_ = sc.dir(p, depth+1, up)
		case e.Type()&fs.ModeSymlink != 0 && sc.r.root != nil:
			// A link followed through the root: it may not leave it.
			info, err := fs.Stat(sc.r.fsys, p)
			if err != nil {
				if escapes(err) {
					sc.problem(p, errors.New("it is a symbolic link that leads outside the root, which is not followed"))
				}
				continue // a link to nothing
			}
			loop := slices.ContainsFunc(up, func(u fs.FileInfo) bool { return os.SameFile(u, info) })
			if info.IsDir() && !loop {
				_ = sc.dir(p, depth+1, up)
			}
		}
	}
	return nil
}

// skill reads the skill in dir, whose entry SKILL.md is e.
func (sc *scanner) skill(dir string, e fs.DirEntry) {
	file := path.Join(dir, FileName)
	switch {
	case e.IsDir():
		sc.problem(file, errors.New("it is a directory, not a file"))
		return
	case e.Type()&fs.ModeSymlink != 0 && sc.r.root == nil:
		sc.problem(file, errors.New("it is a symbolic link, which is not followed in a file system given to FromFS"))
		return
	}
	sfs, release, err := sc.r.skillFS(dir)
	if err != nil {
		sc.problem(dir, fmt.Errorf("the directory cannot be opened: %w", cause(err)))
		return
	}
	defer release()
	data, err := readLimited(sfs, FileName, MaxSkillFileSize)
	if err != nil {
		if escapes(err) {
			err = errors.New("it is a symbolic link that leads outside the skill's directory, which is not followed")
		}
		sc.problem(file, err)
		return
	}
	s, err := Parse(data)
	if err != nil {
		sc.problem(file, err)
		return
	}
	if first, dup := sc.byName[s.Name]; dup {
		sc.problem(file, fmt.Errorf("the name %q is taken by the skill in %s", s.Name, sc.r.display(path.Join(first.Dir, FileName))))
		return
	}
	s.Dir = dir
	s.Files, s.MoreFiles = listFiles(sfs, sc.r.root == nil)
	sc.byName[s.Name] = &s
	sc.skills = append(sc.skills, &s)
}

// listFiles lists the resource files of the skill whose directory sfs is:
// regular files, and (unless noLinks) links to regular files inside it;
// not SKILL.md, not names that start with ".", no linked directories.
func listFiles(sfs fs.FS, noLinks bool) (files []File, more bool) {
	visited := 0
	_ = fs.WalkDir(sfs, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory: its files are not listed
		}
		visited++
		if visited > maxWalk {
			more = true
			return fs.SkipAll
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || p == FileName {
			return nil
		}
		var size int64
		switch {
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return nil
			}
			size = info.Size()
		case d.Type()&fs.ModeSymlink != 0 && !noLinks:
			info, err := fs.Stat(sfs, p)
			if err != nil || !info.Mode().IsRegular() {
				return nil // leads out, to nothing, or to a directory
			}
			size = info.Size()
		default:
			return nil
		}
		if len(files) == MaxFiles {
			more = true
			return fs.SkipAll
		}
		files = append(files, File{Path: p, Size: size})
		return nil
	})
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, more
}

// readLimited reads the regular file name of fsys, refusing one larger
// than limit bytes. What is not a regular file is refused before it is
// opened: opening a named pipe waits for a writer, which may never come.
func readLimited(fsys fs.FS, name string, limit int64) ([]byte, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(info, limit); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Again, of what was opened: the file may have changed meanwhile.
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(info, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &sizeError{size: int64(len(data)), limit: limit, atLeast: true}
	}
	return data, nil
}

// checkRegular refuses what info describes unless it is a regular file of
// at most limit bytes.
func checkRegular(info fs.FileInfo, limit int64) error {
	switch {
	case info.IsDir():
		return &kindError{dir: true}
	case !info.Mode().IsRegular():
		return &kindError{}
	case info.Size() > limit:
		return &sizeError{size: info.Size(), limit: limit}
	}
	return nil
}

// kindError is the error of a read of something that is not a regular
// file.
type kindError struct{ dir bool }

func (e *kindError) Error() string {
	if e.dir {
		return "it is a directory, not a file"
	}
	return "it is not a regular file"
}

// sizeError is the error of a read of a file larger than the limit.
type sizeError struct {
	size, limit int64
	atLeast     bool
}

func (e *sizeError) Error() string {
	more := ""
	if e.atLeast {
		more = "at least "
	}
	size, limit := bytesize.Format(e.size), bytesize.Format(e.limit)
	if size == limit {
		// Rounded alike: the bytes tell them apart.
		size, limit = fmt.Sprintf("%d bytes", e.size), fmt.Sprintf("%d bytes", e.limit)
	}
	return fmt.Sprintf("the file is %s%s, larger than the limit of %s", more, size, limit)
}

// escapes reports whether err is os.Root's refusal of a path that leaves
// the root (it has no exported value to compare with), or the refusal of
// a link by linkFreeFS.
func escapes(err error) bool {
	var le *linkError
	return errors.As(err, &le) || strings.Contains(err.Error(), "path escapes from parent")
}

// cause returns the error inside a *fs.PathError, which repeats the path.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// linkFreeFS is the directory dir of fsys, in which no symbolic link is
// followed: opening a path through one fails with a *linkError. It can
// tell links only when fsys implements fs.ReadLinkFS; file systems that do
// not (embed.FS) have none.
type linkFreeFS struct {
	fsys fs.FS
	dir  string
}

// linkError is the error of a path that goes through a symbolic link in a
// linkFreeFS.
type linkError struct{ path string }

func (e *linkError) Error() string {
	return fmt.Sprintf("%q is a symbolic link, which is not followed", e.path)
}

// check refuses name when one of its components is a link, and returns
// its path in fsys.
func (l *linkFreeFS) check(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	full := path.Join(l.dir, name)
	if _, ok := l.fsys.(fs.ReadLinkFS); ok && name != "." {
		p := l.dir
		for part := range strings.SplitSeq(name, "/") {
			p = path.Join(p, part)
			info, err := fs.Lstat(l.fsys, p)
			if err != nil {
				return "", err
			}
			if info.Mode()&fs.ModeSymlink != 0 {
				return "", &linkError{path: strings.TrimPrefix(p, l.dir+"/")}
			}
		}
	}
	return full, nil
}

func (l *linkFreeFS) Open(name string) (fs.File, error) {
	full, err := l.check("open", name)
	if err != nil {
		return nil, err
	}
	return l.fsys.Open(full)
}

func (l *linkFreeFS) Stat(name string) (fs.FileInfo, error) {
	full, err := l.check("stat", name)
	if err != nil {
		return nil, err
	}
	return fs.Stat(l.fsys, full)
}

func (l *linkFreeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	full, err := l.check("readdir", name)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(l.fsys, full)
}
