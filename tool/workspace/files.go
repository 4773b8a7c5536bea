package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/trellis-go/trellis/internal/bytesize"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// ReadFileArgs are the arguments of read_file.
type ReadFileArgs struct {
	// Path is the file's path, relative to the workspace.
	Path string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file's path, relative to the workspace, with / between segments (for example src/main.go)."`
	// Offset is the number of the first line to show, from 1 (1 when 0).
	Offset int `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"The number of the first line to show, counting from 1. Leave it out to start at the top."`
	// Limit is how many lines to show at most (DefaultReadLimit when 0).
	Limit int `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"How many lines to show at most (2000 when left out)."`
}

// WriteFileArgs are the arguments of write_file.
type WriteFileArgs struct {
	// Path is the file's path, relative to the workspace.
	Path string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file's path, relative to the workspace, with / between segments. Missing parent directories are created."`
	// Content is the file's whole new content.
	Content string `json:"content" jsonschema_description:"The file's whole content. It replaces what the file held, if it existed."`
}

// EditFileArgs are the arguments of edit_file.
type EditFileArgs struct {
	// Path is the file's path, relative to the workspace.
	Path string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file's path, relative to the workspace, with / between segments."`
	// OldString is the exact text to replace.
	OldString string `json:"old_string" jsonschema:"minLength=1" jsonschema_description:"The exact text to replace, with its indentation and line breaks, as the file holds it (without read_file's line-number prefixes). It must occur exactly once unless replace_all is true: include enough surrounding lines to make it unique."`
	// NewString is the text that replaces it.
	NewString string `json:"new_string" jsonschema_description:"The text that replaces old_string; it must differ from it."`
	// ReplaceAll replaces every occurrence instead of requiring one.
	ReplaceAll bool `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence of old_string (for a rename). Without it old_string must occur exactly once."`
}

func (w *Toolset) readFileTool() (tool.Tool, error) {
	desc := fmt.Sprintf("Reads a text file of the workspace. Each line comes prefixed with its number and a tab; the prefix is not part of the file. "+
		"At most %d lines are shown from offset (limit sets another number), and a note at the end says when the file has more. "+
		"Files larger than %s and binary files are refused. "+
		"A Jupyter notebook (.ipynb) is shown cell by cell instead of as JSON: each cell's number (from 0), type and id, its source lines numbered from 1 within the cell, and its outputs in short; offset and limit then count the lines of that rendering.",
		DefaultReadLimit, bytesize.Format(w.cfg.maxFileSize))
	if !w.cfg.readOnly {
		desc += " Change a notebook's cells with " + NotebookEditName + "."
	}
	return tool.NewFunc(ReadFileName, desc,
		func(ctx context.Context, in ReadFileArgs) (string, error) {
			p, err := clean(in.Path)
			if err != nil {
				return "", err
			}
			data, err := w.readText(p, ReadFileName)
			if err != nil {
				return "", err
			}
			if isNotebook(p) {
				nb, err := parseNotebook(p, data)
				if err == nil {
					return renderNotebook(p, nb, in.Offset, in.Limit)
				}
				// A broken notebook is shown as the text it is, for the model
				// to see what is wrong and mend it.
				text, terr := numbered(p, data, in.Offset, in.Limit)
				if terr != nil {
					return "", terr
				}
				return fmt.Sprintf("[%v; its text follows]\n%s", err, text), nil
			}
			return numbered(p, data, in.Offset, in.Limit)
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("Read file"))
}

// readText returns the content of the text file p, refusing directories,
// files larger than the limit and binary files; by names the tool for the
// messages.
func (w *Toolset) readText(p, by string) ([]byte, error) {
	// The checks are made on the open file, not on its path before it is
	// opened, which something else could change in between; and opening
	// does not block, as it would on a named pipe.
	f, err := w.openRead(p)
	if err != nil {
		return nil, pathError(p, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, pathError(p, err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%q is a directory, not a file; list_files shows what it holds", clip(p))
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", clip(p))
	}
	tooLarge := func(size int64) error {
		return fmt.Errorf("%q is %s, larger than the %s %s works on", clip(p), bytesize.Format(size), bytesize.Format(w.cfg.maxFileSize), by)
	}
	if info.Size() > w.cfg.maxFileSize {
		return nil, tooLarge(info.Size())
	}
	// The file may have grown since Stat: read one byte beyond the limit
	// to tell.
	data, err := io.ReadAll(io.LimitReader(f, w.cfg.maxFileSize+1))
	if err != nil {
		return nil, pathError(p, err)
	}
	if int64(len(data)) > w.cfg.maxFileSize {
		return nil, tooLarge(int64(len(data)))
	}
	if isBinary(data) {
		return nil, fmt.Errorf("%q looks like a binary file (it has a NUL byte); %s works on text files only", clip(p), by)
	}
	return data, nil
}

// isBinary reports whether data looks binary: a NUL byte in its first
// binarySniff bytes.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

// numbered renders the lines of the file p (content data) from offset on,
// at most limit of them, each prefixed with its number, and a note when
// lines were left out.
func numbered(p string, data []byte, offset, limit int) (string, error) {
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = DefaultReadLimit
	}
	if len(data) == 0 {
		return fmt.Sprintf("%q is empty.", p), nil
	}
	text := strings.TrimSuffix(string(data), "\n")
	total := strings.Count(text, "\n") + 1
	if offset > total {
		return "", fmt.Errorf("offset %d is past the end of %q, which has %d lines", offset, clip(p), total)
	}
	last := offset - 1 + min(limit, total-offset+1)
	var b strings.Builder
	n := 0
	for line := range strings.SplitSeq(text, "\n") {
		n++
		if n < offset {
			continue
		}
		if n > last {
			break
		}
		fmt.Fprintf(&b, "%6d\t%s\n", n, textcut.Clip(strings.TrimSuffix(line, "\r"), maxLineRead, " [line cut]"))
	}
	switch {
	case last < total:
		fmt.Fprintf(&b, "[lines %d-%d of %d; call again with offset %d]", offset, last, total, last+1)
	case offset > 1:
		fmt.Fprintf(&b, "[lines %d-%d of %d]", offset, last, total)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func (w *Toolset) writeFileTool() (tool.Tool, error) {
	return tool.NewFunc(WriteFileName,
		"Writes a file of the workspace with the content given, creating it and its missing parent directories, or replacing all it held. To change part of an existing file, use edit_file.",
		func(ctx context.Context, in WriteFileArgs) (string, error) {
			p, err := clean(in.Path)
			if err != nil {
				return "", err
			}
			if p == "." {
				return "", fmt.Errorf("path %q names the workspace itself, not a file", clip(in.Path))
			}
			w.writing.Lock()
			defer w.writing.Unlock()
			verb := "Overwrote"
			info, err := w.root.Stat(native(p))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				verb = "Created"
			case err != nil:
				return "", pathError(p, err)
			case info.IsDir():
				return "", fmt.Errorf("%q is a directory; it cannot be written as a file", clip(p))
			case !info.Mode().IsRegular():
				return "", fmt.Errorf("%q is not a regular file; it cannot be written", clip(p))
			}
			if dir := path.Dir(p); dir != "." {
				if err := w.root.MkdirAll(native(dir), 0o755); err != nil {
					return "", pathError(dir, err)
				}
			}
			if err := w.write(p, []byte(in.Content)); err != nil {
				return "", pathError(p, err)
			}
			return fmt.Sprintf("%s %q (%s, %s).", verb, p, plural(lineCount(in.Content), "line"), plural(len(in.Content), "byte")), nil
		},
		tool.WithMetadata(tool.Metadata{Destructive: true}),
		tool.WithTitle("Write file"))
}

func (w *Toolset) editFileTool() (tool.Tool, error) {
	return tool.NewFunc(EditFileName,
		"Edits a text file of the workspace by replacing exact text: old_string must occur in the file exactly once (or set replace_all to replace every occurrence). Read the file first and copy old_string from it, without the line-number prefixes.",
		func(ctx context.Context, in EditFileArgs) (string, error) {
			p, err := clean(in.Path)
			if err != nil {
				return "", err
			}
			if in.OldString == "" {
				return "", fmt.Errorf("old_string is empty; give the text to replace in %q (write_file creates files)", clip(p))
			}
			if in.OldString == in.NewString {
				return "", fmt.Errorf("old_string and new_string are the same; %q was not changed", clip(p))
			}
			w.writing.Lock()
			defer w.writing.Unlock()
			data, err := w.readText(p, EditFileName)
			if err != nil {
				return "", err
			}
			content := string(data)
			old, repl := in.OldString, in.NewString
			first := strings.Index(content, old)
			if first < 0 && strings.Contains(content, "\r\n") && strings.Contains(old, "\n") && !strings.Contains(old, "\r") {
				// read_file shows CRLF lines without their \r: the model's
				// line breaks may be the file's.
				old = crlf(old)
				first = strings.Index(content, old)
			}
			if strings.Contains(content, "\r\n") && !strings.Contains(strings.ReplaceAll(content, "\r\n", ""), "\n") && !strings.Contains(repl, "\r") {
				repl = crlf(repl) // a CRLF file stays one
			}
			switch {
			case first < 0 && isNotebook(p):
				return "", fmt.Errorf("old_string occurs 0 times in %q; read_file shows a notebook's cells, not the JSON the file holds: change a cell with %s", clip(p), NotebookEditName)
			case first < 0:
				return "", fmt.Errorf("old_string occurs 0 times in %q; read the file again and copy the text exactly, with its indentation and line breaks", clip(p))
			case !in.ReplaceAll && strings.Contains(content[first+1:], old):
				return "", fmt.Errorf("old_string occurs %d times in %q; include more of the surrounding lines to pick one, or set replace_all to replace them all", max(2, strings.Count(content, old)), clip(p))
			}
			line := strings.Count(content[:first], "\n") + 1
			count := 1
			if in.ReplaceAll {
				count = strings.Count(content, old) // the replacements made: they cannot overlap
				content = strings.ReplaceAll(content, old, repl)
			} else {
				content = content[:first] + repl + content[first+len(old):]
			}
			if err := w.write(p, []byte(content)); err != nil {
				return "", pathError(p, err)
			}
			if count == 1 {
				return fmt.Sprintf("Edited %q: replaced 1 occurrence, at line %d.", p, line), nil
			}
			return fmt.Sprintf("Edited %q: replaced %d occurrences, the first at line %d.", p, count, line), nil
		},
		tool.WithMetadata(tool.Metadata{Destructive: true}),
		tool.WithTitle("Edit file"))
}

// lineCount counts the lines of s, a last line without a line break
// included.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// plural writes n and a noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// crlf turns the bare line breaks of s into CRLF ones.
func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// openRead opens the file p for reading without blocking (a named pipe
// would block until a writer came).
func (w *Toolset) openRead(p string) (*os.File, error) {
	return w.root.OpenFile(native(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// writeInPlace writes data over the file p, through a symbolic link if p
// is one, creating it: truncating, then writing. It does not block on a
// named pipe (opening one for writing fails instead) and writes only to a
// regular file with a single hard link.
func (w *Toolset) writeInPlace(p string, data []byte) error {
	f, err := w.root.OpenFile(native(p), os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file")
	}
	if err == nil && links(info) > 1 {
		// The file opened, whatever link led to it: one with other names
		// is not written (see write).
		err = &hardLinkedError{links: links(info)}
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
