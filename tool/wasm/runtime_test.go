package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/wasm"
)

func TestCompileRefusesWhatItCannotRun(t *testing.T) {
	rt := engines(t)["compiler"]
	for _, tc := range []struct {
		name string
		bin  []byte
		want string
	}{
		{"empty", nil, "no bytes"},
		{"text", []byte("not a module at all"), "not a WebAssembly binary module"},
		{"truncated", echoModule[:60], "invalid module"},
		{"no _start", noStartWasm, "exports no _start function"},
		{"billions of imports", []byte("\x00asm\x01\x00\x00\x00\x02\x05\xff\xff\xff\xff\x0f"), "claims 4294967295 imports in 0 bytes"},
		{"billions of locals", join(
			[]byte("\x00asm\x01\x00\x00\x00"),
			section(1, vec([]byte{0x60, 0x00, 0x00})),
			section(3, vec([]byte{0x00})),
			section(10, vec(join(uleb(8), []byte{0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, i32, opEnd}))),
		), "declares more than 50000 locals"},
		{"a long section", []byte("\x00asm\x01\x00\x00\x00\x01\x7f\x00"), "longer than the bytes that remain"},
		{"env import", envImportWasm, "imports the function env.host_log, which the runtime does not provide"},
		{"unknown WASI function", unknownWasiWasm, "wasi_snapshot_preview1.sock_connect, which is not a WASI preview 1 function"},
		{"bad signature", badSignatureWasm, "wasi_snapshot_preview1.fd_write with the signature () -> (), but WASI preview 1 defines it as (i32, i32, i32, i32) -> i32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod, err := rt.Compile(context.Background(), tc.bin)
			if mod != nil || !errors.Is(err, wasm.ErrInvalidModule) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile: %v, want an ErrInvalidModule that says %q", err, tc.want)
			}
		})
	}
}

func TestRuntimeClose(t *testing.T) {
	ctx := context.Background()
	// Close stops the program that is running and waits for its call. On a
	// loaded machine the call may not have begun when Close comes, and it
	// fails as a call after Close: then the test tries again, with a new
	// runtime and a longer head start for the call.
	for head := 100 * time.Millisecond; ; head *= 2 {
		rt, echo, r := closeWhileLooping(t, head)
		if strings.Contains(r.Text(), "the wasm runtime is closed") && head < 5*time.Second {
			t.Logf("the call had not begun after %s: trying again with %s", head, 2*head)
			continue
		}
		mustFail(t, r, tool.CodeCancelled, "runtime was closed")
		if !errors.Is(r.Err, wasm.ErrClosed) || r.Status != tool.StatusCancelled {
			t.Errorf("Status %s, Err %v", r.Status, r.Err)
		}
		checkClosedRuntime(ctx, t, rt, echo)
		return
	}
}

// closeWhileLooping starts an endless program on a new runtime, closes the
// runtime after head, and returns it, a tool on it, and the program's
// result.
func closeWhileLooping(t *testing.T, head time.Duration) (*wasm.Runtime, tool.Tool, tool.Result) {
	t.Helper()
	ctx := context.Background()
	rt, err := wasm.NewRuntime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loop := newTool(t, compile(t, rt, loopWasm), wasm.WithTimeout(time.Minute))
	echo := newTool(t, compile(t, rt, echoWasm))
	mustSucceed(t, run(ctx, echo, `{}`))

	done := make(chan tool.Result)
	go func() { done <- run(ctx, loop, `{}`) }()
	time.Sleep(head)
	within(t, 10*time.Second, func() {
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	var r tool.Result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return after Close")
	}
	return rt, echo, r
}

// checkClosedRuntime checks that a closed runtime runs and compiles
// nothing, and that closing it again does nothing.
func checkClosedRuntime(ctx context.Context, t *testing.T, rt *wasm.Runtime, echo tool.Tool) {
	t.Helper()
	r := run(ctx, echo, `{}`)
	if !r.IsError || !errors.Is(r.Err, wasm.ErrClosed) {
		t.Errorf("a call after Close: %s", r.Text())
	}
	if _, err := rt.Compile(ctx, echoWasm); !errors.Is(err, wasm.ErrClosed) {
		t.Errorf("Compile after Close: %v", err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestModuleClose(t *testing.T) {
	ctx := context.Background()
	rt := engines(t)["interpreter"]
	mod := compile(t, rt, echoWasm)
	echo := newTool(t, mod)
	mustSucceed(t, run(ctx, echo, `{}`))
	if err := mod.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := run(ctx, echo, `{}`)
	if !r.IsError || !errors.Is(r.Err, wasm.ErrClosed) || !strings.Contains(r.Text(), "module") {
		t.Errorf("a call after the module's Close: %s", r.Text())
	}
	if err := mod.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The runtime's other modules still run.
	mustSucceed(t, run(ctx, newTool(t, compile(t, rt, echoWasm)), `{}`))
}

func TestCacheDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		rt, err := wasm.NewRuntime(ctx, wasm.WithCacheDir(dir), wasm.WithCompilationWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		echo, err := wasm.NewTool(compile(t, rt, echoWasm), model.ToolDefinition{Name: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		if got := mustSucceed(t, run(ctx, echo, `{"x":1}`)); got != `you said: {"x":1}` {
			t.Errorf("run %d: %q", i, got)
		}
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Errorf("the cache directory is empty: %v", err)
	}
}

func FuzzCompile(f *testing.F) {
	for _, seed := range [][]byte{
		echoWasm, loopWasm, trapWasm, growWasm, noStartWasm, envImportWasm, hugeMemoryWasm, echoWasm[:40], nil,
		tableGrowWasm, tableModule(nil, join([]byte{0x40, 0x00}, tableType(2, -1), []byte{opRefNull, funcref, opEnd}), tableType(3, 9)),
	} {
		f.Add(seed)
	}
	ctx := context.Background()
	rt, err := wasm.NewRuntime(ctx, wasm.WithInterpreter())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, bin []byte) {
		mod, err := rt.Compile(ctx, bin)
		if err != nil {
			if !errors.Is(err, wasm.ErrInvalidModule) {
				t.Fatalf("error %v does not match ErrInvalidModule", err)
			}
			return
		}
		defer mod.Close(ctx)
		if _, err := wasm.NewTool(mod, model.ToolDefinition{Name: "fuzz"}, wasm.WithMemoryLimit(4<<30)); err != nil {
			t.Fatalf("NewTool: %v", err)
		}
		checkTablesBounded(t, bin)
	})
}

// checkTablesBounded checks what Compile made of a module it accepted: the
// rewritten module still passes precheck, every table in it has a maximum
// within the caps, and a second rewrite changes nothing.
func checkTablesBounded(t *testing.T, bin []byte) {
	t.Helper()
	out, err := wasm.LimitTables(bin)
	if err != nil {
		t.Fatalf("Compile accepted a module whose tables LimitTables refuses: %v", err)
	}
	if err := wasm.Precheck(out); err != nil {
		t.Fatalf("the rewritten module fails precheck: %v", err)
	}
	limits, err := wasm.TableLimits(out)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i, l := range limits {
		if l.Max < int64(l.Min) || l.Max > max(wasm.MaxTableEntries, int64(l.Min)) {
			t.Errorf("table %d has the limits %+v", i, l)
		}
		total += l.Max
	}
	if total > wasm.MaxModuleTableEntries {
		t.Errorf("the tables may hold %d entries in all", total)
	}
	if again, err := wasm.LimitTables(out); err != nil || !bytes.Equal(again, out) {
		t.Errorf("a second rewrite: %v, changed %v", err, !bytes.Equal(again, out))
	}
}
