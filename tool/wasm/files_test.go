package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/wasm"
)

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree makes a directory to mount, "mount", holding in.txt and sub/deep.txt,
// next to a directory the program must not reach, "outside", holding
// secret.txt, and returns both.
func tree(t *testing.T) (mount, outside string) {
	t.Helper()
	base := t.TempDir()
	mount, outside = filepath.Join(base, "mount"), filepath.Join(base, "outside")
	writeFile(t, filepath.Join(mount, "in.txt"), "inside")
	writeFile(t, filepath.Join(mount, "sub", "deep.txt"), "deeper")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret")
	return mount, outside
}

// fsCall runs the test program in mode with the arguments and stdin.
func fsCall(t *testing.T, opts []wasm.Option, stdin string, mode ...string) tool.Result {
	t.Helper()
	return run(context.Background(), progTool(t, mode, opts...), stdin)
}

func TestNoFileSystemWithoutAMount(t *testing.T) {
	_, outside := tree(t)
	for _, path := range []string{"/etc/passwd", filepath.ToSlash(filepath.Join(outside, "secret.txt")), "secret.txt"} {
		r := fsCall(t, nil, `{}`, "read", path)
		mustFail(t, r, wasm.CodeExit, "exited with code 1")
		if strings.Contains(r.Text(), "secret") && !strings.Contains(r.Text(), "secret.txt") {
			t.Errorf("read %s: %s", path, r.Text())
		}
	}
	mustFail(t, fsCall(t, nil, `{}`, "ls", "/"), wasm.CodeExit)
}

func TestReadOnlyDir(t *testing.T) {
	mount, _ := tree(t)
	opts := []wasm.Option{wasm.WithDir("/data", mount)}
	if got := mustSucceed(t, fsCall(t, opts, `{}`, "read", "/data/in.txt")); got != "inside" {
		t.Errorf("read = %q", got)
	}
	if got := mustSucceed(t, fsCall(t, opts, `{}`, "read", "/data/sub/../sub/deep.txt")); got != "deeper" {
		t.Errorf("read = %q", got)
	}
	if got := mustSucceed(t, fsCall(t, opts, `{}`, "ls", "/data")); got != "in.txt\nsub" {
		t.Errorf("ls = %q", got)
	}
	mustFail(t, fsCall(t, opts, `{"v":"new"}`, "write", "/data/out.txt"), wasm.CodeExit, "Read-only file system")
	mustFail(t, fsCall(t, opts, `{"v":"new"}`, "write", "/data/in.txt"), wasm.CodeExit, "Read-only file system")
	mustFail(t, fsCall(t, opts, `{}`, "remove", "/data/in.txt"), wasm.CodeExit, "Read-only file system")
	mustFail(t, fsCall(t, opts, `{}`, "symlink", "in.txt", "/data/link"), wasm.CodeExit, "Read-only file system")
	if _, err := os.Stat(filepath.Join(mount, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt was created: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(mount, "in.txt")); string(b) != "inside" {
		t.Errorf("in.txt holds %q", b)
	}
}

func TestWritableDir(t *testing.T) {
	mount, _ := tree(t)
	opts := []wasm.Option{wasm.WithWritableDir("/work", mount)}
	mustSucceed(t, fsCall(t, opts, `{"made":true}`, "write", "/work/sub/out.json"))
	if b, err := os.ReadFile(filepath.Join(mount, "sub", "out.json")); err != nil || string(b) != `{"made":true}` {
		t.Errorf("out.json: %q, %v", b, err)
	}
	mustSucceed(t, fsCall(t, opts, `{}`, "remove", "/work/in.txt"))
	if _, err := os.Stat(filepath.Join(mount, "in.txt")); !os.IsNotExist(err) {
		t.Errorf("in.txt was not removed: %v", err)
	}
	// A link that stays inside the mount is allowed, and followed.
	mustSucceed(t, fsCall(t, opts, `{}`, "symlink", "sub/deep.txt", "/work/link"))
	if got := mustSucceed(t, fsCall(t, opts, `{}`, "read", "/work/link")); got != "deeper" {
		t.Errorf("read through the link = %q", got)
	}
}

func TestMountsDoNotLeadOutside(t *testing.T) {
	mount, outside := tree(t)
	// Links the host left in the mounted directory.
	if err := os.Symlink(outside, filepath.Join(mount, "abs")); err != nil {
		t.Skipf("cannot make symbolic links here: %v", err)
	}
	if err := os.Symlink(filepath.Join("..", "outside"), filepath.Join(mount, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("sub", "deep.txt"), filepath.Join(mount, "inner")); err != nil {
		t.Fatal(err)
	}
	for _, writable := range []bool{false, true} {
		opts := []wasm.Option{wasm.WithDir("/data", mount)}
		if writable {
			opts = []wasm.Option{wasm.WithWritableDir("/data", mount)}
		}
		for _, path := range []string{"/data/abs/secret.txt", "/data/rel/secret.txt", "/data/../outside/secret.txt", "/outside/secret.txt"} {
			r := fsCall(t, opts, `{}`, "read", path)
			mustFail(t, r, wasm.CodeExit, "exited with code 1")
			if out := outcome(t, r); out.Stdout != "" {
				t.Errorf("writable %v: read %s gave %q", writable, path, out.Stdout)
			}
		}
		mustFail(t, fsCall(t, opts, `{}`, "ls", "/data/rel"), wasm.CodeExit)
		mustFail(t, fsCall(t, opts, `{}`, "write", "/data/rel/planted.txt"), wasm.CodeExit)
		if got := mustSucceed(t, fsCall(t, opts, `{}`, "read", "/data/inner")); got != "deeper" {
			t.Errorf("a link inside the mount: %q", got)
		}
	}
	// The program cannot make a link that leads out.
	opts := []wasm.Option{wasm.WithWritableDir("/data", mount)}
	for _, target := range []string{"../outside", "sub/../../outside", "/etc", outside} {
		mustFail(t, fsCall(t, opts, `{}`, "symlink", target, "/data/escape"), wasm.CodeExit, "Operation not permitted")
	}
	if _, err := os.Lstat(filepath.Join(mount, "escape")); !os.IsNotExist(err) {
		t.Errorf("the escaping link was made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); !os.IsNotExist(err) {
		t.Errorf("a file was planted outside: %v", err)
	}
}

func TestMountAtRootAndSeveralMounts(t *testing.T) {
	mount, _ := tree(t)
	if got := mustSucceed(t, fsCall(t, []wasm.Option{wasm.WithDir("/", mount)}, `{}`, "read", "/sub/deep.txt")); got != "deeper" {
		t.Errorf("read = %q", got)
	}
	out := t.TempDir()
	opts := []wasm.Option{wasm.WithDir("/in", mount), wasm.WithWritableDir("/out", out)}
	mustSucceed(t, fsCall(t, opts, `{"k":1}`, "write", "/out/copy.json"))
	mustFail(t, fsCall(t, opts, `{"k":1}`, "write", "/in/copy.json"), wasm.CodeExit, "Read-only file system")
	if got := mustSucceed(t, fsCall(t, opts, `{}`, "read", "/in/in.txt")); got != "inside" {
		t.Errorf("read = %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(out, "copy.json")); err != nil || string(b) != `{"k":1}` {
		t.Errorf("copy.json: %q, %v", b, err)
	}
}

// TestFIFOInAMountDoesNotBlock: opening a FIFO the host left in a mounted
// directory would wait for a writer in a host call, beyond the reach of
// the time limit and of Close; the open is refused instead.
func TestFIFOInAMountDoesNotBlock(t *testing.T) {
	mount, _ := tree(t)
	fifo := filepath.Join(mount, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	tl := progTool(t, []string{"read", "/data/fifo"}, wasm.WithDir("/data", mount), wasm.WithTimeout(time.Second))
	done := make(chan tool.Result, 1)
	go func() { done <- run(context.Background(), tl, `{}`) }()
	select {
	case r := <-done:
		mustFail(t, r, wasm.CodeExit, "Not supported")
	case <-time.After(20 * time.Second):
		// Release the blocked open, so that the goroutine ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_ = f.Close()
		}
		<-done
		t.Fatal("the call outlived its time limit of 1s, blocked opening a FIFO")
	}
}
