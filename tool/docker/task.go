package docker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trellis-go/trellis/internal/outbuf"
	"github.com/trellis-go/trellis/internal/taskreg"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// TaskOutputArgs are the arguments of task_output.
type TaskOutputArgs struct {
	// TaskID is the task's ID, as bash returned it.
	TaskID string `json:"task_id" jsonschema:"minLength=1" jsonschema_description:"The task's ID, as bash returned it when it started the task (for example task-1)."`
	// Block waits for the task to finish.
	Block bool `json:"block,omitempty" jsonschema_description:"Wait until the task finishes (or timeout_ms passes) before reading. Without it the call returns at once with what is there."`
	// TimeoutMS bounds the wait, in milliseconds.
	TimeoutMS int `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"With block: how long to wait, in milliseconds, at most. The task keeps running when the wait ends."`
}

// TaskStopArgs are the arguments of task_stop.
type TaskStopArgs struct {
	// TaskID is the task's ID, as bash returned it.
	TaskID string `json:"task_id" jsonschema:"minLength=1" jsonschema_description:"The ID of the task to stop, as bash returned it (for example task-1)."`
}

// errStopped is the cause of a task stopped with task_stop.
var errStopped = errors.New("docker: stopped by task_stop")

// task is a background command: an exec whose output stream a goroutine
// reads into out.
type task struct {
	id          string
	command     string
	description string
	execID      string
	started     time.Time
	timeout     time.Duration // 0 for none
	out         *outbuf.TaskOutput
	stop        context.CancelCauseFunc // ends the task's context: the watcher stops it
	done        chan struct{}           // closed once the task has ended

	// Guarded by Toolset.mu.
	ended   bool
	outcome outcome // once ended
	reads   int
}

// outcome is how a background task ended.
type outcome struct {
	state    State
	code     int    // the exit code, -1 when not known
	reason   string // when state is StateKilled or StateFailed
	cause    error  // why the toolset stopped it, nil if it did not
	escaped  bool   // stopping it failed: its processes may still run
	duration time.Duration
}

// report describes t; the caller holds the toolset's lock.
func (t *task) report() Report {
	r := Report{
		TaskID:      t.id,
		Command:     t.command,
		Description: t.description,
		ExecID:      t.execID,
		State:       StateRunning,
		ExitCode:    -1,
		Started:     t.started,
		Duration:    time.Since(t.started),
		Timeout:     t.timeout,
		OutputBytes: t.out.Written(),
	}
	if t.ended {
		o := t.outcome
		r.State, r.ExitCode, r.Reason, r.Duration, r.Escaped = o.state, o.code, o.reason, o.duration, o.escaped
	}
	return r
}

// status says where t stands, as a phrase; the caller holds the toolset's
// lock.
func (t *task) status() string {
	if !t.ended {
		return "running for " + roundDuration(time.Since(t.started)).String()
	}
	o := t.outcome
	d := roundDuration(o.duration)
	const escaped = ", but its processes did not end and may still be running in the sandbox"
	switch {
	case o.state == StateExited:
		return fmt.Sprintf("exited with code %d after %s", o.code, d)
	case o.state == StateTimedOut && o.escaped:
		return fmt.Sprintf("timed out after %s and was sent SIGTERM and SIGKILL%s", t.timeout, escaped)
	case o.state == StateTimedOut:
		return fmt.Sprintf("timed out after %s and was stopped, with every process it started", t.timeout)
	case o.state == StateFailed:
		return fmt.Sprintf("failed after %s: %s", d, o.reason)
	case o.escaped:
		return fmt.Sprintf("stopped %s after %s%s", o.reason, d, escaped)
	}
	return fmt.Sprintf("killed %s after %s", o.reason, d)
}

// label names t for lists: its ID, status and command.
func (t *task) label() string {
	return fmt.Sprintf("%s (%s: %s)", t.id, t.status(), clipCommand(t.command))
}

// clipCommand shortens a command for a one-line mention.
func clipCommand(c string) string {
	return textcut.Clip(strings.Join(strings.Fields(c), " "), 80, "...")
}

// roundDuration rounds d for people to read.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// startTask starts a command as a background task: it creates and starts
// the exec within the call, so that a failure to start is the call's
// result, and leaves the exec's output to a goroutine.
func (s *Toolset) startTask(ctx context.Context, in BashArgs) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	var timeout time.Duration
	lowered := false
	if in.TimeoutMS > 0 {
		timeout, lowered = s.timeoutFor(in.TimeoutMS)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.closedResult(), nil
	}
	if s.running >= s.cfg.maxTasks {
		var running []string
		for _, t := range s.reg.Tasks() {
			if !t.ended {
				running = append(running, t.label())
			}
		}
		n := s.running
		s.mu.Unlock()
		return errorResult(tool.CodeToolError, fmt.Errorf("%w: %d are running", ErrTooManyTasks, n), nil,
			"%d background tasks are running, the most this toolset allows: stop one with %s, or wait for one to finish, before starting another. Running: %s.",
			s.cfg.maxTasks, TaskStopName, strings.Join(running, ", ")), nil
	}
	// The slot is taken while the exec starts, without the lock held.
	s.running++
	s.runs.Add(1)
	s.mu.Unlock()
	launched := false
	defer func() {
		if !launched {
			s.mu.Lock()
			s.running--
			s.mu.Unlock()
			s.runs.Done()
		}
	}()

	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unclose := context.AfterFunc(s.base, func() { cancel(ErrClosed) })
	defer unclose()
	tag := rand.Text()[:16]
	cmd := append(append([]string(nil), s.cfg.shell...), in.Command)
	// The requests that start the task are bounded like those that stop
	// a command: a daemon that stops answering cannot hold the call.
	rctx, rcancel := context.WithTimeout(cctx, signalTimeout)
	defer rcancel()
	execID, err := s.c.createExec(rctx, s.container, cmd, []string{markerVar + "=" + tag})
	if err != nil && rctx.Err() != nil && cctx.Err() == nil {
		err = s.c.daemonErr(fmt.Errorf("no answer to the request to create the task's exec within %s: %w", signalTimeout, context.DeadlineExceeded))
	}
	if err != nil {
		return s.startFailed(ctx, cctx, err)
	}
	// The stream outlives the call; only its start is bounded by it.
	sctx, scancel := context.WithCancel(s.base)
	unbound := context.AfterFunc(rctx, scancel)
	started := time.Now()
	resp, err := s.c.startExec(sctx, execID)
	if !unbound() {
		// The call ended, or the daemon did not answer in time, while the
		// exec was starting: the command may run, with no task to show it.
		if err == nil {
			resp.Body.Close()
		}
		// Kill it, without holding the call: a daemon that did not
		// answer may not answer this either. Close cuts it short.
		s.runs.Add(1)
		go func() {
			defer s.runs.Done()
			_, _ = s.signal(tag, "KILL")
		}()
		if err == nil || rctx.Err() != nil && cctx.Err() == nil {
			err = s.c.daemonErr(fmt.Errorf("no answer to the request to start the task's exec within %s: %w", signalTimeout, context.DeadlineExceeded))
		}
	}
	if err != nil {
		scancel()
		return s.startFailed(ctx, cctx, err)
	}

	tctx, stop := context.WithCancelCause(s.base)
	out := outbuf.NewTaskOutput(s.cfg.maxOutput)
	s.mu.Lock()
	t := &task{
		command:     in.Command,
		description: in.Description,
		execID:      execID,
		started:     started,
		timeout:     timeout,
		out:         out,
		stop:        stop,
		done:        make(chan struct{}),
	}
	t.id = s.reg.Add(t)
	launched = true
	w := s.watch(tctx, tag, timeout, scancel)
	go func() {
		defer s.runs.Done()
		o := s.follow(t, resp.Body, w)
		scancel()
		stop(nil)
		s.finish(t, o)
	}()
	rep := t.report()
	s.mu.Unlock()

	var b strings.Builder
	fmt.Fprintf(&b, "Started %s in the background.\n", t.id)
	fmt.Fprintf(&b, "Read its output with %s {\"task_id\": %q} (add \"block\": true to wait until it finishes); end it with %s.", TaskOutputName, t.id, TaskStopName)
	if timeout > 0 {
		fmt.Fprintf(&b, "\nIt is stopped, with every process it started, if it runs longer than %s.", timeout)
	}
	if lowered {
		fmt.Fprintf(&b, " (timeout_ms %d was lowered to the maximum.)", in.TimeoutMS)
	}
	r := tool.Text(b.String())
	r.Details = rep
	return r, nil
}

// follow reads a task's output stream to its end, follows the exec until
// the daemon says it ended (a command can close its output and carry on),
// and says how it ended.
func (s *Toolset) follow(t *task, body io.ReadCloser, w *watcher) outcome {
	err := demux(body, t.out, t.out)
	body.Close()
	if err == nil {
		s.awaitExit(t.execID, w)
	}
	o := outcome{state: StateKilled, code: -1, duration: time.Since(t.started)}
	o.cause, o.escaped = w.finish()
	closed := func() outcome {
		o.state, o.reason, o.cause = StateKilled, "because the sandbox was closed", ErrClosed
		return o
	}
	if s.base.Err() != nil {
		return closed()
	}
	if err != nil && !o.escaped {
		o.state = StateFailed
		o.reason = fmt.Sprintf("its output could not be read to its end (%v), so whether it finished is not known", s.streamErr(err))
		return o
	}
	if !o.escaped {
		st, ierr := s.exitState(t.execID)
		switch {
		case ierr != nil && s.base.Err() != nil:
			return closed()
		case ierr != nil:
			o.state = StateFailed
			o.reason = fmt.Sprintf("its exit code could not be read (%v)", ierr)
			return o
		case st.Running || st.ExitCode == nil:
			o.escaped = true
			if o.cause == nil {
				o.state = StateFailed
				o.reason = "it closed its output but had not ended after " + inspectWait.String() + ", and may still be running in the sandbox"
				return o
			}
		default:
			o.code = *st.ExitCode
		}
	}
	switch {
	case o.cause == nil:
		o.state = StateExited
	case errors.Is(o.cause, ErrTimedOut):
		o.state = StateTimedOut
	case errors.Is(o.cause, errStopped):
		o.reason = "by " + TaskStopName
	default:
		o.reason = "because " + o.cause.Error()
	}
	return o
}

// finish records how t ended.
func (s *Toolset) finish(t *task, o outcome) {
	s.mu.Lock()
	t.ended, t.outcome = true, o
	s.running--
	s.reg.Finished(t.id)
	s.mu.Unlock()
	close(t.done)
}

// forget drops the finished task t; the caller holds the lock.
func (s *Toolset) forget(t *task) {
	s.reg.Forget(t.id)
}

// lookup finds the task a model named; when there is none, or after Close,
// it returns the error result that says so.
func (s *Toolset) lookup(id string) (*task, tool.Result, bool) {
	id = taskreg.Normalize(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, s.closedResult(), false
	}
	if t, ok := s.reg.Get(id); ok {
		return t, tool.Result{}, true
	}
	return nil, s.unknownTask(id), false
}

// unknownTask is the result of a call naming a task not kept; the caller
// holds the lock.
func (s *Toolset) unknownTask(id string) tool.Result {
	return errorResult(tool.CodeToolError, fmt.Errorf("%w: %q", ErrUnknownTask, id), nil, "%s", s.reg.Unknown(id, (*task).label))
}

// read returns the result of a read of t's output, the output since the
// previous read, after the line lead (if any). A read of a finished task
// is its last: the task is forgotten.
func (s *Toolset) read(t *task, lead string) tool.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	if lead != "" {
		b.WriteString(lead + "\n")
	}
	if !s.reg.Holds(t.id, t) {
		// Another call (a task_output that waited for the task too, or a
		// task_stop) read its final output meanwhile: this one still says
		// how the task ended.
		fmt.Fprintf(&b, "%s (%s): %s.\nIts final output was returned to another call, and %s is no longer kept.",
			t.id, clipCommand(t.command), t.status(), t.id)
		r := tool.Text(b.String())
		r.Details = t.report()
		return r
	}
	final := t.ended
	text, dropped := t.out.Unread(final)
	first := t.reads == 0
	t.reads++

	fmt.Fprintf(&b, "%s (%s): %s.\n", t.id, clipCommand(t.command), t.status())
	if dropped > 0 {
		fmt.Fprintf(&b, "[%d bytes of output were dropped before what follows: only the last %d bytes of unread output are kept.]\n", dropped, s.cfg.maxOutput)
	}
	switch {
	case text != "" && first:
		b.WriteString("Output:\n")
		writeOutput(&b, text, "")
	case text != "":
		b.WriteString("Output since the previous read:\n")
		writeOutput(&b, text, "")
	case first && final:
		b.WriteString("(no output)\n")
	case first:
		b.WriteString("(no output yet)\n")
	default:
		b.WriteString("(no new output since the previous read)\n")
	}
	if final {
		fmt.Fprintf(&b, "The task has finished: this was its final output, and %s is no longer kept.", t.id)
		s.forget(t)
	}
	rep := t.report()
	rep.Omitted = dropped
	r := tool.Text(strings.TrimSuffix(b.String(), "\n"))
	r.Details = rep
	return r
}

func (s *Toolset) taskOutputTool() (tool.Tool, error) {
	desc := fmt.Sprintf("Reads the output of a background task (one that bash started in the sandbox with run_in_background) and says whether it is still running or how it ended (its exit code, or that it was stopped or timed out). "+
		"Each read returns the output written since the previous read of that task. "+
		"Set block to wait until the task finishes, for at most timeout_ms (default %s, at most %s). "+
		"Only the last %d bytes of unread output are kept. "+
		"Once a finished task's final output has been read, the task is forgotten.",
		s.cfg.timeout, s.cfg.maxTimeout, s.cfg.maxOutput)
	return tool.NewFunc(TaskOutputName, desc, s.taskOutput,
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}),
		tool.WithTitle("Read background task output"))
}

// taskOutput runs a call of task_output.
func (s *Toolset) taskOutput(ctx context.Context, in TaskOutputArgs) (tool.Result, error) {
	t, r, ok := s.lookup(in.TaskID)
	if !ok {
		return r, nil
	}
	lead := ""
	if in.Block {
		d, _ := s.timeoutFor(in.TimeoutMS)
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-t.done:
		case <-timer.C:
			lead = fmt.Sprintf("Still running after waiting %s.", d)
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	}
	return s.read(t, lead), nil
}

func (s *Toolset) taskStopTool() (tool.Tool, error) {
	desc := "Stops a background task that bash started in the sandbox with run_in_background: the task's command and every process it started are stopped. " +
		"Returns how the task ended and the output it wrote since the previous read; the task is then forgotten. " +
		"A task that had already finished is reported as it ended."
	return tool.NewFunc(TaskStopName, desc, s.taskStop,
		tool.WithMetadata(tool.Metadata{Destructive: true}),
		tool.WithTitle("Stop background task"))
}

// taskStop runs a call of task_stop.
func (s *Toolset) taskStop(ctx context.Context, in TaskStopArgs) (tool.Result, error) {
	t, r, ok := s.lookup(in.TaskID)
	if !ok {
		return r, nil
	}
	// The watcher sends SIGTERM, and SIGKILL after the grace period; the
	// task ends within that and a moment more, escaped or not.
	t.stop(errStopped)
	select {
	case <-t.done:
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	s.mu.Lock()
	o := t.outcome
	s.mu.Unlock()
	var lead string
	switch {
	case !errors.Is(o.cause, errStopped):
		lead = fmt.Sprintf("%s had already finished.", t.id)
	case o.escaped:
		lead = fmt.Sprintf("Tried to stop %s, but its processes did not end: they may still be running in the sandbox.", t.id)
	default:
		lead = fmt.Sprintf("Stopped %s and every process it started.", t.id)
	}
	return s.read(t, lead), nil
}
