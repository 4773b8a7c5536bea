package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/internal/bgtask"
	"github.com/trellis-go/trellis/internal/outbuf"
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
	// StateKilled: the command was killed: stopped with task_stop, by
	// Close, because its call was cancelled, or by a signal from elsewhere.
	StateKilled State = "killed"
	// StateTimedOut: the command ran past its timeout and was killed.
	StateTimedOut State = "timed_out"
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
	// State is where the command stands.
	State State `json:"state"`
	// ExitCode is the exit code when State is StateExited, -1 otherwise.
	ExitCode int `json:"exit_code"`
	// Reason says, when State is StateKilled, by what or why: "by
	// task_stop", "because the toolset was closed", "because its call was
	// cancelled", "by a signal from elsewhere (killed)".
	Reason string `json:"reason,omitempty"`
	// Started is when the command started.
	Started time.Time `json:"started"`
	// Duration is how long the command ran, or has been running.
	Duration time.Duration `json:"duration"`
	// Timeout is the command's timeout, 0 for a background task without
	// one.
	Timeout time.Duration `json:"timeout,omitempty"`
	// OutputBytes is how many bytes of output the command wrote in all.
	OutputBytes int64 `json:"output_bytes"`
	// Omitted is how many bytes of output the result does not show: cut
	// from the middle of a foreground command's output, or dropped from a
	// background task's output before the bytes a read returned.
	Omitted int64 `json:"omitted_bytes,omitempty"`
	// Leftovers reports that the command left processes running when it
	// ended, which were killed.
	Leftovers bool `json:"leftovers,omitempty"`
}

// BashArgs are the arguments of bash.
type BashArgs struct {
	// Command is the shell command to run.
	Command string `json:"command" jsonschema:"minLength=1" jsonschema_description:"The shell command to run, such as: go test ./... 2>&1 | tail -n 50. It starts in the toolset's directory every time."`
	// TimeoutMS bounds the command, in milliseconds.
	TimeoutMS int `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"How long the command may run, in milliseconds, before it is killed. Leave it out for the default; a value above the maximum is lowered to it. For a background task there is no limit unless you give one."`
	// RunInBackground starts the command as a background task.
	RunInBackground bool `json:"run_in_background,omitempty" jsonschema_description:"Start the command in the background and return its task ID at once, for servers, watchers and long builds. Read its output with task_output and end it with task_stop."`
	// Description says in a few words what the command does.
	Description string `json:"description,omitempty" jsonschema:"maxLength=200" jsonschema_description:"What the command does, in a few words, for the people watching (for example: Run the unit tests)."`
}

// proc is a started command.
type proc struct {
	cmd     *exec.Cmd
	ctx     context.Context // the command's; its cause says why it ended early
	timeout time.Duration   // 0 for none
	tag     string          // in the environment of its processes (markerVar)
	started time.Time
	// signalled reports that the command's Cancel signalled its process
	// group: what happened next is the toolset's doing.
	signalled atomic.Bool

	mu    sync.Mutex
	swept map[int]bool // processes found outside the group by their tag
}

// sweep signals the processes that carry p's tag (see the function sweep),
// remembers those that left its group, and reports whether it found any.
func (p *proc) sweep(hard bool) bool {
	pids := sweep(p.tag, p.cmd.Process.Pid, hard)
	if len(pids) == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.swept == nil {
		p.swept = map[int]bool{}
	}
	for _, pid := range pids {
		p.swept[pid] = true
	}
	return true
}

// sweptCount returns how many processes outside the group p.sweep found.
func (p *proc) sweptCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.swept)
}

// outcome is how a command ended.
type outcome struct {
	state     State
	code      int    // exit code, when state is StateExited
	reason    string // when state is StateKilled
	cause     error  // the context's cause, when the toolset killed it
	leftovers bool
	swept     int // processes found outside the group by their tag, and killed
	duration  time.Duration
	timeout   time.Duration
}

// start starts command with its output going to out. It ends, with every
// process it started, when ctx does: SIGTERM to its process group, then
// SIGKILL after the grace period; the processes that carry its tag but
// left the group get the same signals (see sweep). exec.Cmd's WaitDelay
// ensures that a process holding the output open, out of the group's
// reach, cannot keep Wait from returning.
func (s *Toolset) start(ctx context.Context, command string, timeout time.Duration, out io.Writer) (*proc, error) {
	cmd := exec.CommandContext(ctx, s.shell, append(slices.Clone(s.args), command)...)
	cmd.Dir = s.dir
	tag := s.newTag()
	cmd.Env = s.environ(tag)
	// One writer for both: exec gives the command one pipe for its
	// standard output and error, so the two stay in the order written.
	cmd.Stdout, cmd.Stderr = out, out
	isolate(cmd)
	p := &proc{cmd: cmd, ctx: ctx, timeout: timeout, tag: tag}
	hard := s.cfg.KillGrace == 0
	cmd.Cancel = func() error {
		err := interrupt(cmd, hard)
		if err == nil {
			p.signalled.Store(true)
		}
		// The processes that left the group get the same signal.
		p.sweep(hard)
		return err
	}
	// Once ctx has ended (and Cancel sent SIGTERM), exec gives the command
	// this long before it kills the shell and stops reading its output;
	// wait then kills the rest of the group. Once the shell has exited,
	// exec waits this long at most for the processes that still hold the
	// output open.
	cmd.WaitDelay = max(s.cfg.KillGrace, minWaitDelay)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.started = time.Now()
	return p, nil
}

// wait waits for the command to end and kills what it left running, in
// its process group or carrying its tag.
func (p *proc) wait() outcome {
	err := p.cmd.Wait()
	leftovers := killGroup(p.cmd.Process.Pid)
	if p.sweep(true) {
		leftovers = true
	}
	o := outcome{state: StateKilled, code: -1, duration: time.Since(p.started), timeout: p.timeout, swept: p.sweptCount()}
	ps := p.cmd.ProcessState
	switch {
	case p.signalled.Load():
		o.cause = context.Cause(p.ctx)
		if errors.Is(o.cause, ErrTimedOut) {
			o.state = StateTimedOut
		} else {
			o.reason = killReason(o.cause)
		}
		return o
	case ps == nil:
		// Wait fails this way only when the process cannot be waited for,
		// which exec does not let happen to a process it started.
		o.reason = fmt.Sprintf("in a way that could not be told (%v)", err)
	case ps.Exited():
		o.state, o.code = StateExited, ps.ExitCode()
	default:
		o.reason = fmt.Sprintf("by a signal from elsewhere (%s)", signalOf(ps))
	}
	o.leftovers = leftovers
	return o
}

// killReason says why the toolset killed a command whose context ended
// with cause.
func killReason(cause error) string {
	switch {
	case errors.Is(cause, bgtask.ErrStopped):
		return "by " + TaskStopName
	case errors.Is(cause, ErrClosed):
		return "because the toolset was closed"
	}
	return "because its call was cancelled"
}

// summary says how a command ended, as a sentence.
func (o outcome) summary() string {
	switch o.state {
	case StateExited:
		return fmt.Sprintf("Exit code: %d", o.code)
	case StateTimedOut:
		return fmt.Sprintf("Timed out after %s: %s.", o.timeout, o.killed())
	}
	return "The command was killed " + o.reason + "."
}

// killed says what was killed when the toolset ended a command: its
// process group (the shell alone where there are none), and the processes
// found outside it by their tag. It claims nothing about a process that
// left the group and was not found.
func (o outcome) killed() string {
	what := "the command's process group was killed"
	if !groups {
		what = "the shell was killed (processes it started may still run)"
	}
	switch o.swept {
	case 0:
		return what
	case 1:
		return what + ", and 1 process that had left the group was found by its tag and killed"
	}
	return fmt.Sprintf("%s, and %d processes that had left the group were found by their tag and killed", what, o.swept)
}

const leftoversNote = "Processes the command left running were killed when it ended; start servers and other long-running commands with run_in_background."

func (s *Toolset) bashTool() (tool.Tool, error) {
	desc := fmt.Sprintf("Runs a shell command with %s and returns its output (standard output and error together, in the order written) and its exit code. "+
		"Every command starts in %s: a cd, a variable or an alias does not carry over to the next call, so chain commands with && or give paths. "+
		"Standard input is empty, so give flags such as --yes to commands that would ask a question. "+
		"A command is killed, with the processes it started in its process group, after %s unless timeout_ms sets another limit (at most %s). "+
		"Output beyond %d bytes is cut in the middle, keeping its beginning and end: filter long output with grep, head or tail. "+
		"For servers, watchers and anything that may outlast the timeout set run_in_background: the call returns a task ID at once; "+
		"read the output with %s and end the task with %s. Processes a foreground command leaves running are killed when it ends. "+
		"Prefer the dedicated file tools, if you have them, to read, search and edit files.",
		strings.Join(append([]string{s.shell}, s.args...), " "), s.dir, s.cfg.Timeout, s.cfg.MaxTimeout, s.cfg.MaxOutput, TaskOutputName, TaskStopName)
	return tool.NewFunc(BashName, desc, s.bash,
		tool.WithMetadata(tool.Metadata{Destructive: true, OpenWorld: true}),
		tool.WithTitle("Run shell command"))
}

// bash runs a call of the bash tool.
func (s *Toolset) bash(ctx context.Context, in BashArgs) (tool.Result, error) {
	if strings.TrimSpace(in.Command) == "" {
		return errorResult(tool.CodeInvalidArguments, errors.New("shell: empty command"), nil, "The command is empty: give the shell command to run."), nil
	}
	if in.RunInBackground {
		return s.tasks.Start(ctx, in.Command, in.Description, in.TimeoutMS)
	}
	return s.foreground(ctx, in)
}

// foreground runs a command and waits for it.
func (s *Toolset) foreground(ctx context.Context, in BashArgs) (tool.Result, error) {
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
	tctx, tcancel := context.WithTimeoutCause(cctx, timeout, ErrTimedOut)
	defer tcancel()

	out := outbuf.NewCapture(s.cfg.MaxOutput)
	p, err := s.start(tctx, in.Command, timeout, out)
	switch {
	case err == nil:
	case errors.Is(context.Cause(tctx), ErrClosed):
		return s.closedResult(), nil
	case ctx.Err() != nil:
		return tool.Result{}, ctx.Err()
	default:
		return errorResult(tool.CodeToolError, err, nil, "The command could not be started: %v", err), nil
	}
	o := p.wait()
	text, omitted := out.Text()
	rep := Report{
		Command: in.Command, Description: in.Description,
		State: o.state, ExitCode: o.code, Reason: o.reason,
		Started: p.started, Duration: o.duration, Timeout: timeout,
		OutputBytes: out.Total(), Omitted: omitted, Leftovers: o.leftovers,
	}
	var b strings.Builder
	writeOutput(&b, text, "(no output)")
	b.WriteString(o.summary())
	if o.leftovers {
		b.WriteString("\n" + leftoversNote)
	}
	if lowered {
		fmt.Fprintf(&b, "\n(timeout_ms %d was lowered to the maximum, %s.)", in.TimeoutMS, s.cfg.MaxTimeout)
	}
	switch {
	case o.state == StateExited && o.code == 0:
		r := tool.Text(b.String())
		r.Details = rep
		return r, nil
	case o.state == StateExited:
		return errorResult(CodeNonZeroExit, &ExitError{Code: o.code}, rep, "%s", b.String()), nil
	case o.state == StateTimedOut:
		return errorResult(CodeCommandTimeout, ErrTimedOut, rep, "%s", b.String()), nil
	case errors.Is(o.cause, ErrClosed):
		return errorResult(tool.CodeToolError, ErrClosed, rep, "%s", b.String()), nil
	case o.cause != nil && ctx.Err() != nil:
		// The call was cancelled: the error makes it a cancelled (or timed
		// out) result; its message keeps the output so far.
		return tool.Result{Details: rep}, fmt.Errorf("%w\n%s", ctx.Err(), b.String())
	}
	return errorResult(tool.CodeToolError, errors.New("shell: the command was killed "+o.reason), rep, "%s", b.String()), nil
}

// writeOutput writes a command's output, made valid UTF-8, ending with a
// line break; empty stands for no output.
func writeOutput(b *strings.Builder, text, empty string) { bgtask.WriteOutput(b, text, empty) }

// errorResult is a failed result whose content is a message for the
// model, and whose Err is err, for the caller.
func errorResult(code string, err error, details any, format string, args ...any) tool.Result {
	return bgtask.ErrorResult(code, err, details, format, args...)
}
