package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/wasm"
)

// newTool builds a tool named "prog" on mod.
func newTool(t *testing.T, mod *wasm.Module, opts ...wasm.Option) tool.Tool {
	t.Helper()
	tl, err := wasm.NewTool(mod, model.ToolDefinition{Name: "prog", Description: "The test program."}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// run calls tl with args.
func run(ctx context.Context, tl tool.Tool, args string) tool.Result {
	return tool.Invoke(ctx, tl, model.ToolCall{ID: "call-1", Name: tool.Name(tl), Arguments: json.RawMessage(args)})
}

// progTool builds a tool on the Go test program that runs it in mode.
func progTool(t *testing.T, mode []string, opts ...wasm.Option) tool.Tool {
	t.Helper()
	_, mod := program(t)
	return newTool(t, mod, append([]wasm.Option{wasm.WithArgs(mode...)}, opts...)...)
}

// engines returns a runtime of each kind, closed when the test ends.
func engines(t *testing.T) map[string]*wasm.Runtime {
	t.Helper()
	ctx := context.Background()
	rts := map[string]*wasm.Runtime{}
	for name, opts := range map[string][]wasm.RuntimeOption{"compiler": nil, "interpreter": {wasm.WithInterpreter()}} {
		rt, err := wasm.NewRuntime(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Close(ctx) })
		rts[name] = rt
	}
	return rts
}

// compile compiles bytes in rt.
func compile(t *testing.T, rt *wasm.Runtime, bin []byte) *wasm.Module {
	t.Helper()
	mod, err := rt.Compile(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func outcome(t *testing.T, r tool.Result) wasm.Outcome {
	t.Helper()
	out, ok := r.Details.(wasm.Outcome)
	if !ok {
		t.Fatalf("Details is %T, want wasm.Outcome", r.Details)
	}
	return out
}

func mustSucceed(t *testing.T, r tool.Result) string {
	t.Helper()
	if r.IsError || r.Status != tool.StatusSuccess {
		t.Fatalf("call failed (%s, %s): %s", r.Status, r.ErrorCode, r.Text())
	}
	return r.Text()
}

func mustFail(t *testing.T, r tool.Result, code string, contains ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("call succeeded with %q, want an error result", r.Text())
	}
	if r.ErrorCode != code {
		t.Errorf("ErrorCode = %q, want %q; text: %s", r.ErrorCode, code, r.Text())
	}
	for _, c := range contains {
		if !strings.Contains(r.Text(), c) {
			t.Errorf("text %q does not contain %q", r.Text(), c)
		}
	}
}

func TestEchoesArguments(t *testing.T) {
	echo := progTool(t, []string{"echo"})
	args := `{"text":"héllo, wörld","n":[1,2,3]}`
	if got := mustSucceed(t, run(context.Background(), echo, args)); got != args {
		t.Errorf("result = %q, want the arguments %q", got, args)
	}
	r := run(context.Background(), echo, `{}`)
	out := outcome(t, r)
	if out.ExitCode != 0 || out.Stdout != "{}" || out.StdoutBytes != 2 || out.Memory == 0 || out.Duration <= 0 {
		t.Errorf("outcome = %+v", out)
	}
}

func TestArgvStartsWithTheToolName(t *testing.T) {
	got := mustSucceed(t, run(context.Background(), progTool(t, []string{"args", "two words", "x"}), `{}`))
	if want := "prog\nargs\ntwo words\nx"; got != want {
		t.Errorf("argv = %q, want %q", got, want)
	}
}

func TestEnvironmentIsEmptyUnlessSet(t *testing.T) {
	if got := mustSucceed(t, run(context.Background(), progTool(t, []string{"env"}), `{}`)); got != "" {
		t.Errorf("environment = %q, want none", got)
	}
	tl := progTool(t, []string{"env"}, wasm.WithEnv("LANG", "C"), wasm.WithEnv("MODE", "a"), wasm.WithEnv("MODE", "b=c"))
	if got, want := mustSucceed(t, run(context.Background(), tl, `{}`)), "LANG=C\nMODE=b=c"; got != want {
		t.Errorf("environment = %q, want %q", got, want)
	}
}

func TestEachCallGetsAFreshInstance(t *testing.T) {
	tl := progTool(t, []string{"calls"})
	for i := 0; i < 3; i++ {
		if got := mustSucceed(t, run(context.Background(), tl, `{}`)); got != "1" {
			t.Fatalf("call %d: the program saw %s runs of its instance, want 1", i+1, got)
		}
	}
}

func TestNonZeroExit(t *testing.T) {
	r := run(context.Background(), progTool(t, []string{"exit", "3"}), `{}`)
	mustFail(t, r, wasm.CodeExit, "exited with code 3", "something went wrong", "partial")
	var ee *wasm.ExitError
	if !errors.As(r.Err, &ee) || ee.Code != 3 || ee.Stderr != "something went wrong\n" {
		t.Errorf("Err = %#v, want an *ExitError with code 3 and the standard error", r.Err)
	}
	out := outcome(t, r)
	if out.ExitCode != 3 || out.Stdout != "partial" || out.Stderr != "something went wrong\n" {
		t.Errorf("outcome = %+v", out)
	}
	if r.Status != tool.StatusFailed {
		t.Errorf("Status = %s", r.Status)
	}
}

func TestPanickingProgram(t *testing.T) {
	r := run(context.Background(), progTool(t, []string{"panic"}), `{}`)
	mustFail(t, r, wasm.CodeExit, "exited with code 2", "panic: boom")
}

func TestTrap(t *testing.T) {
	for name, rt := range engines(t) {
		t.Run(name, func(t *testing.T) {
			r := run(context.Background(), newTool(t, compile(t, rt, trapWasm)), `{}`)
			mustFail(t, r, wasm.CodeTrap, "trap: unreachable")
			var te *wasm.TrapError
			if !errors.As(r.Err, &te) || te.Reason != "unreachable" || te.Trace == "" {
				t.Errorf("Err = %#v, want a *TrapError for unreachable with a trace", r.Err)
			}
			if out := outcome(t, r); out.ExitCode != -1 {
				t.Errorf("ExitCode = %d, want -1", out.ExitCode)
			}
		})
	}
}

func TestExitWithoutOutput(t *testing.T) {
	rt := engines(t)["compiler"]
	r := run(context.Background(), newTool(t, compile(t, rt, exit7Wasm)), `{}`)
	mustFail(t, r, wasm.CodeExit, "exited with code 7")
	if strings.Contains(r.Text(), "Standard") {
		t.Errorf("text %q quotes output the program did not write", r.Text())
	}
}

// within fails the test when fn takes longer than d.
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	began := time.Now()
	fn()
	if took := time.Since(began); took > d {
		t.Errorf("took %v, more than %v", took, d)
	}
}

func TestTimeoutStopsAnEndlessLoop(t *testing.T) {
	for name, rt := range engines(t) {
		t.Run(name, func(t *testing.T) {
			tl := newTool(t, compile(t, rt, loopWasm), wasm.WithTimeout(100*time.Millisecond))
			within(t, 10*time.Second, func() {
				r := run(context.Background(), tl, `{}`)
				mustFail(t, r, tool.CodeTimeout, "did not finish within 100ms")
				if r.Status != tool.StatusTimeout || !errors.Is(r.Err, wasm.ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) {
					t.Errorf("Status %s, Err %v", r.Status, r.Err)
				}
			})
		})
	}
	t.Run("go", func(t *testing.T) {
		within(t, 10*time.Second, func() {
			r := run(context.Background(), progTool(t, []string{"spin"}, wasm.WithTimeout(100*time.Millisecond)), `{}`)
			mustFail(t, r, tool.CodeTimeout, "did not finish within 100ms")
		})
	})
}

func TestContextStopsTheProgram(t *testing.T) {
	for _, mode := range []string{"spin", "sleep"} {
		t.Run(mode+"/cancel", func(t *testing.T) {
			tl := progTool(t, []string{mode})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			within(t, 10*time.Second, func() {
				r := run(ctx, tl, `{}`)
				mustFail(t, r, tool.CodeCancelled, "cancelled")
				if r.Status != tool.StatusCancelled || !errors.Is(r.Err, context.Canceled) {
					t.Errorf("Status %s, Err %v", r.Status, r.Err)
				}
			})
		})
		t.Run(mode+"/deadline", func(t *testing.T) {
			tl := progTool(t, []string{mode})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			within(t, 10*time.Second, func() {
				r := run(ctx, tl, `{}`)
				if r.Status != tool.StatusTimeout || r.ErrorCode != tool.CodeTimeout {
					t.Errorf("Status %s, code %s: %s", r.Status, r.ErrorCode, r.Text())
				}
			})
		})
	}
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err := progTool(t, []string{"echo"}).Call(ctx, "call-1", json.RawMessage(`{}`))
		if err != nil || !r.IsError || r.Status != tool.StatusCancelled {
			t.Errorf("a call with a cancelled context: %v, %s: %s", err, r.Status, r.Text())
		}
	})
}

func TestMemoryLimit(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		tl := progTool(t, []string{"alloc", "64"}, wasm.WithMemoryLimit(32<<20))
		r := run(context.Background(), tl, `{}`)
		mustFail(t, r, wasm.CodeMemoryLimit, "ran out of memory", "limit of 32 MiB", "exited with code 2")
		var me *wasm.MemoryLimitError
		if !errors.Is(r.Err, wasm.ErrMemoryLimit) || !errors.As(r.Err, &me) || me.Limit != 32<<20 || me.Requested <= 32<<20 {
			t.Errorf("Err = %#v", r.Err)
		}
		var ee *wasm.ExitError
		if !errors.As(r.Err, &ee) {
			t.Errorf("Err %v does not wrap the exit", r.Err)
		}
		if out := outcome(t, r); out.Memory > 32<<20 {
			t.Errorf("the memory grew to %d bytes, beyond the limit", out.Memory)
		}
		ok := progTool(t, []string{"alloc", "8"}, wasm.WithMemoryLimit(32<<20))
		if got := mustSucceed(t, run(context.Background(), ok, `{}`)); got != fmt.Sprint(8<<20) {
			t.Errorf("result = %q", got)
		}
	})
	for name, rt := range engines(t) {
		t.Run(name, func(t *testing.T) {
			r := run(context.Background(), newTool(t, compile(t, rt, growWasm), wasm.WithMemoryLimit(1<<20)), `{}`)
			mustFail(t, r, wasm.CodeMemoryLimit, "tried to grow its memory to 1.1 MiB, beyond the tool's limit of 1 MiB", "unreachable")
			if out := outcome(t, r); out.Memory != 1<<20 {
				t.Errorf("memory = %d, want the limit", out.Memory)
			}
			var te *wasm.TrapError
			if !errors.As(r.Err, &te) {
				t.Errorf("Err %v does not wrap the trap", r.Err)
			}
		})
	}
}

func TestMemoryLimitBelowTheModulesMinimum(t *testing.T) {
	rt := engines(t)["interpreter"]
	mod := compile(t, rt, hugeMemoryWasm)
	if mod.MinMemory() != 256<<20 {
		t.Errorf("MinMemory = %d", mod.MinMemory())
	}
	_, err := wasm.NewTool(mod, model.ToolDefinition{Name: "huge"}, wasm.WithMemoryLimit(64<<20))
	if !errors.Is(err, tool.ErrInvalidTool) || !strings.Contains(err.Error(), "WithMemoryLimit: the module needs at least 256 MiB") {
		t.Errorf("err = %v", err)
	}
	if _, err := wasm.NewTool(mod, model.ToolDefinition{Name: "huge"}); err != nil {
		t.Errorf("the default limit should admit 256 MiB: %v", err)
	}
}

func TestOutputIsCapped(t *testing.T) {
	tl := progTool(t, []string{"flood", "1000"}, wasm.WithMaxOutput(1000))
	r := run(context.Background(), tl, `{}`)
	got := mustSucceed(t, r)
	if !strings.HasPrefix(got, strings.Repeat("x", 99)+"\n") || !strings.HasSuffix(got, "[The output is cut at 1000 of its 100000 bytes.]") {
		t.Errorf("result = %q", got)
	}
	if out := outcome(t, r); len(out.Stdout) != 1000 || out.StdoutBytes != 100000 {
		t.Errorf("kept %d of %d bytes", len(out.Stdout), out.StdoutBytes)
	}
}

func TestOutputSchemaMakesJSON(t *testing.T) {
	_, mod := program(t)
	def := model.ToolDefinition{Name: "prog", OutputSchema: json.RawMessage(`{"type":"object"}`)}
	echo, err := wasm.NewTool(mod, def, wasm.WithArgs("echo"))
	if err != nil {
		t.Fatal(err)
	}
	r := run(context.Background(), echo, `{"a":1}`)
	mustSucceed(t, r)
	if len(r.Content) != 1 || r.Content[0].Type != model.PartJSON || string(r.Content[0].JSON) != `{"a":1}` {
		t.Errorf("content = %+v, want one JSON part", r.Content)
	}
	text, err := wasm.NewTool(mod, def, wasm.WithArgs("text"))
	if err != nil {
		t.Fatal(err)
	}
	mustFail(t, run(context.Background(), text, `{}`), tool.CodeToolError, "is not JSON", `"plain text"`)
}

func TestConcurrentCalls(t *testing.T) {
	echo := progTool(t, []string{"echo"})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				args := fmt.Sprintf(`{"caller":%d,"call":%d,"pad":%q}`, g, i, strings.Repeat("p", g*100))
				r := run(context.Background(), echo, args)
				if r.IsError || r.Text() != args {
					errs <- fmt.Errorf("caller %d call %d: got %q", g, i, r.Text())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestClocksAndRandomness(t *testing.T) {
	ctx := context.Background()
	fixed := progTool(t, []string{"time"}, wasm.WithDeterministic())
	a, b := mustSucceed(t, run(ctx, fixed, `{}`)), mustSucceed(t, run(ctx, fixed, `{}`))
	if a != b {
		t.Errorf("deterministic calls differ: %q and %q", a, b)
	}
	real := progTool(t, []string{"time"})
	c, d := mustSucceed(t, run(ctx, real, `{}`)), mustSucceed(t, run(ctx, real, `{}`))
	if c == d {
		t.Errorf("two calls with real clocks and randomness agree: %q", c)
	}
	var ns int64
	if _, err := fmt.Sscan(c, &ns); err != nil || time.Since(time.Unix(0, ns)).Abs() > time.Hour {
		t.Errorf("the program's clock reads %q, not the host's time", c)
	}
}

func TestMetadata(t *testing.T) {
	md := tool.MetadataOf(progTool(t, []string{"echo"}))
	if !md.ReadOnly || md.Destructive || !md.ConcurrencySafe {
		t.Errorf("metadata = %+v", md)
	}
	md = tool.MetadataOf(progTool(t, []string{"echo"}, wasm.WithDir("/in", t.TempDir()), wasm.WithWritableDir("/out", t.TempDir())))
	if md.ReadOnly || !md.Destructive || !md.ConcurrencySafe {
		t.Errorf("metadata with a writable directory = %+v", md)
	}
	tl := progTool(t, []string{"echo"}, wasm.WithToolOptions(tool.WithTitle("Echo")))
	if tool.TitleOf(tl) != "Echo" {
		t.Errorf("title = %q", tool.TitleOf(tl))
	}
}

func TestOptionsAreChecked(t *testing.T) {
	_, mod := program(t)
	file := t.TempDir() + "/file"
	writeFile(t, file, "x")
	for _, tc := range []struct {
		opt  wasm.Option
		want string
	}{
		{wasm.WithTimeout(0), "WithTimeout"},
		{wasm.WithMemoryLimit(1000), "WithMemoryLimit"},
		{wasm.WithMemoryLimit(8 << 30), "WithMemoryLimit"},
		{wasm.WithMemoryLimit(1 << 20), "WithMemoryLimit: the module needs at least"},
		{wasm.WithMaxOutput(0), "WithMaxOutput"},
		{wasm.WithArgs("a\x00b"), "WithArgs"},
		{wasm.WithEnv("A=B", "c"), "WithEnv"},
		{wasm.WithEnv("", "c"), "WithEnv"},
		{wasm.WithDir("data", t.TempDir()), `WithDir: the guest path "data"`},
		{wasm.WithDir("/data/../x", t.TempDir()), "WithDir"},
		{wasm.WithDir("/data", t.TempDir()+"/missing"), "WithDir: the host directory"},
		{wasm.WithWritableDir("/data", file), "it is not a directory"},
		{wasm.WithWritableDir("/data", ""), "WithWritableDir"},
	} {
		_, err := wasm.NewTool(mod, model.ToolDefinition{Name: "prog"}, tc.opt)
		if !errors.Is(err, tool.ErrInvalidTool) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want one that names %q", err, tc.want)
		}
	}
	dir := t.TempDir()
	_, err := wasm.NewTool(mod, model.ToolDefinition{Name: "prog"}, wasm.WithDir("/d", dir), wasm.WithWritableDir("/d", dir))
	if err == nil || !strings.Contains(err.Error(), "mounted twice") {
		t.Errorf("err = %v", err)
	}
	if _, err := wasm.NewTool(nil, model.ToolDefinition{Name: "prog"}); !errors.Is(err, tool.ErrInvalidTool) {
		t.Errorf("nil module: err = %v", err)
	}
	if _, err := wasm.NewTool(mod, model.ToolDefinition{Name: "bad name!"}); err == nil {
		t.Error("a bad tool name was accepted")
	}
	for _, opt := range []wasm.RuntimeOption{wasm.WithCompilationWorkers(0), wasm.WithCacheDir(" ")} {
		if _, err := wasm.NewRuntime(context.Background(), opt); err == nil {
			t.Error("a bad runtime option was accepted")
		}
	}
}
