package wasm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Sentinel errors. The typed errors of this package match them with
// errors.Is.
var (
	// ErrInvalidModule: Compile was given bytes that are not a WASI command
	// module it can run: not WebAssembly, invalid, without a _start
	// function, importing something other than WASI preview 1 functions,
	// or with tables larger than the runtime allows.
	ErrInvalidModule = errors.New("wasm: invalid module")
	// ErrClosed: the Runtime or the Module was closed.
	ErrClosed = errors.New("wasm: closed")
	// ErrMemoryLimit: the program needed more memory than WithMemoryLimit
	// allows.
	ErrMemoryLimit = errors.New("wasm: memory limit exceeded")
	// ErrTimeout: the program did not finish within WithTimeout. The error
	// also matches context.DeadlineExceeded.
	ErrTimeout = errors.New("wasm: time limit exceeded")
)

// wasiModule is the import module name of WASI preview 1.
const wasiModule = wasi_snapshot_preview1.ModuleName

// Runtime compiles and runs WebAssembly modules. It holds a wazero runtime
// with the WASI preview 1 host functions; its modules and the tools built
// on them share it. A Runtime is safe for concurrent use; Close releases
// everything it holds.
type Runtime struct {
	rt      wazero.Runtime
	cache   wazero.CompilationCache // owned: closed with the runtime
	wasi    map[string]api.FunctionDefinition
	workers int

	// stop is cancelled by Close; every call's context follows it, so
	// Close interrupts the programs that are running.
	stop     context.Context
	stopFunc context.CancelCauseFunc

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup // the calls and compilations under way
}

// RuntimeOption configures a Runtime.
type RuntimeOption func(*runtimeConfig)

type runtimeConfig struct {
	interpreter bool
	cacheDir    string
	workers     int
	problems    []string
}

// WithInterpreter makes the runtime interpret modules instead of compiling
// them to machine code. Compile is then fast and calls are slower (often
// ten times or more); it suits modules that run briefly and change often.
// Where wazero has no compiler (platforms other than amd64 and arm64), the
// runtime interprets anyway.
func WithInterpreter() RuntimeOption { return func(c *runtimeConfig) { c.interpreter = true } }

// WithCacheDir keeps compiled machine code in dir, which is created if
// needed, so that a later Runtime (another run of the program) compiles the
// same module bytes without the work. The directory must be private to the
// application: wazero trusts what it finds there.
func WithCacheDir(dir string) RuntimeOption {
	return func(c *runtimeConfig) {
		if strings.TrimSpace(dir) == "" {
			c.problems = append(c.problems, "WithCacheDir: the directory is empty")
		}
		c.cacheDir = dir
	}
}

// WithCompilationWorkers sets how many goroutines Compile uses to compile
// one module (runtime.GOMAXPROCS(0) unless set); n must be at least 1.
func WithCompilationWorkers(n int) RuntimeOption {
	return func(c *runtimeConfig) {
		if n < 1 {
			c.problems = append(c.problems, fmt.Sprintf("WithCompilationWorkers: %d is not a number of workers; use 1 or more", n))
		}
		c.workers = n
	}
}

// NewRuntime returns a Runtime that compiles modules to machine code where
// wazero can (amd64 and arm64) and interprets them elsewhere. Guest code
// is interrupted when a call's context is done, so no program outlives its
// call. Close the Runtime when done with it.
func NewRuntime(ctx context.Context, opts ...RuntimeOption) (*Runtime, error) {
	c := runtimeConfig{workers: runtime.GOMAXPROCS(0)}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("wasm: runtime: %s", strings.Join(c.problems, "; "))
	}
	cfg := wazero.NewRuntimeConfig()
	if c.interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	// Without this an endless loop would hold its goroutine (and OS
	// thread) forever: the compiled code checks for a done context only
	// when asked to.
	cfg = cfg.WithCloseOnContextDone(true)
	var cache wazero.CompilationCache
	if c.cacheDir != "" {
		var err error
		cache, err = wazero.NewCompilationCacheWithDir(c.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: runtime: WithCacheDir(%q): %w", c.cacheDir, err)
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	_, err := wasi_snapshot_preview1.Instantiate(ctx, rt)
	if err == nil && rt.Module(wasiModule) == nil {
		err = errors.New("the module is missing after instantiation")
	}
	if err != nil {
		_ = rt.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return nil, fmt.Errorf("wasm: runtime: instantiating WASI: %w", err)
	}
	stop, stopFunc := context.WithCancelCause(context.Background())
	r := &Runtime{
		rt:       rt,
		cache:    cache,
		wasi:     rt.Module(wasiModule).ExportedFunctionDefinitions(),
		workers:  c.workers,
		stop:     stop,
		stopFunc: stopFunc,
	}
	return r, nil
}

// begin registers a call or a compilation, or reports that the runtime is
// closed.
func (r *Runtime) begin() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("%w: the wasm runtime is closed", ErrClosed)
	}
	r.calls.Add(1)
	return nil
}

// Close interrupts the programs that are running (their calls end with a
// cancelled result), waits for their calls to return, and releases the
// compiled modules and the compilation cache. Later calls of the tools
// fail with an error result that matches ErrClosed, and Compile fails. It
// is safe to call Close more than once.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.stopFunc(fmt.Errorf("%w: the wasm runtime was closed during the call", ErrClosed))
	r.calls.Wait()
	err := r.rt.Close(ctx)
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(ctx))
	}
	return err
}

// Module is a compiled WebAssembly module, ready to be run by the tools
// built on it (NewTool). Compiling is the expensive step and happens once;
// each call of a tool instantiates the module afresh.
type Module struct {
	rt       *Runtime
	cm       wazero.CompiledModule
	minPages uint32 // the memory the module declares it needs, in 64 KiB pages

	mu     sync.RWMutex
	closed bool
}

// Compile compiles a WASI preview 1 command module: a module that exports
// _start and imports only functions of wasi_snapshot_preview1, such as a
// Go program built with GOOS=wasip1 GOARCH=wasm, a Rust one built for
// wasm32-wasip1 or a C one built with wasi-sdk. The error, which matches
// ErrInvalidModule when the bytes are at fault, says what is wrong: bytes
// that are not valid WebAssembly, a missing _start (a library or reactor
// module), or an import the runtime does not provide, named as
// module.name. Before wazero decodes the bytes, Compile checks that every
// count and length they state fits in the bytes that follow, and refuses
// a construct it cannot check: wazero's decoder allocates what a count
// claims, and a few malformed bytes could otherwise exhaust the process's
// memory.
//
// Tables are bounded for the same reason: Compile gives each table the
// module defines a maximum of 65,536 entries (or its declared maximum if
// smaller, or its minimum if larger), so that the program's table.grow
// fails beyond it (returns -1, as the specification allows) rather than
// have the host allocate gigabytes. It refuses a module whose tables
// would hold more than 4,194,304 entries in all, and one that imports a
// table, which the runtime does not provide.
//
// Compile runs none of the module's code. Close waits for a Compile that
// is under way.
func (r *Runtime) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	if err := r.begin(); err != nil {
		return nil, err
	}
	defer r.calls.Done()
	if len(wasm) == 0 {
		return nil, fmt.Errorf("%w: no bytes", ErrInvalidModule)
	}
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, fmt.Errorf("%w: the bytes are not a WebAssembly binary module (it starts with the bytes 00 61 73 6d, \"\\0asm\")", ErrInvalidModule)
	}
	if err := precheck(wasm); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidModule, err)
	}
	// From here on wasm is the module with its tables bounded: what
	// wazero compiles (and the compilation cache keys on).
	wasm, err := limitTables(wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidModule, err)
	}
	cm, err := r.compile(ctx, wasm)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wasm: compile: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidModule, err)
	}
	if err := r.check(cm); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	pages, _ := memoryMinimum(wasm)
	return &Module{rt: r, cm: cm, minPages: pages}, nil
}

// compile has wazero compile the module; a panic of its decoder or
// compiler becomes an error.
func (r *Runtime) compile(ctx context.Context, wasm []byte) (cm wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			cm, err = nil, fmt.Errorf("the compiler failed on the module: %v", p)
		}
	}()
	return r.rt.CompileModule(experimental.WithCompilationWorkers(ctx, r.workers), wasm)
}

// check verifies that cm is a command module whose imports WASI provides.
func (r *Runtime) check(cm wazero.CompiledModule) error {
	start, ok := cm.ExportedFunctions()["_start"]
	if !ok {
		return fmt.Errorf("%w: the module exports no _start function: it is not a WASI command (a library or reactor module cannot be run as a tool)", ErrInvalidModule)
	}
	if len(start.ParamTypes()) != 0 || len(start.ResultTypes()) != 0 {
		return fmt.Errorf("%w: the module's _start function has parameters or results; a WASI command's _start takes and returns nothing", ErrInvalidModule)
	}
	for _, mem := range cm.ImportedMemories() {
		mod, name, _ := mem.Import()
		return fmt.Errorf("%w: the module imports the memory %s.%s; a WASI command defines its own memory", ErrInvalidModule, mod, name)
	}
	for _, fn := range cm.ImportedFunctions() {
		mod, name, _ := fn.Import()
		if mod != wasiModule {
			return fmt.Errorf("%w: the module imports the function %s.%s, which the runtime does not provide: only the functions of %s (WASI preview 1) are available", ErrInvalidModule, mod, name, wasiModule)
		}
		host, ok := r.wasi[name]
		if !ok {
			return fmt.Errorf("%w: the module imports the function %s.%s, which is not a WASI preview 1 function", ErrInvalidModule, mod, name)
		}
		if !slices.Equal(fn.ParamTypes(), host.ParamTypes()) || !slices.Equal(fn.ResultTypes(), host.ResultTypes()) {
			return fmt.Errorf("%w: the module imports the function %s.%s with the signature %s, but WASI preview 1 defines it as %s", ErrInvalidModule, mod, name, signature(fn), signature(host))
		}
	}
	return nil
}

// signature writes a function's type, such as "(i32, i32) -> i32".
func signature(fn api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	res := names(fn.ResultTypes())
	if len(fn.ResultTypes()) != 1 {
		res = "(" + res + ")"
	}
	return "(" + names(fn.ParamTypes()) + ") -> " + res
}

// Close releases the compiled module. Later calls of the tools built on it
// fail with an error result that matches ErrClosed; calls that are running
// finish first. Closing the Runtime closes its modules too.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	return m.cm.Close(ctx)
}

// MinMemory returns how much linear memory the module declares that it
// needs, in bytes: the floor for WithMemoryLimit.
func (m *Module) MinMemory() uint64 { return uint64(m.minPages) * pageSize }
