package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/internal/bytesize"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// skipDirs are the directories no walk enters.
var skipDirs = map[string]bool{".git": true, "node_modules": true}

// maxLineShown is how much of a matching line grep shows, in bytes.
const maxLineShown = 500

// maxLineRead is how much of a line read_file shows, in bytes.
const maxLineRead = 2000

// ListFilesArgs are the arguments of list_files.
type ListFilesArgs struct {
	// Pattern selects the files, as Match reads it.
	Pattern string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"A glob relative to the workspace. ** matches any number of directories; *, ? and [a-z] match within one path segment. Examples: **/*.go (every Go file), src/*.ts (TypeScript files directly in src), docs/** (everything under docs)."`
}

// GrepArgs are the arguments of grep.
type GrepArgs struct {
	// Pattern is the regular expression searched for, line by line.
	Pattern string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"A regular expression in Go (RE2) syntax, matched against each line: for example func \\w+Handler or TODO|FIXME."`
	// Glob, when set, restricts the search to the files it matches.
	Glob string `json:"glob,omitempty" jsonschema_description:"Search only the files this glob matches, as in list_files (for example **/*.go). Leave it out to search every file."`
	// IgnoreCase makes the pattern match regardless of case.
	IgnoreCase bool `json:"ignore_case,omitempty" jsonschema_description:"Match regardless of upper and lower case."`
}

func (w *Toolset) listFilesTool() (tool.Tool, error) {
	desc := fmt.Sprintf("Lists the files of the workspace whose paths match a glob, sorted, at most %d of them. "+
		"Directories named .git and node_modules are not searched.", w.cfg.maxResults)
	return tool.NewFunc(ListFilesName, desc,
		func(ctx context.Context, in ListFilesArgs) (string, error) {
			g, err := compileGlob(in.Pattern)
			if err != nil {
				return "", err
			}
			// The first maxResults paths in order, kept in a slice that is
			// sorted and cut whenever it doubles, so that a large tree costs
			// no more memory than twice what is shown.
			var found []string
			total := 0
			if err := w.walk(ctx, g, func(p string) error {
				total++
				found = append(found, p)
				if len(found) >= 2*w.cfg.maxResults {
					slices.Sort(found)
					found = found[:w.cfg.maxResults]
				}
				return nil
			}); err != nil {
				return "", err
			}
			if total == 0 {
				return fmt.Sprintf("No files match %q.", in.Pattern), nil
			}
			slices.Sort(found)
			found = found[:min(len(found), w.cfg.maxResults)]
			out := strings.Join(found, "\n")
			if total > len(found) {
				out += fmt.Sprintf("\n[showing %d of %d files; narrow the pattern to see the others]", len(found), total)
			}
			return out, nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("List files"))
}

// errEnough stops a walk that found all it may report.
var errEnough = errors.New("enough results")

func (w *Toolset) grepTool() (tool.Tool, error) {
	desc := fmt.Sprintf("Searches the text files of the workspace for lines that match a regular expression and returns them as path:line: text, at most %d of them; in a Jupyter notebook, the cells' sources are searched and a match reads path [cell N]:line: text, numbered as read_file shows the notebook. "+
		"glob narrows the search to some files. Binary files, files larger than %s, and directories named .git and node_modules are not searched.",
		w.cfg.maxResults, bytesize.Format(w.cfg.maxFileSize))
	return tool.NewFunc(GrepName, desc,
		func(ctx context.Context, in GrepArgs) (string, error) {
			expr := in.Pattern
			if in.IgnoreCase {
				expr = "(?i)" + expr
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return "", fmt.Errorf("pattern %q is not a valid Go regular expression: %s", clip(in.Pattern), regexpProblem(err))
			}
			var prefix []byte
			if lit, _ := re.LiteralPrefix(); lit != "" {
				prefix = []byte(lit)
			}
			g := anyFile
			if in.Glob != "" {
				if g, err = compileGlob(in.Glob); err != nil {
					return "", err
				}
			}
			var (
				b          strings.Builder
				matches    int
				cut        bool
				oversized  int
				unreadable int
			)
			err = w.walk(ctx, g, func(p string) error {
				data, skip := w.searchable(p)
				switch skip {
				case skipLarge:
					oversized++
					return nil
				case skipUnreadable:
					unreadable++
					return nil
				case skipBinary:
					return nil
				}
				// search reports the matching lines of text, under where.
				search := func(where string, text []byte) error {
					n := 0
					for len(text) > 0 {
						n++
						line := text
						if i := bytes.IndexByte(text, '\n'); i >= 0 {
							line, text = text[:i], text[i+1:]
						} else {
							text = nil
						}
						line = bytes.TrimSuffix(line, []byte("\r"))
						if !re.Match(line) {
							continue
						}
						if matches == w.cfg.maxResults {
							cut = true
							return errEnough
						}
						matches++
						fmt.Fprintf(&b, "%s:%d: %s\n", where, n, textcut.Clip(string(line), maxLineShown, " [line cut]"))
					}
					return nil
				}
				// A notebook is searched cell by cell, with the cell numbers
				// and line numbers read_file shows, rather than as JSON (in
				// which a literal can be escaped, so the prefix test below
				// does not apply).
				if isNotebook(p) {
					if nb, err := parseNotebook(p, data); err == nil {
						for i, c := range nb.cells {
							if err := search(fmt.Sprintf("%s [cell %d]", p, i), []byte(c.source)); err != nil {
								return err
							}
						}
						return ctx.Err()
					}
				}
				// A matching line holds the pattern's literal prefix, if it has
				// one: a file without it needs no closer look. (Matching the
				// whole file instead would be wrong: ^ and $ mean its ends.)
				if prefix != nil && !bytes.Contains(data, prefix) {
					return nil
				}
				if err := search(p, data); err != nil {
					return err
				}
				return ctx.Err()
			})
			if err != nil && !errors.Is(err, errEnough) {
				return "", err
			}
			if matches == 0 {
				b.WriteString(fmt.Sprintf("No matches for %q", in.Pattern))
				if in.Glob != "" {
					b.WriteString(fmt.Sprintf(" in files matching %q", in.Glob))
				}
				b.WriteString(".\n")
			}
			if cut {
				fmt.Fprintf(&b, "[showing the first %d matches; narrow the pattern or the glob to see the others]\n", matches)
			}
			if oversized > 0 {
				fmt.Fprintf(&b, "[%s larger than %s not searched]\n", plural(oversized, "file"), bytesize.Format(w.cfg.maxFileSize))
			}
			if unreadable > 0 {
				fmt.Fprintf(&b, "[%s could not be read]\n", plural(unreadable, "file"))
			}
			return strings.TrimSuffix(b.String(), "\n"), nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("Search files"))
}

// Why grep leaves a file out.
const (
	skipNone = iota
	skipLarge
	skipBinary
	skipUnreadable
)

// searchable returns the content of the file p for grep, or why it is left
// out.
func (w *Toolset) searchable(p string) ([]byte, int) {
	f, err := w.openRead(p)
	if err != nil {
		return nil, skipUnreadable
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return nil, skipUnreadable
	}
	if info.Size() > w.cfg.maxFileSize {
		return nil, skipLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, w.cfg.maxFileSize+1))
	switch {
	case err != nil:
		return nil, skipUnreadable
	case int64(len(data)) > w.cfg.maxFileSize:
		return nil, skipLarge
	case isBinary(data):
		return nil, skipBinary
	}
	return data, skipNone
}

// walk calls fn, in lexical order, with the slash-separated path of each
// regular file of the workspace that g matches. It enters no directory
// named in skipDirs and none below which g cannot match, follows no
// symbolic link to a directory, and reports a symbolic link to a file only
// when the file is inside the workspace. Directories it cannot read are
// left out, and so are the temporary files of writes in progress. It stops
// at the first error fn returns, and when ctx is done.
func (w *Toolset) walk(ctx context.Context, g glob, fn func(p string) error) error {
	return fs.WalkDir(w.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == "." {
				return pathError(".", err)
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			if skipDirs[d.Name()] || !g.mayMatchBelow(p) {
				return fs.SkipDir
			}
			return nil
		}
		if !g.match(p) || isTempName(d.Name()) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// os.Root follows the link only while it stays inside.
			info, err := w.root.Stat(native(p))
			if err != nil || !info.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		return fn(p)
	})
}

// regexpProblem says what is wrong with a regular expression that did not
// compile, quoting at most maxQuoted bytes of the part at fault (regexp's
// own error quotes it whole).
func regexpProblem(err error) string {
	if se, ok := errors.AsType[*syntax.Error](err); ok {
		return fmt.Sprintf("error parsing regexp: %s: `%s`", se.Code, clip(se.Expr))
	}
	return err.Error()
}
