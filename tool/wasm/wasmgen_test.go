package wasm_test

// A tiny encoder of WebAssembly binaries, for test modules that need no
// toolchain: a handful of imports, functions, one memory and data.

// Value types and instructions used by the test modules.
const (
	i32 = 0x7f

	opUnreachable = 0x00
	opLoop        = 0x03
	opIf          = 0x04
	opEnd         = 0x0b
	opBr          = 0x0c
	opCall        = 0x10
	opDrop        = 0x1a
	opI32Load     = 0x28
	opI32Store    = 0x36
	opMemoryGrow  = 0x40
	opI32Const    = 0x41
	opI32Eq       = 0x46
	blockVoid     = 0x40
)

type wasmFunc struct {
	params, results []byte
	export          string // "" for none
	code            []byte // without the final end
}

type wasmImport struct {
	module, name    string
	params, results []byte
}

type wasmData struct {
	offset int32
	bytes  []byte
}

type wasmModule struct {
	imports []wasmImport
	funcs   []wasmFunc
	memory  int // initial pages; -1 for no memory
	data    []wasmData
}

func uleb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sleb(v int32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func vec(items ...[]byte) []byte {
	b := uleb(uint32(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func name(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func section(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(body)))...), body...)
}

// i32c is the instruction i32.const v.
func i32c(v int32) []byte { return append([]byte{opI32Const}, sleb(v)...) }

// call is the instruction call fn.
func call(fn uint32) []byte { return append([]byte{opCall}, uleb(fn)...) }

func join(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func (m wasmModule) bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	var types, imports, funcs, exports, code, data [][]byte
	for _, im := range m.imports {
		imports = append(imports, join(name(im.module), name(im.name), []byte{0x00}, uleb(uint32(len(types)))))
		types = append(types, join([]byte{0x60}, vec(split(im.params)...), vec(split(im.results)...)))
	}
	for i, f := range m.funcs {
		funcs = append(funcs, uleb(uint32(len(types))))
		types = append(types, join([]byte{0x60}, vec(split(f.params)...), vec(split(f.results)...)))
		if f.export != "" {
			exports = append(exports, join(name(f.export), []byte{0x00}, uleb(uint32(len(m.imports)+i))))
		}
		body := join([]byte{0x00}, f.code, []byte{opEnd}) // no locals
		code = append(code, join(uleb(uint32(len(body))), body))
	}
	if m.memory >= 0 {
		exports = append(exports, join(name("memory"), []byte{0x02, 0x00}))
	}
	for _, d := range m.data {
		data = append(data, join([]byte{0x00}, i32c(d.offset), []byte{opEnd}, uleb(uint32(len(d.bytes))), d.bytes))
	}
	out = append(out, section(1, vec(types...))...)
	if len(imports) > 0 {
		out = append(out, section(2, vec(imports...))...)
	}
	out = append(out, section(3, vec(funcs...))...)
	if m.memory >= 0 {
		out = append(out, section(5, vec(join([]byte{0x00}, uleb(uint32(m.memory)))))...)
	}
	out = append(out, section(7, vec(exports...))...)
	out = append(out, section(10, vec(code...))...)
	if len(data) > 0 {
		out = append(out, section(11, vec(data...))...)
	}
	return out
}

// split makes each value type a vector item.
func split(types []byte) [][]byte {
	items := make([][]byte, len(types))
	for i, t := range types {
		items[i] = []byte{t}
	}
	return items
}

// start returns a module whose exported _start runs code, with one page of
// memory and the given imports.
func start(code []byte, imports ...wasmImport) []byte {
	return wasmModule{
		imports: imports,
		funcs:   []wasmFunc{{export: "_start", code: code}},
		memory:  1,
	}.bytes()
}

var (
	procExit = wasmImport{module: "wasi_snapshot_preview1", name: "proc_exit", params: []byte{i32}}
	fdWrite  = wasmImport{module: "wasi_snapshot_preview1", name: "fd_write", params: []byte{i32, i32, i32, i32}, results: []byte{i32}}
	fdRead   = wasmImport{module: "wasi_snapshot_preview1", name: "fd_read", params: []byte{i32, i32, i32, i32}, results: []byte{i32}}
)

// The test modules.
var (
	// loopWasm loops for ever.
	loopWasm = start(join([]byte{opLoop, blockVoid, opBr, 0x00, opEnd}))
	// trapWasm reaches unreachable code.
	trapWasm = start([]byte{opUnreachable})
	// growWasm grows its memory a page at a time until refused, then traps.
	growWasm = start(join(
		[]byte{opLoop, blockVoid},
		i32c(1), []byte{opMemoryGrow, 0x00}, i32c(-1), []byte{opI32Eq},
		[]byte{opIf, blockVoid, opUnreachable, opEnd},
		[]byte{opBr, 0x00, opEnd},
	))
	// exit7Wasm exits with code 7.
	exit7Wasm = start(join(i32c(7), call(0)), procExit)
	// hugeMemoryWasm declares 4096 pages (256 MiB) of memory.
	hugeMemoryWasm = wasmModule{funcs: []wasmFunc{{export: "_start"}}, memory: 4096}.bytes()
	// noStartWasm exports a function, but not _start.
	noStartWasm = wasmModule{funcs: []wasmFunc{{export: "main"}}, memory: 1}.bytes()
	// envImportWasm imports a function from "env".
	envImportWasm = start(call(0), wasmImport{module: "env", name: "host_log"})
	// unknownWasiWasm imports a function WASI does not define.
	unknownWasiWasm = start(nil, wasmImport{module: "wasi_snapshot_preview1", name: "sock_connect"})
	// badSignatureWasm imports fd_write with the wrong signature.
	badSignatureWasm = start(call(0), wasmImport{module: "wasi_snapshot_preview1", name: "fd_write"})
	// echoWasm writes "you said: " and then what it read from stdin (one
	// read of up to 1 KiB).
	echoWasm = wasmModule{
		imports: []wasmImport{fdRead, fdWrite},
		funcs: []wasmFunc{{export: "_start", code: join(
			i32c(0), i32c(16), i32c(1), i32c(24), call(0), []byte{opDrop}, // fd_read(0, iovs=16, 1, nread=24)
			i32c(12), i32c(24), []byte{opI32Load, 0x02, 0x00}, []byte{opI32Store, 0x02, 0x00}, // iov[1].len = nread
			i32c(1), i32c(0), i32c(2), i32c(32), call(1), []byte{opDrop}, // fd_write(1, iovs=0, 2, nwritten=32)
		)}},
		memory: 1,
		data: []wasmData{
			{0, []byte{64, 0, 0, 0, 10, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 128, 0, 0, 0, 0, 4, 0, 0}},
			{64, []byte("you said: ")},
		},
	}.bytes()
)
