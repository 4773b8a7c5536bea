// Package wasm runs WebAssembly programs as tools, each call in a sandbox
// of its own:
//
//	rt, err := wasm.NewRuntime(ctx)
//	...
//	defer rt.Close(ctx)
//	mod, err := rt.Compile(ctx, wasmBytes) // once: the expensive step
//	...
//	slugify, err := wasm.NewTool(mod, model.ToolDefinition{
//		Name:        "slugify",
//		Description: "Turns a title into a URL slug.",
//		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`),
//	}, wasm.WithTimeout(5*time.Second), wasm.WithMemoryLimit(64<<20))
//
// A module is a WASI preview 1 command: it exports _start and imports
// only functions of wasi_snapshot_preview1, such as a Go program built
// with GOOS=wasip1 GOARCH=wasm, a Rust one built for wasm32-wasip1 or a C
// one built with wasi-sdk. The runtime is wazero
// (github.com/tetratelabs/wazero), which compiles modules to machine code
// on amd64 and arm64 and interprets them elsewhere; it needs no cgo.
//
// Each call instantiates the module afresh, so calls share no memory and
// run concurrently. The program reads the call's JSON arguments from
// standard input and gets the tool's name as argv[0] (and the arguments of
// WithArgs after it); what it writes to standard output when it exits with
// code 0 is the result, as text, or as JSON when the tool's definition has
// an output schema. Every other ending is an error result that says what
// happened and quotes the program's standard error: a non-zero exit code
// (CodeExit, *ExitError), a trap such as unreachable code or an out of
// bounds memory access (CodeTrap, *TrapError), a want of memory
// (CodeMemoryLimit, ErrMemoryLimit), the time limit (tool.CodeTimeout,
// ErrTimeout) and the call's context (tool.CodeTimeout or
// tool.CodeCancelled). The result's Details hold an Outcome: exit code,
// output, memory and duration. A program never panics the host.
//
// The program is confined. Its linear memory is capped (WithMemoryLimit),
// and so is its time (WithTimeout): an endless loop is interrupted, as is a
// sleep. Its tables are capped too: Compile gives each a maximum of 65,536
// entries (a smaller declared maximum is kept, a larger minimum is the
// table's fixed size), so table.grow beyond it returns -1, and refuses a
// module whose tables would hold more than 4,194,304 entries in all.
// It sees no file system unless WithDir (read-only) or
// WithWritableDir mounts a directory, and then only that directory: every
// path resolves through an os.Root, so neither ".." nor a symbolic link
// leads out of it, and only regular files and directories open (a FIFO or
// a device there fails with ENOTSUP rather than wait).
// It sees no environment variable but those of WithEnv, and it has no
// network: WASI preview 1 has no call that opens a connection, and the
// runtime grants no sockets. Its clocks are the host's and its random
// bytes come from crypto/rand, unless WithDeterministic makes them fixed.
//
// Close the Runtime to stop the programs that are running and release the
// compiled code; WithCacheDir keeps compiled code on disk for the next
// run of the application.
package wasm
