package skill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/bytesize"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// The names of the tools Tools returns, and of their toolset by default.
const (
	LoadName           = "skill_load"
	ReadFileName       = "skill_read_file"
	DefaultToolsetName = "skills"
)

// Defaults of the toolset's options.
const (
	// DefaultMaxFileSize is the largest resource file skill_read_file
	// returns, in bytes, unless WithMaxFileSize says otherwise.
	DefaultMaxFileSize = 256 << 10
	// DefaultMaxListed is how many skills the toolset's instruction lists
	// unless WithMaxListed says otherwise.
	DefaultMaxListed = 50
)

// binarySniff is how much of a file is looked at for a NUL byte, the mark
// of a binary file.
const binarySniff = 8 << 10

// LoadArgs are the arguments of skill_load.
type LoadArgs struct {
	Name string `json:"name" jsonschema:"description=The skill's name\\, as the list of available skills gives it,minLength=1"`
}

// ReadFileArgs are the arguments of skill_read_file.
type ReadFileArgs struct {
	Name string `json:"name" jsonschema:"description=The skill's name,minLength=1"`
	Path string `json:"path" jsonschema:"description=The file's path inside the skill\\, as skill_load lists it\\, such as scripts/extract.py,minLength=1"`
}

// ToolsOption configures the toolset Tools returns.
type ToolsOption func(*toolsConfig)

type toolsConfig struct {
	name        string
	allow       map[string]bool // nil: every skill
	maxFileSize int64
	maxListed   int
	problems    []string
}

// WithToolsetName names the toolset (DefaultToolsetName unless set), for
// errors and logs; the tools keep their names (rename them with
// tool.WithPrefix).
func WithToolsetName(name string) ToolsOption {
	return func(c *toolsConfig) {
		if name == "" {
			c.problems = append(c.problems, "WithToolsetName: the name is empty")
		}
		c.name = name
	}
}

// WithSkills is an allow-list: the toolset offers only the skills with
// these names. The others are not listed, and the tools answer as if they
// did not exist. A name the repository does not have (now, or after a
// Reload) is passed by. Given more than once, the lists add up.
func WithSkills(names ...string) ToolsOption {
	return func(c *toolsConfig) {
		if c.allow == nil {
			c.allow = map[string]bool{}
		}
		for _, n := range names {
			if err := checkName(n); err != nil {
				c.problems = append(c.problems, "WithSkills: "+err.Error())
			}
			c.allow[n] = true
		}
	}
}

// WithMaxFileSize sets the size, in bytes, of the largest resource file
// skill_read_file returns (DefaultMaxFileSize unless set); n must be at
// least 1.
func WithMaxFileSize(n int64) ToolsOption {
	return func(c *toolsConfig) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxFileSize: n must be at least 1")
		}
		c.maxFileSize = n
	}
}

// WithMaxListed sets how many skills the toolset's instruction lists
// (DefaultMaxListed unless set); n must be at least 1. Skills past the cap
// (by name) can still be loaded by name.
func WithMaxListed(n int) ToolsOption {
	return func(c *toolsConfig) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxListed: n must be at least 1")
		}
		c.maxListed = n
	}
}

// Toolset gives a model a repository's skills: skill_load and
// skill_read_file, and an instruction, added to the system prompt through
// skill_load (tool.InstructionProvider), that lists the skills it can
// load. It implements tool.Toolset. The tools read the repository as it
// is when they are called, so a Reload shows in the next model call.
type Toolset struct {
	cfg   toolsConfig
	repo  *Repository
	tools []tool.Tool
}

var _ tool.Toolset = (*Toolset)(nil)

// Tools returns a toolset that gives a model the skills of repo:
//
//   - skill_load (name) answers with the skill's instructions (the body of
//     its SKILL.md) and the list of its resource files with their sizes;
//   - skill_read_file (name, path) answers with the text of one resource
//     file, its path relative to the skill's directory. A path that is
//     absolute, climbs out with "..", leads out of the skill's directory
//     through a link or goes through a name that starts with "." is
//     refused, as are files larger than WithMaxFileSize and binary files
//     (a NUL byte, or bytes that are not UTF-8).
//
// skill_load carries the toolset's instruction (see Toolset.Instruction).
// Both tools are read-only and concurrency-safe. A call the toolset
// refuses (an unknown skill, a missing file) is an error result that says
// why, naming the skills there are. The toolset does not own repo:
// closing it leaves repo open.
func Tools(repo *Repository, opts ...ToolsOption) (*Toolset, error) {
	c := toolsConfig{name: DefaultToolsetName, maxFileSize: DefaultMaxFileSize, maxListed: DefaultMaxListed}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if repo == nil {
		c.problems = append(c.problems, "the repository is nil")
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: skill toolset %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	ts := &Toolset{cfg: c, repo: repo}
	load, err := ts.loadTool()
	if err != nil {
		return nil, err
	}
	read, err := ts.readFileTool()
	if err != nil {
		return nil, err
	}
	ts.tools = []tool.Tool{load, read}
	return ts, nil
}

// Name returns the toolset's name.
func (t *Toolset) Name() string { return t.cfg.name }

// Tools returns skill_load and skill_read_file; after the repository is
// closed it returns an error that matches ErrClosed.
func (t *Toolset) Tools(context.Context) ([]tool.Tool, error) {
	if t.repo.closed.Load() {
		return nil, fmt.Errorf("skill toolset %q: %w", t.cfg.name, ErrClosed)
	}
	return slices.Clone(t.tools), nil
}

// Close does nothing: the repository belongs to whoever opened it.
func (t *Toolset) Close() error { return nil }

// Skills returns the skills the toolset offers, sorted by name: the
// repository's, less those WithSkills leaves out.
func (t *Toolset) Skills() []Skill {
	snap := t.repo.current()
	if snap == nil {
		return nil
	}
	var out []Skill
	for _, s := range t.offered(snap) {
		out = append(out, s.clone())
	}
	return out
}

// offered returns the skills of snap the toolset offers, sorted by name.
func (t *Toolset) offered(snap *snapshot) []*Skill {
	if t.cfg.allow == nil {
		return snap.skills
	}
	var out []*Skill
	for _, s := range snap.skills {
		if t.cfg.allow[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// lookup returns the offered skill named name, or an error that says the
// toolset has none and names the skills it has.
func (t *Toolset) lookup(name string) (*Skill, error) {
	snap := t.repo.current()
	if snap == nil {
		return nil, ErrClosed
	}
	if s := snap.byName[name]; s != nil && (t.cfg.allow == nil || t.cfg.allow[name]) {
		return s, nil
	}
	// The name is the model's: no skill's name is longer than
	// MaxNameLength, and a longer one is neither quoted whole nor compared
	// whole with every name.
	name = textcut.Clip(name, 2*MaxNameLength, "...")
	offered := t.offered(snap)
	names := make([]string, len(offered))
	for i, s := range offered {
		names[i] = s.Name
	}
	if len(names) == 0 {
		return nil, &notFoundError{msg: fmt.Sprintf("there is no skill %q, nor any other", name)}
	}
	msg := fmt.Sprintf("there is no skill %q", name)
	if near := tool.Suggest(name, names, 3); len(near) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", quoteAll(near, " or "))
	}
	if len(names) <= 100 {
		msg += " The skills are: " + strings.Join(names, ", ") + "."
	}
	return nil, &notFoundError{msg: msg}
}

// notFoundError is the error of a request for a skill the toolset does not
// offer.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

// Instruction returns the text skill_load adds to the system prompt: when
// to load a skill, and the offered skills, by name and description (with
// its white space collapsed), up to WithMaxListed of them, then how many
// more there are. It is "" when the toolset offers no skill.
func (t *Toolset) Instruction() string {
	snap := t.repo.current()
	if snap == nil {
		return ""
	}
	offered := t.offered(snap)
	if len(offered) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Skills are packages of instructions for particular tasks. When a task matches a skill's description, " +
		"call " + LoadName + " with the skill's name before you start, then follow the instructions it returns; " +
		ReadFileName + " reads the files a skill lists.\n\nAvailable skills:")
	for i, s := range offered {
		if i == t.cfg.maxListed {
			fmt.Fprintf(&b, "\n(%d more not listed; %s takes any skill's name)", len(offered)-i, LoadName)
			break
		}
		fmt.Fprintf(&b, "\n- %s: %s", s.Name, strings.Join(strings.Fields(s.Description), " "))
	}
	return b.String()
}

// loadTool is skill_load, which carries the toolset's instruction.
type loadTool struct {
	*tool.FuncTool[LoadArgs, string]
	ts *Toolset
}

// Instruction returns the toolset's instruction (Toolset.Instruction).
func (l *loadTool) Instruction() string { return l.ts.Instruction() }

func (t *Toolset) loadTool() (tool.Tool, error) {
	ft, err := tool.NewFunc(LoadName,
		"Load a skill: returns its instructions, to follow for the task at hand, and the list of its files, "+
			"which "+ReadFileName+" reads. The available skills are listed in the system prompt.",
		func(_ context.Context, in LoadArgs) (string, error) {
			s, err := t.lookup(in.Name)
			if err != nil {
				return "", err
			}
			return loadText(s), nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("Load skill"))
	if err != nil {
		return nil, err
	}
	return &loadTool{FuncTool: ft, ts: t}, nil
}

// loadText is skill_load's answer for s.
func loadText(s *Skill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %q loaded. Its instructions:\n\n", s.Name)
	if s.Body == "" {
		b.WriteString("(The skill has no instructions beyond its description: " + s.Description + ")")
	} else {
		b.WriteString(s.Body)
	}
	if len(s.Files) > 0 {
		fmt.Fprintf(&b, "\n\nFiles of the skill (read one with %s, name %q and the path as listed):", ReadFileName, s.Name)
		for _, f := range s.Files {
			fmt.Fprintf(&b, "\n- %s (%s)", f.Path, bytesize.Format(f.Size))
		}
		if s.MoreFiles {
			b.WriteString("\n- ... and more files not listed")
		}
	}
	return b.String()
}

func (t *Toolset) readFileTool() (tool.Tool, error) {
	return tool.NewFunc(ReadFileName,
		fmt.Sprintf("Read a file of a skill, by the path "+LoadName+" lists, relative to the skill's directory. "+
			"Returns the file's text; files larger than %s and binary files are refused.", bytesize.Format(t.cfg.maxFileSize)),
		func(_ context.Context, in ReadFileArgs) (string, error) {
			s, err := t.lookup(in.Name)
			if err != nil {
				return "", err
			}
			data, err := t.read(s, in.Path)
			if err != nil {
				return "", err
			}
			if len(data) == 0 {
				return fmt.Sprintf("(%s of skill %q is empty)", in.Path, s.Name), nil
			}
			return string(data), nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("Read skill file"))
}

// read returns the text of the resource file p of s.
func (t *Toolset) read(s *Skill, p string) ([]byte, error) {
	c, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	sfs, release, err := t.repo.skillFS(s.Dir)
	if err != nil {
		return nil, readError(s, p, err)
	}
	defer release()
	data, err := readLimited(sfs, filepath.ToSlash(c), t.cfg.maxFileSize)
	if err != nil {
		return nil, readError(s, p, err)
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 || !utf8.Valid(data) {
		return nil, fmt.Errorf("%q of skill %q looks like a binary file; %s reads text files only", p, s.Name, ReadFileName)
	}
	return data, nil
}

// maxPath is the length, in bytes, of the longest path skill_read_file
// takes.
const maxPath = 4096

// cleanPath checks a path a model gave and returns it cleaned,
// slash-separated and relative to the skill's directory.
func cleanPath(p string) (string, error) {
	switch {
	case len(p) > maxPath:
		return "", fmt.Errorf("path %q is %d bytes long, more than the %d a path may have; %s lists the files", textcut.Clip(p, 64, "..."), len(p), maxPath, LoadName)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("path %q has a NUL byte", p)
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", &outsideError{path: p, why: "it is absolute; give a path relative to the skill's directory, as " + LoadName + " lists it"}
	}
	c := path.Clean(strings.ReplaceAll(p, `\`, "/"))
	switch {
	case c == "." || c == "":
		return "", fmt.Errorf("path %q names the skill's directory, not a file; %s lists the files", p, LoadName)
	case c == ".." || strings.HasPrefix(c, "../"):
		return "", &outsideError{path: p, why: "it climbs out with \"..\""}
	case !filepath.IsLocal(filepath.FromSlash(c)):
		return "", &outsideError{path: p, why: "it is not a plain relative path on this system"}
	}
	for part := range strings.SplitSeq(c, "/") {
		if strings.HasPrefix(part, ".") {
			return "", fmt.Errorf("path %q goes through %q: names that start with \".\" are not part of a skill", p, part)
		}
	}
	return c, nil
}

// readError turns the error of a read of p in s into one a model can act
// on.
func readError(s *Skill, p string, err error) error {
	var (
		ke *kindError
		se *sizeError
	)
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, os.ErrClosed):
		return ErrClosed
	case escapes(err):
		return &outsideError{path: p, why: "a symbolic link on the way leads out of it, or is not followed"}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("skill %q has no file %q; %s lists its files", s.Name, p, LoadName)
	case errors.As(err, &ke):
		return fmt.Errorf("%q of skill %q cannot be read: %w", p, s.Name, ke)
	case errors.As(err, &se):
		return fmt.Errorf("%q of skill %q cannot be read: %w", p, s.Name, se)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%q of skill %q cannot be read: permission denied", p, s.Name)
	}
	return fmt.Errorf("%q of skill %q cannot be read: %w", p, s.Name, cause(err))
}

// quoteAll quotes names and joins them with sep.
func quoteAll(names []string, sep string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, sep)
}
