package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// The names of the tools a Toolset offers.
const (
	ReadFileName     = "read_file"
	ListFilesName    = "list_files"
	GrepName         = "grep"
	WriteFileName    = "write_file"
	EditFileName     = "edit_file"
	NotebookEditName = "notebook_edit"
)

// DefaultName is the toolset's name unless WithName says otherwise.
const DefaultName = "workspace"

// DefaultMaxFileSize is the size, in bytes, of the largest file the tools
// read, search or edit unless WithMaxFileSize says otherwise (1 MiB).
const DefaultMaxFileSize = 1 << 20

// DefaultMaxResults is how many paths list_files and how many matching
// lines grep return at most unless WithMaxResults says otherwise.
const DefaultMaxResults = 200

// DefaultReadLimit is how many lines read_file returns when the model does
// not give a limit.
const DefaultReadLimit = 2000

// binarySniff is how much of a file is looked at for a NUL byte, the mark
// of a binary file.
const binarySniff = 8 << 10

// ErrOutside is matched (errors.Is) by the error of a call whose path is
// absolute, climbs out of the workspace with "..", or leads out of it
// through a symbolic link.
var ErrOutside = errors.New("workspace: path outside the workspace")

// outsideError is the error of a path that leaves the workspace.
type outsideError struct {
	path, why string
}

func (e *outsideError) Error() string {
	return fmt.Sprintf("path %q is outside the workspace: %s", clip(e.path), e.why)
}

// Bounds of what a message quotes of a path or pattern (maxQuoted) and of
// an ID or name (maxQuotedID) that come from a call or a file: a message
// must not repeat a huge one.
const (
	maxQuoted   = 200
	maxQuotedID = 64
)

// clip returns the first maxQuoted bytes of s, between characters, with
// "…" when s was cut, for a message to quote.
func clip(s string) string { return textcut.Clip(s, maxQuoted, "…") }

// clipID is clip for an ID or a name, cut to maxQuotedID bytes.
func clipID(s string) string { return textcut.Clip(s, maxQuotedID, "…") }

func (e *outsideError) Is(target error) bool { return target == ErrOutside }

// ErrHardLinked is matched (errors.Is) by the error of a write to a file
// that has more than one hard link: its other names may be outside the
// workspace (a hard link does not say where it points, and os.Root cannot
// tell), and a write in place would change the file under all of them.
// Such a file is not written.
var ErrHardLinked = errors.New("workspace: file has other hard links")

// hardLinkedError is the error of a write to a file with links hard links.
type hardLinkedError struct {
	links uint64
}

func (e *hardLinkedError) Error() string {
	return fmt.Sprintf("it has %d hard links, and its other names may lie outside the workspace", e.links)
}

func (e *hardLinkedError) Is(target error) bool { return target == ErrHardLinked }

// Option configures a Toolset.
type Option func(*config)

type config struct {
	name        string
	readOnly    bool
	maxFileSize int64
	maxResults  int
	problems    []string
}

// WithName names the toolset (DefaultName unless set). The name is the
// set's, for errors and logs; the tools keep their names (rename them with
// tool.WithPrefix).
func WithName(name string) Option {
	return func(c *config) {
		if name == "" {
			c.problems = append(c.problems, "WithName: the name is empty")
		}
		c.name = name
	}
}

// WithReadOnly offers only the tools that change nothing: read_file,
// list_files and grep (not write_file, edit_file and notebook_edit).
func WithReadOnly() Option { return func(c *config) { c.readOnly = true } }

// WithMaxFileSize sets the size, in bytes, of the largest file read_file
// shows, edit_file and notebook_edit edit and grep searches
// (DefaultMaxFileSize unless set); n must be at least 1. It does not limit
// write_file.
func WithMaxFileSize(n int64) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxFileSize: n must be at least 1")
		}
		c.maxFileSize = n
	}
}

// WithMaxResults caps how many paths list_files and how many matching
// lines grep return (DefaultMaxResults unless set); n must be at least 1.
func WithMaxResults(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxResults: n must be at least 1")
		}
		c.maxResults = n
	}
}

// Toolset gives a model file tools confined to one directory, its
// workspace. It implements tool.Toolset; its tools are built once, by New,
// and are safe for concurrent use. Close it when no run uses it any more.
type Toolset struct {
	cfg    config
	root   *os.Root
	fsys   fs.FS
	tools  []tool.Tool
	closed atomic.Bool
	// writing serializes write_file, edit_file and notebook_edit, so that
	// two edits of one file never interleave their reads and writes.
	writing sync.Mutex
}

var _ tool.Toolset = (*Toolset)(nil)

// New opens the directory dir as a workspace and returns the toolset whose
// tools work in it: read_file, list_files, grep, write_file, edit_file and
// notebook_edit (the first three alone with WithReadOnly). dir must exist
// and be a directory.
//
// Every access goes through an os.Root opened on dir, so no path a model
// gives, symbolic links included, reaches a file outside it: paths are
// relative to dir and slash-separated, and one that is absolute or leads
// out of dir is refused with an error result that names it (and matches
// ErrOutside). A model's mistakes (a missing file, an ambiguous edit, a bad
// pattern) are error results that say what was wrong, for it to correct.
func New(dir string, opts ...Option) (*Toolset, error) {
	c := config{name: DefaultName, maxFileSize: DefaultMaxFileSize, maxResults: DefaultMaxResults}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: workspace %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("workspace: %q is not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	w := &Toolset{cfg: c, root: root, fsys: root.FS()}
	if err := w.build(); err != nil {
		_ = root.Close()
		return nil, err
	}
	return w, nil
}

// build makes the toolset's tools.
func (w *Toolset) build() error {
	makers := []func() (tool.Tool, error){w.readFileTool, w.listFilesTool, w.grepTool}
	if !w.cfg.readOnly {
		makers = append(makers, w.writeFileTool, w.editFileTool, w.notebookEditTool)
	}
	for _, mk := range makers {
		t, err := mk()
		if err != nil {
			return fmt.Errorf("workspace %q: %w", w.cfg.name, err)
		}
		w.tools = append(w.tools, t)
	}
	return nil
}

// Name returns the toolset's name.
func (w *Toolset) Name() string { return w.cfg.name }

// Tools returns the toolset's tools; after Close it returns an error.
func (w *Toolset) Tools(context.Context) ([]tool.Tool, error) {
	if w.closed.Load() {
		return nil, fmt.Errorf("workspace %q is closed", w.cfg.name)
	}
	return slices.Clone(w.tools), nil
}

// Close closes the workspace's directory. Calls of its tools made after
// Close fail.
func (w *Toolset) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	return w.root.Close()
}

// clean checks a path a model gave and returns it cleaned, slash-separated
// and relative to the workspace ("." for the workspace itself).
func clean(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("the path is empty; give a path relative to the workspace, such as \"src/main.go\"")
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("path %q has a NUL byte", clip(p))
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", &outsideError{path: p, why: "it is absolute; give a path relative to the workspace, such as \"src/main.go\""}
	}
	c := path.Clean(p)
	switch {
	case c == ".." || strings.HasPrefix(c, "../"):
		return "", &outsideError{path: p, why: "it climbs out with \"..\""}
	case c != "." && !filepath.IsLocal(native(c)):
		// On Windows: a reserved name (NUL, COM1) or a drive-relative path.
		return "", &outsideError{path: p, why: "it is not a plain path relative to the workspace on this system"}
	}
	return c, nil
}

// native turns a cleaned slash-separated path into the form os.Root takes.
func native(p string) string { return filepath.FromSlash(p) }

// pathError turns the error of an access to p into one a model can act on.
func pathError(p string, err error) error {
	var pe *fs.PathError
	cause := err
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q does not exist; list_files shows the files there are", clip(p))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%q cannot be accessed: permission denied", clip(p))
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("%q cannot be accessed: the workspace is closed", clip(p))
	case errors.Is(err, ErrHardLinked):
		return fmt.Errorf("%q is not written: %w; a write would change the file under every name. "+
			"Write a new file instead, or have the other names removed", clip(p), err)
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root's refusal of a path that leaves the root; its error has
		// no exported value to compare with.
		return &outsideError{path: p, why: "a symbolic link on the way leads out of it"}
	}
	return fmt.Errorf("%q cannot be accessed: %w", clip(p), cause)
}
