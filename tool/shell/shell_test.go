//go:build unix

package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/bgtask/bgtasktest"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/shell"
)

// requireShell skips a test that needs /bin/sh where there is none, and
// fails it in CI, where its absence is a broken environment.
func requireShell(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("/bin/sh is needed: %v", err)
		}
		t.Skipf("skipped: /bin/sh is needed: %v", err)
	}
}

// harness is a toolset under test, with its tools by name.
type harness struct {
	t     *testing.T
	s     *shell.Toolset
	tools map[string]tool.Tool
}

func newHarness(t *testing.T, opts ...shell.Option) *harness {
	t.Helper()
	requireShell(t)
	s, err := shell.New(t.TempDir(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	h := &harness{t: t, s: s, tools: map[string]tool.Tool{}}
	for _, tl := range tools {
		h.tools[tool.Name(tl)] = tl
	}
	return h
}

// call invokes the tool name with args (marshalled to JSON) as an executor
// would.
func (h *harness) call(ctx context.Context, name string, args map[string]any) tool.Result {
	h.t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(h.t, err)
	tl, ok := h.tools[name]
	require.True(h.t, ok, "no tool %q", name)
	return tool.Invoke(ctx, tl, model.ToolCall{ID: "call-1", Name: name, Arguments: raw})
}

func (h *harness) bash(command string) tool.Result {
	h.t.Helper()
	return h.call(context.Background(), shell.BashName, map[string]any{"command": command})
}

func (h *harness) background(command string) string {
	h.t.Helper()
	r := h.call(context.Background(), shell.BashName, map[string]any{"command": command, "run_in_background": true})
	require.False(h.t, r.IsError, r.Text())
	rep := r.Details.(shell.Report)
	require.NotEmpty(h.t, rep.TaskID)
	assert.Equal(h.t, shell.StateRunning, rep.State)
	assert.Contains(h.t, r.Text(), "Started "+rep.TaskID)
	return rep.TaskID
}

func (h *harness) output(id string, block bool) tool.Result {
	h.t.Helper()
	return h.call(context.Background(), shell.TaskOutputName, map[string]any{"task_id": id, "block": block})
}

// readUntil reads task id's output until it holds want, and returns all
// that was read.
func (h *harness) readUntil(id, want string) string {
	h.t.Helper()
	var all strings.Builder
	require.Eventually(h.t, func() bool {
		r := h.output(id, false)
		require.False(h.t, r.IsError, r.Text())
		all.WriteString(outputOf(r.Text()))
		return strings.Contains(all.String(), want)
	}, 5*time.Second, 10*time.Millisecond, "task %s never wrote %q", id, want)
	return all.String()
}

// outputOf returns the output part of a task_output result's text, which
// always ends with a line break.
func outputOf(text string) string {
	for _, label := range []string{"Output:\n", "Output since the previous read:\n"} {
		if _, out, ok := strings.Cut(text, label); ok {
			out, _, _ = strings.Cut(out, "\nThe task has finished")
			return strings.TrimSuffix(out, "\n") + "\n"
		}
	}
	return ""
}

var firstNumber = regexp.MustCompile(`\d+`)

// pidIn returns the first number in text: a process ID a command echoed.
func pidIn(t *testing.T, text string) int {
	t.Helper()
	m := firstNumber.FindString(text)
	require.NotEmpty(t, m, "no process ID in %q", text)
	pid, err := strconv.Atoi(m)
	require.NoError(t, err)
	return pid
}

// alive reports whether the process pid runs: it exists and is not a
// zombie waiting to be reaped.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// promptly bounds how long a command that the toolset kills takes to
// end: far below the 30 seconds the tests' commands would otherwise run,
// and far above what a loaded machine needs.
const promptly = 10 * time.Second

func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return !alive(pid) }, 20*time.Second, 10*time.Millisecond, "process %d is still running", pid)
}

func TestEcho(t *testing.T) {
	h := newHarness(t)
	r := h.bash("echo hello")
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, tool.StatusSuccess, r.Status)
	assert.Equal(t, "hello\nExit code: 0", r.Text())
	rep := r.Details.(shell.Report)
	assert.Equal(t, shell.StateExited, rep.State)
	assert.Equal(t, 0, rep.ExitCode)
	assert.Equal(t, "echo hello", rep.Command)
	assert.Equal(t, int64(6), rep.OutputBytes)
	assert.Empty(t, rep.TaskID)
}

func TestNonZeroExit(t *testing.T) {
	h := newHarness(t)
	r := h.bash("echo 'about to fail'; exit 3")
	require.True(t, r.IsError)
	assert.Equal(t, tool.StatusFailed, r.Status)
	assert.Equal(t, shell.CodeNonZeroExit, r.ErrorCode)
	assert.Equal(t, "about to fail\nExit code: 3", r.Text())
	var exit *shell.ExitError
	require.ErrorAs(t, r.Err, &exit)
	assert.Equal(t, 3, exit.Code)
	assert.Equal(t, 3, r.Details.(shell.Report).ExitCode)
}

func TestStderrInterleaved(t *testing.T) {
	h := newHarness(t)
	r := h.bash("echo out1; echo err1 >&2; echo out2; echo err2 >&2; printf 'no newline'")
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "out1\nerr1\nout2\nerr2\nno newline\nExit code: 0", r.Text())
}

func TestEmptyOutput(t *testing.T) {
	h := newHarness(t)
	r := h.bash("true")
	assert.False(t, r.IsError)
	assert.Equal(t, "(no output)\nExit code: 0", r.Text())

	r = h.bash("false")
	assert.True(t, r.IsError)
	assert.Equal(t, "(no output)\nExit code: 1", r.Text())
}

func TestStdinIsEmpty(t *testing.T) {
	h := newHarness(t)
	start := time.Now()
	r := h.call(context.Background(), shell.BashName, map[string]any{"command": `cat; read answer; echo "answer:[$answer]"`, "timeout_ms": 10000})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "answer:[]\nExit code: 0", r.Text())
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestSignalledCommand(t *testing.T) {
	h := newHarness(t)
	r := h.bash("echo before; kill -KILL $$")
	require.True(t, r.IsError)
	assert.Equal(t, tool.CodeToolError, r.ErrorCode)
	assert.Contains(t, r.Text(), "before\n")
	assert.Contains(t, r.Text(), "killed by a signal from elsewhere (killed)")
	rep := r.Details.(shell.Report)
	assert.Equal(t, shell.StateKilled, rep.State)
	assert.Equal(t, -1, rep.ExitCode)
}

func TestOutputCap(t *testing.T) {
	// A head of 50 bytes and a tail of 50 would each split a two-byte
	// character.
	h := newHarness(t, shell.WithMaxOutput(100))
	r := h.bash(`printf BEGIN; i=0; while [ $i -lt 300 ]; do printf 'é'; i=$((i+1)); done; printf END`)
	require.False(t, r.IsError, r.Text())
	text := r.Text()
	assert.True(t, utf8.ValidString(text))
	rep := r.Details.(shell.Report)
	assert.Equal(t, int64(608), rep.OutputBytes)
	assert.Equal(t, int64(608-49-49), rep.Omitted)
	want := "BEGIN" + strings.Repeat("é", 22) +
		"\n[... 510 bytes of output left out ...]\n" +
		strings.Repeat("é", 23) + "END\nExit code: 0"
	assert.Equal(t, want, text)
}

func TestLargeOutput(t *testing.T) {
	h := newHarness(t, shell.WithMaxOutput(1000))
	r := h.bash(`head -c 20000000 /dev/zero | tr '\0' x; echo; echo last line`)
	require.False(t, r.IsError, r.Text())
	assert.Less(t, len(r.Text()), 1200)
	assert.True(t, strings.HasPrefix(r.Text(), strings.Repeat("x", 500)+"\n[... "))
	assert.True(t, strings.HasSuffix(r.Text(), "x\nlast line\nExit code: 0"))
	assert.Equal(t, int64(20000011), r.Details.(shell.Report).OutputBytes)
}

func TestBinaryOutput(t *testing.T) {
	h := newHarness(t)
	r := h.bash(`printf 'a\377b\n'`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "a\uFFFDb\nExit code: 0", r.Text())
}

func TestTimeoutKillsGrandchild(t *testing.T) {
	h := newHarness(t)
	start := time.Now()
	r := h.call(context.Background(), shell.BashName, map[string]any{"command": "sleep 30 & echo $!; sleep 30", "timeout_ms": 300})
	elapsed := time.Since(start)
	require.True(t, r.IsError)
	assert.Equal(t, tool.StatusFailed, r.Status, "not a timeout of the call, which a retry would repeat")
	assert.Equal(t, shell.CodeCommandTimeout, r.ErrorCode)
	assert.ErrorIs(t, r.Err, shell.ErrTimedOut)
	assert.Contains(t, r.Text(), "Timed out after 300ms")
	assert.Less(t, elapsed, promptly, "SIGTERM ends sleep at once")
	assert.Equal(t, shell.StateTimedOut, r.Details.(shell.Report).State)
	requireGone(t, pidIn(t, r.Text()))
}

func TestTimeoutEscalatesToSIGKILL(t *testing.T) {
	h := newHarness(t, shell.WithKillGrace(200*time.Millisecond))
	start := time.Now()
	r := h.call(context.Background(), shell.BashName, map[string]any{
		"command":    `trap '' TERM; sleep 30 & echo $!; sleep 30`,
		"timeout_ms": 200,
	})
	require.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
	assert.Less(t, time.Since(start), promptly)
	requireGone(t, pidIn(t, r.Text()))
}

func TestTimeoutCappedAtMaximum(t *testing.T) {
	h := newHarness(t, shell.WithMaxTimeout(200*time.Millisecond))
	r := h.call(context.Background(), shell.BashName, map[string]any{"command": "sleep 30", "timeout_ms": 600000})
	require.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
	assert.Contains(t, r.Text(), "Timed out after 200ms")
	assert.Contains(t, r.Text(), "timeout_ms 600000 was lowered to the maximum, 200ms")
}

func TestDefaultTimeout(t *testing.T) {
	h := newHarness(t, shell.WithTimeout(200*time.Millisecond))
	r := h.bash("sleep 30")
	require.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
	assert.Contains(t, r.Text(), "Timed out after 200ms")
	assert.Equal(t, 200*time.Millisecond, r.Details.(shell.Report).Timeout)
}

func TestContextCancellation(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	pids := make(chan int, 1)
	go func() {
		// Cancel once the command has started its grandchild.
		defer cancel()
		pidFile := filepath.Join(h.s.Dir(), "pid")
		for range 500 {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				pids <- pid
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		pids <- 0
	}()
	start := time.Now()
	r := h.call(ctx, shell.BashName, map[string]any{"command": "sleep 30 & echo $! > pid; sleep 30"})
	assert.Less(t, time.Since(start), promptly)
	assert.Equal(t, tool.StatusCancelled, r.Status, r.Text())
	assert.Contains(t, r.Text(), "The command was killed because its call was cancelled.")
	pid := <-pids
	require.NotZero(t, pid)
	requireGone(t, pid)

	// A call whose context has ended already runs nothing.
	r = h.call(ctx, shell.BashName, map[string]any{"command": "touch ran"})
	assert.Equal(t, tool.StatusCancelled, r.Status)
	assert.NoFileExists(t, filepath.Join(h.s.Dir(), "ran"))
}

func TestLeftoverProcessIsKilled(t *testing.T) {
	h := newHarness(t, shell.WithKillGrace(200*time.Millisecond))
	start := time.Now()
	// The background sleep keeps the output pipe open after the shell
	// exits.
	r := h.bash("sleep 30 & echo $!")
	require.False(t, r.IsError, r.Text())
	assert.Less(t, time.Since(start), promptly)
	assert.Contains(t, r.Text(), "Processes the command left running were killed")
	assert.True(t, r.Details.(shell.Report).Leftovers)
	requireGone(t, pidIn(t, r.Text()))
}

func TestEscapedProcessHoldingOutputDoesNotHang(t *testing.T) {
	h := newHarness(t, shell.WithKillGrace(200*time.Millisecond))
	if r := h.bash("command -v setsid"); r.IsError {
		t.Skip("skipped: needs setsid")
	}
	// setsid takes the sleep out of the command's process group, beyond
	// the reach of its kill; it holds the output open for 30 seconds.
	start := time.Now()
	r := h.bash("setsid sleep 30 & echo $!")
	require.False(t, r.IsError, r.Text())
	pid := pidIn(t, r.Text())
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	assert.Less(t, time.Since(start), promptly)

	start = time.Now()
	r = h.call(context.Background(), shell.BashName, map[string]any{"command": "setsid sleep 30 & echo $!; sleep 30", "timeout_ms": 100})
	assert.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
	pid2 := pidIn(t, r.Text())
	t.Cleanup(func() { _ = syscall.Kill(pid2, syscall.SIGKILL) })
	assert.Less(t, time.Since(start), promptly)
}

func TestBackgroundTask(t *testing.T) {
	h := newHarness(t)
	id := h.background(`echo one; while [ ! -f go ]; do sleep 0.01; done; echo two >&2; echo three; exit 4`)
	assert.Equal(t, "task-1", id)

	// The first reads see "one" and nothing else: the task waits for the
	// file.
	first := h.readUntil(id, "one")
	assert.Equal(t, "one\n", first)
	r := h.output(id, false)
	assert.Contains(t, r.Text(), "task-1 (echo one;")
	assert.Contains(t, r.Text(), "running for")
	assert.Contains(t, r.Text(), "(no new output since the previous read)")
	assert.Equal(t, shell.StateRunning, r.Details.(shell.Report).State)
	assert.Len(t, h.s.Tasks(), 1)

	require.NoError(t, os.WriteFile(filepath.Join(h.s.Dir(), "go"), nil, 0o644))
	r = h.output(id, true)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "exited with code 4")
	assert.Contains(t, r.Text(), "Output since the previous read:\ntwo\nthree\n")
	assert.Equal(t, "two\nthree\n", outputOf(r.Text()))
	assert.Contains(t, r.Text(), "no longer kept")
	rep := r.Details.(shell.Report)
	assert.Equal(t, shell.StateExited, rep.State)
	assert.Equal(t, 4, rep.ExitCode)
	assert.Equal(t, int64(14), rep.OutputBytes)

	// The final output has been read: the task is forgotten.
	r = h.output(id, false)
	require.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, shell.ErrUnknownTask)
	assert.Contains(t, r.Text(), `Task "task-1" has finished and is no longer kept`)
	assert.Empty(t, h.s.Tasks())
}

// A task ID from the model is quoted by a bounded prefix, never in full.
func TestUnknownTaskQuotesABoundedPrefix(t *testing.T) {
	h := newHarness(t)
	huge := strings.Repeat("x", 100_000)
	for _, name := range []string{shell.TaskOutputName, shell.TaskStopName} {
		r := h.call(context.Background(), name, map[string]any{"task_id": huge})
		require.True(t, r.IsError)
		assert.ErrorIs(t, r.Err, shell.ErrUnknownTask)
		assert.Contains(t, r.Text(), `There is no task "`+strings.Repeat("x", 64)+`…".`)
		assert.Less(t, len(r.Text()), 1000)
		assert.Less(t, len(r.Err.Error()), 1000)
	}
}

func TestBackgroundBlockTimesOut(t *testing.T) {
	h := newHarness(t)
	id := h.background("sleep 30")
	start := time.Now()
	r := h.call(context.Background(), shell.TaskOutputName, map[string]any{"task_id": id, "block": true, "timeout_ms": 200})
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "Still running after waiting 200ms.")
	assert.Contains(t, r.Text(), "(no output yet)")
}

func TestBackgroundTimeout(t *testing.T) {
	h := newHarness(t)
	r := h.call(context.Background(), shell.BashName, map[string]any{"command": "echo hi; sleep 30", "run_in_background": true, "timeout_ms": 200})
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "It is killed if it runs longer than 200ms.")
	r = h.output(r.Details.(shell.Report).TaskID, true)
	assert.Contains(t, r.Text(), "timed out after 200ms")
	assert.Contains(t, r.Text(), "Output:\nhi\n")
	assert.Equal(t, shell.StateTimedOut, r.Details.(shell.Report).State)
}

func TestBackgroundOutputDropped(t *testing.T) {
	h := newHarness(t, shell.WithMaxOutput(10))
	id := h.background("echo 0123456789abcdefghij")
	r := h.output(id, true)
	assert.Contains(t, r.Text(), "[11 bytes of output were dropped before what follows: only the last 10 bytes of unread output are kept.]")
	assert.Contains(t, r.Text(), "Output:\nbcdefghij\n")
	assert.Equal(t, int64(11), r.Details.(shell.Report).Omitted)
}

func TestTaskStop(t *testing.T) {
	h := newHarness(t)
	id := h.background("sleep 30 & echo $!; sleep 30")
	pid := pidIn(t, h.readUntil(id, "\n"))
	require.True(t, alive(pid))

	start := time.Now()
	r := h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": id})
	require.False(t, r.IsError, r.Text())
	assert.Less(t, time.Since(start), promptly)
	assert.Contains(t, r.Text(), "Stopped task-1: the command's process group was killed.")
	assert.Contains(t, r.Text(), "killed by task_stop")
	rep := r.Details.(shell.Report)
	assert.Equal(t, shell.StateKilled, rep.State)
	assert.Equal(t, "by task_stop", rep.Reason)
	requireGone(t, pid)

	r = h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": id})
	assert.ErrorIs(t, r.Err, shell.ErrUnknownTask)
}

func TestTaskStopFinished(t *testing.T) {
	h := newHarness(t)
	id := h.background("echo done")
	require.Eventually(t, func() bool {
		ts := h.s.Tasks()
		return len(ts) == 1 && ts[0].State == shell.StateExited
	}, 5*time.Second, 10*time.Millisecond)
	// The number alone names the task too.
	r := h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": strings.TrimPrefix(id, "task-")})
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "task-1 had already finished.")
	assert.Contains(t, r.Text(), "exited with code 0")
	assert.Contains(t, r.Text(), "Output:\ndone\n")
}

func TestMaxTasks(t *testing.T) {
	h := newHarness(t, shell.WithMaxTasks(1))
	id := h.background("sleep 30")
	r := h.call(context.Background(), shell.BashName, map[string]any{"command": "sleep 30", "run_in_background": true})
	require.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, shell.ErrTooManyTasks)
	assert.Contains(t, r.Text(), "1 background tasks are running, the most this toolset allows")
	assert.Contains(t, r.Text(), "task-1 (running for")
	// Foreground commands do not count.
	assert.False(t, h.bash("echo fine").IsError)

	r = h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": id})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "task-2", h.background("sleep 30"))
}

func TestFinishedTasksAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 66 processes, seconds (skipped with -short)")
	}
	h := newHarness(t, shell.WithMaxTasks(shell.MaxFinishedTasks+10))
	n := shell.MaxFinishedTasks + 2
	for range n {
		h.background("true")
	}
	require.Eventually(t, func() bool {
		ts := h.s.Tasks()
		return !slices.ContainsFunc(ts, func(r shell.Report) bool { return r.State == shell.StateRunning })
	}, 10*time.Second, 10*time.Millisecond)
	ts := h.s.Tasks()
	require.Len(t, ts, shell.MaxFinishedTasks)
	// The oldest to finish were forgotten; they need not have finished in
	// the order they started.
	ids := make([]string, len(ts))
	for i, r := range ts {
		ids[i] = r.TaskID
	}
	assert.Contains(t, ids, "task-"+strconv.Itoa(n), "tasks are listed in the order they started")
	assert.True(t, slices.IsSortedFunc(ts, func(a, b shell.Report) int {
		x, _ := strconv.Atoi(strings.TrimPrefix(a.TaskID, "task-"))
		y, _ := strconv.Atoi(strings.TrimPrefix(b.TaskID, "task-"))
		return x - y
	}))
}

func TestUnknownTask(t *testing.T) {
	h := newHarness(t)
	r := h.output("task-9", false)
	require.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, shell.ErrUnknownTask)
	assert.Equal(t, `There is no task "task-9". No background tasks are kept now.`, r.Text())

	h.background("sleep 30")
	r = h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": "nope"})
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), `There is no task "nope". The tasks are: task-1 (running for`)
	assert.Contains(t, r.Text(), ": sleep 30)")
}

func TestClose(t *testing.T) {
	h := newHarness(t)
	id := h.background("sleep 30 & echo $!; sleep 30")
	bgPid := pidIn(t, h.readUntil(id, "\n"))

	fg := make(chan tool.Result, 1)
	go func() {
		fg <- h.call(context.Background(), shell.BashName, map[string]any{"command": "sleep 30 & echo $! > fg.pid; sleep 30"})
	}()
	pidFile := filepath.Join(h.s.Dir(), "fg.pid")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	}, 5*time.Second, 10*time.Millisecond)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	fgPid := pidIn(t, string(b))

	start := time.Now()
	require.NoError(t, h.s.Close())
	assert.Less(t, time.Since(start), promptly)
	requireGone(t, bgPid)
	requireGone(t, fgPid)
	r := <-fg
	require.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, shell.ErrClosed)
	assert.Contains(t, r.Text(), "killed because the toolset was closed")

	for name, args := range map[string]map[string]any{
		shell.BashName:       {"command": "echo hi"},
		shell.TaskOutputName: {"task_id": id},
		shell.TaskStopName:   {"task_id": id},
	} {
		r := h.call(context.Background(), name, args)
		require.True(t, r.IsError, name)
		assert.ErrorIs(t, r.Err, shell.ErrClosed, name)
		assert.Contains(t, r.Text(), `The shell toolset "shell" is closed`, name)
	}
	r = h.call(context.Background(), shell.BashName, map[string]any{"command": "sleep 1", "run_in_background": true})
	assert.ErrorIs(t, r.Err, shell.ErrClosed)
	_, err = h.s.Tools(context.Background())
	assert.ErrorIs(t, err, shell.ErrClosed)
	require.NoError(t, h.s.Close(), "a second Close does nothing")
}

func TestCloseWhileBlocked(t *testing.T) {
	h := newHarness(t)
	id := h.background("sleep 30")
	done := make(chan tool.Result, 1)
	go func() { done <- h.output(id, true) }()
	bgtasktest.WaitBlockedRead(t)
	require.NoError(t, h.s.Close())
	select {
	case r := <-done:
		assert.Contains(t, r.Text(), "closed")
	case <-time.After(3 * time.Second):
		t.Fatal("task_output still waits after Close")
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("SHELL_TEST_INHERITED", "from the process")
	t.Setenv("SHELL_TEST_SECRET", "s3cret")
	const show = `printf '%s|%s|%s|%s\n' "${SHELL_TEST_INHERITED-unset}" "${SHELL_TEST_SECRET-unset}" "${EXTRA-unset}" "${PATH:+path}"`

	h := newHarness(t)
	assert.Equal(t, "from the process|s3cret|unset|path\nExit code: 0", h.bash(show).Text())

	h = newHarness(t, shell.WithEnv("SHELL_TEST_SECRET=overridden", "EXTRA=1"), shell.WithEnv("EXTRA=2"))
	assert.Equal(t, "from the process|overridden|2|path\nExit code: 0", h.bash(show).Text())

	h = newHarness(t, shell.WithCleanEnv(), shell.WithEnv("EXTRA=3"))
	assert.Equal(t, "unset|unset|3|path\nExit code: 0", h.bash(show).Text())
	r := h.bash("env")
	assert.NotContains(t, r.Text(), "SHELL_TEST")
	assert.Contains(t, r.Text(), "PATH="+os.Getenv("PATH")+"\n")
}

func TestWorkingDirectory(t *testing.T) {
	requireShell(t)
	parent := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(parent, "project"), 0o755))
	t.Chdir(parent)
	s, err := shell.New("project")
	require.NoError(t, err)
	defer s.Close()
	want := filepath.Join(parent, "project")
	assert.Equal(t, want, s.Dir(), "the directory is made absolute")

	h := &harness{t: t, s: s, tools: map[string]tool.Tool{}}
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	for _, tl := range tools {
		h.tools[tool.Name(tl)] = tl
	}
	real, err := filepath.EvalSymlinks(want)
	require.NoError(t, err)
	r := h.bash(`pwd -P; echo "$PWD"; cd / && pwd`)
	assert.Equal(t, real+"\n"+want+"\n/\nExit code: 0", r.Text())
	// A cd does not carry over.
	assert.Equal(t, real+"\nExit code: 0", h.bash("pwd -P").Text())
	assert.Contains(t, h.tools[shell.BashName].Definition().Description, want)
}

func TestWithShell(t *testing.T) {
	requireShell(t)
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("skipped: needs /bin/bash")
	}
	h := newHarness(t, shell.WithShell("bash"))
	r := h.bash(`echo "$BASH_VERSION" | cut -c1`)
	require.False(t, r.IsError, r.Text())
	assert.Regexp(t, `^\d\n`, r.Text())

	h = newHarness(t, shell.WithShell("/bin/bash", "-o", "pipefail", "-c"))
	r = h.bash("false | true")
	assert.Equal(t, "(no output)\nExit code: 1", r.Text(), "pipefail applies")
}

func TestBadOptions(t *testing.T) {
	requireShell(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		name string
		dir  string
		opt  shell.Option
		want string
	}{
		{"name", dir, shell.WithName(""), "WithName"},
		{"shell path", dir, shell.WithShell(" "), "WithShell: the shell's path is empty"},
		{"shell missing", dir, shell.WithShell("/no/such/shell"), `WithShell: the shell "/no/such/shell" cannot be run`},
		{"timeout", dir, shell.WithTimeout(0), "WithTimeout"},
		{"max timeout", dir, shell.WithMaxTimeout(-time.Second), "WithMaxTimeout"},
		{"max output", dir, shell.WithMaxOutput(0), "WithMaxOutput"},
		{"max tasks", dir, shell.WithMaxTasks(0), "WithMaxTasks"},
		{"kill grace", dir, shell.WithKillGrace(-time.Millisecond), "WithKillGrace"},
		{"env", dir, shell.WithEnv("NOEQUALS"), `WithEnv: "NOEQUALS"`},
		{"env key", dir, shell.WithEnv("=value"), `WithEnv: "=value"`},
		{"empty dir", "", nil, "the directory is empty"},
		{"missing dir", filepath.Join(dir, "missing"), nil, "no such file or directory"},
		{"file", file, nil, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := shell.New(tc.dir, tc.opt)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := shell.New(dir, shell.WithMaxTasks(0), shell.WithMaxOutput(-1))
	require.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.Contains(t, err.Error(), "WithMaxTasks")
	assert.Contains(t, err.Error(), "WithMaxOutput", "every problem is named")

	s, err := shell.New(dir, shell.WithKillGrace(0))
	require.NoError(t, err, "no grace period: SIGKILL at once")
	require.NoError(t, s.Close())
}

func TestKillGraceZero(t *testing.T) {
	h := newHarness(t, shell.WithKillGrace(0))
	start := time.Now()
	r := h.call(context.Background(), shell.BashName, map[string]any{"command": `trap '' TERM; sleep 30 & echo $!; sleep 30`, "timeout_ms": 100})
	require.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
	// Below the default grace, which would add 2 seconds.
	assert.Less(t, time.Since(start), shell.DefaultKillGrace)
	requireGone(t, pidIn(t, r.Text()))
}

func TestMetadata(t *testing.T) {
	h := newHarness(t)
	assert.Equal(t, shell.DefaultName, h.s.Name())
	assert.Len(t, h.tools, 3)

	bash := tool.MetadataOf(h.tools[shell.BashName])
	assert.True(t, bash.Destructive)
	assert.False(t, bash.ReadOnly)
	assert.False(t, bash.ConcurrencySafe)

	out := tool.MetadataOf(h.tools[shell.TaskOutputName])
	assert.True(t, out.ReadOnly)
	assert.True(t, out.ConcurrencySafe)
	assert.False(t, out.Destructive)

	stop := tool.MetadataOf(h.tools[shell.TaskStopName])
	assert.True(t, stop.Destructive)
	assert.False(t, stop.ReadOnly)

	for name, tl := range h.tools {
		titled, ok := tl.(tool.Titled)
		require.True(t, ok, name)
		assert.NotEmpty(t, titled.Title(), name)
		assert.NotEmpty(t, tl.Definition().Description, name)
	}
	desc := h.tools[shell.BashName].Definition().Description
	assert.Contains(t, desc, "run_in_background")
	assert.Contains(t, desc, "30000 bytes")
	assert.Contains(t, desc, "/bin/sh -c")
}

func TestPermissionPolicy(t *testing.T) {
	// The pairing the package documentation shows: a policy asks before
	// every destructive call, and the command does not run.
	h := newHarness(t)
	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		if !req.Metadata.Destructive {
			return tool.Allow(), nil
		}
		var args shell.BashArgs
		if err := json.Unmarshal(req.Call.Arguments, &args); err != nil {
			return tool.Decision{}, err
		}
		return tool.Ask("run " + args.Command + "?"), nil
	})
	call := model.ToolCall{ID: "call-1", Name: shell.BashName, Arguments: json.RawMessage(`{"command":"touch ran"}`)}
	r, ok := tool.Authorize(context.Background(), h.tools[shell.BashName], call, policy)
	require.False(t, ok)
	assert.Equal(t, tool.CodeApprovalRequired, r.ErrorCode)
	assert.Contains(t, r.Text(), "run touch ran?")
	assert.NoFileExists(t, filepath.Join(h.s.Dir(), "ran"))
}

func TestConcurrentCalls(t *testing.T) {
	h := newHarness(t, shell.WithMaxTasks(20))
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 10 {
		wg.Go(func() {
			r := h.bash(fmt.Sprintf("echo fg-%d", i))
			if want := fmt.Sprintf("fg-%d\nExit code: 0", i); r.Text() != want {
				errs <- fmt.Errorf("foreground %d: %q, want %q", i, r.Text(), want)
			}
		})
		wg.Go(func() {
			r := h.call(context.Background(), shell.BashName, map[string]any{"command": fmt.Sprintf("echo bg-%d; sleep 0.05; echo end-%d", i, i), "run_in_background": true})
			if r.IsError {
				errs <- errors.New(r.Text())
				return
			}
			id := r.Details.(shell.Report).TaskID
			// Two readers at once: between them they see all the output,
			// once.
			var mu sync.Mutex
			var seen strings.Builder
			var readers sync.WaitGroup
			for range 2 {
				readers.Go(func() {
					r := h.output(id, true)
					mu.Lock()
					defer mu.Unlock()
					if !r.IsError {
						seen.WriteString(outputOf(r.Text()))
					}
				})
			}
			readers.Wait()
			if want := fmt.Sprintf("bg-%d\nend-%d\n", i, i); seen.String() != want {
				errs <- fmt.Errorf("background %d: read %q, want %q", i, seen.String(), want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Empty(t, h.s.Tasks(), "every finished task was read")
}

// escape is a command that starts a process in a session of its own,
// out of the command's process group, with its output away from the
// command's, writes its process ID to file, and waits until the file is
// written.
func escape(file string) string {
	return fmt.Sprintf(`(setsid sh -c 'echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; exec sleep 30' >/dev/null 2>&1 &); while [ ! -s %[1]s ]; do sleep 0.01; done`, file)
}

func readPid(t *testing.T, dir, file string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	return pidIn(t, string(b))
}

// escapedMark is what a command built by timeOutAfterEscape prints once
// its escaped process has written its process ID.
const escapedMark = "escape-done"

// timeOutAfterEscape runs, with a timeout, a command that starts an
// escaped process with escapeCmd (escape or escapeUntagged, writing
// esc.pid) and then sleeps past the timeout. It returns the harness, the
// result and the timeout of a run whose escaped process existed when the
// timeout fired. On a loaded machine the timeout may fire first: then it
// tries again in a new toolset with twice the timeout, until a deadline.
// It skips the test where processes that leave the group are not found.
func timeOutAfterEscape(t *testing.T, escapeCmd func(file string) string) (*harness, tool.Result, time.Duration) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for timeout := 500 * time.Millisecond; ; timeout *= 2 {
		h := newHarness(t, shell.WithKillGrace(100*time.Millisecond))
		if timeout == 500*time.Millisecond {
			requireLinuxSetsid(t, h)
		}
		command := escapeCmd("esc.pid") + "; echo " + escapedMark + "; sleep 30"
		r := h.call(context.Background(), shell.BashName, map[string]any{"command": command, "timeout_ms": timeout.Milliseconds()})
		if strings.Contains(r.Text(), escapedMark+"\n") {
			return h, r, timeout
		}
		// The timeout fired before the escaped process wrote its ID. It may
		// have escaped anyway and write it later: kill it at the end.
		dir := h.s.Dir()
		t.Cleanup(func() {
			if b, err := os.ReadFile(filepath.Join(dir, "esc.pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		if time.Now().Add(2 * timeout).After(deadline) {
			t.Fatalf("the escaped process never started within a timeout (the last %s): %s", timeout, r.Text())
		}
		t.Logf("the timeout of %s fired before the process escaped; trying again with %s", timeout, 2*timeout)
	}
}

func requireLinuxSetsid(t *testing.T, h *harness) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("skipped: processes that leave the group are found on Linux only")
	}
	if r := h.bash("command -v setsid"); r.IsError {
		t.Skip("skipped: needs setsid")
	}
}

// TestEscapedProcessesAreKilled checks that a process that a command
// started in a session of its own, after a double fork, does not outlive
// the command, however it ends.
func TestEscapedProcessesAreKilled(t *testing.T) {
	t.Run("exit", func(t *testing.T) {
		h := newHarness(t, shell.WithKillGrace(100*time.Millisecond))
		requireLinuxSetsid(t, h)
		r := h.bash(escape("esc.pid"))
		require.False(t, r.IsError, r.Text())
		assert.True(t, r.Details.(shell.Report).Leftovers)
		assert.Contains(t, r.Text(), "Processes the command left running were killed")
		requireGone(t, readPid(t, h.s.Dir(), "esc.pid"))
	})
	t.Run("timeout", func(t *testing.T) {
		h, r, _ := timeOutAfterEscape(t, escape)
		assert.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
		requireGone(t, readPid(t, h.s.Dir(), "esc.pid"))
	})
	t.Run("task_stop", func(t *testing.T) {
		h := newHarness(t, shell.WithKillGrace(100*time.Millisecond))
		requireLinuxSetsid(t, h)
		id := h.background(escape("esc.pid") + "; echo ready; sleep 30")
		h.readUntil(id, "ready")
		r := h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": id})
		require.False(t, r.IsError, r.Text())
		requireGone(t, readPid(t, h.s.Dir(), "esc.pid"))
	})
	t.Run("close", func(t *testing.T) {
		h := newHarness(t, shell.WithKillGrace(100*time.Millisecond))
		requireLinuxSetsid(t, h)
		id := h.background(escape("esc.pid") + "; echo ready; sleep 30")
		h.readUntil(id, "ready")
		require.NoError(t, h.s.Close())
		requireGone(t, readPid(t, h.s.Dir(), "esc.pid"))
	})
	t.Run("nested", func(t *testing.T) {
		// A toolset whose process runs under another's keeps the outer
		// tags, so that the outer one can still kill what it starts.
		t.Setenv("TRELLIS_SHELL_RUN", "outer-1")
		h := newHarness(t, shell.WithCleanEnv())
		r := h.bash(`echo "$TRELLIS_SHELL_RUN"`)
		require.False(t, r.IsError, r.Text())
		assert.Regexp(t, `^outer-1 \w+-\d+\n`, r.Text())
	})
}

// escapeUntagged is escape, for a process that also drops the tag from its
// environment: nothing finds it.
func escapeUntagged(file string) string {
	return fmt.Sprintf(`(env -u TRELLIS_SHELL_RUN setsid sh -c 'echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; exec sleep 30' >/dev/null 2>&1 &); while [ ! -s %[1]s ]; do sleep 0.01; done`, file)
}

// The message of a timeout says what was killed, and no more: a process
// that left the group and dropped its tag survives, and the message must
// not say that every process died.
func TestTimeoutMessageSaysWhatWasKilled(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		h := newHarness(t, shell.WithTimeout(200*time.Millisecond))
		r := h.bash("sleep 30")
		require.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
		assert.Contains(t, r.Text(), "Timed out after 200ms: the command's process group was killed.")
	})
	t.Run("tagged", func(t *testing.T) {
		h, r, timeout := timeOutAfterEscape(t, escape)
		require.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
		assert.Contains(t, r.Text(), "Timed out after "+timeout.String()+": the command's process group was killed, "+
			"and 1 process that had left the group was found by its tag and killed.")
		requireGone(t, readPid(t, h.s.Dir(), "esc.pid"))
	})
	t.Run("untagged survivor", func(t *testing.T) {
		h, r, timeout := timeOutAfterEscape(t, escapeUntagged)
		require.Equal(t, shell.CodeCommandTimeout, r.ErrorCode, r.Text())
		pid := readPid(t, h.s.Dir(), "esc.pid")
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL); requireGone(t, pid) })
		assert.True(t, alive(pid), "the process that dropped its tag survives")
		assert.Contains(t, r.Text(), "Timed out after "+timeout.String()+": the command's process group was killed.")
		assert.NotContains(t, r.Text(), "every process")
		assert.NotContains(t, r.Text(), "found by")
	})
	t.Run("task", func(t *testing.T) {
		h := newHarness(t)
		id := h.background("sleep 30")
		r := h.call(context.Background(), shell.BashName, map[string]any{"command": "sleep 30", "timeout_ms": 100, "run_in_background": true})
		require.False(t, r.IsError, r.Text())
		r = h.call(context.Background(), shell.TaskOutputName, map[string]any{"task_id": "task-2", "block": true, "timeout_ms": 60000})
		assert.Contains(t, r.Text(), "timed out after 100ms: the command's process group was killed")
		assert.NotContains(t, r.Text(), "every process")
		h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": id})
	})
}

// TestTaskStopWhileBlockedRead checks that task_stop reports the task it
// stopped even when a task_output call that waited for the task read its
// final output first: which of the two reads first is up to the
// scheduler, so the test tries several times.
func TestTaskStopWhileBlockedRead(t *testing.T) {
	h := newHarness(t, shell.WithKillGrace(0))
	for range 10 {
		id := h.background("echo hello; sleep 30")
		h.readUntil(id, "hello")
		blocked := make(chan tool.Result, 1)
		go func() { blocked <- h.output(id, true) }()
		bgtasktest.WaitBlockedRead(t)
		stop := h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": id})
		read := <-blocked
		require.False(t, stop.IsError, stop.Text())
		require.False(t, read.IsError, read.Text())
		assert.Contains(t, stop.Text(), "Stopped "+id)
		assert.Contains(t, stop.Text(), "killed by task_stop")
		assert.Equal(t, shell.StateKilled, stop.Details.(shell.Report).State)
		assert.Contains(t, read.Text(), "killed by task_stop")
		// One of the two returned the final output.
		final := "this was its final output"
		assert.True(t, strings.Contains(stop.Text(), final) != strings.Contains(read.Text(), final), "stop: %s\nread: %s", stop.Text(), read.Text())
	}
	assert.Empty(t, h.s.Tasks())
}

// TestTaskIDSpellings checks that a task is found by its ID, by its number
// alone, and by either with zeros in front.
func TestTaskIDSpellings(t *testing.T) {
	requireShell(t)
	h := newHarness(t)
	id := h.background("echo hello; sleep 30")
	require.Equal(t, "task-1", id)
	for _, spelling := range []string{"task-1", "1", "01", "task-01", " task-1 "} {
		r := h.call(context.Background(), shell.TaskOutputName, map[string]any{"task_id": spelling})
		assert.False(t, r.IsError, "%q: %s", spelling, r.Text())
	}
	r := h.call(context.Background(), shell.TaskOutputName, map[string]any{"task_id": "task-2"})
	assert.True(t, r.IsError)
	r = h.call(context.Background(), shell.TaskStopName, map[string]any{"task_id": "001"})
	assert.False(t, r.IsError, r.Text())
}
