package wasm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/tool/wasm"
)

// TestMain checks for leaked goroutines once the runtime that the tests
// share is closed (goleak.VerifyTestMain cannot close it first).
func TestMain(m *testing.M) {
	code := m.Run()
	shared.release()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// shared is the Go test program (testdata/prog), built and compiled once
// per run of the test binary: compiling a Go program's 2 MB of WebAssembly
// to machine code takes a second, several under the race detector.
var shared sharedProgram

type sharedProgram struct {
	once sync.Once
	dir  string
	bin  []byte // the module as built
	rt   *wasm.Runtime
	mod  *wasm.Module
	err  error
}

// program returns the compiled test program; a failure to build or compile
// it fails the test. With -short it skips the test.
func program(t testing.TB) (*wasm.Runtime, *wasm.Module) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Go program to WebAssembly and compiles it, seconds (skipped with -short)")
	}
	shared.once.Do(func() {
		shared.err = func() error {
			dir, err := os.MkdirTemp("", "wasm-test-")
			if err != nil {
				return err
			}
			shared.dir = dir
			out := filepath.Join(dir, "prog.wasm")
			started := time.Now()
			cmd := exec.Command(goTool(), "build", "-o", out, "./testdata/prog")
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("building testdata/prog: %v\n%s", err, b)
			}
			built := time.Since(started)
			bin, err := os.ReadFile(out)
			if err != nil {
				return err
			}
			shared.bin = bin
			ctx := context.Background()
			shared.rt, err = wasm.NewRuntime(ctx)
			if err != nil {
				return err
			}
			started = time.Now()
			shared.mod, err = shared.rt.Compile(ctx, bin)
			if err != nil {
				return fmt.Errorf("compiling testdata/prog: %w", err)
			}
			t.Logf("testdata/prog: built in %v, %d bytes compiled in %v", built.Round(time.Millisecond), len(bin), time.Since(started).Round(time.Millisecond))
			return nil
		}()
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.rt, shared.mod
}

// release closes the runtime and removes the build.
func (s *sharedProgram) release() {
	if s.rt != nil {
		_ = s.rt.Close(context.Background())
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// goTool finds the go command of the toolchain running the tests.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
