package shell

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/internal/bgtask"
	"github.com/trellis-go/trellis/tool"
)

// The names of the tools a Toolset offers.
const (
	BashName       = "bash"
	TaskOutputName = bgtask.OutputName
	TaskStopName   = bgtask.StopName
)

// DefaultName is the toolset's name unless WithName says otherwise.
const DefaultName = "shell"

// DefaultTimeout bounds a foreground command whose call gives no
// timeout_ms, unless WithTimeout says otherwise.
const DefaultTimeout = 2 * time.Minute

// DefaultMaxTimeout is the longest timeout a call's timeout_ms can ask for
// unless WithMaxTimeout says otherwise.
const DefaultMaxTimeout = 10 * time.Minute

// DefaultMaxOutput is how many bytes of output one result shows at most
// unless WithMaxOutput says otherwise; it is also how many unread bytes of
// a background task's output are kept.
const DefaultMaxOutput = 30000

// DefaultMaxTasks is how many background tasks may run at once unless
// WithMaxTasks says otherwise.
const DefaultMaxTasks = 8

// DefaultKillGrace is how long a command has to end after SIGTERM before
// it is killed, unless WithKillGrace says otherwise.
const DefaultKillGrace = 2 * time.Second

// MaxFinishedTasks is how many finished background tasks whose final
// output has not been read are kept; beyond it the oldest are forgotten.
const MaxFinishedTasks = bgtask.MaxFinished

// minWaitDelay is how long a command's output is waited for after the
// command ended, or after it was killed without a grace period, when the
// processes holding the output open are out of reach.
const minWaitDelay = 100 * time.Millisecond

// markerVar is the environment variable that tags every process a command
// starts, so that those that leave its process group can still be found
// and killed (on Linux). Its value lists the tags of the commands the
// process descends from, nested toolsets included, separated by spaces.
const markerVar = "TRELLIS_SHELL_RUN"

// Error codes of the results (tool.Result.ErrorCode) of commands that ran
// and failed. Other failures have tool.CodeToolError.
const (
	// CodeNonZeroExit: a foreground command exited with a code other
	// than 0. Err is an *ExitError.
	CodeNonZeroExit = "nonzero_exit"
	// CodeCommandTimeout: a foreground command ran past its timeout and
	// was killed. Err is ErrTimedOut.
	CodeCommandTimeout = "command_timeout"
)

var (
	// ErrClosed is the error of the calls made after Close, and of the
	// commands that Close killed.
	ErrClosed = errors.New("shell: the toolset is closed")
	// ErrTimedOut is the error of a command that ran past its timeout.
	// Its result's status is failed, not timeout: the call did not run out
	// of time, the command did, and running it again would not help.
	ErrTimedOut = errors.New("shell: the command timed out")
	// ErrTooManyTasks is the error of a background start refused because
	// WithMaxTasks tasks are running.
	ErrTooManyTasks = errors.New("shell: too many background tasks")
	// ErrUnknownTask is the error of a task_output or task_stop call whose
	// task ID names no task the toolset keeps.
	ErrUnknownTask = errors.New("shell: unknown task")
)

// ExitError is the error of a foreground command that exited with a code
// other than 0.
type ExitError struct {
	// Code is the exit code.
	Code int
}

// Error returns the error's message.
func (e *ExitError) Error() string {
	return fmt.Sprintf("shell: the command exited with code %d", e.Code)
}

// Option configures a Toolset.
type Option func(*config)

type config struct {
	bgtask.Limits
	name      string
	shell     string
	shellArgs []string
	shellSet  bool
	env       []string
	cleanEnv  bool
	problems  []string
}

func (c *config) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// WithName names the toolset (DefaultName unless set). The name is the
// set's, for errors and logs; the tools keep their names (rename them with
// tool.WithPrefix).
func WithName(name string) Option {
	return func(c *config) {
		if name == "" {
			c.problem("WithName: the name is empty")
		}
		c.name = name
	}
}

// WithShell runs the commands with the program at path (looked up in PATH
// when it has no slash) given args and then the command as its last
// argument. Without args, "-c" is used, which suits sh, bash, zsh and
// their kin: WithShell("/bin/bash") runs bash -c COMMAND. Args given
// replace it and must end with the flag that makes the shell take the
// next argument as the command, as in WithShell("bash", "-o", "pipefail",
// "-c") or WithShell("powershell.exe", "-NoProfile", "-Command").
//
// The default is /bin/sh -c on unix systems; elsewhere there is none, and
// New needs this option.
func WithShell(path string, args ...string) Option {
	return func(c *config) {
		if strings.TrimSpace(path) == "" {
			c.problem("WithShell: the shell's path is empty")
		}
		if len(args) == 0 {
			args = []string{"-c"}
		}
		c.shell, c.shellArgs, c.shellSet = path, slices.Clone(args), true
	}
}

// WithTimeout bounds the foreground commands whose call gives no
// timeout_ms (DefaultTimeout unless set); d must be positive. It is capped
// at the maximum (WithMaxTimeout).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.SetTimeout(d, c.problem) } }

// WithMaxTimeout sets the longest timeout a call's timeout_ms can ask for
// (DefaultMaxTimeout unless set); d must be positive. A longer timeout_ms
// is lowered to it, and the result says so. It also bounds how long
// task_output waits for a task to finish.
func WithMaxTimeout(d time.Duration) Option { return func(c *config) { c.SetMaxTimeout(d, c.problem) } }

// WithMaxOutput caps, in bytes, the output one result shows
// (DefaultMaxOutput unless set); n must be at least 1. A foreground
// command's longer output is cut in the middle: the result shows its
// first n/2 bytes and its last bytes, and how many were left out between.
// A background task keeps the last n bytes of its unread output, and a
// read says how many were dropped before them.
func WithMaxOutput(n int) Option { return func(c *config) { c.SetMaxOutput(n, c.problem) } }

// WithMaxTasks bounds how many background tasks may run at once
// (DefaultMaxTasks unless set); n must be at least 1. A start beyond it is
// an error result that says so and lists the running tasks. Finished
// tasks do not count.
func WithMaxTasks(n int) Option { return func(c *config) { c.SetMaxTasks(n, c.problem) } }

// WithKillGrace sets how long a command that is being stopped (timed out,
// cancelled, stopped with task_stop, or closed) has to end after its
// process group is sent SIGTERM, before every process in it is killed with
// SIGKILL (DefaultKillGrace unless set); d must not be negative, and 0
// sends SIGKILL at once. It is also how long the output of a command that
// ended is waited for when a process it left running holds it open.
// Outside unix, commands are killed at once.
func WithKillGrace(d time.Duration) Option { return func(c *config) { c.SetKillGrace(d, c.problem) } }

// WithEnv adds variables to the commands' environment, or overrides them,
// as "KEY=value" strings. Calls add up; a later value of one key wins.
func WithEnv(kv ...string) Option {
	return func(c *config) {
		for _, e := range kv {
			k, _, ok := strings.Cut(e, "=")
			if !ok || k == "" || strings.ContainsRune(e, 0) {
				c.problem("WithEnv: %q is not of the form KEY=value", e)
				continue
			}
			c.env = append(c.env, e)
		}
	}
}

// WithCleanEnv starts the commands' environment from nothing but PATH
// (the process's own), instead of the whole environment of the process,
// which may hold secrets such as API keys; WithEnv adds to it. (PWD and
// the tag TRELLIS_SHELL_RUN, see the package documentation, are set
// either way.) Give HOME,
// LANG and the like with WithEnv when the commands need them.
func WithCleanEnv() Option { return func(c *config) { c.cleanEnv = true } }

// Toolset lets a model run shell commands in one directory, in the
// foreground or as background tasks. It implements tool.Toolset; its
// tools are built once, by New, and are safe for concurrent use. Close it
// when no run uses it any more: Close kills the commands still running.
//
// A Toolset is not a sandbox: the commands run with the rights of the
// process, can read and change any file it can, reach the network and
// leave the directory. Pair it with a permission policy that has a person
// approve each command (see the package documentation).
type Toolset struct {
	cfg   config
	dir   string
	shell string
	args  []string
	tools []tool.Tool

	// base is cancelled, with ErrClosed as its cause, by Close; every
	// command's context ends with it.
	base   context.Context
	cancel context.CancelCauseFunc

	// id and cmds make each command's tag (see markerVar): the toolset's
	// random ID and the command's number.
	id   string
	cmds atomic.Int64

	mu     sync.Mutex
	closed bool
	runs   sync.WaitGroup // foreground commands running
	tasks  *bgtask.Manager[Report]
}

var _ tool.Toolset = (*Toolset)(nil)

// New returns a toolset whose tools run commands in the directory dir:
// bash, task_output and task_stop. dir must exist and be a directory; it
// is made absolute, and every command starts in it. The shell must exist
// (see WithShell).
//
// Each command runs in a process group of its own (on unix), so a timeout,
// the call's cancellation, task_stop and Close end the processes the
// command started in the group, not just the shell (and, on Linux, those
// found outside it by their tag; see the package documentation). Standard input is empty, so a
// command that waits for input reads end-of-file instead of hanging.
func New(dir string, opts ...Option) (*Toolset, error) {
	c := config{
		name: DefaultName,
		Limits: bgtask.Limits{
			Timeout:    DefaultTimeout,
			MaxTimeout: DefaultMaxTimeout,
			MaxOutput:  DefaultMaxOutput,
			MaxTasks:   DefaultMaxTasks,
			KillGrace:  DefaultKillGrace,
		},
	}
	c.shell, c.shellArgs = defaultShell()
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.shell == "" && len(c.problems) == 0 {
		c.problem("WithShell: there is no default shell on %s; name one", runtime.GOOS)
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: shell %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	c.Timeout = min(c.Timeout, c.MaxTimeout)
	if dir == "" {
		return nil, errors.New("shell: the directory is empty; give the directory the commands run in")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("shell: %q is not a directory", abs)
	}
	sh, err := exec.LookPath(c.shell)
	if err != nil {
		which := "WithShell: the shell"
		if !c.shellSet {
			which = "the default shell (name another with WithShell)"
		}
		return nil, fmt.Errorf("%w: shell %q: %s %q cannot be run: %w", tool.ErrInvalidTool, c.name, which, c.shell, err)
	}
	base, cancel := context.WithCancelCause(context.Background())
	s := &Toolset{
		cfg:    c,
		dir:    abs,
		shell:  sh,
		args:   c.shellArgs,
		base:   base,
		cancel: cancel,
		id:     rand.Text()[:12],
	}
	s.tasks = s.newTasks()
	for _, mk := range []func() (tool.Tool, error){s.bashTool, s.tasks.OutputTool, s.tasks.StopTool} {
		t, err := mk()
		if err != nil {
			cancel(nil)
			return nil, fmt.Errorf("shell %q: %w", c.name, err)
		}
		s.tools = append(s.tools, t)
	}
	return s, nil
}

// Name returns the toolset's name.
func (s *Toolset) Name() string { return s.cfg.name }

// Dir returns the absolute path of the directory the commands run in.
func (s *Toolset) Dir() string { return s.dir }

// Tools returns the toolset's tools; after Close it returns an error.
func (s *Toolset) Tools(context.Context) ([]tool.Tool, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("shell %q: %w", s.cfg.name, ErrClosed)
	}
	return slices.Clone(s.tools), nil
}

// Close kills every command still running, foreground and background, with
// its process group (and the processes found outside it by their tag), and
// waits for them to end (at most about the
// kill grace period). Calls of the tools made after Close are error
// results. Close always returns nil; calling it again does nothing more.
func (s *Toolset) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.tasks.Close()
	s.cancel(ErrClosed)
	s.runs.Wait()
	s.tasks.Wait()
	return nil
}

// Tasks returns a report on each background task the toolset keeps:
// those running and those finished whose final output has not been read,
// in the order they were started. It is meant for user interfaces; the
// model uses task_output.
func (s *Toolset) Tasks() []Report { return s.tasks.Tasks() }

// enter registers a foreground command about to start; it reports false
// after Close.
func (s *Toolset) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.runs.Add(1)
	return true
}

// environ returns the environment of a command tagged tag.
func (s *Toolset) environ(tag string) []string {
	var env []string
	if s.cfg.cleanEnv {
		if p, ok := os.LookupEnv("PATH"); ok {
			env = append(env, "PATH="+p)
		}
	} else {
		env = os.Environ()
	}
	if runtime.GOOS != "windows" {
		// The process's PWD names its own directory, not the commands'.
		env = append(env, "PWD="+s.dir)
	}
	// exec.Cmd keeps the last value of a key given twice. The tag comes
	// last, and keeps the tags this process itself carries even with
	// WithCleanEnv: a toolset whose own commands run under another's are
	// killed with them.
	env = append(env, s.cfg.env...)
	return append(env, markerVar+"="+strings.TrimSpace(os.Getenv(markerVar)+" "+tag))
}

// newTag returns the tag of a new command.
func (s *Toolset) newTag() string {
	return s.id + "-" + strconv.FormatInt(s.cmds.Add(1), 10)
}

// timeoutFor returns the timeout of a command whose call asked for ms
// milliseconds (0: none asked), and whether the ask was lowered to the
// maximum.
func (s *Toolset) timeoutFor(ms int) (time.Duration, bool) {
	return bgtask.TimeoutFor(ms, s.cfg.Timeout, s.cfg.MaxTimeout)
}

// closedResult is the result of a call made after Close.
func (s *Toolset) closedResult() tool.Result {
	return errorResult(tool.CodeToolError, ErrClosed, nil, "The shell toolset %q is closed: no command can run any more.", s.cfg.name)
}
