package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/fakeprovider"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
)

// The Gemini SDK's dependencies bring in OpenCensus, whose package init
// starts a worker that runs for the life of the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

const testRun = `coder → bash {"command":"go test ./...","description":"Run the tests"}`

// fixed is the project's calc.go as the fix leaves it.
func fixed(t *testing.T, rep *report) string {
	t.Helper()
	before := rep.before["calc.go"]
	require.Equal(t, 1, strings.Count(before, buggyLine), "the project has the bug")
	return strings.Replace(before, buggyLine, fixedLine, 1)
}

func TestCoderFixesTheBugOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command on a module (skipped with -short)")
	}
	var out bytes.Buffer
	rep, err := run(context.Background(), &out, task, offline(), approveAll(), agent.TraceDurations(0))
	require.NoError(t, err)
	s := out.String()
	lines := strings.Split(s, "\n")

	assert.Contains(t, s, "project: calc.go, calc_test.go, go.mod (copied to a temporary directory)\ntask: "+task+"\n")

	// The tests ran twice: failing, then, after the edit, passing.
	firstRun, secondRun := indexOf(lines, testRun, 0), -1
	if firstRun >= 0 {
		secondRun = indexOf(lines, testRun, firstRun+1)
	}
	failed := indexOf(lines, "coder ✗ bash failed", 0)
	edited := indexOf(lines, `coder ✓ edit_file: `, 0)
	passed := indexOf(lines, "coder ✓ bash: ", 0)
	require.True(t, firstRun >= 0 && secondRun >= 0 && failed >= 0 && edited >= 0 && passed >= 0, s)
	assert.Less(t, firstRun, failed)
	assert.Less(t, failed, edited)
	assert.Less(t, edited, secondRun)
	assert.Less(t, secondRun, passed)
	assert.Contains(t, lines[failed], "--- FAIL: TestSumTo")
	assert.Contains(t, lines[failed], "SumTo(1) = 0, want 1")
	assert.Contains(t, lines[edited], `Edited "calc.go": replaced 1 occurrence, at line 7.`)
	assert.Contains(t, lines[passed], "ok example.com/calc")
	assert.Contains(t, lines[passed], "Exit code: 0")
	assert.Contains(t, s, `coder → read_file {"path":"calc.go"}`)
	assert.Contains(t, s, `coder → edit_file {"path":"calc.go","old_string":"for i := 1; i < n; i++ {","new_string":"for i := 1; i <= n; i++ {"}`)

	// The file on disk is fixed, and only it.
	assert.Equal(t, fixed(t, rep), rep.after["calc.go"])
	assert.Equal(t, rep.before["calc_test.go"], rep.after["calc_test.go"])
	assert.Len(t, rep.after, 3)
	assert.True(t, strings.HasSuffix(s, "\nchanges on disk:\n  calc.go\n    -   7      for i := 1; i < n; i++ {\n    +   7      for i := 1; i <= n; i++ {\n"), s)

	// The policy saw each destructive call, and none of the reads; the
	// trace shows what it approved, before the call ran.
	assert.Equal(t, []decision{
		{"bash", `run "go test ./..."`, true},
		{"edit_file", `edit calc.go: replace "for i := 1; i < n; i++ {" with "for i := 1; i <= n; i++ {"`, true},
		{"bash", `run "go test ./..."`, true},
	}, rep.decisions)
	approved := indexOf(lines, `coder • permission: approved without asking (offline run): run "go test ./..."`, 0)
	assert.True(t, firstRun < approved && approved < failed, s)
	assert.Equal(t, 2, strings.Count(s, `• permission: approved without asking (offline run): run "go test ./..."`))
	assert.Equal(t, 3, strings.Count(s, "• permission: "))

	assert.Contains(t, s, "coder » Fixed. SumTo's loop stopped one short of n")
	assert.Contains(t, s, "coder ■ done: 5 model calls · 4 tool calls\n")
}

func TestStartRunsOfflineOnItsOwnTask(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command on a module (skipped with -short)")
	}
	var out bytes.Buffer
	require.NoError(t, start(context.Background(), &out, env(nil), []string{"Rewrite", "it", "in", "Rust."}))
	s := out.String()
	assert.True(t, strings.HasPrefix(s, "model: scripted (offline"), s)
	assert.Contains(t, s, "(the offline script does its own task only)\nproject: ")
	assert.Contains(t, s, "task: "+task+"\n")
	assert.Contains(t, s, "coder ✓ bash · ")
	assert.Contains(t, s, "    +   7      for i := 1; i <= n; i++ {\n")
}

func TestOfflineScriptStopsWhenACallIsRefused(t *testing.T) {
	// The input ends before the first answer: the first call, the tests,
	// is refused, and the script says so instead of going on.
	var out bytes.Buffer
	rep, err := run(context.Background(), &out, task, offline(), askOn(strings.NewReader("")), agent.TraceDurations(0))
	require.NoError(t, err)
	s := out.String()
	assert.Contains(t, s, `coder • permission: run "go test ./..."? [y/N]`+"\ncoder • permission: refused: no answer, the input has ended\n")
	assert.Contains(t, s, `coder ✗ bash denied: {"error":"permission_denied","tool":"bash","reason":"the user did not answer (the input has ended)"`)
	assert.NotContains(t, s, "Exit code", "no command ran")
	assert.Contains(t, s, "coder » I stopped: bash was refused, so I changed nothing on my own.")
	assert.Contains(t, s, "\nchanges on disk:\n  none\n")
	assert.Equal(t, rep.before, rep.after)
	assert.Equal(t, []decision{{"bash", `run "go test ./..."`, false}}, rep.decisions)
}

func TestQuestionShowsAllOfAWrite(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.Call("write_file", `{"path":"notes.txt","content":"first line\nsecond line\n"}`)),
		scripted.Reply("The write was refused."),
	)
	var out bytes.Buffer
	rep, err := run(context.Background(), &out, "Write notes.", m, askOn(strings.NewReader("no\n")), agent.TraceDurations(0))
	require.NoError(t, err)
	s := out.String()
	assert.Contains(t, s, "coder • permission: write notes.txt (23 bytes)? [y/N]\n    | first line\n    | second line\ncoder • permission: refused\n")
	assert.Contains(t, s, "coder ✗ write_file denied: ")
	assert.NotContains(t, rep.after, "notes.txt")
	assert.Equal(t, []decision{{"write_file", "write notes.txt (23 bytes)", false}}, rep.decisions)
	// The model was told why.
	reqs := m.Requests()
	require.Len(t, reqs, 2)
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.True(t, last.IsError)
	assert.Contains(t, last.Text(), `"reason":"the user refused: write notes.txt (23 bytes)"`)
}

// coderPolicy plays the model on a fake provider, one step per answer: the
// tests, the file, the fix, the tests again, the answer. When the fix is
// refused, it answers with the refusal instead.
func coderPolicy(r fakeprovider.Request) fakeprovider.Reply {
	results := r.ToolResults()
	switch len(results) {
	case 0:
		return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "bash", Arguments: `{"command":"go test ./..."}`}}}
	case 1:
		return fakeprovider.Reply{Text: "Let me look.", Calls: []fakeprovider.Call{{Name: "read_file", Arguments: `{"path":"calc.go"}`}}}
	case 2:
		return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "edit_file", Arguments: `{"path":"calc.go","old_string":"i < n;","new_string":"i <= n;"}`}}}
	case 3:
		if strings.Contains(results[2], "permission_denied") {
			return fakeprovider.Reply{Text: "I was not allowed to edit calc.go. The fix: i <= n."}
		}
		return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "bash", Arguments: `{"command":"go test ./..."}`}}}
	}
	return fakeprovider.Reply{Text: "Fixed the off-by-one in SumTo; the tests pass."}
}

var providers = []struct {
	name  string
	start func(testing.TB, fakeprovider.Policy) *fakeprovider.Server
	env   func(url string) map[string]string
	model string
}{
	{"openai", fakeprovider.OpenAI, func(url string) map[string]string {
		return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": url}
	}, "gpt-4o-mini"},
	{"anthropic", fakeprovider.Anthropic, func(url string) map[string]string {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": url}
	}, "claude-haiku-4-5"},
}

func TestCoderRunsOnAProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command on a module (skipped with -short)")
	}
	for _, c := range providers {
		t.Run(c.name, func(t *testing.T) {
			srv := c.start(t, coderPolicy)
			var out bytes.Buffer
			// The person approves the three destructive calls.
			rep, err := startWith(context.Background(), &out, env(c.env(srv.URL)), []string{"Fix", "the", "tests."}, strings.NewReader("y\nYes\n y \n"))
			require.NoError(t, err)
			s := out.String()

			assert.Contains(t, s, "model: "+c.name+" "+c.model+" at "+srv.URL+"\n")
			assert.Contains(t, s, "task: Fix the tests.\n")
			assert.Equal(t, 5, strings.Count(s, "coder ◆ model "+c.model+" · 11 in / 7 out tokens"), s)
			assert.Equal(t, 2, strings.Count(s, `coder • permission: run "go test ./..."? [y/N]`+"\ncoder • permission: approved\n"), s)
			assert.Contains(t, s, `coder • permission: edit calc.go: replace "i < n;" with "i <= n;"? [y/N]`+"\ncoder • permission: approved\n")
			assert.Contains(t, s, "coder » Fixed the off-by-one in SumTo; the tests pass.")
			assert.Equal(t, fixed(t, rep), rep.after["calc.go"])
			require.Len(t, rep.decisions, 3)
			for _, d := range rep.decisions {
				assert.True(t, d.allowed, d)
			}

			reqs := srv.Requests()
			require.Len(t, reqs, 5)
			for _, r := range reqs {
				assert.Equal(t, "sk-test", r.Key)
				assert.Equal(t, c.model, r.Model)
				assert.Contains(t, r.System, "You are a careful Go developer")
				assert.Equal(t, "Fix the tests.", r.LastUser())
				for _, name := range []string{"bash", "read_file", "edit_file", "write_file", "grep", "list_files"} {
					assert.True(t, r.HasTool(name), name)
				}
				assert.False(t, r.HasTool("web_fetch"), "the web tools are left out")
			}
			results := reqs[4].ToolResults()
			require.Len(t, results, 4)
			assert.Contains(t, results[0], "SumTo(4) = 6, want 10", "the model read the failure")
			assert.Contains(t, results[0], "Exit code: 1")
			assert.Contains(t, results[1], "7\t\tfor i := 1; i < n; i++ {", "and the numbered file")
			assert.Contains(t, results[3], "ok  \texample.com/calc")
		})
	}
}

func TestRefusedEditReachesTheModelAndChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command on a module (skipped with -short)")
	}
	for _, c := range providers {
		t.Run(c.name, func(t *testing.T) {
			srv := c.start(t, coderPolicy)
			var out bytes.Buffer
			// The tests may run; the edit may not.
			rep, err := startWith(context.Background(), &out, env(c.env(srv.URL)), nil, strings.NewReader("y\nn\n"))
			require.NoError(t, err)
			s := out.String()

			assert.Contains(t, s, "coder • permission: refused\ncoder ✗ edit_file denied · ")
			assert.Contains(t, s, "coder » I was not allowed to edit calc.go.")
			assert.Contains(t, s, "\nchanges on disk:\n  none\n")
			assert.Equal(t, rep.before, rep.after, "the file is unchanged")
			assert.Equal(t, []bool{true, false}, []bool{rep.decisions[0].allowed, rep.decisions[1].allowed})
			assert.Equal(t, "edit_file", rep.decisions[1].tool)

			reqs := srv.Requests()
			require.Len(t, reqs, 4, "no second test run")
			denied := reqs[3].ToolResults()[2]
			assert.Contains(t, denied, `"error":"permission_denied"`)
			var body struct{ Reason string }
			require.NoError(t, json.Unmarshal([]byte(denied), &body), denied)
			assert.Equal(t, `the user refused: edit calc.go: replace "i < n;" with "i <= n;"`, body.Reason)
		})
	}
}

func TestBadSettingsAreReported(t *testing.T) {
	var out bytes.Buffer
	err := start(context.Background(), &out, env(map[string]string{"TRELLIS_PROVIDER": "mistral"}), nil)
	require.ErrorContains(t, err, `TRELLIS_PROVIDER="mistral": unknown provider`)
	err = start(context.Background(), &out, env(map[string]string{"OPENAI_BASE_URL": "localhost:11434"}), nil)
	require.ErrorContains(t, err, "OPENAI_BASE_URL")

	t.Setenv("PATH", t.TempDir()) // no go command there
	err = start(context.Background(), &out, env(nil), nil)
	require.ErrorContains(t, err, "needs the go command")
	assert.Empty(t, out.String(), "nothing runs")
}

func TestCancelledRunStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	err := start(ctx, &out, env(nil), nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), err)
}

func TestCancelWhileAQuestionWaits(t *testing.T) {
	// No answer ever comes: the run waits on the first question until it
	// is cancelled.
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // ends the goroutine that reads the answers
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	type ended struct {
		rep *report
		err error
	}
	done := make(chan ended, 1)
	go func() {
		rep, err := run(ctx, out, task, offline(), askOn(pr))
		done <- ended{rep, err}
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "[y/N]") }, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case e := <-done:
		require.Error(t, e.err)
		assert.True(t, errors.Is(e.err, context.Canceled), e.err)
		assert.Empty(t, e.rep.decisions)
		assert.Equal(t, e.rep.before, e.rep.after)
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not stop")
	}
	assert.NotContains(t, out.String(), "Exit code", "no command ran")
}

func TestDescribe(t *testing.T) {
	cases := []struct{ name, args, want string }{
		{"bash", `{"command":"go vet ./..."}`, `run "go vet ./..."`},
		{"bash", `{"command":"make serve","run_in_background":true}`, `run in the background "make serve"`},
		{"edit_file", `{"path":"a.go","old_string":"x","new_string":"y","replace_all":true}`, `edit a.go: replace every "x" with "y"`},
		{"task_stop", `{"task_id":"task-1"}`, `call task_stop {"task_id":"task-1"}`},
		{"bash", `not json`, "call bash not json"},
	}
	for _, c := range cases {
		action, details := describe(model.ToolCall{Name: c.name, Arguments: []byte(c.args)})
		assert.Equal(t, c.want, action)
		assert.Empty(t, details)
	}
	long := strings.Repeat("line\n", maxDetailLines+5)
	content := "package c\n\nfunc C() {}\n" + long
	args, err := json.Marshal(map[string]string{"path": "c.txt", "content": content})
	require.NoError(t, err)
	action, details := describe(model.ToolCall{Name: "write_file", Arguments: args})
	assert.Equal(t, fmt.Sprintf("write c.txt (%d bytes)", len(content)), action)
	assert.True(t, strings.HasPrefix(details, "\n| package c\n| \n| func C() {}\n| line\n"), details)
	assert.True(t, strings.HasSuffix(details, "\n| line\n| … and 8 more lines"), details)
	assert.Equal(t, maxDetailLines+1, strings.Count(details, "\n"))
}

func TestDiffLines(t *testing.T) {
	a := []string{"a", "b", "c", "d"}
	b := []string{"a", "c", "x", "d", "e"}
	assert.Equal(t, []string{"-   2  b", "+   3  x", "+   5  e"}, diffLines(a, b))
	assert.Empty(t, diffLines(a, a))
}

func indexOf(lines []string, prefix string, from int) int {
	for i := from; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], prefix) {
			return i
		}
	}
	return -1
}

// lockedBuffer is a buffer that a run writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
