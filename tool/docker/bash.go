package docker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/internal/bgtask"
	"github.com/trellis-go/trellis/internal/outbuf"
	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/tool"
)

// State is where a command stands.
type State string

// The states of a command.
const (
	// StateRunning: the command has not ended yet (background tasks only).
	StateRunning State = "running"
	// StateExited: the command ended on its own, with an exit code.
	StateExited State = "exited"
	// StateKilled: the command was stopped: its call was cancelled, it
	// was stopped with task_stop, or the toolset closed.
	StateKilled State = "killed"
	// StateTimedOut: the command ran past its timeout and was stopped.
	StateTimedOut State = "timed_out"
	// StateFailed: how a background task ended is not known, because the
	// daemon failed or went away while it ran; Reason says what happened.
	StateFailed State = "failed"
)

// Report describes a command. The results of the tools carry one in
// Details; the model never sees it.
type Report struct {
	// TaskID is a background task's ID, "" for a foreground command.
	TaskID string `json:"task_id,omitempty"`
	// Command is the command, as the model gave it.
	Command string `json:"command"`
	// Description is the model's short description of the command.
	Description string `json:"description,omitempty"`
	// ExecID is the ID of the exec that ran the command.
	ExecID string `json:"exec_id,omitempty"`
	// State is where the command stands.
	State State `json:"state"`
	// Reason says, for a background task whose State is StateKilled or
	// StateFailed, by what or why: "by task_stop", "because the sandbox
	// was closed", or the daemon's failure.
	Reason string `json:"reason,omitempty"`
	// ExitCode is the exit code when State is StateExited, and the code
	// the stopped command ended with otherwise, or -1 when it is not
	// known.
	ExitCode int `json:"exit_code"`
	// Started is when the command started.
	Started time.Time `json:"started"`
	// Duration is how long the command ran, or has been running.
	Duration time.Duration `json:"duration"`
	// Timeout is the command's timeout, 0 for a background task without
	// one.
	Timeout time.Duration `json:"timeout"`
	// OutputBytes is how many bytes of output the command wrote in all.
	OutputBytes int64 `json:"output_bytes"`
	// Omitted is how many bytes of output the result does not show: cut
	// from the middle of a foreground command's output, or dropped from a
	// background task's output before the bytes a read returned.
	Omitted int64 `json:"omitted_bytes,omitempty"`
	// Escaped reports that the command could not be stopped: its
	// processes may still run in the container.
	Escaped bool `json:"escaped,omitempty"`
}

// BashArgs are the arguments of bash.
type BashArgs struct {
	// Command is the shell command to run.
	Command string `json:"command" jsonschema:"minLength=1" jsonschema_description:"The shell command to run, such as: go test ./... 2>&1 | tail -n 50. It starts in the sandbox's working directory every time."`
	// TimeoutMS bounds the command, in milliseconds.
	TimeoutMS int `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"How long the command may run, in milliseconds, before it is stopped. Leave it out for the default; a value above the maximum is lowered to it. For a background task there is no limit unless you give one."`
	// RunInBackground starts the command as a background task.
	RunInBackground bool `json:"run_in_background,omitempty" jsonschema_description:"Start the command in the background and return its task ID at once, for servers, watchers and long builds. Read its output with task_output and end it with task_stop."`
	// Description says in a few words what the command does.
	Description string `json:"description,omitempty" jsonschema:"maxLength=200" jsonschema_description:"What the command does, in a few words, for the people watching (for example: Run the unit tests)."`
}

// How long the requests that stop a command and read its exit code may
// take, and how long the output of a command sent SIGKILL is waited for
// before the stream is abandoned.
const (
	signalTimeout = 10 * time.Second
	inspectWait   = 2 * time.Second
	drainWait     = time.Second
	killRetry     = 250 * time.Millisecond
)

func (s *Toolset) bashTool() (tool.Tool, error) {
	network := "It has no network access."
	if s.cfg.network != "none" {
		network = fmt.Sprintf("Its network mode is %q.", s.cfg.network)
	}
	desc := fmt.Sprintf("Runs a shell command with %s inside an isolated Docker container (image %s) and returns its output (standard output and error together, in the order received) and its exit code. "+
		"Every command starts in %s: a cd, a variable or an alias does not carry over to the next call, so chain commands with && or give paths; files written persist between calls until the sandbox is closed. %s "+
		"Standard input is empty, so give flags such as --yes to commands that would ask a question. "+
		"A command is stopped, with the processes it started that kept its environment, after %s unless timeout_ms sets another limit (at most %s). "+
		"Output beyond %d bytes is cut in the middle, keeping its beginning and end: filter long output with grep, head or tail. "+
		"For servers, watchers and anything that may outlast the timeout set run_in_background: the call returns a task ID at once; "+
		"read the output with %s and end the task with %s.",
		strings.Join(s.cfg.shell, " "), s.image, s.workdir, network, s.cfg.Timeout, s.cfg.MaxTimeout, s.cfg.MaxOutput, TaskOutputName, TaskStopName)
	return tool.NewFunc(BashName, desc, s.bash,
		tool.WithMetadata(tool.Metadata{Destructive: true, OpenWorld: s.cfg.network != "none"}),
		tool.WithTitle("Run command in sandbox"))
}

// bash runs a call of the bash tool.
func (s *Toolset) bash(ctx context.Context, in BashArgs) (tool.Result, error) {
	if strings.TrimSpace(in.Command) == "" {
		return errorResult(tool.CodeInvalidArguments, errors.New("docker: empty command"), nil, "The command is empty: give the shell command to run."), nil
	}
	if in.RunInBackground {
		return s.tasks.Start(ctx, in.Command, in.Description, in.TimeoutMS)
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	if !s.enter() {
		return s.closedResult(), nil
	}
	defer s.runs.Done()
	timeout, lowered := s.timeoutFor(in.TimeoutMS)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.base, func() { cancel(ErrClosed) })
	defer stop()

	// The tag is random and of a fixed length, so that no command's tag
	// is the start of another's.
	tag := rand.Text()[:16]
	cmd := append(append([]string(nil), s.cfg.shell...), in.Command)
	// The command's timeout bounds the exec's creation too, so that a
	// daemon that stops answering cannot hold the call forever.
	ectx, ecancel := context.WithTimeout(cctx, timeout)
	execID, err := s.c.createExec(ectx, s.container, cmd, []string{markerVar + "=" + tag})
	if err == nil {
		err = cctx.Err()
	} else if ectx.Err() != nil && cctx.Err() == nil {
		err = s.c.daemonErr(fmt.Errorf("no answer to the request to create the command's exec within the command's timeout (%s): %w", timeout, context.DeadlineExceeded))
	}
	ecancel()
	if err != nil {
		return s.startFailed(ctx, cctx, err)
	}

	// The stream lives on past the call's end for as long as stopping the
	// command takes, to keep its last output; Close ends it at once.
	sctx, scancel := context.WithCancel(s.base)
	defer scancel()
	out := outbuf.NewCapture(s.cfg.MaxOutput)
	w := s.watch(cctx, tag, timeout, scancel)
	started := time.Now()
	resp, err := s.c.startExec(sctx, execID)
	if err != nil {
		w.finish()
		return s.startFailed(ctx, cctx, err)
	}
	err = demux(resp.Body, out, out)
	resp.Body.Close()
	if err == nil {
		// A command can close its output and carry on (`exec >log 2>&1`):
		// it is still the watcher's to stop at its timeout.
		s.awaitExit(execID, w)
	}
	duration := time.Since(started)
	cause, escaped := w.finish()
	scancel()

	rep := Report{
		Command: in.Command, Description: in.Description, ExecID: execID,
		ExitCode: -1, Started: started, Duration: duration, Timeout: timeout,
		OutputBytes: out.Total(), Escaped: escaped,
	}
	text, omitted := out.Text()
	rep.Omitted = omitted
	var b strings.Builder
	writeOutput(&b, text, "(no output)")

	if s.base.Err() != nil {
		rep.State = StateKilled
		b.WriteString("The command was stopped because the sandbox was closed.")
		return errorResult(tool.CodeToolError, ErrClosed, rep, "%s", b.String()), nil
	}
	if err != nil && !escaped {
		// The daemon failed, or went away, while the command ran.
		rep.State = StateKilled
		if ctx.Err() != nil {
			return tool.Result{Details: rep}, fmt.Errorf("%w\n%s", ctx.Err(), b.String())
		}
		err = s.streamErr(err)
		fmt.Fprintf(&b, "The command's output could not be read to its end: %v. Whether it finished is not known.", err)
		return errorResult(tool.CodeToolError, err, rep, "%s", b.String()), nil
	}
	if !escaped {
		st, ierr := s.exitState(execID)
		switch {
		case ierr != nil:
			rep.State = StateKilled
			if ctx.Err() != nil && cause != nil {
				return tool.Result{Details: rep}, fmt.Errorf("%w\n%s", ctx.Err(), b.String())
			}
			fmt.Fprintf(&b, "The command's exit code could not be read: %v", ierr)
			return errorResult(tool.CodeToolError, ierr, rep, "%s", b.String()), nil
		case st.Running || st.ExitCode == nil:
			if cause == nil {
				// The output ended, but the daemon still reports the
				// command as running: it closed its output and carries on.
				rep.State = StateKilled
				rep.Escaped = true
				b.WriteString("The command closed its output but had not ended after " + inspectWait.String() + "; it may still be running in the sandbox.")
				return errorResult(tool.CodeToolError, errors.New("docker: the command did not end with its output"), rep, "%s", b.String()), nil
			}
			escaped = true
			rep.Escaped = true
		default:
			rep.ExitCode = *st.ExitCode
		}
	}

	stopped := "The command and the processes it started that kept its environment were stopped."
	if escaped {
		stopped = "Stopping it failed: its processes may still be running in the sandbox."
	}
	switch {
	case cause == nil && rep.ExitCode == 0:
		rep.State = StateExited
		b.WriteString("Exit code: 0")
	case cause == nil:
		rep.State = StateExited
		fmt.Fprintf(&b, "Exit code: %d", rep.ExitCode)
	case errors.Is(cause, ErrTimedOut):
		rep.State = StateTimedOut
		fmt.Fprintf(&b, "Timed out after %s. %s", timeout, stopped)
	default:
		// The call was cancelled: the error makes it a cancelled (or timed
		// out) result; its message keeps the output so far.
		rep.State = StateKilled
		b.WriteString(stopped)
		return tool.Result{Details: rep}, fmt.Errorf("%w\n%s", ctx.Err(), b.String())
	}
	if lowered {
		fmt.Fprintf(&b, "\n(timeout_ms %d was lowered to the maximum, %s.)", in.TimeoutMS, s.cfg.MaxTimeout)
	}
	switch rep.State {
	case StateTimedOut:
		return errorResult(CodeCommandTimeout, ErrTimedOut, rep, "%s", b.String()), nil
	case StateExited:
		if rep.ExitCode != 0 {
			return errorResult(CodeNonZeroExit, &ExitError{Code: rep.ExitCode}, rep, "%s", b.String()), nil
		}
	}
	r := tool.Text(b.String())
	r.Details = rep
	return r, nil
}

// startFailed is the result of a command that could not be started
// because of err.
func (s *Toolset) startFailed(ctx, cctx context.Context, err error) (tool.Result, error) {
	switch {
	case errors.Is(context.Cause(cctx), ErrClosed):
		return s.closedResult(), nil
	case ctx.Err() != nil:
		return tool.Result{}, ctx.Err()
	case isStatus(err, http.StatusNotFound, http.StatusConflict):
		err = fmt.Errorf("%w: %w", ErrContainerGone, err)
		return errorResult(tool.CodeToolError, err, nil,
			"The sandbox's container (%s) is not running any more, so no command can run in it: %v", shortID(s.container), err), nil
	}
	return errorResult(tool.CodeToolError, err, nil, "The command could not be started: %v", err), nil
}

// streamErr names the daemon in the error of a failed output stream.
func (s *Toolset) streamErr(err error) error {
	var se *systemError
	var ae *APIError
	if errors.As(err, &se) || errors.As(err, &ae) || strings.Contains(err.Error(), s.c.host) {
		return err
	}
	return s.c.daemonErr(fmt.Errorf("reading the command's output: %w", err))
}

// exitState reads how an exec ended. The output can end a moment before
// the daemon records the exit, so a running exec is asked again for a
// while.
func (s *Toolset) exitState(id string) (execState, error) {
	ctx, cancel := context.WithTimeout(s.base, signalTimeout)
	defer cancel()
	deadline := time.Now().Add(inspectWait)
	delay := 5 * time.Millisecond
	for {
		st, err := s.c.inspectExec(ctx, id)
		if err != nil || (!st.Running && st.ExitCode != nil) || time.Now().After(deadline) {
			return st, err
		}
		if err := pause.Sleep(ctx, delay); err != nil {
			return st, err
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// killScript signals every process in the container whose environment
// holds the tag $1 with the signal $2, and prints how many it signalled.
// An exec has no endpoint that kills it, and the exec's process is not a
// process-group leader, so the processes are found through the tag each
// command puts in its environment, which its children inherit. A process
// can read another's environment, and signal it, only when both run as the
// same user: the script runs as the commands do.
const killScript = `command -v grep >/dev/null 2>&1 || { echo "grep is missing" >&2; exit 127; }
n=0
for d in /proc/[0-9]*; do
	if grep -qsF "` + markerVar + `=$1" "$d/environ" 2>/dev/null && kill -s "$2" "${d#/proc/}" 2>/dev/null; then
		n=$((n+1))
	fi
done
echo "$n"`

// killArgv0 is the killing exec's $0, which tells it apart in process
// lists.
const killArgv0 = "trellis-kill"

// signal sends sig (TERM or KILL) to the processes of the command tagged
// tag, and returns how many were signalled.
func (s *Toolset) signal(tag, sig string) (int, error) {
	ctx, cancel := context.WithTimeout(s.base, signalTimeout)
	defer cancel()
	id, err := s.c.createExec(ctx, s.container, []string{"sh", "-c", killScript, killArgv0, tag, sig}, nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.c.startExec(ctx, id)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var stdout, stderr strings.Builder
	if err := demux(resp.Body, &limitWriter{w: &stdout, n: 64}, &limitWriter{w: &stderr, n: 1024}); err != nil {
		return 0, s.streamErr(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(stdout.String()))
	if err != nil {
		return 0, fmt.Errorf("docker: stopping the command in the container failed: %s", cmpOr(strings.TrimSpace(stderr.String()), "no count was printed"))
	}
	return n, nil
}

// awaitExit waits, once the command's output has ended, until the daemon
// reports the command ended, the watcher has done all it could to stop it,
// or the toolset is closed. Most commands have ended by the first ask.
func (s *Toolset) awaitExit(id string, w *watcher) {
	delay := 5 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(s.base, signalTimeout)
		st, err := s.c.inspectExec(ctx, id)
		cancel()
		if err != nil || (!st.Running && st.ExitCode != nil) {
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-w.ended:
			t.Stop()
			return
		case <-s.base.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// watcher stops a command at its timeout or when its call ends.
type watcher struct {
	ended chan struct{} // closed when the watcher's goroutine ends
	done  chan struct{} // closed when the command has ended
	wg    sync.WaitGroup
	// Set by the goroutine before it ends.
	cause   error // why the command was stopped; nil if it was not
	escaped bool  // it could not be stopped, and its stream was abandoned
}

// watch starts a watcher of the command tagged tag: when timeout passes
// (if it is positive: a background task may have none) or ctx ends, its processes are sent SIGTERM and, after the kill grace
// period, SIGKILL; if its output still has not ended a moment later, abandon
// is called to close the stream.
func (s *Toolset) watch(ctx context.Context, tag string, timeout time.Duration, abandon func()) *watcher {
	w := &watcher{done: make(chan struct{}), ended: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(w.ended)
		var expired <-chan time.Time
		if timeout > 0 {
			timer := time.NewTimer(timeout)
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case <-w.done:
			return
		case <-expired:
			w.cause = ErrTimedOut
		case <-ctx.Done():
			w.cause = context.Cause(ctx)
			if errors.Is(w.cause, ErrClosed) {
				return // the stream ends with the toolset's context
			}
		}
		wait := func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-w.done:
				return true
			case <-t.C:
				return false
			case <-s.base.Done():
				return true
			}
		}
		if s.cfg.KillGrace > 0 {
			_, _ = s.signal(tag, "TERM")
			if wait(s.cfg.KillGrace) {
				return
			}
		}
		// SIGKILL is sent again while the output has not ended: a command
		// whose timeout passed as it started may have had no process to
		// signal the first time.
		for end := time.Now().Add(drainWait); ; {
			_, _ = s.signal(tag, "KILL")
			left := time.Until(end)
			if left <= 0 {
				break
			}
			if wait(min(left, killRetry)) {
				return
			}
		}
		w.escaped = true
		abandon()
	}()
	return w
}

// finish tells the watcher that the command has ended, waits for it, and
// returns why the command was stopped (nil if it was not) and whether it
// escaped.
func (w *watcher) finish() (error, bool) {
	close(w.done)
	w.wg.Wait()
	return w.cause, w.escaped
}

// closedResult is the result of a call made after Close.
func (s *Toolset) closedResult() tool.Result {
	return errorResult(tool.CodeToolError, ErrClosed, nil, "The sandbox %q is closed: no command can run any more.", s.cfg.name)
}

// errorResult is a failed result whose content is a message for the
// model, and whose Err is err, for the caller.
func errorResult(code string, err error, details any, format string, args ...any) tool.Result {
	return bgtask.ErrorResult(code, err, details, format, args...)
}
