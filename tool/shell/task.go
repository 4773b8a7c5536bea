package shell

import (
	"context"
	"errors"
	"fmt"
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

// task is a background command.
type task struct {
	id          string
	command     string
	description string
	proc        *proc
	out         *outbuf.TaskOutput
	stop        context.CancelCauseFunc
	done        chan struct{} // closed once the task has ended

	// Guarded by Toolset.mu.
	ended   bool
	outcome outcome // once ended
	reads   int
}

// report describes t; the caller holds the toolset's lock.
func (t *task) report() Report {
	r := Report{
		TaskID:      t.id,
		Command:     t.command,
		Description: t.description,
		State:       StateRunning,
		ExitCode:    -1,
		Started:     t.proc.started,
		Duration:    time.Since(t.proc.started),
		Timeout:     t.proc.timeout,
		OutputBytes: t.out.Written(),
	}
	if t.ended {
		o := t.outcome
		r.State, r.ExitCode, r.Reason, r.Duration, r.Leftovers = o.state, o.code, o.reason, o.duration, o.leftovers
	}
	return r
}

// status says where t stands, as a phrase; the caller holds the toolset's
// lock.
func (t *task) status() string {
	if !t.ended {
		return "running for " + roundDuration(time.Since(t.proc.started)).String()
	}
	o := t.outcome
	d := roundDuration(o.duration)
	switch o.state {
	case StateExited:
		return fmt.Sprintf("exited with code %d after %s", o.code, d)
	case StateTimedOut:
		return fmt.Sprintf("timed out after %s: %s", o.timeout, o.killed())
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

// startTask starts a command as a background task.
func (s *Toolset) startTask(in BashArgs) tool.Result {
	var timeout time.Duration
	lowered := false
	if in.TimeoutMS > 0 {
		timeout, lowered = s.timeoutFor(in.TimeoutMS)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.closedResult()
	}
	if s.running >= s.cfg.maxTasks {
		var running []string
		for _, t := range s.reg.Tasks() {
			if !t.ended {
				running = append(running, t.label())
			}
		}
		return errorResult(tool.CodeToolError, fmt.Errorf("%w: %d are running", ErrTooManyTasks, s.running), nil,
			"%d background tasks are running, the most this toolset allows: stop one with %s, or wait for one to finish, before starting another. Running: %s.",
			s.cfg.maxTasks, TaskStopName, strings.Join(running, ", "))
	}
	ctx, stop := context.WithCancelCause(s.base)
	cctx, tcancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		cctx, tcancel = context.WithTimeoutCause(ctx, timeout, ErrTimedOut)
	}
	out := outbuf.NewTaskOutput(s.cfg.maxOutput)
	p, err := s.start(cctx, in.Command, timeout, out)
	if err != nil {
		tcancel()
		stop(nil)
		return errorResult(tool.CodeToolError, err, nil, "The command could not be started: %v", err)
	}
	t := &task{
		command:     in.Command,
		description: in.Description,
		proc:        p,
		out:         out,
		stop:        stop,
		done:        make(chan struct{}),
	}
	t.id = s.reg.Add(t)
	s.running++
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		o := p.wait()
		tcancel()
		stop(nil)
		s.finish(t, o)
	}()

	var b strings.Builder
	fmt.Fprintf(&b, "Started %s in the background.\n", t.id)
	fmt.Fprintf(&b, "Read its output with %s {\"task_id\": %q} (add \"block\": true to wait until it finishes); end it with %s.", TaskOutputName, t.id, TaskStopName)
	if timeout > 0 {
		fmt.Fprintf(&b, "\nIt is killed if it runs longer than %s.", timeout)
	}
	if lowered {
		fmt.Fprintf(&b, " (timeout_ms %d was lowered to the maximum.)", in.TimeoutMS)
	}
	r := tool.Text(b.String())
	r.Details = t.report()
	return r
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

// maxQuotedID bounds how much of a task ID from a call a message quotes.
const maxQuotedID = 64

// unknownTask is the result of a call naming a task not kept; the caller
// holds the lock. The ID comes from the model: the messages quote its
// first maxQuotedID bytes.
func (s *Toolset) unknownTask(id string) tool.Result {
	shown := textcut.Clip(id, maxQuotedID, "…")
	return errorResult(tool.CodeToolError, fmt.Errorf("%w: %q", ErrUnknownTask, shown), nil, "%s", s.reg.Unknown(shown, (*task).label))
}

// read returns the result of a read of t's output, the output since the
// previous read, after the line lead (if any). A read of a finished task
// is its last: the task is forgotten.
func (s *Toolset) read(t *task, lead string) tool.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.reg.Holds(t.id, t) {
		// Another call (a task_output that waited for the task too, or a
		// task_stop) read its final output meanwhile: this one still says
		// how the task ended.
		var b strings.Builder
		if lead != "" {
			b.WriteString(lead + "\n")
		}
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

	var b strings.Builder
	if lead != "" {
		b.WriteString(lead + "\n")
	}
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
		if t.outcome.leftovers {
			b.WriteString(leftoversNote + "\n")
		}
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
	desc := fmt.Sprintf("Reads the output of a background task (one that bash started with run_in_background) and says whether it is still running or how it ended (its exit code, or that it was killed or timed out). "+
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
	desc := "Stops a background task that bash started with run_in_background: the task's command is killed, with the processes it started in its process group. " +
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
	t.stop(errStopped)
	// The task ends within the kill grace period (and exec's WaitDelay).
	select {
	case <-t.done:
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	s.mu.Lock()
	o := t.outcome
	s.mu.Unlock()
	stopped := o.state == StateKilled && errors.Is(o.cause, errStopped)
	lead := fmt.Sprintf("Stopped %s: %s.", t.id, o.killed())
	if !stopped {
		lead = fmt.Sprintf("%s had already finished.", t.id)
	}
	return s.read(t, lead), nil
}
