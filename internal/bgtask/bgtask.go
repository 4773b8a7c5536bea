package bgtask

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/internal/outbuf"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// The names of the tools a Manager builds.
const (
	OutputName = "task_output"
	StopName   = "task_stop"
)

// State is where a task stands; the toolsets convert it to their own State
// type, whose values are the same.
type State string

// The states of a task.
const (
	Running  State = "running"
	Exited   State = "exited"
	Killed   State = "killed"
	TimedOut State = "timed_out"
	Failed   State = "failed"
)

// ErrStopped is the cause with which task_stop ends a task's context.
var ErrStopped = errors.New("stopped by task_stop")

// OutputArgs are the arguments of task_output.
type OutputArgs struct {
	// TaskID is the task's ID, as bash returned it.
	TaskID string `json:"task_id" jsonschema:"minLength=1" jsonschema_description:"The task's ID, as bash returned it when it started the task (for example task-1)."`
	// Block waits for the task to finish.
	Block bool `json:"block,omitempty" jsonschema_description:"Wait until the task finishes (or timeout_ms passes) before reading. Without it the call returns at once with what is there."`
	// TimeoutMS bounds the wait, in milliseconds.
	TimeoutMS int `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"With block: how long to wait, in milliseconds, at most. The task keeps running when the wait ends."`
}

// StopArgs are the arguments of task_stop.
type StopArgs struct {
	// TaskID is the task's ID, as bash returned it.
	TaskID string `json:"task_id" jsonschema:"minLength=1" jsonschema_description:"The ID of the task to stop, as bash returned it (for example task-1)."`
}

// Outcome is how a task ended, as its Runner tells it.
type Outcome struct {
	// State is how it ended: Exited, Killed, TimedOut or Failed.
	State State
	// Code is the exit code, -1 when not known.
	Code int
	// Reason says, for Killed or Failed, by what or why.
	Reason string
	// Cause is why the toolset stopped it (ErrStopped, the toolset's
	// closing error, a timeout's), nil when it did not.
	Cause error
	// Duration is how long it ran.
	Duration time.Duration
	// Status says how it ended, as a phrase: "exited with code 0 after
	// 1.2s".
	Status string
	// Note is a line the task's final read adds before saying that the
	// task has finished, "" for none.
	Note string
	// Detail is the Runner's own account, for its reports and texts.
	Detail any
}

// Proc is a command a Runner started.
type Proc interface {
	// Started returns when the command started.
	Started() time.Time
	// Wait waits for the command to end and says how it ended. It is
	// called once, from the task's own goroutine.
	Wait() Outcome
}

// Runner starts a toolset's commands in the background.
type Runner interface {
	// Start starts command, its output going to out, and returns once it
	// has started. call is the starting call's context, which bounds only
	// the start; the command runs until it ends or task ends (task's
	// cause says why: ErrStopped, or the toolset's closing error), and
	// with timeout > 0 the runner ends it once timeout has passed. When
	// the command cannot be started, Start returns a nil Proc and what
	// the call returns.
	Start(call, task context.Context, command string, timeout time.Duration, out *outbuf.TaskOutput) (Proc, tool.Result, error)
}

// Info describes a task for a toolset's report.
type Info struct {
	ID          string
	Command     string
	Description string
	Proc        Proc
	Timeout     time.Duration
	OutputBytes int64
	// Omitted is how many bytes of output a read dropped.
	Omitted int64
	// Ended reports that the task has ended, as Outcome says.
	Ended   bool
	Outcome Outcome
}

// Config is what a toolset gives a Manager besides its Runner.
type Config[R any] struct {
	// Base is the toolset's context, cancelled with its closing error by
	// its Close; every task's context ends with it.
	Base context.Context
	// Limits are the toolset's: MaxTasks tasks may run at once, each
	// keeps MaxOutput bytes of unread output, and a blocking read waits
	// Timeout unless its timeout_ms asks for another wait, MaxTimeout at
	// most.
	Limits
	// ErrTooManyTasks and ErrUnknownTask are the toolset's errors for a
	// start beyond MaxTasks and for an ID no task is kept under.
	ErrTooManyTasks, ErrUnknownTask error
	// Closed is the result of a call made after Close.
	Closed func() tool.Result
	// Report describes a task in a result's Details and in Tasks.
	Report func(Info) R
	// Ends says how the toolset ends a task at its timeout, in the
	// sentence "It is ENDS if it runs longer than D.": "killed".
	Ends string
	// StopLead is what task_stop says first, for a task it stopped or
	// found finished (o.Cause is ErrStopped when it was the stop).
	StopLead func(id string, o Outcome) string
	// OutputDescription and StopDescription are what the model reads
	// about task_output and task_stop.
	OutputDescription, StopDescription string
}

// Manager keeps a toolset's background tasks and runs its task_output and
// task_stop tools. It is safe for concurrent use.
type Manager[R any] struct {
	cfg    Config[R]
	runner Runner

	wg      sync.WaitGroup // the tasks' goroutines
	mu      sync.Mutex
	closed  bool
	reg     Registry[*task]
	running int // tasks running or starting
}

// task is a background command.
type task struct {
	id          string
	command     string
	description string
	timeout     time.Duration
	proc        Proc
	out         *outbuf.TaskOutput
	stop        context.CancelCauseFunc
	done        chan struct{} // closed once the task has ended

	// Guarded by Manager.mu.
	ended   bool
	outcome Outcome // once ended
	reads   int
}

// New returns a Manager that starts tasks with r.
func New[R any](r Runner, cfg Config[R]) *Manager[R] {
	return &Manager[R]{cfg: cfg, runner: r}
}

// Close refuses the calls made from now on; the tasks end with the
// toolset's context (Config.Base), which the toolset cancels. Wait waits
// for them.
func (m *Manager[R]) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// Wait waits for the tasks' goroutines to end, after Close.
func (m *Manager[R]) Wait() { m.wg.Wait() }

// Running returns how many tasks are running or starting.
func (m *Manager[R]) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running
}

// Tasks reports on each task kept, in the order they were started.
func (m *Manager[R]) Tasks() []R {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.reg.Tasks()
	out := make([]R, 0, len(ts))
	for _, t := range ts {
		out = append(out, m.report(t, 0))
	}
	return out
}

// report describes t; the caller holds the lock.
func (m *Manager[R]) report(t *task, omitted int64) R {
	return m.cfg.Report(Info{
		ID: t.id, Command: t.command, Description: t.description, Proc: t.proc, Timeout: t.timeout,
		OutputBytes: t.out.Written(), Omitted: omitted, Ended: t.ended, Outcome: t.outcome,
	})
}

// status says where t stands, as a phrase; the caller holds the lock.
func (t *task) status() string {
	if !t.ended {
		return "running for " + RoundDuration(time.Since(t.proc.Started())).String()
	}
	return t.outcome.Status
}

// label names t for lists: its ID, status and command.
func (t *task) label() string {
	return fmt.Sprintf("%s (%s: %s)", t.id, t.status(), clipCommand(t.command))
}

// clipCommand shortens a command for a one-line mention.
func clipCommand(c string) string {
	return textcut.Clip(strings.Join(strings.Fields(c), " "), 80, "...")
}

// RoundDuration rounds d for people to read.
func RoundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// TimeoutFor returns the timeout of a call that asked for ms milliseconds
// (0: none asked, def), and whether the ask was lowered to max.
func TimeoutFor(ms int, def, max time.Duration) (time.Duration, bool) {
	if ms <= 0 {
		return def, false
	}
	if int64(ms) > int64(max/time.Millisecond) {
		return max, true
	}
	return time.Duration(ms) * time.Millisecond, false
}

// Start starts command as a background task, for a call of bash with
// run_in_background: the call's result names the task. A timeout_ms of
// timeoutMS (0: none) bounds the task.
func (m *Manager[R]) Start(ctx context.Context, command, description string, timeoutMS int) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	var timeout time.Duration
	lowered := false
	if timeoutMS > 0 {
		timeout, lowered = TimeoutFor(timeoutMS, m.cfg.Timeout, m.cfg.MaxTimeout)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return m.cfg.Closed(), nil
	}
	if m.running >= m.cfg.MaxTasks {
		var running []string
		for _, t := range m.reg.Tasks() {
			if !t.ended {
				running = append(running, t.label())
			}
		}
		n := m.running
		m.mu.Unlock()
		return ErrorResult(tool.CodeToolError, fmt.Errorf("%w: %d are running", m.cfg.ErrTooManyTasks, n), nil,
			"%d background tasks are running, the most this toolset allows: stop one with %s, or wait for one to finish, before starting another. Running: %s.",
			m.cfg.MaxTasks, StopName, strings.Join(running, ", ")), nil
	}
	// The slot is taken while the command starts, without the lock held.
	m.running++
	m.wg.Add(1)
	m.mu.Unlock()

	tctx, stop := context.WithCancelCause(m.cfg.Base)
	out := outbuf.NewTaskOutput(m.cfg.MaxOutput)
	p, failed, err := m.runner.Start(ctx, tctx, command, timeout, out)
	if p == nil {
		stop(nil)
		m.mu.Lock()
		m.running--
		m.mu.Unlock()
		m.wg.Done()
		return failed, err
	}
	t := &task{
		command:     command,
		description: description,
		timeout:     timeout,
		proc:        p,
		out:         out,
		stop:        stop,
		done:        make(chan struct{}),
	}
	m.mu.Lock()
	t.id = m.reg.Add(t)
	rep := m.report(t, 0)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		o := p.Wait()
		stop(nil)
		m.finish(t, o)
	}()

	var b strings.Builder
	fmt.Fprintf(&b, "Started %s in the background.\n", t.id)
	fmt.Fprintf(&b, "Read its output with %s {\"task_id\": %q} (add \"block\": true to wait until it finishes); end it with %s.", OutputName, t.id, StopName)
	if timeout > 0 {
		fmt.Fprintf(&b, "\nIt is %s if it runs longer than %s.", m.cfg.Ends, timeout)
	}
	if lowered {
		fmt.Fprintf(&b, " (timeout_ms %d was lowered to the maximum.)", timeoutMS)
	}
	r := tool.Text(b.String())
	r.Details = rep
	return r, nil
}

// finish records how t ended.
func (m *Manager[R]) finish(t *task, o Outcome) {
	m.mu.Lock()
	t.ended, t.outcome = true, o
	m.running--
	m.reg.Finished(t.id)
	m.mu.Unlock()
	close(t.done)
}

// lookup finds the task a model named; when there is none, or after Close,
// it returns the error result that says so.
func (m *Manager[R]) lookup(id string) (*task, tool.Result, bool) {
	id = Normalize(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, m.cfg.Closed(), false
	}
	if t, ok := m.reg.Get(id); ok {
		return t, tool.Result{}, true
	}
	return nil, m.unknownTask(id), false
}

// maxQuotedID bounds how much of a task ID from a call a message quotes.
const maxQuotedID = 64

// unknownTask is the result of a call naming a task not kept; the caller
// holds the lock. The ID comes from the model: the messages quote its
// first maxQuotedID bytes.
func (m *Manager[R]) unknownTask(id string) tool.Result {
	shown := textcut.Clip(id, maxQuotedID, "…")
	return ErrorResult(tool.CodeToolError, fmt.Errorf("%w: %q", m.cfg.ErrUnknownTask, shown), nil, "%s", m.reg.Unknown(shown, (*task).label))
}

// read returns the result of a read of t's output, the output since the
// previous read, after the line lead (if any). A read of a finished task
// is its last: the task is forgotten.
func (m *Manager[R]) read(t *task, lead string) tool.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	if lead != "" {
		b.WriteString(lead + "\n")
	}
	if !m.reg.Holds(t.id, t) {
		// Another call (a task_output that waited for the task too, or a
		// task_stop) read its final output meanwhile: this one still says
		// how the task ended.
		fmt.Fprintf(&b, "%s (%s): %s.\nIts final output was returned to another call, and %s is no longer kept.",
			t.id, clipCommand(t.command), t.status(), t.id)
		r := tool.Text(b.String())
		r.Details = m.report(t, 0)
		return r
	}
	final := t.ended
	text, dropped := t.out.Unread(final)
	first := t.reads == 0
	t.reads++

	fmt.Fprintf(&b, "%s (%s): %s.\n", t.id, clipCommand(t.command), t.status())
	if dropped > 0 {
		fmt.Fprintf(&b, "[%d bytes of output were dropped before what follows: only the last %d bytes of unread output are kept.]\n", dropped, m.cfg.MaxOutput)
	}
	switch {
	case text != "" && first:
		b.WriteString("Output:\n")
		WriteOutput(&b, text, "")
	case text != "":
		b.WriteString("Output since the previous read:\n")
		WriteOutput(&b, text, "")
	case first && final:
		b.WriteString("(no output)\n")
	case first:
		b.WriteString("(no output yet)\n")
	default:
		b.WriteString("(no new output since the previous read)\n")
	}
	if final {
		if t.outcome.Note != "" {
			b.WriteString(t.outcome.Note + "\n")
		}
		fmt.Fprintf(&b, "The task has finished: this was its final output, and %s is no longer kept.", t.id)
		m.reg.Forget(t.id)
	}
	r := tool.Text(strings.TrimSuffix(b.String(), "\n"))
	r.Details = m.report(t, dropped)
	return r
}

// OutputTool returns the task_output tool.
func (m *Manager[R]) OutputTool() (tool.Tool, error) {
	return tool.NewFunc(OutputName, m.cfg.OutputDescription, m.output,
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}),
		tool.WithTitle("Read background task output"))
}

// output runs a call of task_output.
func (m *Manager[R]) output(ctx context.Context, in OutputArgs) (tool.Result, error) {
	t, r, ok := m.lookup(in.TaskID)
	if !ok {
		return r, nil
	}
	lead := ""
	if in.Block {
		d, _ := TimeoutFor(in.TimeoutMS, m.cfg.Timeout, m.cfg.MaxTimeout)
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
	return m.read(t, lead), nil
}

// StopTool returns the task_stop tool.
func (m *Manager[R]) StopTool() (tool.Tool, error) {
	return tool.NewFunc(StopName, m.cfg.StopDescription, m.stop,
		tool.WithMetadata(tool.Metadata{Destructive: true}),
		tool.WithTitle("Stop background task"))
}

// stop runs a call of task_stop.
func (m *Manager[R]) stop(ctx context.Context, in StopArgs) (tool.Result, error) {
	t, r, ok := m.lookup(in.TaskID)
	if !ok {
		return r, nil
	}
	// The runner ends the task within its grace period and a moment more.
	t.stop(ErrStopped)
	select {
	case <-t.done:
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	m.mu.Lock()
	o := t.outcome
	m.mu.Unlock()
	return m.read(t, m.cfg.StopLead(t.id, o)), nil
}

// WriteOutput writes a command's output, made valid UTF-8 for a model's
// input, ending with a line break; empty stands for no output.
func WriteOutput(b *strings.Builder, text, empty string) {
	if text == "" {
		b.WriteString(empty + "\n")
		return
	}
	b.WriteString(strings.ToValidUTF8(text, "\uFFFD"))
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
}

// ErrorResult is a failed result whose content is a message for the
// model, and whose Err is err, for the caller; details, when not nil, are
// its Details.
func ErrorResult(code string, err error, details any, format string, args ...any) tool.Result {
	r := tool.ErrorResult(code, err)
	r.Content = []model.Part{model.TextPart(fmt.Sprintf(format, args...))}
	if details != nil {
		r.Details = details
	}
	return r
}
