package shell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-go/trellis/internal/bgtask"
	"github.com/trellis-go/trellis/internal/outbuf"
	"github.com/trellis-go/trellis/tool"
)

// TaskOutputArgs are the arguments of task_output.
type TaskOutputArgs = bgtask.OutputArgs

// TaskStopArgs are the arguments of task_stop.
type TaskStopArgs = bgtask.StopArgs

// newTasks returns the manager of s's background tasks.
func (s *Toolset) newTasks() *bgtask.Manager[Report] {
	return bgtask.New(taskRunner{s}, bgtask.Config[Report]{
		Base:            s.base,
		Limits:          s.cfg.Limits,
		ErrTooManyTasks: ErrTooManyTasks,
		ErrUnknownTask:  ErrUnknownTask,
		Closed:          s.closedResult,
		Report:          taskReport,
		Ends:            "killed",
		StopLead: func(id string, o bgtask.Outcome) string {
			so := o.Detail.(outcome)
			if so.state == StateKilled && errors.Is(so.cause, bgtask.ErrStopped) {
				return fmt.Sprintf("Stopped %s: %s.", id, so.killed())
			}
			return fmt.Sprintf("%s had already finished.", id)
		},
		OutputDescription: fmt.Sprintf("Reads the output of a background task (one that bash started with run_in_background) and says whether it is still running or how it ended (its exit code, or that it was killed or timed out). "+
			"Each read returns the output written since the previous read of that task. "+
			"Set block to wait until the task finishes, for at most timeout_ms (default %s, at most %s). "+
			"Only the last %d bytes of unread output are kept. "+
			"Once a finished task's final output has been read, the task is forgotten.",
			s.cfg.Timeout, s.cfg.MaxTimeout, s.cfg.MaxOutput),
		StopDescription: "Stops a background task that bash started with run_in_background: the task's command is killed, with the processes it started in its process group. " +
			"Returns how the task ended and the output it wrote since the previous read; the task is then forgotten. " +
			"A task that had already finished is reported as it ended.",
	})
}

// taskRunner starts the toolset's background commands.
type taskRunner struct{ s *Toolset }

// Start starts command with its own process group, killed at the timeout
// or when task ends.
func (r taskRunner) Start(_, task context.Context, command string, timeout time.Duration, out *outbuf.TaskOutput) (bgtask.Proc, tool.Result, error) {
	cctx, cancel := task, context.CancelFunc(func() {})
	if timeout > 0 {
		cctx, cancel = context.WithTimeoutCause(task, timeout, ErrTimedOut)
	}
	p, err := r.s.start(cctx, command, timeout, out)
	if err != nil {
		cancel()
		return nil, errorResult(tool.CodeToolError, err, nil, "The command could not be started: %v", err), nil
	}
	return taskProc{p: p, cancel: cancel}, tool.Result{}, nil
}

// taskProc is a background command.
type taskProc struct {
	p      *proc
	cancel context.CancelFunc // ends the timeout's context
}

func (t taskProc) Started() time.Time { return t.p.started }

// Wait waits for the command and tells how it ended.
func (t taskProc) Wait() bgtask.Outcome {
	o := t.p.wait()
	t.cancel()
	out := bgtask.Outcome{
		State: bgtask.State(o.state), Code: o.code, Reason: o.reason, Cause: o.cause,
		Duration: o.duration, Status: o.status(), Detail: o,
	}
	if o.leftovers {
		out.Note = leftoversNote
	}
	return out
}

// status says how a background task ended, as a phrase.
func (o outcome) status() string {
	d := bgtask.RoundDuration(o.duration)
	switch o.state {
	case StateExited:
		return fmt.Sprintf("exited with code %d after %s", o.code, d)
	case StateTimedOut:
		return fmt.Sprintf("timed out after %s: %s", o.timeout, o.killed())
	}
	return fmt.Sprintf("killed %s after %s", o.reason, d)
}

// taskReport is the Report of a background task.
func taskReport(i bgtask.Info) Report {
	r := Report{
		TaskID:      i.ID,
		Command:     i.Command,
		Description: i.Description,
		State:       StateRunning,
		ExitCode:    -1,
		Started:     i.Proc.Started(),
		Duration:    time.Since(i.Proc.Started()),
		Timeout:     i.Proc.(taskProc).p.timeout,
		OutputBytes: i.OutputBytes,
		Omitted:     i.Omitted,
	}
	if i.Ended {
		o := i.Outcome.Detail.(outcome)
		r.State, r.ExitCode, r.Reason, r.Duration, r.Leftovers = o.state, o.code, o.reason, o.duration, o.leftovers
	}
	return r
}
