package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// DefaultTimeout bounds each call unless WithTimeout says otherwise.
const DefaultTimeout = 30 * time.Second

// DefaultMemoryLimit caps a call's linear memory unless WithMemoryLimit
// says otherwise: 256 MiB.
const DefaultMemoryLimit = 256 << 20

// DefaultMaxOutput is how many bytes of standard output, and of standard
// error, a call keeps unless WithMaxOutput says otherwise: 1 MiB each.
const DefaultMaxOutput = 1 << 20

// maxShown caps the standard error (and the standard output of a failed
// call) that an error result's text quotes; Outcome holds all that was kept.
const maxShown = 2048

// Error codes carried by tool.Result.ErrorCode for failures of the
// program. A call stopped by its time limit has tool.CodeTimeout; one
// stopped by its context has tool.CodeTimeout (a deadline) or
// tool.CodeCancelled, and one stopped by Runtime.Close tool.CodeCancelled.
const (
	// CodeExit: the program exited with a non-zero code; Result.Err is an
	// *ExitError.
	CodeExit = "wasm_exit"
	// CodeTrap: the program stopped on a trap (unreachable code, an out of
	// bounds memory access, a division by zero, ...); Result.Err is a
	// *TrapError.
	CodeTrap = "wasm_trap"
	// CodeMemoryLimit: the program needed more memory than WithMemoryLimit
	// allows; Result.Err matches ErrMemoryLimit.
	CodeMemoryLimit = "wasm_memory_limit"
)

// Outcome is what a call of the program did. Results carry it in Details.
type Outcome struct {
	// ExitCode is the program's exit code; -1 when it did not exit (it
	// trapped, ran out of memory or was stopped).
	ExitCode int `json:"exit_code"`
	// Stdout is what the program wrote to standard output, up to
	// WithMaxOutput bytes.
	Stdout string `json:"stdout,omitempty"`
	// Stderr is what the program wrote to standard error, up to
	// WithMaxOutput bytes.
	Stderr string `json:"stderr,omitempty"`
	// StdoutBytes and StderrBytes count all the bytes the program wrote,
	// those beyond the cap included.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	// Memory is the size of the program's linear memory when it stopped,
	// in bytes.
	Memory uint64 `json:"memory"`
	// Duration is how long the program ran, instantiation included.
	Duration time.Duration `json:"duration"`
}

// ExitError is the failure of a program that exited with a non-zero code.
type ExitError struct {
	// Code is the exit code.
	Code uint32
	// Stderr is what the program wrote to standard error (up to
	// WithMaxOutput bytes).
	Stderr string
}

// Error says which code the program exited with.
func (e *ExitError) Error() string {
	return fmt.Sprintf("wasm: the program exited with code %d", e.Code)
}

// TrapError is the failure of a program that stopped on a trap, or whose
// instance could not be made.
type TrapError struct {
	// Reason is wazero's name for the trap, such as "unreachable" or "out
	// of bounds memory access".
	Reason string
	// Trace is the WebAssembly stack trace at the trap, when there is one.
	Trace string
}

// Error names the trap.
func (e *TrapError) Error() string { return "wasm: the program trapped: " + e.Reason }

// MemoryLimitError is the failure of a program that needed more memory
// than WithMemoryLimit allows. It matches ErrMemoryLimit.
type MemoryLimitError struct {
	// Limit is the limit, in bytes.
	Limit uint64
	// Requested is the largest size the program tried to grow its memory
	// to (or the size it needs to start), in bytes.
	Requested uint64
	// Cause is how the program failed once it was refused the memory: an
	// *ExitError or a *TrapError (nil when it could not start).
	Cause error
}

// Error says how much memory the program asked for.
func (e *MemoryLimitError) Error() string {
	if e.Cause == nil {
		return fmt.Sprintf("wasm: the program needs %s of memory to start, more than the limit of %s", size(e.Requested), size(e.Limit))
	}
	return fmt.Sprintf("wasm: the program tried to grow its memory to %s, beyond the limit of %s", size(e.Requested), size(e.Limit))
}

// Is reports whether target is ErrMemoryLimit.
func (e *MemoryLimitError) Is(target error) bool { return target == ErrMemoryLimit }

// Unwrap returns the program's failure.
func (e *MemoryLimitError) Unwrap() error { return e.Cause }

// timeoutError is the cause of a call stopped by WithTimeout.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("wasm: the program did not finish within %s", e.d)
}

// Is reports whether target is ErrTimeout or context.DeadlineExceeded.
func (e *timeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// size writes a number of bytes for people, such as "32 MiB".
func size(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Option configures a tool built by NewTool.
type Option func(*config)

type mount struct {
	guest, host string
	writable    bool
}

type config struct {
	timeout       time.Duration
	memLimit      uint64
	maxOutput     int
	args          []string
	env           [][2]string
	mounts        []mount
	deterministic bool
	toolOpts      []tool.Option
	problems      []string
}

func (c *config) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// WithTimeout bounds each call (DefaultTimeout unless set); d must be
// positive. The program is stopped when the time is up, even in an endless
// loop, and the call's result says it timed out. The call's context bounds
// it too.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.problem("WithTimeout: the timeout must be positive")
		}
		c.timeout = d
	}
}

// WithMemoryLimit caps the linear memory of each call's program at n bytes
// (DefaultMemoryLimit unless set), rounded down to whole 64 KiB pages;
// n must be at least the module's declared minimum (Module.MinMemory) and
// at most 4 GiB. A program that asks for more is refused the memory, the
// way WebAssembly lets a host refuse it, and when it fails for want of it
// the result says so (CodeMemoryLimit).
//
// The limit is on the memory the program addresses; the runtime's own
// bookkeeping for an instance (its stack, tables and the like) comes on
// top.
func WithMemoryLimit(n uint64) Option {
	return func(c *config) {
		if n < pageSize || n > 1<<32 {
			c.problem("WithMemoryLimit: %d bytes is not a memory limit: use from 64 KiB to 4 GiB", n)
		}
		c.memLimit = n / pageSize * pageSize
	}
}

// WithMaxOutput caps how many bytes of standard output, and of standard
// error, each call keeps (DefaultMaxOutput unless set); n must be at least
// 1. The program may write more: the rest is counted and dropped, and the
// result says the output was cut.
func WithMaxOutput(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problem("WithMaxOutput: n must be at least 1")
		}
		c.maxOutput = n
	}
}

// WithArgs adds command-line arguments after the program's name (argv[0],
// which is the tool's name), such as a subcommand that selects what a
// program that serves several tools does. Calls add up.
func WithArgs(args ...string) Option {
	return func(c *config) {
		for _, a := range args {
			if strings.ContainsRune(a, 0) {
				c.problem("WithArgs: the argument %q holds a NUL byte", a)
			}
		}
		c.args = append(c.args, args...)
	}
}

// WithEnv sets an environment variable of the program. The program sees no
// environment but the variables set this way: none of the host's. Calls
// add up; a later value of a key wins.
func WithEnv(key, value string) Option {
	return func(c *config) {
		if key == "" || strings.ContainsAny(key, "=\x00") || strings.ContainsRune(value, 0) {
			c.problem("WithEnv: %q=%q is not an environment variable (the key must be non-empty and hold no '=' or NUL byte)", key, value)
		}
		c.env = append(c.env, [2]string{key, value})
	}
}

// WithDir mounts the host directory hostDir, read-only, at guestPath, an
// absolute path such as "/data" (or "/" for the root) of the program's
// file system. The program can read what is inside and write nothing: an
// attempt to open a file for writing or to create, rename or delete one
// fails with EROFS ("read-only file system").
//
// Without a mount the program sees no file system at all. With one, every
// path resolves inside the directory: ".." does not climb out of it, and a
// symbolic link that points outside it cannot be followed.
func WithDir(guestPath, hostDir string) Option {
	return func(c *config) { c.addMount("WithDir", guestPath, hostDir, false) }
}

// WithWritableDir is WithDir with writing allowed: the program may create,
// change, rename and delete files and directories inside hostDir, and may
// make symbolic links only to relative paths below the link's directory
// (no absolute path, no ".."). A tool with a writable
// directory is not read-only and is destructive (tool.Metadata).
func WithWritableDir(guestPath, hostDir string) Option {
	return func(c *config) { c.addMount("WithWritableDir", guestPath, hostDir, true) }
}

func (c *config) addMount(option, guestPath, hostDir string, writable bool) {
	if !path.IsAbs(guestPath) || path.Clean(guestPath) != guestPath || strings.ContainsRune(guestPath, 0) {
		c.problem("%s: the guest path %q is not a clean absolute path such as \"/data\"", option, guestPath)
		return
	}
	for _, m := range c.mounts {
		if m.guest == guestPath {
			c.problem("%s: %q is mounted twice", option, guestPath)
			return
		}
	}
	abs, err := filepath.Abs(hostDir)
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(abs); err == nil && !info.IsDir() {
			err = errors.New("it is not a directory")
		}
	}
	if strings.TrimSpace(hostDir) == "" {
		err = errors.New("the path is empty")
	}
	if err != nil {
		c.problem("%s: the host directory %q cannot be mounted: %v", option, hostDir, err)
		return
	}
	c.mounts = append(c.mounts, mount{guest: guestPath, host: abs, writable: writable})
}

// WithDeterministic gives the program fake clocks and a fixed sequence of
// random bytes, so that the same arguments give the same output: the wall
// clock and the monotonic clock start at a fixed instant and advance by a
// millisecond each time they are read, sleeping returns at once, and the
// random bytes are the same on every call. By default the program reads
// the host's clocks, sleeps for real (but no longer than the call lasts)
// and gets random bytes from crypto/rand.
func WithDeterministic() Option { return func(c *config) { c.deterministic = true } }

// WithToolOptions adds options of the tool package (tool.WithTitle,
// tool.WithInstruction, tool.WithPermission, ...) to the tool. A
// tool.WithMetadata among them replaces the metadata NewTool sets.
func WithToolOptions(opts ...tool.Option) Option {
	return func(c *config) { c.toolOpts = append(c.toolOpts, opts...) }
}

// wasmTool runs a module for each call.
type wasmTool struct {
	mod  *Module
	name string
	cfg  config
	// base is the module configuration shared by every call.
	base wazero.ModuleConfig
	// jsonOut is set when the definition has an output schema: the
	// program's output must then be JSON.
	jsonOut bool
}

// NewTool returns a tool that runs mod, a compiled WASI command, once per
// call: def is what the model is told (name, description, the JSON Schema
// of the arguments and optionally of the output).
//
// Each call instantiates the module afresh (nothing a call leaves in
// memory is seen by the next, and calls run concurrently), writes the
// call's JSON arguments to the program's standard input, and runs _start
// with argv[0] set to the tool's name and the arguments of WithArgs after
// it. When the program exits with code 0, what it wrote to standard
// output is the result: text, or JSON when def has an output schema (the
// call fails when the output is not JSON). A non-zero exit code, a trap,
// a want of memory, the time limit and the call's context stopping the
// program are error results that say which and quote the start of the
// program's standard error; Details hold the Outcome in every case.
//
// The program is confined: it sees no file system but the directories
// WithDir and WithWritableDir mount, no environment variables but those of
// WithEnv, and no network, since WASI preview 1 has no way to open a
// connection (the runtime grants it no sockets). Its memory is capped by
// WithMemoryLimit and its time by WithTimeout, and the output kept by
// WithMaxOutput.
//
// The tool is concurrency-safe, and read-only unless a writable directory
// is mounted, in which case it is destructive (tool.Metadata).
// Misconfiguration is an error that matches tool.ErrInvalidTool and names
// the option.
func NewTool(mod *Module, def model.ToolDefinition, opts ...Option) (tool.Tool, error) {
	if mod == nil {
		return nil, fmt.Errorf("%w: wasm tool %q: the module is nil", tool.ErrInvalidTool, def.Name)
	}
	c := config{timeout: DefaultTimeout, memLimit: DefaultMemoryLimit, maxOutput: DefaultMaxOutput}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if len(c.problems) == 0 && c.memLimit < mod.MinMemory() {
		c.problem("WithMemoryLimit: the module needs at least %s of memory, more than the limit of %s", size(mod.MinMemory()), size(c.memLimit))
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: wasm tool %q: %s", tool.ErrInvalidTool, def.Name, strings.Join(c.problems, "; "))
	}
	t := &wasmTool{mod: mod, name: def.Name, cfg: c, jsonOut: len(def.OutputSchema) > 0}
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous, so that instances can run side by side
		WithStartFunctions().
		WithArgs(append([]string{def.Name}, c.args...)...)
	for _, kv := range c.env {
		mc = mc.WithEnv(kv[0], kv[1])
	}
	if !c.deterministic {
		mc = mc.WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
	}
	t.base = mc

	writable := false
	for _, m := range c.mounts {
		writable = writable || m.writable
	}
	topts := append([]tool.Option{tool.WithMetadata(tool.Metadata{
		ReadOnly:        !writable,
		Destructive:     writable,
		ConcurrencySafe: true,
	})}, c.toolOpts...)
	return tool.New(def, t.call, topts...)
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	buf   []byte
	max   int
	total int64
}

func (w *capped) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *capped) cut() bool { return w.total > int64(len(w.buf)) }

// call runs the program once.
func (t *wasmTool) call(ctx context.Context, _ string, args json.RawMessage) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return t.stopped(ctx, context.Cause(ctx), Outcome{ExitCode: -1}), nil
	}
	rt := t.mod.rt
	if err := rt.begin(); err != nil {
		return tool.ErrorResult(tool.CodeToolError, err), nil
	}
	defer rt.calls.Done()
	t.mod.mu.RLock()
	defer t.mod.mu.RUnlock()
	if t.mod.closed {
		return tool.ErrorResult(tool.CodeToolError, fmt.Errorf("%w: the module of tool %q is closed", ErrClosed, t.name)), nil
	}

	// The call ends with the first of: the caller's context, Close, and
	// the time limit. Each says why in its cause.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(rt.stop, func() { cancel(context.Cause(rt.stop)) })
	defer stop()
	tctx, cancelTimeout := context.WithTimeoutCause(cctx, t.cfg.timeout, &timeoutError{t.cfg.timeout})
	defer cancelTimeout()

	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	stdout := &capped{max: t.cfg.maxOutput}
	stderr := &capped{max: t.cfg.maxOutput}
	mc := t.base.WithStdin(bytes.NewReader(args)).WithStdout(stdout).WithStderr(stderr)
	if !t.cfg.deterministic {
		mc = mc.WithNanosleep(sleeper(tctx))
	}
	if len(t.cfg.mounts) > 0 {
		fsc, closeRoots, err := t.mountAll()
		if err != nil {
			return tool.ErrorResult(tool.CodeToolError, err), nil
		}
		defer closeRoots()
		mc = mc.WithFSConfig(fsc)
	}

	alloc := &limitAllocator{limit: t.cfg.memLimit}
	ictx := experimental.WithMemoryAllocator(tctx, alloc)
	began := time.Now()
	inst, err := rt.rt.InstantiateModule(ictx, t.mod.cm, mc)
	instantiated := err == nil
	if instantiated {
		if !alloc.over.Load() {
			_, err = inst.ExportedFunction("_start").Call(ictx)
		}
		_ = inst.Close(context.WithoutCancel(ctx))
	}
	out := Outcome{
		ExitCode:    -1,
		Stdout:      string(stdout.buf),
		Stderr:      string(stderr.buf),
		StdoutBytes: stdout.total,
		StderrBytes: stderr.total,
		Memory:      alloc.size.Load(),
		Duration:    time.Since(began),
	}

	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	switch {
	case alloc.over.Load():
		return t.failed(CodeMemoryLimit, &MemoryLimitError{Limit: t.cfg.memLimit, Requested: alloc.size.Load()}, out), nil
	case err == nil || isExit && exit.ExitCode() == 0:
		out.ExitCode = 0
		return t.succeeded(stdout, out), nil
	case tctx.Err() != nil && (!isExit || exit.ExitCode() == sys.ExitCodeContextCanceled || exit.ExitCode() == sys.ExitCodeDeadlineExceeded):
		return t.stopped(ctx, context.Cause(tctx), out), nil
	}
	var cause error
	if isExit {
		out.ExitCode = int(exit.ExitCode())
		cause = &ExitError{Code: exit.ExitCode(), Stderr: out.Stderr}
	} else {
		cause = trapOf(err, instantiated)
	}
	if requested := alloc.refused.Load(); requested > 0 {
		return t.failed(CodeMemoryLimit, &MemoryLimitError{Limit: t.cfg.memLimit, Requested: requested, Cause: cause}, out), nil
	}
	if isExit {
		return t.failed(CodeExit, cause, out), nil
	}
	return t.failed(CodeTrap, cause, out), nil
}

// mountAll opens the mounted directories for one call.
func (t *wasmTool) mountAll() (wazero.FSConfig, func(), error) {
	fsc := wazero.NewFSConfig()
	roots := make([]*os.Root, 0, len(t.cfg.mounts))
	closeRoots := func() {
		for _, r := range roots {
			_ = r.Close()
		}
	}
	for _, m := range t.cfg.mounts {
		root, err := os.OpenRoot(m.host)
		if err != nil {
			closeRoots()
			return nil, nil, fmt.Errorf("wasm: the directory mounted at %s cannot be opened: %w", m.guest, err)
		}
		roots = append(roots, root)
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(&rootFS{root: root, readOnly: !m.writable}, m.guest)
	}
	return fsc, closeRoots, nil
}

// sleeper sleeps for the program, but no longer than ctx lasts: wazero
// cannot interrupt a host function, only the guest's own code.
func sleeper(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		_ = pause.Sleep(ctx, time.Duration(ns))
	}
}

// trapOf describes an error of wazero that is not an exit.
func trapOf(err error, instantiated bool) *TrapError {
	msg := err.Error()
	if !instantiated {
		return &TrapError{Reason: "the module could not be instantiated: " + msg}
	}
	reason, trace, _ := strings.Cut(msg, "\nwasm stack trace:\n")
	reason = strings.TrimPrefix(reason, "wasm error: ")
	return &TrapError{Reason: reason, Trace: strings.TrimSpace(trace)}
}

// succeeded is the result of a program that exited with code 0.
func (t *wasmTool) succeeded(stdout *capped, out Outcome) tool.Result {
	var r tool.Result
	switch {
	case t.jsonOut && !stdout.cut() && json.Valid(stdout.buf):
		r = tool.Parts(model.JSONPart(json.RawMessage(bytes.TrimSpace(stdout.buf))))
	case t.jsonOut:
		why := "is not JSON"
		if stdout.cut() {
			why = fmt.Sprintf("is longer than %d bytes, the most the tool keeps", t.cfg.maxOutput)
		}
		r = tool.Errorf("the program's output %s, as the tool's output schema requires: %s", why, quote(out.Stdout))
	case stdout.cut():
		r = tool.Text(string(stdout.buf) + fmt.Sprintf("\n[The output is cut at %d of its %d bytes.]", len(stdout.buf), stdout.total))
	default:
		r = tool.Text(string(stdout.buf))
	}
	r.Details = out
	return r
}

// failed is the error result of a program that failed on its own.
func (t *wasmTool) failed(code string, err error, out Outcome) tool.Result {
	var b strings.Builder
	switch e := err.(type) {
	case *ExitError:
		fmt.Fprintf(&b, "The program exited with code %d.", e.Code)
	case *TrapError:
		fmt.Fprintf(&b, "The program stopped on a trap: %s.", e.Reason)
	case *MemoryLimitError:
		if e.Cause == nil {
			fmt.Fprintf(&b, "The program needs %s of memory to start, more than the tool's limit of %s.", size(e.Requested), size(e.Limit))
		} else {
			fmt.Fprintf(&b, "The program ran out of memory: it tried to grow its memory to %s, beyond the tool's limit of %s, and then failed (%s).",
				size(e.Requested), size(e.Limit), strings.TrimPrefix(e.Cause.Error(), "wasm: the program "))
		}
	default:
		b.WriteString(err.Error())
	}
	writeStreams(&b, out)
	r := tool.ErrorResult(code, err)
	r.Content = []model.Part{model.TextPart(b.String())}
	r.Details = out
	return r
}

// stopped is the error result of a program stopped from outside: by the
// time limit, the caller's context or Close.
func (t *wasmTool) stopped(ctx context.Context, cause error, out Outcome) tool.Result {
	var b strings.Builder
	var r tool.Result
	var te *timeoutError
	switch {
	case errors.As(cause, &te):
		fmt.Fprintf(&b, "The program did not finish within %s, the tool's time limit, and was stopped.", te.d)
		r = tool.ErrorResult(tool.CodeTimeout, cause)
		r.Status = tool.StatusTimeout
	case errors.Is(cause, ErrClosed):
		b.WriteString("The program was stopped: the wasm runtime was closed during the call.")
		r = tool.ErrorResult(tool.CodeCancelled, cause)
		r.Status = tool.StatusCancelled
	case errors.Is(cause, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		b.WriteString("The program was stopped: the call's deadline passed.")
		r = tool.ErrorResult(tool.CodeTimeout, fmt.Errorf("wasm: tool %q: %w", t.name, cause))
		r.Status = tool.StatusTimeout
	default:
		b.WriteString("The program was stopped: the call was cancelled.")
		r = tool.ErrorResult(tool.CodeCancelled, fmt.Errorf("wasm: tool %q: %w", t.name, cause))
		r.Status = tool.StatusCancelled
	}
	writeStreams(&b, out)
	r.Content = []model.Part{model.TextPart(b.String())}
	r.Details = out
	return r
}

// writeStreams quotes the start of what a failed program wrote.
func writeStreams(b *strings.Builder, out Outcome) {
	if s := strings.TrimRight(out.Stderr, "\n"); s != "" {
		b.WriteString("\nStandard error:\n" + clip(s, int64(len(out.Stderr)) < out.StderrBytes, out.StderrBytes))
	}
	if s := strings.TrimRight(out.Stdout, "\n"); s != "" {
		b.WriteString("\nStandard output:\n" + clip(s, int64(len(out.Stdout)) < out.StdoutBytes, out.StdoutBytes))
	}
}

// clip cuts s, output of total bytes that was already cut when cut is
// set, to maxShown bytes and says so when anything is left out.
func clip(s string, cut bool, total int64) string {
	if len(s) <= maxShown && !cut {
		return s
	}
	return textcut.Prefix(s, maxShown) + fmt.Sprintf("\n[cut: %d bytes in all]", total)
}

// quote shows the start of a program's output in a message.
func quote(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return fmt.Sprintf("%q", textcut.Clip(s, 200, "..."))
}
