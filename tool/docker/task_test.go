package docker

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/bgtask/bgtasktest"
	"github.com/trellis-go/trellis/internal/outbuf"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// call invokes the tool name of box with args, marshalled to JSON.
func call(ctx context.Context, t *testing.T, box *Toolset, name string, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range box.tools {
		if tool.Name(tl) == name {
			return tool.Invoke(ctx, tl, model.ToolCall{ID: "call-1", Name: name, Arguments: raw})
		}
	}
	t.Fatalf("no tool %q", name)
	return tool.Result{}
}

// background starts command as a task and returns its ID.
func background(t *testing.T, box *Toolset, command string) string {
	t.Helper()
	r := call(context.Background(), t, box, BashName, map[string]any{"command": command, "run_in_background": true})
	if r.IsError {
		t.Fatalf("start %q: %s", command, r.Text())
	}
	rep := r.Details.(Report)
	if rep.TaskID == "" || rep.State != StateRunning || !strings.Contains(r.Text(), "Started "+rep.TaskID+" in the background.") {
		t.Fatalf("start %q: %q %+v", command, r.Text(), rep)
	}
	return rep.TaskID
}

func output(t *testing.T, box *Toolset, id string, block bool) tool.Result {
	t.Helper()
	return call(context.Background(), t, box, TaskOutputName, map[string]any{"task_id": id, "block": block})
}

func stopTask(t *testing.T, box *Toolset, id string) tool.Result {
	t.Helper()
	return call(context.Background(), t, box, TaskStopName, map[string]any{"task_id": id})
}

// outputOf returns the output part of a task_output result's text.
func outputOf(text string) string {
	for _, label := range []string{"Output:\n", "Output since the previous read:\n"} {
		if _, out, ok := strings.Cut(text, label); ok {
			out, _, _ = strings.Cut(out, "\nThe task has finished")
			return strings.TrimSuffix(out, "\n") + "\n"
		}
	}
	return ""
}

// readUntil reads task id's output until it holds want, and returns all
// that was read.
func readUntil(t *testing.T, box *Toolset, id, want string) string {
	t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(all.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("task %s never wrote %q; read %q", id, want, all.String())
		}
		r := output(t, box, id, false)
		if r.IsError {
			t.Fatalf("read %s: %s", id, r.Text())
		}
		all.WriteString(outputOf(r.Text()))
		time.Sleep(5 * time.Millisecond)
	}
	return all.String()
}

// waitFor fails the test unless cond holds within a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBackgroundTask(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	id := background(t, box, "gate")
	if id != "task-1" {
		t.Errorf("ID %q, want task-1", id)
	}
	if got := readUntil(t, box, id, "one"); got != "one\n" {
		t.Errorf("first reads %q", got)
	}
	r := output(t, box, id, false)
	for _, want := range []string{"task-1 (gate): running for", "(no new output since the previous read)"} {
		if !strings.Contains(r.Text(), want) {
			t.Errorf("read %q lacks %q", r.Text(), want)
		}
	}
	if rep := r.Details.(Report); rep.State != StateRunning || rep.ExitCode != -1 || rep.ExecID == "" {
		t.Errorf("report %+v", rep)
	}
	if ts := box.Tasks(); len(ts) != 1 || ts[0].TaskID != id {
		t.Errorf("Tasks %+v", ts)
	}
	// The task is an exec like any command, with a tag to stop it by.
	var cfg execConfig
	_ = json.Unmarshal(f.requests("POST /containers/" + box.ContainerID() + "/exec")[0].Body, &cfg)
	if !slices.Equal(cfg.Cmd, []string{"sh", "-c", "gate"}) || len(cfg.Env) != 1 || !strings.HasPrefix(cfg.Env[0], markerVar+"=") {
		t.Errorf("exec config %+v", cfg)
	}

	close(f.gate)
	r = output(t, box, id, true)
	if r.IsError {
		t.Fatal(r.Text())
	}
	for _, want := range []string{"exited with code 4", "Output since the previous read:\ntwo\nthree\n", "this was its final output, and task-1 is no longer kept"} {
		if !strings.Contains(r.Text(), want) {
			t.Errorf("final read %q lacks %q", r.Text(), want)
		}
	}
	rep := r.Details.(Report)
	if rep.State != StateExited || rep.ExitCode != 4 || rep.OutputBytes != 14 {
		t.Errorf("report %+v", rep)
	}
	if len(f.requests("GET /exec/"+rep.ExecID+"/json")) == 0 {
		t.Error("the exit code was not read from the exec")
	}

	r = output(t, box, id, false)
	if !r.IsError || !errors.Is(r.Err, ErrUnknownTask) || !strings.Contains(r.Text(), `Task "task-1" has finished and is no longer kept`) {
		t.Errorf("read after the final one: %q %v", r.Text(), r.Err)
	}
	if ts := box.Tasks(); len(ts) != 0 {
		t.Errorf("Tasks %+v", ts)
	}
}

var tickLine = regexp.MustCompile(`^tick (\d+)$`)

// ticks returns the numbers of the tick lines in out, which holds whole
// lines.
func ticks(t *testing.T, out string) []int {
	t.Helper()
	var ns []int
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		m := tickLine.FindStringSubmatch(line)
		if m == nil {
			if line != "terminated" {
				t.Errorf("line %q in %q", line, out)
			}
			continue
		}
		n, _ := strconv.Atoi(m[1])
		ns = append(ns, n)
	}
	return ns
}

// TestBackgroundIncrementalReads checks that each read returns only what
// was written since the previous one, in order, with nothing lost.
func TestBackgroundIncrementalReads(t *testing.T) {
	f := newFake(t, "tcp")
	box := newBox(t, f, WithKillGrace(time.Second))
	id := background(t, box, "tick")
	var all []int
	nonEmpty := 0
	for nonEmpty < 4 {
		r := output(t, box, id, false)
		if r.IsError {
			t.Fatal(r.Text())
		}
		if out := outputOf(r.Text()); out != "" {
			nonEmpty++
			all = append(all, ticks(t, out)...)
		}
		time.Sleep(15 * time.Millisecond)
	}
	r := stopTask(t, box, id)
	if r.IsError || !strings.Contains(r.Text(), "Stopped task-1 and the processes it started that kept its environment.") || !strings.HasSuffix(outputOf(r.Text()), "terminated\n") {
		t.Fatalf("stop: %q", r.Text())
	}
	all = append(all, ticks(t, outputOf(r.Text()))...)
	for i, n := range all {
		if n != i+1 {
			t.Fatalf("ticks read %v: want 1, 2, 3, ... each once", all)
		}
	}
	if rep := r.Details.(Report); rep.State != StateKilled || rep.ExitCode != 143 || rep.Reason != "by task_stop" {
		t.Errorf("report %+v", rep)
	}
}

func TestBackgroundBlockTimesOut(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	id := background(t, box, "sleep")
	start := time.Now()
	r := call(context.Background(), t, box, TaskOutputName, map[string]any{"task_id": id, "block": true, "timeout_ms": 200})
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("returned after %v", d)
	}
	if r.IsError || !strings.HasPrefix(r.Text(), "Still running after waiting 200ms.\ntask-1 (sleep): running for") || outputOf(r.Text()) != "started\n" {
		t.Errorf("result %q", r.Text())
	}
}

func TestBackgroundTimeout(t *testing.T) {
	// On a loaded machine the timeout may fire before the command's
	// program started: then the test tries again with twice the timeout.
	var (
		f       *fakeDaemon
		r       tool.Result
		timeout time.Duration
	)
	for timeout = 200 * time.Millisecond; ; timeout *= 2 {
		f = newFake(t, "unix")
		box := newBox(t, f, WithKillGrace(100*time.Millisecond))
		r = call(context.Background(), t, box, BashName, map[string]any{"command": "sleep", "run_in_background": true, "timeout_ms": timeout.Milliseconds()})
		if r.IsError || !strings.Contains(r.Text(), "It is stopped, with the processes it started that kept its environment, if it runs longer than "+timeout.String()+".") || r.Details.(Report).Timeout != timeout {
			t.Fatalf("start: %q", r.Text())
		}
		r = output(t, box, r.Details.(Report).TaskID, true)
		f.mu.Lock()
		early := f.earlyKills
		f.mu.Unlock()
		if early == 0 || timeout >= 10*time.Second {
			break
		}
		t.Logf("the timeout of %s fired before the command started: trying again with %s", timeout, 2*timeout)
	}
	if !strings.Contains(r.Text(), "timed out after "+timeout.String()+" and was stopped, with the processes it started that kept its environment") || outputOf(r.Text()) != "started\nterminated\n" {
		t.Errorf("result %q", r.Text())
	}
	if rep := r.Details.(Report); rep.State != StateTimedOut || rep.ExitCode != 143 || rep.Escaped {
		t.Errorf("report %+v", rep)
	}
	if k := killRequests(f); !slices.Equal(k, []string{execTag(t, f, 0) + " TERM"}) {
		t.Errorf("kill execs %q", k)
	}
}

// A background task has no timeout unless its call gives one.
func TestBackgroundHasNoDefaultTimeout(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithTimeout(50*time.Millisecond))
	id := background(t, box, "sleep")
	// A task started later with the default timeout as its own: once it
	// has timed out, the first would have too.
	ref := call(context.Background(), t, box, BashName, map[string]any{"command": "sleep", "run_in_background": true, "timeout_ms": 50})
	if ref.IsError {
		t.Fatal(ref.Text())
	}
	refID := ref.Details.(Report).TaskID
	waitFor(t, refID+" timed out", func() bool {
		return output(t, box, refID, false).Details.(Report).State == StateTimedOut
	})
	r := output(t, box, id, false)
	tag := execTag(t, f, 0)
	killed := slices.ContainsFunc(killRequests(f), func(k string) bool { return strings.HasPrefix(k, tag+" ") })
	if !strings.Contains(r.Text(), "running for") || r.Details.(Report).Timeout != 0 || killed {
		t.Errorf("result %q, kills %q (the task's tag: %s)", r.Text(), killRequests(f), tag)
	}
}

func TestBackgroundOutputDropped(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithMaxOutput(10))
	id := background(t, box, "echo 0123456789abcdefghij")
	r := output(t, box, id, true)
	if !strings.Contains(r.Text(), "[11 bytes of output were dropped before what follows: only the last 10 bytes of unread output are kept.]") ||
		!strings.Contains(r.Text(), "Output:\nbcdefghij\n") || r.Details.(Report).Omitted != 11 {
		t.Errorf("result %q %+v", r.Text(), r.Details)
	}
}

func TestTaskStop(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithKillGrace(time.Second))
	id := background(t, box, "sleep")
	readUntil(t, box, id, "started")
	start := time.Now()
	r := stopTask(t, box, id)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("took %v: the command ended at SIGTERM", d)
	}
	if r.IsError || !strings.HasPrefix(r.Text(), "Stopped task-1 and the processes it started that kept its environment.\ntask-1 (sleep): killed by task_stop after") ||
		outputOf(r.Text()) != "terminated\n" || !strings.Contains(r.Text(), "no longer kept") {
		t.Errorf("result %q", r.Text())
	}
	if rep := r.Details.(Report); rep.State != StateKilled || rep.Reason != "by task_stop" || rep.ExitCode != 143 {
		t.Errorf("report %+v", rep)
	}
	if k := killRequests(f); !slices.Equal(k, []string{execTag(t, f, 0) + " TERM"}) {
		t.Errorf("kill execs %q", k)
	}
	if r := stopTask(t, box, id); !errors.Is(r.Err, ErrUnknownTask) {
		t.Errorf("second stop: %q", r.Text())
	}
}

func TestTaskStopEscalatesToKill(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithKillGrace(50*time.Millisecond))
	id := background(t, box, "stubborn")
	readUntil(t, box, id, "started")
	r := stopTask(t, box, id)
	if rep := r.Details.(Report); r.IsError || rep.State != StateKilled || rep.ExitCode != 137 || rep.Escaped {
		t.Errorf("result %q %+v", r.Text(), rep)
	}
	tag := execTag(t, f, 0)
	if k := killRequests(f); !slices.Equal(k, []string{tag + " TERM", tag + " KILL"}) {
		t.Errorf("kill execs %q", k)
	}
}

// A task whose processes ignore even SIGKILL (out of the tag's reach) is
// given up on, and the result says they may still run.
func TestTaskStopEscaped(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithKillGrace(10*time.Millisecond))
	id := background(t, box, "immortal")
	readUntil(t, box, id, "started")
	r := stopTask(t, box, id)
	rep := r.Details.(Report)
	if r.IsError || !rep.Escaped || rep.State != StateKilled ||
		!strings.HasPrefix(r.Text(), "Tried to stop task-1, but its processes did not end: they may still be running in the sandbox.") ||
		!strings.Contains(r.Text(), "task-1 (immortal): stopped by task_stop after") {
		t.Errorf("result %q %+v", r.Text(), rep)
	}
}

func TestTaskStopFinished(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	background(t, box, "echo done")
	waitFor(t, "the task has finished", func() bool {
		ts := box.Tasks()
		return len(ts) == 1 && ts[0].State == StateExited
	})
	r := stopTask(t, box, "1") // the number alone names the task too
	if r.IsError || !strings.HasPrefix(r.Text(), "task-1 had already finished.\ntask-1 (echo done): exited with code 0 after") || !strings.Contains(r.Text(), "Output:\ndone\n") {
		t.Errorf("result %q", r.Text())
	}
	if k := killRequests(f); len(k) != 0 {
		t.Errorf("kill execs %q for a finished task", k)
	}
}

// TestBackgroundDetached checks that a task that closes its output and
// carries on is followed until the daemon says it ended, and can still be
// stopped.
func TestBackgroundDetached(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	id := background(t, box, "detach")
	readUntil(t, box, id, "detached")
	// The second inspection comes after the toolset has read that the
	// command still runs after closing its output.
	waitFor(t, "the detached command was inspected twice", func() bool { return f.inspections("detach") >= 2 })
	if r := output(t, box, id, false); !strings.Contains(r.Text(), "running for") {
		t.Fatalf("the task ended with its output: %q", r.Text())
	}
	r := stopTask(t, box, id)
	if rep := r.Details.(Report); r.IsError || rep.State != StateKilled || rep.ExitCode != 143 || !strings.Contains(r.Text(), "Stopped task-1") {
		t.Errorf("result %q %+v", r.Text(), rep)
	}
}

func TestMaxTasks(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithMaxTasks(1), WithKillGrace(0))
	id := background(t, box, "sleep")
	r := call(context.Background(), t, box, BashName, map[string]any{"command": "sleep", "run_in_background": true})
	if !r.IsError || !errors.Is(r.Err, ErrTooManyTasks) ||
		!strings.Contains(r.Text(), "1 background tasks are running, the most this toolset allows") || !strings.Contains(r.Text(), "Running: task-1 (running for") {
		t.Errorf("second start: %q %v", r.Text(), r.Err)
	}
	// Foreground commands do not count.
	if r := bashCall(t, box, "echo fine"); r.IsError {
		t.Errorf("foreground: %q", r.Text())
	}
	if r := stopTask(t, box, id); r.IsError {
		t.Fatal(r.Text())
	}
	if id := background(t, box, "sleep"); id != "task-2" {
		t.Errorf("ID %q, want task-2", id)
	}
}

// A task that could not be started takes no ID and gives its slot back.
func TestBackgroundStartFails(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithMaxTasks(1))
	f.mu.Lock()
	f.containers[box.ContainerID()] = false
	f.mu.Unlock()
	r := call(context.Background(), t, box, BashName, map[string]any{"command": "sleep", "run_in_background": true})
	if !r.IsError || !errors.Is(r.Err, ErrContainerGone) || !strings.Contains(r.Text(), "not running any more") {
		t.Fatalf("result %q %v", r.Text(), r.Err)
	}
	f.mu.Lock()
	f.containers[box.ContainerID()] = true
	f.mu.Unlock()
	if id := background(t, box, "echo hi"); id != "task-1" {
		t.Errorf("ID %q, want task-1", id)
	}
}

// A daemon that does not answer the exec's start does not hold the call.
func TestBackgroundStartStallIsBounded(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	f.mu.Lock()
	f.stall["POST /exec/[^/]+/start"] = true
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := call(ctx, t, box, BashName, map[string]any{"command": "sleep", "run_in_background": true})
	if r.Status != tool.StatusTimeout && r.Status != tool.StatusCancelled {
		t.Errorf("result %+v: %q", r, r.Text())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if ts := box.Tasks(); len(ts) != 0 {
		t.Errorf("tasks %+v", ts)
	}
}

func TestFinishedTasksAreBounded(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithMaxTasks(MaxFinishedTasks+10))
	n := MaxFinishedTasks + 2
	for range n {
		background(t, box, "echo x")
	}
	waitFor(t, "every task has finished", func() bool {
		return !slices.ContainsFunc(box.Tasks(), func(r Report) bool { return r.State == StateRunning })
	})
	ts := box.Tasks()
	if len(ts) != MaxFinishedTasks {
		t.Fatalf("%d tasks kept, want %d", len(ts), MaxFinishedTasks)
	}
	if !slices.ContainsFunc(ts, func(r Report) bool { return r.TaskID == "task-"+strconv.Itoa(n) }) {
		t.Errorf("the newest task was forgotten")
	}
	if !slices.IsSortedFunc(ts, func(a, b Report) int {
		x, _ := strconv.Atoi(strings.TrimPrefix(a.TaskID, "task-"))
		y, _ := strconv.Atoi(strings.TrimPrefix(b.TaskID, "task-"))
		return x - y
	}) {
		t.Errorf("tasks not in the order they started")
	}
}

func TestUnknownTask(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	r := output(t, box, "task-9", false)
	if !r.IsError || !errors.Is(r.Err, ErrUnknownTask) || r.Text() != `There is no task "task-9". No background tasks are kept now.` {
		t.Errorf("result %q %v", r.Text(), r.Err)
	}
	background(t, box, "sleep")
	r = stopTask(t, box, "nope")
	if !r.IsError || !strings.Contains(r.Text(), `There is no task "nope". The tasks are: task-1 (running for`) || !strings.HasSuffix(r.Text(), ": sleep).") {
		t.Errorf("result %q", r.Text())
	}
}

func TestTaskIDSpellings(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithKillGrace(0))
	id := background(t, box, "sleep")
	if id != "task-1" {
		t.Fatalf("ID %q", id)
	}
	for _, spelling := range []string{"task-1", "1", "01", "task-01", " task-1 "} {
		if r := output(t, box, spelling, false); r.IsError {
			t.Errorf("%q: %s", spelling, r.Text())
		}
	}
	if r := output(t, box, "task-2", false); !r.IsError {
		t.Errorf("task-2: %q", r.Text())
	}
	if r := stopTask(t, box, "001"); r.IsError {
		t.Errorf("001: %q", r.Text())
	}
}

// TestConcurrentReaders checks that readers racing on one task each get
// their own part of the output: every line is returned once.
func TestConcurrentReaders(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithKillGrace(time.Second))
	id := background(t, box, "tick")
	all := ticks(t, readUntil(t, box, id, "tick 1\n"))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for range 15 {
				r := output(t, box, id, false)
				if r.IsError {
					t.Error(r.Text())
					return
				}
				ns := ticks(t, outputOf(r.Text()))
				mu.Lock()
				all = append(all, ns...)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	r := stopTask(t, box, id)
	all = append(all, ticks(t, outputOf(r.Text()))...)
	slices.Sort(all)
	for i, n := range all {
		if n != i+1 {
			t.Fatalf("ticks read %v: want 1, 2, 3, ... each once", all)
		}
	}
	if len(all) < 5 {
		t.Errorf("only %d ticks read", len(all))
	}
}

// TestTaskStopWhileBlockedRead checks that task_stop reports the task it
// stopped even when a blocked task_output read its final output first.
func TestTaskStopWhileBlockedRead(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithKillGrace(0))
	for range 5 {
		id := background(t, box, "sleep")
		readUntil(t, box, id, "started")
		blocked := make(chan tool.Result, 1)
		go func() { blocked <- output(t, box, id, true) }()
		bgtasktest.WaitBlockedRead(t)
		stop := stopTask(t, box, id)
		read := <-blocked
		if stop.IsError || read.IsError || !strings.Contains(stop.Text(), "Stopped "+id) ||
			!strings.Contains(stop.Text(), "killed by task_stop") || !strings.Contains(read.Text(), "killed by task_stop") {
			t.Fatalf("stop %q\nread %q", stop.Text(), read.Text())
		}
		final := "this was its final output"
		if strings.Contains(stop.Text(), final) == strings.Contains(read.Text(), final) {
			t.Errorf("one of the two must return the final output:\nstop %q\nread %q", stop.Text(), read.Text())
		}
	}
	if ts := box.Tasks(); len(ts) != 0 {
		t.Errorf("tasks %+v", ts)
	}
}

func TestCloseStopsTasks(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	id := background(t, box, "sleep")
	background(t, box, "tick")
	readUntil(t, box, id, "started")
	start := time.Now()
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	running := box.tasks.Running()
	if running != 0 {
		t.Errorf("%d tasks running after Close", running)
	}
	for name, args := range map[string]map[string]any{
		BashName:       {"command": "sleep", "run_in_background": true},
		TaskOutputName: {"task_id": id},
		TaskStopName:   {"task_id": id},
	} {
		r := call(context.Background(), t, box, name, args)
		if !r.IsError || !errors.Is(r.Err, ErrClosed) || !strings.Contains(r.Text(), `The sandbox "docker" is closed`) {
			t.Errorf("%s after Close: %q", name, r.Text())
		}
	}
	// The reports still say how the tasks ended.
	for _, rep := range box.Tasks() {
		if rep.State != StateKilled || rep.Reason != "because the sandbox was closed" {
			t.Errorf("report %+v", rep)
		}
	}
}

func TestCloseWhileBlocked(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	id := background(t, box, "sleep")
	done := make(chan tool.Result, 1)
	go func() { done <- output(t, box, id, true) }()
	bgtasktest.WaitBlockedRead(t)
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if !strings.Contains(r.Text(), "killed because the sandbox was closed") {
			t.Errorf("result %q", r.Text())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("task_output still waits after Close")
	}
}

func TestDaemonVanishesMidTask(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	id := background(t, box, "vanish")
	r := output(t, box, id, true)
	rep := r.Details.(Report)
	if r.IsError || rep.State != StateFailed || !strings.Contains(r.Text(), "task-1 (vanish): failed after") ||
		!strings.Contains(r.Text(), f.host) || !strings.Contains(r.Text(), "partial output") || !strings.Contains(rep.Reason, f.host) {
		t.Errorf("result %q %+v", r.Text(), rep)
	}
}

func TestTaskToolsMetadata(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	tools, _ := box.Tools(context.Background())
	var names []string
	for _, tl := range tools {
		names = append(names, tool.Name(tl))
	}
	if !slices.Equal(names, []string{BashName, TaskOutputName, TaskStopName}) {
		t.Fatalf("tools %q", names)
	}
	if md := tool.MetadataOf(tools[1]); !md.ReadOnly || !md.ConcurrencySafe || md.Destructive {
		t.Errorf("task_output metadata %+v", md)
	}
	if md := tool.MetadataOf(tools[2]); !md.Destructive || md.ReadOnly {
		t.Errorf("task_stop metadata %+v", md)
	}
	if d := tools[0].Definition().Description; !strings.Contains(d, "run_in_background") {
		t.Errorf("bash description: %s", d)
	}
	if _, err := New(context.Background(), "alpine:3.20", WithHost(f.host), WithMaxTasks(0)); !errors.Is(err, tool.ErrInvalidTool) || !strings.Contains(err.Error(), "WithMaxTasks") {
		t.Errorf("WithMaxTasks(0): %v", err)
	}
}

func TestTaskOutputIncremental(t *testing.T) {
	o := outbuf.NewTaskOutput(8)
	_, _ = o.Write([]byte("ab"))
	_, _ = o.Write([]byte("c\xe2\x82")) // the start of €
	if text, dropped := o.Unread(false); text != "abc" || dropped != 0 {
		t.Errorf("read %q %d", text, dropped)
	}
	_, _ = o.Write([]byte("\xac!"))
	if text, _ := o.Unread(false); text != "€!" {
		t.Errorf("read %q", text)
	}
	if text, _ := o.Unread(true); text != "" {
		t.Errorf("read %q", text)
	}
	_, _ = o.Write([]byte("0123456789€")) // 13 bytes, of which 8 are kept
	text, dropped := o.Unread(true)
	if text != "56789€" || dropped != 5 || o.Written() != 20 {
		t.Errorf("read %q, %d dropped, %d written", text, dropped, o.Written())
	}
	_, _ = o.Write([]byte("x€"))
	_, _ = o.Write([]byte("yyyyyy")) // the € is cut by the ring
	if text, dropped := o.Unread(true); text != "yyyyyy" || dropped != 4 {
		t.Errorf("read %q %d", text, dropped)
	}
}

// FuzzTaskOutput checks that reads of a background task's output, made
// between writes, return the output in order, whole characters at a time,
// with nothing lost when the buffer does not overflow, and only a suffix
// of it when it does.
func FuzzTaskOutput(f *testing.F) {
	f.Add([]byte("one\ntwo\nthree\n"), 3, 100)
	f.Add([]byte("€€€ and ☃"), 2, 5)
	f.Add([]byte("\xff\xfe binary \x00"), 1, 3)
	f.Fuzz(func(t *testing.T, data []byte, chunk, size int) {
		chunk = 1 + abs(chunk)%16
		size = 1 + abs(size)%64
		o := outbuf.NewTaskOutput(size)
		var got strings.Builder
		var dropped int64
		for rest := data; len(rest) > 0; {
			n := min(chunk, len(rest))
			_, _ = o.Write(rest[:n])
			rest = rest[n:]
			text, d := o.Unread(false)
			if utf8.Valid(data) && !utf8.ValidString(text) {
				t.Fatalf("split character in %q", text)
			}
			got.WriteString(text)
			dropped += d
		}
		text, d := o.Unread(true)
		got.WriteString(text)
		dropped += d
		if int64(got.Len())+dropped != int64(len(data)) {
			t.Fatalf("read %d bytes and dropped %d of %d", got.Len(), dropped, len(data))
		}
		if dropped == 0 && got.String() != string(data) {
			t.Fatalf("read %q, want %q", got.String(), data)
		}
		if !strings.HasSuffix(string(data), text) {
			t.Fatalf("final read %q is not the end of %q", text, data)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
