package docker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
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
		Ends:            "stopped, with the processes it started that kept its environment,",
		StopLead: func(id string, o bgtask.Outcome) string {
			switch {
			case !errors.Is(o.Cause, bgtask.ErrStopped):
				return fmt.Sprintf("%s had already finished.", id)
			case o.Detail.(outcome).escaped:
				return fmt.Sprintf("Tried to stop %s, but its processes did not end: they may still be running in the sandbox.", id)
			}
			return fmt.Sprintf("Stopped %s and the processes it started that kept its environment.", id)
		},
		OutputDescription: fmt.Sprintf("Reads the output of a background task (one that bash started in the sandbox with run_in_background) and says whether it is still running or how it ended (its exit code, or that it was stopped or timed out). "+
			"Each read returns the output written since the previous read of that task. "+
			"Set block to wait until the task finishes, for at most timeout_ms (default %s, at most %s). "+
			"Only the last %d bytes of unread output are kept. "+
			"Once a finished task's final output has been read, the task is forgotten.",
			s.cfg.Timeout, s.cfg.MaxTimeout, s.cfg.MaxOutput),
		StopDescription: "Stops a background task that bash started in the sandbox with run_in_background: the task's command and the processes it started that kept its environment are stopped. " +
			"Returns how the task ended and the output it wrote since the previous read; the task is then forgotten. " +
			"A task that had already finished is reported as it ended.",
	})
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

// status says how a task with the timeout timeout ended, as a phrase.
func (o outcome) status(timeout time.Duration) string {
	d := bgtask.RoundDuration(o.duration)
	const escaped = ", but its processes did not end and may still be running in the sandbox"
	switch {
	case o.state == StateExited:
		return fmt.Sprintf("exited with code %d after %s", o.code, d)
	case o.state == StateTimedOut && o.escaped:
		return fmt.Sprintf("timed out after %s and was sent SIGTERM and SIGKILL%s", timeout, escaped)
	case o.state == StateTimedOut:
		return fmt.Sprintf("timed out after %s and was stopped, with the processes it started that kept its environment", timeout)
	case o.state == StateFailed:
		return fmt.Sprintf("failed after %s: %s", d, o.reason)
	case o.escaped:
		return fmt.Sprintf("stopped %s after %s%s", o.reason, d, escaped)
	}
	return fmt.Sprintf("killed %s after %s", o.reason, d)
}

// taskReport is the Report of a background task.
func taskReport(i bgtask.Info) Report {
	p := i.Proc.(*taskProc)
	r := Report{
		TaskID:      i.ID,
		Command:     i.Command,
		Description: i.Description,
		ExecID:      p.execID,
		State:       StateRunning,
		ExitCode:    -1,
		Started:     p.started,
		Duration:    time.Since(p.started),
		Timeout:     p.timeout,
		OutputBytes: i.OutputBytes,
		Omitted:     i.Omitted,
	}
	if i.Ended {
		o := i.Outcome.Detail.(outcome)
		r.State, r.ExitCode, r.Reason, r.Duration, r.Escaped = o.state, o.code, o.reason, o.duration, o.escaped
	}
	return r
}

// taskRunner starts the toolset's background commands.
type taskRunner struct{ s *Toolset }

// taskProc is a background command: an exec whose output stream a
// goroutine reads into out.
type taskProc struct {
	s       *Toolset
	execID  string
	started time.Time
	timeout time.Duration // 0 for none
	out     *outbuf.TaskOutput
	body    io.ReadCloser
	w       *watcher
	scancel context.CancelFunc // ends the output stream
}

func (p *taskProc) Started() time.Time { return p.started }

// Wait follows the task to its end and tells how it ended.
func (p *taskProc) Wait() bgtask.Outcome {
	o := p.s.follow(p, p.body, p.w)
	p.scancel()
	return bgtask.Outcome{
		State: bgtask.State(o.state), Code: o.code, Reason: o.reason, Cause: o.cause,
		Duration: o.duration, Status: o.status(p.timeout), Detail: o,
	}
}

// Start creates and starts the exec within the call, so that a failure to
// start is the call's result, and leaves the exec's output to the task's
// goroutine (Wait).
func (r taskRunner) Start(ctx, task context.Context, command string, timeout time.Duration, out *outbuf.TaskOutput) (bgtask.Proc, tool.Result, error) {
	s := r.s
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unclose := context.AfterFunc(s.base, func() { cancel(ErrClosed) })
	defer unclose()
	tag := rand.Text()[:16]
	cmd := append(append([]string(nil), s.cfg.shell...), command)
	// The requests that start the task are bounded like those that stop
	// a command: a daemon that stops answering cannot hold the call.
	rctx, rcancel := context.WithTimeout(cctx, signalTimeout)
	defer rcancel()
	execID, err := s.c.createExec(rctx, s.container, cmd, []string{markerVar + "=" + tag})
	if err != nil && rctx.Err() != nil && cctx.Err() == nil {
		err = s.c.daemonErr(fmt.Errorf("no answer to the request to create the task's exec within %s: %w", signalTimeout, context.DeadlineExceeded))
	}
	if err != nil {
		res, err := s.startFailed(ctx, cctx, err)
		return nil, res, err
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
		res, err := s.startFailed(ctx, cctx, err)
		return nil, res, err
	}
	return &taskProc{
		s: s, execID: execID, started: started, timeout: timeout, out: out,
		body: resp.Body, w: s.watch(task, tag, timeout, scancel), scancel: scancel,
	}, tool.Result{}, nil
}

// follow reads a task's output stream to its end, follows the exec until
// the daemon says it ended (a command can close its output and carry on),
// and says how it ended.
func (s *Toolset) follow(t *taskProc, body io.ReadCloser, w *watcher) outcome {
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
	case errors.Is(o.cause, bgtask.ErrStopped):
		o.reason = "by " + TaskStopName
	default:
		o.reason = "because " + o.cause.Error()
	}
	return o
}
