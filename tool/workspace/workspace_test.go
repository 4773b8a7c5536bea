package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/workspace"
)

// args are a call's arguments.
type args = map[string]any

// put writes files (slash-separated path to content) under dir.
func put(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// read returns the content of the file name under dir.
func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	require.NoError(t, err)
	return string(b)
}

// open returns a workspace over a new directory holding files, and the
// directory.
func open(t *testing.T, files map[string]string, opts ...workspace.Option) (*workspace.Toolset, string) {
	t.Helper()
	dir := t.TempDir()
	put(t, dir, files)
	ws, err := workspace.New(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ws.Close()) })
	return ws, dir
}

// find returns the tool of ws named name.
func find(t *testing.T, ws *workspace.Toolset, name string) tool.Tool {
	t.Helper()
	tools, err := ws.Tools(context.Background())
	require.NoError(t, err)
	for _, tl := range tools {
		if tool.Name(tl) == name {
			return tl
		}
	}
	t.Fatalf("the workspace has no tool %q", name)
	return nil
}

// call calls the tool name of ws with a as its arguments, as an executor
// does.
func call(t *testing.T, ws *workspace.Toolset, name string, a args) tool.Result {
	t.Helper()
	raw, err := json.Marshal(a)
	require.NoError(t, err)
	return tool.Invoke(context.Background(), find(t, ws, name), model.ToolCall{ID: "c1", Name: name, Arguments: raw})
}

// succeed calls the tool and returns the text of its result, which must
// not be an error.
func succeed(t *testing.T, ws *workspace.Toolset, name string, a args) string {
	t.Helper()
	r := call(t, ws, name, a)
	require.False(t, r.IsError, "%s %v: %s", name, a, r.Text())
	return r.Text()
}

// fail calls the tool and returns the text of its result, which must be a
// tool error.
func fail(t *testing.T, ws *workspace.Toolset, name string, a args) tool.Result {
	t.Helper()
	r := call(t, ws, name, a)
	require.True(t, r.IsError, "%s %v succeeded: %s", name, a, r.Text())
	assert.Equal(t, tool.CodeToolError, r.ErrorCode, r.Text())
	return r
}

// lines returns n lines "line 1" ... "line n", each ended by a line break.
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestNewRefusesBadSettings(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"file.txt": "x"})
	tests := []struct {
		name string
		dir  string
		opts []workspace.Option
		want string
	}{
		{"missing directory", filepath.Join(dir, "nope"), nil, "no such file or directory"},
		{"a file", filepath.Join(dir, "file.txt"), nil, "is not a directory"},
		{"empty name", dir, []workspace.Option{workspace.WithName("")}, "WithName: the name is empty"},
		{"no file size", dir, []workspace.Option{workspace.WithMaxFileSize(0)}, "WithMaxFileSize: n must be at least 1"},
		{"no results", dir, []workspace.Option{workspace.WithMaxResults(-1)}, "WithMaxResults: n must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := workspace.New(tt.dir, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, ws)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestToolsetOffersItsTools(t *testing.T) {
	tests := []struct {
		name  string
		opts  []workspace.Option
		set   string
		tools []string
	}{
		{"default", nil, workspace.DefaultName, []string{"read_file", "list_files", "grep", "write_file", "edit_file", "notebook_edit"}},
		{"read-only", []workspace.Option{workspace.WithReadOnly(), workspace.WithName("docs"), nil}, "docs", []string{"read_file", "list_files", "grep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, _ := open(t, nil, tt.opts...)
			assert.Equal(t, tt.set, ws.Name())
			tools, err := ws.Tools(context.Background())
			require.NoError(t, err)
			var names []string
			for _, tl := range tools {
				names = append(names, tool.Name(tl))
				assert.NotEmpty(t, tool.TitleOf(tl), "%s has a title", tool.Name(tl))
			}
			assert.Equal(t, tt.tools, names)
		})
	}

	ws, _ := open(t, nil)
	for name, want := range map[string]tool.Metadata{
		workspace.ReadFileName:     {ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true},
		workspace.ListFilesName:    {ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true},
		workspace.GrepName:         {ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true},
		workspace.WriteFileName:    {Destructive: true},
		workspace.EditFileName:     {Destructive: true},
		workspace.NotebookEditName: {Destructive: true},
	} {
		assert.Equal(t, want, tool.MetadataOf(find(t, ws, name)), name)
	}
	assert.Equal(t, "Read file", tool.TitleOf(find(t, ws, workspace.ReadFileName)))
}

func TestCloseEndsTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"a.txt": "a\n"})
	ws, err := workspace.New(dir)
	require.NoError(t, err)
	read := find(t, ws, workspace.ReadFileName)
	require.NoError(t, ws.Close())
	require.NoError(t, ws.Close(), "closing twice is harmless")

	_, err = ws.Tools(context.Background())
	assert.ErrorContains(t, err, `workspace "workspace" is closed`)
	r := tool.Invoke(context.Background(), read, model.ToolCall{ID: "c", Name: workspace.ReadFileName, Arguments: json.RawMessage(`{"path":"a.txt"}`)})
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), `"a.txt" cannot be accessed: the workspace is closed`)
}

func TestReadFile(t *testing.T) {
	files := map[string]string{
		"notes.txt":       "first\nsecond\nthird\n",
		"no-newline.txt":  "alpha\nbeta",
		"crlf.txt":        "one\r\ntwo\r\n",
		"empty.txt":       "",
		"long.txt":        lines(2500),
		"ten.txt":         lines(10),
		"dir/nested.md":   "# Title\n",
		"image.png":       "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"late-binary.bin": strings.Repeat("a", 9000) + "\x00",
	}
	ws, _ := open(t, files)

	t.Run("success", func(t *testing.T) {
		tests := []struct {
			name string
			args args
			want string
		}{
			{"whole file", args{"path": "notes.txt"}, "     1\tfirst\n     2\tsecond\n     3\tthird"},
			{"no final line break", args{"path": "no-newline.txt"}, "     1\talpha\n     2\tbeta"},
			{"carriage returns dropped", args{"path": "crlf.txt"}, "     1\tone\n     2\ttwo"},
			{"empty", args{"path": "empty.txt"}, `"empty.txt" is empty.`},
			{"nested, path cleaned", args{"path": "./dir/../dir/nested.md"}, "     1\t# Title"},
			{"a window", args{"path": "ten.txt", "offset": 4, "limit": 2}, "     4\tline 4\n     5\tline 5\n[lines 4-5 of 10; call again with offset 6]"},
			{"to the end", args{"path": "ten.txt", "offset": 9}, "     9\tline 9\n    10\tline 10\n[lines 9-10 of 10]"},
			{"the first lines", args{"path": "ten.txt", "limit": 1}, "     1\tline 1\n[lines 1-1 of 10; call again with offset 2]"},
			{"limit beyond the end", args{"path": "ten.txt", "offset": 10, "limit": 50}, "    10\tline 10\n[lines 10-10 of 10]"},
			{"a binary byte after the first 8 KiB; a long line cut", args{"path": "late-binary.bin"}, "     1\t" + strings.Repeat("a", 2000) + " [line cut]"},
			{"a limit that would overflow", args{"path": "ten.txt", "offset": 9, "limit": math.MaxInt}, "     9\tline 9\n    10\tline 10\n[lines 9-10 of 10]"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assert.Equal(t, tt.want, succeed(t, ws, workspace.ReadFileName, tt.args))
			})
		}
	})

	t.Run("default limit", func(t *testing.T) {
		out := succeed(t, ws, workspace.ReadFileName, args{"path": "long.txt"})
		got := strings.Split(out, "\n")
		require.Len(t, got, 2001)
		assert.Equal(t, "  2000\tline 2000", got[1999])
		assert.Equal(t, "[lines 1-2000 of 2500; call again with offset 2001]", got[2000])

		out = succeed(t, ws, workspace.ReadFileName, args{"path": "long.txt", "offset": 2001})
		assert.True(t, strings.HasPrefix(out, "  2001\tline 2001\n"), out[:40])
		assert.True(t, strings.HasSuffix(out, "  2500\tline 2500\n[lines 2001-2500 of 2500]"))
	})

	t.Run("failure", func(t *testing.T) {
		tests := []struct {
			name string
			args args
			want string
		}{
			{"missing", args{"path": "missing.txt"}, `"missing.txt" does not exist; list_files shows the files there are`},
			{"missing directory", args{"path": "nope/missing.txt"}, `"nope/missing.txt" does not exist`},
			{"a directory", args{"path": "dir"}, `"dir" is a directory, not a file`},
			{"the workspace", args{"path": "."}, `"." is a directory, not a file`},
			{"a file as a directory", args{"path": "notes.txt/x"}, `"notes.txt/x" cannot be accessed: not a directory`},
			{"past the end", args{"path": "ten.txt", "offset": 11}, `offset 11 is past the end of "ten.txt", which has 10 lines`},
			{"binary", args{"path": "image.png"}, `"image.png" looks like a binary file (it has a NUL byte); read_file works on text files only`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assert.Contains(t, fail(t, ws, workspace.ReadFileName, tt.args).Text(), tt.want)
			})
		}
	})

	t.Run("invalid arguments", func(t *testing.T) {
		for _, a := range []args{{}, {"path": ""}, {"path": "notes.txt", "offset": 0}, {"path": "notes.txt", "limit": -1}} {
			r := call(t, ws, workspace.ReadFileName, a)
			assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "%v: %s", a, r.Text())
		}
	})
}

func TestMaxFileSize(t *testing.T) {
	files := map[string]string{"small.txt": "needle\n", "big.txt": strings.Repeat("needle\n", 300)}
	ws, dir := open(t, files, workspace.WithMaxFileSize(1024))

	assert.Equal(t, "     1\tneedle", succeed(t, ws, workspace.ReadFileName, args{"path": "small.txt"}))
	assert.Contains(t, fail(t, ws, workspace.ReadFileName, args{"path": "big.txt"}).Text(),
		`"big.txt" is 2.1 KiB, larger than the 1 KiB read_file works on`)
	assert.Contains(t, fail(t, ws, workspace.EditFileName, args{"path": "big.txt", "old_string": "needle", "new_string": "pin", "replace_all": true}).Text(),
		`"big.txt" is 2.1 KiB, larger than the 1 KiB edit_file works on`)
	assert.Equal(t, files["big.txt"], read(t, dir, "big.txt"))
	assert.Equal(t, "small.txt:1: needle\n[1 file larger than 1 KiB not searched]", succeed(t, ws, workspace.GrepName, args{"pattern": "needle"}))

	// write_file is not limited, and the default limit is 1 MiB.
	succeed(t, ws, workspace.WriteFileName, args{"path": "big.txt", "content": strings.Repeat("x", 4096)})
	ws2, _ := open(t, map[string]string{"huge.txt": strings.Repeat("x", workspace.DefaultMaxFileSize+1)})
	assert.Contains(t, fail(t, ws2, workspace.ReadFileName, args{"path": "huge.txt"}).Text(), `"huge.txt" is 1 MiB, larger than the 1 MiB read_file works on`)
}

func TestWriteFile(t *testing.T) {
	ws, dir := open(t, map[string]string{"old.txt": "before\n", "dir/keep.txt": "k"})

	tests := []struct {
		name, path, content, want string
	}{
		{"new file", "new.txt", "hello\n", `Created "new.txt" (1 line, 6 bytes).`},
		{"new directories", "a/b/c/deep.go", "package c\n\nfunc F() {}", `Created "a/b/c/deep.go" (3 lines, 22 bytes).`},
		{"existing directory", "dir/other.txt", "", `Created "dir/other.txt" (0 lines, 0 bytes).`},
		{"overwrite", "old.txt", "after\n", `Overwrote "old.txt" (1 line, 6 bytes).`},
		{"cleaned path", "./x/../y.txt", "y", `Created "y.txt" (1 line, 1 byte).`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, succeed(t, ws, workspace.WriteFileName, args{"path": tt.path, "content": tt.content}))
			assert.Equal(t, tt.content, read(t, dir, filepath.Clean(tt.path)))
		})
	}
	assert.Equal(t, "k", read(t, dir, "dir/keep.txt"))

	failures := []struct {
		name string
		args args
		want string
	}{
		{"a directory", args{"path": "dir", "content": "x"}, `"dir" is a directory; it cannot be written as a file`},
		{"the workspace", args{"path": ".", "content": "x"}, `path "." names the workspace itself, not a file`},
		{"below a file", args{"path": "old.txt/child.txt", "content": "x"}, `"old.txt/child.txt" cannot be accessed: not a directory`},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, fail(t, ws, workspace.WriteFileName, tt.args).Text(), tt.want)
		})
	}
	r := call(t, ws, workspace.WriteFileName, args{"path": "no-content.txt"})
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "content is required: %s", r.Text())
}

func TestEditFile(t *testing.T) {
	const src = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n\tprintln(\"hi\")\n}\n"
	tests := []struct {
		name    string
		args    args
		want    string // the result's text, or what an error says
		wantErr bool
		after   string // the file after the call
	}{
		{
			name:  "unique",
			args:  args{"old_string": "func main() {", "new_string": "func run() {"},
			want:  `Edited "main.go": replaced 1 occurrence, at line 3.`,
			after: strings.Replace(src, "func main", "func run", 1),
		},
		{
			name:  "multi-line",
			args:  args{"old_string": "\tprintln(\"hi\")\n\tprintln(\"hi\")\n", "new_string": "\tprintln(\"hi twice\")\n"},
			want:  `Edited "main.go": replaced 1 occurrence, at line 4.`,
			after: "package main\n\nfunc main() {\n\tprintln(\"hi twice\")\n}\n",
		},
		{
			name:  "replace all",
			args:  args{"old_string": `"hi"`, "new_string": `"bye"`, "replace_all": true},
			want:  `Edited "main.go": replaced 2 occurrences, the first at line 4.`,
			after: strings.ReplaceAll(src, `"hi"`, `"bye"`),
		},
		{
			name:  "replace all of one",
			args:  args{"old_string": "package main", "new_string": "package app", "replace_all": true},
			want:  `Edited "main.go": replaced 1 occurrence, at line 1.`,
			after: strings.Replace(src, "package main", "package app", 1),
		},
		{
			name:    "ambiguous",
			args:    args{"old_string": `println("hi")`, "new_string": `println("bye")`},
			want:    `old_string occurs 2 times in "main.go"; include more of the surrounding lines to pick one, or set replace_all to replace them all`,
			wantErr: true,
		},
		{
			name:    "not found",
			args:    args{"old_string": "func Main() {", "new_string": "func run() {"},
			want:    `old_string occurs 0 times in "main.go"; read the file again and copy the text exactly`,
			wantErr: true,
		},
		{
			name:    "not found, replace all",
			args:    args{"old_string": "fmt", "new_string": "log", "replace_all": true},
			want:    `old_string occurs 0 times in "main.go"`,
			wantErr: true,
		},
		{
			name:    "line-number prefix copied",
			args:    args{"old_string": "     3\tfunc main() {", "new_string": "func run() {"},
			want:    `old_string occurs 0 times in "main.go"`,
			wantErr: true,
		},
		{
			name:    "no change",
			args:    args{"old_string": "main", "new_string": "main"},
			want:    `old_string and new_string are the same; "main.go" was not changed`,
			wantErr: true,
		},
		{
			name:    "missing file",
			args:    args{"path": "other.go", "old_string": "a", "new_string": "b"},
			want:    `"other.go" does not exist`,
			wantErr: true,
		},
		{
			name:    "binary file",
			args:    args{"path": "blob.bin", "old_string": "a", "new_string": "b"},
			want:    `"blob.bin" looks like a binary file (it has a NUL byte); edit_file works on text files only`,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, dir := open(t, map[string]string{"main.go": src, "blob.bin": "a\x00b"})
			a := args{"path": "main.go"}
			for k, v := range tt.args {
				a[k] = v
			}
			if tt.wantErr {
				assert.Contains(t, fail(t, ws, workspace.EditFileName, a).Text(), tt.want)
				assert.Equal(t, src, read(t, dir, "main.go"), "a failed edit changes nothing")
				assert.Equal(t, "a\x00b", read(t, dir, "blob.bin"))
				return
			}
			assert.Equal(t, tt.want, succeed(t, ws, workspace.EditFileName, a))
			assert.Equal(t, tt.after, read(t, dir, "main.go"))
		})
	}

	ws, _ := open(t, map[string]string{"main.go": src})
	r := call(t, ws, workspace.EditFileName, args{"path": "main.go", "old_string": "", "new_string": "x"})
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "an empty old_string never reaches the tool: %s", r.Text())
}

func TestEditKeepsTheFilesMode(t *testing.T) {
	ws, dir := open(t, map[string]string{"run.sh": "echo hi\n"})
	p := filepath.Join(dir, "run.sh")
	require.NoError(t, os.Chmod(p, 0o755))
	succeed(t, ws, workspace.EditFileName, args{"path": "run.sh", "old_string": "hi", "new_string": "bye"})
	succeed(t, ws, workspace.WriteFileName, args{"path": "run.sh", "content": "echo again\n"})
	info, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
}

// tree is a workspace's files for the tests of list_files and grep.
var tree = map[string]string{
	"main.go":                      "package main\n\n// TODO: flags\nfunc main() { run() }\n",
	"README.md":                    "# Demo\nRun it with go run.\n",
	"cmd/app/main.go":              "package main\n\nfunc main() {}\n",
	"internal/run/run.go":          "package run\n\n// Run runs.\nfunc Run() error { return nil }\n// todo: tests\n",
	"internal/run/run_test.go":     "package run\n",
	"docs/guide/intro.md":          "Intro.\nTODO: write it\n",
	"assets/logo.png":              "\x89PNG\x00TODO",
	".git/config":                  "[core] TODO\n",
	"node_modules/x/index.js":      "// TODO\n",
	"web/node_modules/y/index.js":  "// TODO\n",
	".github/workflows/ci.yml":     "on: push # TODO\n",
	"dir.with.dots/file":           "x\n",
	"dir.with.dots/sub/deeper.txt": "x\n",
}

func TestListFiles(t *testing.T) {
	ws, _ := open(t, tree)
	tests := []struct {
		pattern string
		want    []string
	}{
		{"**/*.go", []string{"cmd/app/main.go", "internal/run/run.go", "internal/run/run_test.go", "main.go"}},
		{"*.go", []string{"main.go"}},
		{"./*.go", []string{"main.go"}},
		{"**/main.go", []string{"cmd/app/main.go", "main.go"}},
		{"internal/**", []string{"internal/run/run.go", "internal/run/run_test.go"}},
		{"internal/**/*_test.go", []string{"internal/run/run_test.go"}},
		{"*/*/*.go", []string{"cmd/app/main.go", "internal/run/run.go", "internal/run/run_test.go"}},
		{"**/*.{go,md}", nil}, // no braces in path.Match
		{"**/*.md", []string{"README.md", "docs/guide/intro.md"}},
		{"docs/**/intro.md", []string{"docs/guide/intro.md"}},
		{"**/run/**/*.go", []string{"internal/run/run.go", "internal/run/run_test.go"}},
		{"**/**/main.go", []string{"cmd/app/main.go", "main.go"}},
		{"**/[A-Z]*", []string{"README.md"}},
		{"**/index.js", nil}, // node_modules is not searched
		{".git/*", nil},      // nor .git
		{".github/**", []string{".github/workflows/ci.yml"}},
		{"dir.with.dots/**", []string{"dir.with.dots/file", "dir.with.dots/sub/deeper.txt"}},
		{"cmd", nil},                          // a directory is no file
		{"cmd/", []string{"cmd/app/main.go"}}, // but a trailing slash means what it holds
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			out := succeed(t, ws, workspace.ListFilesName, args{"pattern": tt.pattern})
			if tt.want == nil {
				assert.Equal(t, fmt.Sprintf("No files match %q.", tt.pattern), out)
				return
			}
			assert.Equal(t, strings.Join(tt.want, "\n"), out)
		})
	}

	t.Run("every file, sorted", func(t *testing.T) {
		out := succeed(t, ws, workspace.ListFilesName, args{"pattern": "**"})
		assert.Equal(t, strings.Join([]string{
			".github/workflows/ci.yml", "README.md", "assets/logo.png", "cmd/app/main.go",
			"dir.with.dots/file", "dir.with.dots/sub/deeper.txt", "docs/guide/intro.md",
			"internal/run/run.go", "internal/run/run_test.go", "main.go",
		}, "\n"), out, "sorted as strings, not in the walk's order")
	})

	t.Run("failure", func(t *testing.T) {
		for pattern, want := range map[string]string{
			"[a-":      `pattern "[a-" is not a valid glob: the segment "[a-" is malformed`,
			`src/\`:    `the segment "\\" is malformed`,
			"../*":     `pattern "../*" has a ".." segment; patterns cannot reach outside the workspace`,
			"a/../../": `has a ".." segment`,
			"/etc/*":   `pattern "/etc/*" is absolute`,
			".":        `pattern "." names no files`,
		} {
			assert.Contains(t, fail(t, ws, workspace.ListFilesName, args{"pattern": pattern}).Text(), want, pattern)
		}
	})
}

func TestListFilesIsCapped(t *testing.T) {
	files := map[string]string{}
	for i := range 12 {
		files[fmt.Sprintf("f%02d.txt", i)] = ""
	}
	ws, _ := open(t, files, workspace.WithMaxResults(5))
	out := succeed(t, ws, workspace.ListFilesName, args{"pattern": "*.txt"})
	assert.Equal(t, "f00.txt\nf01.txt\nf02.txt\nf03.txt\nf04.txt\n[showing 5 of 12 files; narrow the pattern to see the others]", out)
	out = succeed(t, ws, workspace.ListFilesName, args{"pattern": "f1*.txt"})
	assert.Equal(t, "f10.txt\nf11.txt", out, "under the cap: no note")

	// The first paths in sorted order, whatever order the walk finds them
	// in ("a/x.txt" is walked before "a.txt" but sorts after it).
	ws, _ = open(t, map[string]string{"a/x.txt": "", "a/y.txt": "", "a.txt": ""}, workspace.WithMaxResults(1))
	out = succeed(t, ws, workspace.ListFilesName, args{"pattern": "**/*.txt"})
	assert.Equal(t, "a.txt\n[showing 1 of 3 files; narrow the pattern to see the others]", out)
}

func TestGrep(t *testing.T) {
	ws, _ := open(t, tree)
	tests := []struct {
		name string
		args args
		want []string
	}{
		{"every file", args{"pattern": "TODO"}, []string{
			".github/workflows/ci.yml:1: on: push # TODO",
			"docs/guide/intro.md:2: TODO: write it",
			"main.go:3: // TODO: flags",
		}},
		{"ignoring case", args{"pattern": "todo:", "ignore_case": true}, []string{
			"docs/guide/intro.md:2: TODO: write it",
			"internal/run/run.go:5: // todo: tests",
			"main.go:3: // TODO: flags",
		}},
		{"case matters", args{"pattern": "todo:"}, []string{"internal/run/run.go:5: // todo: tests"}},
		{"a glob", args{"pattern": `func \w+\(`, "glob": "**/*.go"}, []string{
			"cmd/app/main.go:3: func main() {}",
			"internal/run/run.go:4: func Run() error { return nil }",
			"main.go:4: func main() { run() }",
		}},
		{"a narrow glob", args{"pattern": "func", "glob": "internal/**"}, []string{"internal/run/run.go:4: func Run() error { return nil }"}},
		{"a glob without directories", args{"pattern": "func", "glob": "*.go"}, []string{"main.go:4: func main() { run() }"}},
		{"anchors apply to lines", args{"pattern": `^package \w+$`, "glob": "internal/**"}, []string{
			"internal/run/run.go:1: package run",
			"internal/run/run_test.go:1: package run",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, strings.Join(tt.want, "\n"), succeed(t, ws, workspace.GrepName, tt.args))
		})
	}

	t.Run("no match", func(t *testing.T) {
		assert.Equal(t, `No matches for "nothing here".`, succeed(t, ws, workspace.GrepName, args{"pattern": "nothing here"}))
		assert.Equal(t, `No matches for "TODO" in files matching "cmd/**/*.go".`, succeed(t, ws, workspace.GrepName, args{"pattern": "TODO", "glob": "cmd/**/*.go"}))
		assert.Equal(t, `No matches for "TODO" in files matching "cmd/**".`, succeed(t, ws, workspace.GrepName, args{"pattern": "TODO", "glob": "cmd/**"}))
	})

	t.Run("failure", func(t *testing.T) {
		assert.Contains(t, fail(t, ws, workspace.GrepName, args{"pattern": "func ("}).Text(),
			"pattern \"func (\" is not a valid Go regular expression: error parsing regexp: missing closing ): `func (`")
		assert.Contains(t, fail(t, ws, workspace.GrepName, args{"pattern": "x", "glob": "[z-"}).Text(), `pattern "[z-" is not a valid glob`)
		assert.Contains(t, fail(t, ws, workspace.GrepName, args{"pattern": "x", "glob": "../**"}).Text(), `has a ".." segment`)
		r := call(t, ws, workspace.GrepName, args{"pattern": ""})
		assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, r.Text())
	})
}

func TestGrepIsCapped(t *testing.T) {
	ws, _ := open(t, map[string]string{
		"a.txt":    lines(3),
		"b.txt":    lines(3),
		"long.txt": strings.Repeat("é", 400) + " match\n",
	}, workspace.WithMaxResults(4))
	out := succeed(t, ws, workspace.GrepName, args{"pattern": "line"})
	assert.Equal(t, "a.txt:1: line 1\na.txt:2: line 2\na.txt:3: line 3\nb.txt:1: line 1\n[showing the first 4 matches; narrow the pattern or the glob to see the others]", out)
	out = succeed(t, ws, workspace.GrepName, args{"pattern": "line [12]"})
	assert.Equal(t, "a.txt:1: line 1\na.txt:2: line 2\nb.txt:1: line 1\nb.txt:2: line 2", out, "exactly the cap: no note")

	out = succeed(t, ws, workspace.GrepName, args{"pattern": "match"})
	assert.Equal(t, "long.txt:1: "+strings.Repeat("é", 250)+" [line cut]", out, "a long line is cut at a rune boundary")
}

func TestGrepMatchesLines(t *testing.T) {
	ws, _ := open(t, map[string]string{
		"crlf.txt":  "alpha\r\nbeta\r\n",
		"plain.txt": "beta gamma\nbeta\n",
	})
	assert.Equal(t, "crlf.txt:2: beta\nplain.txt:2: beta", succeed(t, ws, workspace.GrepName, args{"pattern": "^beta$"}),
		"^ and $ hold at each line's ends, carriage returns aside")
	assert.Equal(t, "plain.txt:1: beta gamma", succeed(t, ws, workspace.GrepName, args{"pattern": "beta g(a|o)"}))
	assert.Equal(t, "plain.txt:1: beta gamma", succeed(t, ws, workspace.GrepName, args{"pattern": "BETA G", "ignore_case": true}))
}

func TestWalksStopWhenCancelled(t *testing.T) {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("d%d/f.txt", i)] = "x\n"
	}
	ws, _ := open(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Invoke does not start a call whose context is done, so call the tools
	// directly to see that the walks notice.
	for name, raw := range map[string]string{
		workspace.ListFilesName: `{"pattern":"**"}`,
		workspace.GrepName:      `{"pattern":"x"}`,
	} {
		_, err := find(t, ws, name).Call(ctx, "c1", json.RawMessage(raw))
		assert.ErrorIs(t, err, context.Canceled, name)
	}
}

func TestToolsAreSafeForConcurrentUse(t *testing.T) {
	files := map[string]string{}
	for i := range 8 {
		files[fmt.Sprintf("f%d.txt", i)] = "count 0\n"
	}
	ws, dir := open(t, files)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("f%d.txt", i)
			for n := range 10 {
				r := call(t, ws, workspace.EditFileName, args{"path": name, "old_string": fmt.Sprintf("count %d", n), "new_string": fmt.Sprintf("count %d", n+1)})
				assert.False(t, r.IsError, r.Text())
				r = call(t, ws, workspace.GrepName, args{"pattern": "count"})
				assert.False(t, r.IsError, r.Text())
				r = call(t, ws, workspace.ReadFileName, args{"path": name})
				assert.False(t, r.IsError, r.Text())
			}
		})
	}
	wg.Wait()
	for name := range files {
		assert.Equal(t, "count 10\n", read(t, dir, name))
	}
}

func TestEditFileOverlappingAndCRLF(t *testing.T) {
	ws, dir := open(t, map[string]string{
		"braces.go": "func f() {\n\tif x {\n\t}\n}\n}\n",
		"crlf.txt":  "alpha\r\nbeta\r\ngamma\r\n",
	})
	// "}\n}\n" occurs at two places that overlap: it is not unique.
	r := fail(t, ws, workspace.EditFileName, args{"path": "braces.go", "old_string": "}\n}\n", "new_string": "}\n"})
	assert.Contains(t, r.Text(), "old_string occurs 2 times")

	// A CRLF file is shown without its \r; edits written with bare line
	// breaks still apply, and keep the file's line breaks.
	succeed(t, ws, workspace.EditFileName, args{"path": "crlf.txt", "old_string": "alpha\nbeta", "new_string": "one\ntwo\nthree"})
	got, err := os.ReadFile(filepath.Join(dir, "crlf.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\r\ntwo\r\nthree\r\ngamma\r\n", string(got))

	// A new line break in a CRLF file is a CRLF one too.
	succeed(t, ws, workspace.EditFileName, args{"path": "crlf.txt", "old_string": "gamma", "new_string": "gamma\ndelta"})
	got, err = os.ReadFile(filepath.Join(dir, "crlf.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\r\ntwo\r\nthree\r\ngamma\r\ndelta\r\n", string(got))

	// A file that mixes line breaks is matched as written first.
	ws, dir = open(t, map[string]string{"mixed.txt": "header\r\nalpha\nbeta\n"})
	succeed(t, ws, workspace.EditFileName, args{"path": "mixed.txt", "old_string": "alpha\nbeta", "new_string": "gamma\ndelta"})
	got, err = os.ReadFile(filepath.Join(dir, "mixed.txt"))
	require.NoError(t, err)
	assert.Equal(t, "header\r\ngamma\ndelta\n", string(got))
}
