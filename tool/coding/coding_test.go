//go:build unix

package coding_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/coding"
	"github.com/trellis-go/trellis/tool/shell"
	"github.com/trellis-go/trellis/tool/webfetch"
	"github.com/trellis-go/trellis/tool/websearch"
	"github.com/trellis-go/trellis/tool/workspace"
)

// requireShell skips a test that runs commands where /bin/sh is missing,
// and fails it in CI, where its absence is a broken environment.
func requireShell(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("/bin/sh"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("/bin/sh is needed: %v", err)
		}
		t.Skipf("skipped: /bin/sh is needed: %v", err)
	}
}

func newSet(t *testing.T, dir string, opts ...coding.Option) *coding.Toolset {
	t.Helper()
	set, err := coding.New(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, set.Close()) })
	return set
}

func names(t *testing.T, set tool.Toolset) []string {
	t.Helper()
	tools, err := set.Tools(context.Background())
	require.NoError(t, err)
	out := make([]string, len(tools))
	for i, tl := range tools {
		out[i] = tl.Definition().Name
	}
	return out
}

func find(t *testing.T, set tool.Toolset, name string) tool.Tool {
	t.Helper()
	tools, err := set.Tools(context.Background())
	require.NoError(t, err)
	for _, tl := range tools {
		if tl.Definition().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %q in %v", name, names(t, set))
	return nil
}

func call(t *testing.T, set tool.Toolset, name, args string) tool.Result {
	t.Helper()
	return tool.Invoke(context.Background(), find(t, set, name), model.ToolCall{ID: "c1", Name: name, Arguments: []byte(args)})
}

var (
	fileTools  = []string{workspace.ReadFileName, workspace.ListFilesName, workspace.GrepName, workspace.WriteFileName, workspace.EditFileName, workspace.NotebookEditName}
	readTools  = []string{workspace.ReadFileName, workspace.ListFilesName, workspace.GrepName}
	shellTools = []string{shell.BashName, shell.TaskOutputName, shell.TaskStopName}
	webTools   = []string{webfetch.DefaultName, websearch.DefaultName}
)

func TestToolsByOptions(t *testing.T) {
	requireShell(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		opts []coding.Option
		want []string
	}{
		{"default", nil, slices.Concat(fileTools, shellTools, webTools)},
		{"read-only", []coding.Option{coding.WithReadOnly()}, slices.Concat(readTools, shellTools, webTools)},
		{"without shell", []coding.Option{coding.WithoutShell()}, slices.Concat(fileTools, webTools)},
		{"without web", []coding.Option{coding.WithoutWeb()}, slices.Concat(fileTools, shellTools)},
		{"files to read alone", []coding.Option{coding.WithReadOnly(), coding.WithoutShell(), coding.WithoutWeb()}, readTools},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(t, dir, c.opts...)
			assert.ElementsMatch(t, c.want, names(t, set))
			assert.Equal(t, coding.DefaultName, set.Name())
			assert.NotNil(t, set.Workspace())
			assert.Equal(t, slices.Contains(c.want, shell.BashName), set.Shell() != nil)
		})
	}
}

func TestToolsInPartOrder(t *testing.T) {
	requireShell(t)
	got := names(t, newSet(t, t.TempDir()))
	// The file tools come first, then the shell's, then the web tools.
	idx := func(name string) int { return slices.Index(got, name) }
	assert.Less(t, idx(workspace.NotebookEditName), idx(shell.BashName))
	assert.Less(t, idx(shell.TaskStopName), idx(webfetch.DefaultName))
}

func TestPartOptionsReachTheParts(t *testing.T) {
	requireShell(t)
	dir := t.TempDir()
	set := newSet(t, dir,
		coding.WithName("dev"),
		coding.WithWorkspaceOptions(workspace.WithName("files")),
		coding.WithShellOptions(shell.WithEnv("GREETING=hello from the set")),
		coding.WithWebFetchOptions(webfetch.WithName("fetch")),
		coding.WithSearchOptions(websearch.WithName("search")),
	)
	assert.Equal(t, "dev", set.Name())
	assert.Equal(t, "files", set.Workspace().Name())
	got := names(t, set)
	assert.Contains(t, got, "fetch")
	assert.Contains(t, got, "search")
	assert.NotContains(t, got, webfetch.DefaultName)

	r := call(t, set, shell.BashName, `{"command":"echo \"$GREETING\"; pwd"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "hello from the set")
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Contains(t, r.Text(), real, "the shell starts in the set's directory")
}

func TestMaxFileSize(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("x", 64)), 0o644))
	set := newSet(t, dir, coding.WithMaxFileSize(16), coding.WithoutShell(), coding.WithoutWeb())
	r := call(t, set, workspace.ReadFileName, `{"path":"big.txt"}`)
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "big.txt")

	// The set's size wins over one given to the workspace directly.
	set = newSet(t, dir, coding.WithWorkspaceOptions(workspace.WithMaxFileSize(1<<20)), coding.WithMaxFileSize(16), coding.WithoutShell(), coding.WithoutWeb())
	assert.True(t, call(t, set, workspace.ReadFileName, `{"path":"big.txt"}`).IsError)
}

func TestBadSettings(t *testing.T) {
	requireShell(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		dir  string
		opts []coding.Option
		want string
	}{
		{"empty name", dir, []coding.Option{coding.WithName("")}, "WithName"},
		{"zero file size", dir, []coding.Option{coding.WithMaxFileSize(0)}, "WithMaxFileSize(0)"},
		{"negative file size", dir, []coding.Option{coding.WithMaxFileSize(-1)}, "WithMaxFileSize(-1)"},
		{"missing directory", filepath.Join(dir, "nope"), nil, "coding: file tools"},
		{"bad shell option", dir, []coding.Option{coding.WithShellOptions(shell.WithMaxTasks(0))}, "coding: shell"},
		{"bad fetch option", dir, []coding.Option{coding.WithWebFetchOptions(webfetch.WithMaxBytes(0))}, "coding: web tools"},
		{"bad search option", dir, []coding.Option{coding.WithSearchOptions(websearch.WithMaxResults(0))}, "coding: web tools"},
		{"another search tool with the default's options", dir, []coding.Option{coding.WithSearch(webSearch(t, nil)), coding.WithSearchOptions(websearch.WithName("s"))},
			"coding: WithSearch replaces the default search tool: it cannot be combined with WithSearchOptions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := coding.New(c.dir, c.opts...)
			require.Error(t, err)
			assert.Nil(t, set)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestCloseStopsBackgroundTasks checks that closing the set kills what the
// shell still runs, and that the set refuses to hand out tools afterwards.
func TestCloseStopsBackgroundTasks(t *testing.T) {
	requireShell(t)
	dir := t.TempDir()
	set, err := coding.New(dir)
	require.NoError(t, err)
	r := call(t, set, shell.BashName, `{"command":"echo $$ > pid; exec sleep 30","run_in_background":true}`)
	require.False(t, r.IsError, r.Text())

	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(data), &pid)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, set.Close())
	assert.Error(t, syscall.Kill(pid, 0), "the background task outlived Close")
	_, err = set.Tools(context.Background())
	assert.ErrorIs(t, err, coding.ErrClosed)
	assert.NoError(t, set.Close(), "a second Close")
}

func TestWebFetchThroughTheSet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Notes</title></head><body><p>Release on Friday.</p></body></html>`)
	}))
	defer srv.Close()

	// The fetch tool refuses loopback addresses unless told otherwise: the
	// default comes through the set unchanged.
	set := newSet(t, t.TempDir(), coding.WithoutShell())
	r := call(t, set, webfetch.DefaultName, fmt.Sprintf(`{"url":%q}`, srv.URL))
	assert.True(t, r.IsError)
	assert.True(t, errors.Is(r.Err, webfetch.ErrRefused), "got %v", r.Err)

	set = newSet(t, t.TempDir(), coding.WithoutShell(), coding.WithWebFetchOptions(webfetch.WithAllowPrivateAddresses()))
	r = call(t, set, webfetch.DefaultName, fmt.Sprintf(`{"url":%q}`, srv.URL))
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "Release on Friday.")
}

// TestAgentWritesAndRuns is a whole run: a scripted model writes a script
// with the file tools, runs it with the shell, and answers.
func TestAgentWritesAndRuns(t *testing.T) {
	requireShell(t)
	dir := t.TempDir()
	set := newSet(t, dir, coding.WithoutWeb())
	coder, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call(workspace.WriteFileName, `{"path":"hello.sh","content":"echo hello, $1\n"}`)),
		scripted.CallTools(scripted.Call(shell.BashName, `{"command":"sh hello.sh gopher"}`)),
		scripted.Reply("The script greets gophers."),
	), agent.WithToolsets(set))
	require.NoError(t, err)
	out, err := coder.Invoke(context.Background(), agent.Ask("Write a greeting script and run it."))
	require.NoError(t, err)
	var ran string
	for _, m := range out.Messages {
		if m.Role == model.RoleTool && m.ToolName == shell.BashName {
			ran = m.Text()
		}
	}
	assert.Contains(t, ran, "hello, gopher")
	assert.Equal(t, "The script greets gophers.", agent.FinalText(out.Messages))
	data, err := os.ReadFile(filepath.Join(dir, "hello.sh"))
	require.NoError(t, err)
	assert.Equal(t, "echo hello, $1\n", string(data))
}

// TestNilOption checks that a nil option is skipped, as the parts' own
// constructors do, instead of panicking.
func TestNilOption(t *testing.T) {
	set, err := coding.New(t.TempDir(), nil, coding.WithoutShell(), coding.WithoutWeb())
	require.NoError(t, err)
	assert.NoError(t, set.Close())
}

// closingSet is a command set that records its Close.
type closingSet struct {
	tool.Toolset
	closed int
}

func (s *closingSet) Close() error { s.closed++; return s.Toolset.Close() }

func commandSet(t *testing.T) *closingSet {
	t.Helper()
	run := tool.MustFunc("bash", "Runs a command in the sandbox.", func(_ context.Context, in struct {
		Command string `json:"command"`
	}) (string, error) {
		return "sandbox ran: " + in.Command, nil
	})
	return &closingSet{Toolset: tool.NewStatic("sandbox", run)}
}

func TestWithCommandsReplacesTheShell(t *testing.T) {
	cmds := commandSet(t)
	set, err := coding.New(t.TempDir(), coding.WithCommands(cmds), coding.WithoutWeb())
	require.NoError(t, err)
	assert.Nil(t, set.Shell())
	assert.ElementsMatch(t, slices.Concat(fileTools, []string{"bash"}), names(t, set))
	r := call(t, set, "bash", `{"command":"make test"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "sandbox ran: make test", r.Text())

	require.NoError(t, set.Close())
	assert.Equal(t, 1, cmds.closed, "the command set is closed with the toolset")
	require.NoError(t, set.Close())
	assert.Equal(t, 1, cmds.closed, "and once")
}

func TestWithCommandsClosedWhenNewFails(t *testing.T) {
	dir := t.TempDir()
	for name, opts := range map[string][]coding.Option{
		"with WithoutShell":     {coding.WithoutShell()},
		"with WithShellOptions": {coding.WithShellOptions(shell.WithMaxTasks(2))},
		"a missing directory":   {coding.WithName("x")},
		"a bad web option":      {coding.WithWebFetchOptions(webfetch.WithMaxBytes(0))},
		"WithSearch + options":  {coding.WithSearch(webSearch(t, nil)), coding.WithSearchOptions(websearch.WithName("s"))},
		"an empty name":         {coding.WithName("")},
		"a zero max file size":  {coding.WithMaxFileSize(0)},
	} {
		t.Run(name, func(t *testing.T) {
			cmds := commandSet(t)
			where := dir
			if name == "a missing directory" {
				where = filepath.Join(dir, "missing")
			}
			set, err := coding.New(where, append(opts, coding.WithCommands(cmds))...)
			require.Error(t, err)
			assert.Nil(t, set)
			assert.Equal(t, 1, cmds.closed, "New owns the command set and closes it when it fails")
		})
	}
}

// webSearch is a websearch tool whose backend answers with results and
// records the queries in asked, when it is not nil.
func webSearch(t *testing.T, asked *[]string, results ...websearch.Result) tool.Tool {
	t.Helper()
	st, err := websearch.New(websearch.BackendFunc(func(_ context.Context, q websearch.Query) (websearch.Page, error) {
		if asked != nil {
			*asked = append(*asked, q.Text)
		}
		return websearch.Page{Results: results}, nil
	}))
	require.NoError(t, err)
	return st
}

func TestWithSearchReplacesTheDefaultSearch(t *testing.T) {
	dir := t.TempDir()
	var asked []string
	search := webSearch(t, &asked, websearch.Result{Title: "Go 1.26 release notes", URL: "https://go.dev/doc/go1.26", Snippet: "What changed."})

	set := newSet(t, dir, coding.WithoutShell(), coding.WithSearch(search))
	assert.ElementsMatch(t, slices.Concat(fileTools, []string{webfetch.DefaultName, websearch.DefaultName}), names(t, set),
		"the tool given takes the default's place")
	r := call(t, set, websearch.DefaultName, `{"query":"go 1.26 release notes"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "1. Go 1.26 release notes\n   https://go.dev/doc/go1.26")
	assert.Equal(t, []string{"go 1.26 release notes"}, asked)

	// The search tool comes last, where the default is.
	got := names(t, set)
	assert.Equal(t, websearch.DefaultName, got[len(got)-1])

	// WithoutWeb leaves it out with web_fetch; a nil tool keeps the default.
	assert.ElementsMatch(t, fileTools, names(t, newSet(t, dir, coding.WithoutShell(), coding.WithoutWeb(), coding.WithSearch(search))))
	assert.ElementsMatch(t, slices.Concat(fileTools, webTools), names(t, newSet(t, dir, coding.WithoutShell(), coding.WithSearch(nil))))
	assert.ElementsMatch(t, slices.Concat(fileTools, webTools), names(t, newSet(t, dir, coding.WithoutShell(), coding.WithSearch(nil), coding.WithSearchOptions(websearch.WithMaxResults(3)))),
		"with a nil tool, the default's options still apply")
}

// The default search tool asks DuckDuckGo's Instant Answer API, at the
// address WithSearchBackendOptions gives.
func TestDefaultSearchAsksDuckDuckGo(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"Heading":"Go","AbstractText":"Asked about %s.","AbstractSource":"Wikipedia","AbstractURL":"https://en.wikipedia.org/wiki/Go"}`, r.URL.Query().Get("q"))
	}))
	defer api.Close()
	set := newSet(t, t.TempDir(), coding.WithoutShell(), coding.WithSearchBackendOptions(websearch.WithBaseURL(api.URL)))
	r := call(t, set, websearch.DefaultName, `{"query":"golang"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "1. Go (Wikipedia)\n   https://en.wikipedia.org/wiki/Go\n   Asked about golang.")

	_, err := coding.New(t.TempDir(), coding.WithSearchBackendOptions(websearch.WithBaseURL("ftp://x")))
	require.ErrorContains(t, err, "coding: web tools")
}
