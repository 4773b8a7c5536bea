package knowledge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"unicode/utf8"
)

// DefaultGlobs returns the patterns of the files AddDir reads when it is
// given none: Markdown and plain text. Each call returns a new slice, so no
// caller changes what another gets.
func DefaultGlobs() []string { return []string{"*.md", "*.markdown", "*.txt"} }

// DirReport says what AddDir did with the files it found.
type DirReport struct {
	// Added are the paths of the files added (or replaced), in the order
	// they were read.
	Added []string `json:"added"`
	// Skipped are the files that matched a pattern but were not added, and
	// why.
	Skipped []Skipped `json:"skipped,omitempty"`
	// Chunks is how many chunks the added files were cut into.
	Chunks int `json:"chunks"`
}

// Skipped is a file AddDir did not add.
type Skipped struct {
	Path string `json:"path"`
	// Reason says why: larger than the limit, binary, unreadable, refused.
	Reason string `json:"reason"`
}

// AddDir adds the files of fsys (an os.DirFS, an embed.FS, an
// fstest.MapFS) whose paths match one of globs, each as a document whose
// ID and source are its path (slash-separated, as fs.FS has it); a file
// added before under the same path is replaced. Without globs it reads
// DefaultGlobs().
//
// A pattern without "/" matches a file's base name in any directory
// ("*.md"); one with "/" matches the whole path, each of its elements as
// path.Match does, with "**" standing for any number of directories
// ("docs/**/*.md", "cmd/*/main.go"). Files and directories whose names
// start with "." are left out.
//
// Files larger than WithMaxDocumentSize, binary files (holding a NUL byte
// or not valid UTF-8), files that cannot be read and files AddDocument
// refuses are skipped, and the report says which and why. A malformed
// pattern, a root that cannot be read, the context's end or an Embedder's
// failure stops AddDir with an error; the report then says what was added
// before.
func (kb *KB) AddDir(ctx context.Context, fsys fs.FS, globs ...string) (DirReport, error) {
	var report DirReport
	if fsys == nil {
		return report, errors.New("knowledge: AddDir: the file system is nil")
	}
	if len(globs) == 0 {
		globs = DefaultGlobs()
	}
	for _, g := range globs {
		if err := checkGlob(g); err != nil {
			return report, err
		}
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			report.Skipped = append(report.Skipped, Skipped{Path: p, Reason: "cannot be read: " + err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !matchAny(globs, p) {
			return nil
		}
		if !d.Type().IsRegular() {
			report.Skipped = append(report.Skipped, Skipped{Path: p, Reason: "not a regular file"})
			return nil
		}
		return kb.addFile(ctx, fsys, p, d, &report)
	})
	if err != nil {
		return report, fmt.Errorf("knowledge: AddDir: %w", err)
	}
	return report, nil
}

// addFile adds the file at p, or says in report why not. Only an error
// that ends AddDir is returned.
func (kb *KB) addFile(ctx context.Context, fsys fs.FS, p string, d fs.DirEntry, report *DirReport) error {
	skip := func(reason string) error {
		report.Skipped = append(report.Skipped, Skipped{Path: p, Reason: reason})
		return nil
	}
	tooLarge := func(n int64) error {
		return skip(fmt.Sprintf("too large: %d bytes, more than the limit of %d bytes (WithMaxDocumentSize)", n, kb.cfg.maxDocSize))
	}
	if info, err := d.Info(); err == nil && info.Size() > int64(kb.cfg.maxDocSize) {
		return tooLarge(info.Size())
	}
	data, err := readFile(fsys, p, kb.cfg.maxDocSize)
	var large *tooLargeError
	switch {
	case errors.Is(err, errNotRegular):
		return skip("not a regular file")
	case errors.As(err, &large):
		if large.size > 0 {
			return tooLarge(large.size)
		}
		return skip(fmt.Sprintf("too large: more than the limit of %d bytes (WithMaxDocumentSize)", kb.cfg.maxDocSize))
	case err != nil:
		return skip("cannot be read: " + err.Error())
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 || !utf8.Valid(data) {
		return skip("binary: not UTF-8 text")
	}
	doc, err := kb.prepare(Doc{ID: p, Source: p, Text: string(data)})
	if err != nil {
		return skip(err.Error())
	}
	if err := kb.embedChunks(ctx, doc.chunks); err != nil {
		return err
	}
	kb.mu.Lock()
	err = kb.checkDim(doc.chunks, kb.docs[doc.doc.ID])
	if err == nil {
		kb.insert(doc)
	}
	kb.mu.Unlock()
	if err != nil {
		return err
	}
	report.Added = append(report.Added, p)
	report.Chunks += len(doc.chunks)
	return nil
}

// errNotRegular is the error of readFile for what is not a regular file.
var errNotRegular = errors.New("not a regular file")

// tooLargeError is the error of readFile for a file larger than the limit:
// its size, or 0 when it grew past the limit as it was read.
type tooLargeError struct{ size int64 }

func (e *tooLargeError) Error() string {
	if e.size == 0 {
		return "the file is larger than the limit"
	}
	return fmt.Sprintf("the file is larger than the limit: %d bytes", e.size)
}

// readFile reads the file p of fsys, but no more than limit+1 bytes of it,
// whatever its size said when it was listed: the file may have changed
// since, or keep growing.
func readFile(fsys fs.FS, p string, limit int) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if info.Size() > int64(limit) {
		return nil, &tooLargeError{size: info.Size()}
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, &tooLargeError{}
	}
	return data, nil
}

// checkGlob checks that every element of pattern is a valid path.Match
// pattern.
func checkGlob(pattern string) error {
	if pattern == "" {
		return errors.New("knowledge: AddDir: a pattern is empty")
	}
	for _, el := range strings.Split(pattern, "/") {
		if _, err := path.Match(el, ""); err != nil {
			return fmt.Errorf("knowledge: AddDir: the pattern %q is malformed: %w", pattern, err)
		}
	}
	return nil
}

// matchAny reports whether one of globs matches the path p.
func matchAny(globs []string, p string) bool {
	for _, g := range globs {
		if !strings.Contains(g, "/") {
			if ok, _ := path.Match(g, path.Base(p)); ok {
				return true
			}
			continue
		}
		if matchElems(strings.Split(g, "/"), strings.Split(p, "/")) {
			return true
		}
	}
	return false
}

// matchElems matches path elements against pattern elements, "**" matching
// any number of them.
func matchElems(pat, elems []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(elems); i++ {
				if matchElems(pat[1:], elems[i:]) {
					return true
				}
			}
			return false
		}
		if len(elems) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], elems[0]); !ok {
			return false
		}
		pat, elems = pat[1:], elems[1:]
	}
	return len(elems) == 0
}
