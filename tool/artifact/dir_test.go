package artifact_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-go/trellis/tool/artifact"
)

func newDir(t *testing.T, root string, opts ...artifact.Option) *artifact.Dir {
	t.Helper()
	d, err := artifact.NewDir(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// files lists the regular files and links under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDirKeepsEverythingInsideTheRoot(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "a", "b", "root")
	d := newDir(t, root)
	for _, c := range badNames {
		if _, err := d.Save(ctx, thread, c.name, artifact.Artifact{Data: []byte("x")}); !errors.Is(err, artifact.ErrInvalidName) {
			t.Errorf("save %q: %v", c.name, err)
		}
	}
	// Scopes are the application's, not checked: whatever they hold
	// stays one folder deep each, and distinct.
	hostile := []artifact.Scope{
		{App: "..", User: "../..", Thread: "../../../escape"},
		{App: "/etc", User: `C:\Windows`, Thread: "/"},
		{App: "%2E.", User: "%2E%2E%2F%2E%2E", Thread: "."},
		{App: ".", User: ".", Thread: ".."},
		{App: "APP", User: "Ada"}, {App: "app", User: "ada"},
		{App: "", User: "_"}, {App: "_", User: ""},
		{App: strings.Repeat("../", 100), User: "u", Thread: "t"},
	}
	for i, s := range hostile {
		save(t, d, s, "f.txt", fmt.Sprint("scope ", i))
	}
	for i, s := range hostile {
		if got := load(t, d, s, "f.txt", 0); got != fmt.Sprint("scope ", i) {
			t.Errorf("scope %+v holds %q, want scope %d", s, got, i)
		}
	}
	if got := files(t, base); len(got) != len(hostile) {
		t.Fatalf("files under the base: %v", got)
	} else {
		for _, f := range got {
			if !strings.HasPrefix(f, "a/b/root/") {
				t.Errorf("a file outside the root: %s", f)
			}
		}
	}
}

// version writes the bytes of a version file for name.
func versionFile(name, data string) []byte {
	return fmt.Appendf(nil, "trellis-artifact 1\n{\"name\":%q,\"media_type\":\"text/plain\",\"size\":%d,\"saved\":\"2025-01-01T00:00:00Z\"}\n%s", name, len(data), data)
}

func TestDirRefusesSymlinksOut(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	root := t.TempDir()
	d := newDir(t, root)
	// A folder of the layout replaced by a link out of the root.
	if err := os.MkdirAll(filepath.Join(root, "app", "ada", "thread"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "app", "ada", "thread", "t1")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Save(ctx, thread, "x.txt", artifact.Artifact{Data: []byte("x")}); err == nil {
		t.Error("save through a link out of the root succeeded")
	}
	if _, err := d.List(ctx, thread); err == nil {
		t.Error("list through a link out of the root succeeded")
	}
	if got := files(t, outside); len(got) != 0 {
		t.Fatalf("the store wrote outside its root: %v", got)
	}

	// A version file that links to a file outside, which looks like one
	// of the store's.
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, versionFile("s.txt", "top secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	t2 := artifact.Scope{App: "app", User: "ada", Thread: "t2"}
	dir := filepath.Join(root, "app", "ada", "thread", "t2", "s.txt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "1")); err != nil {
		t.Fatal(err)
	}
	if a, err := d.Load(ctx, t2, "s.txt", 0); err == nil || strings.Contains(string(a.Data), "secret") {
		t.Errorf("load through a link out of the root: %q, %v", a.Data, err)
	}
	if infos, _ := d.List(ctx, t2); len(infos) != 0 {
		t.Errorf("list shows a link out of the root: %+v", infos)
	}

	// A link to another user's version, inside the root: not followed
	// either.
	bob := artifact.Scope{App: "app", User: "bob", Thread: "t1"}
	save(t, d, bob, "b.txt", "bob's")
	mine := filepath.Join(root, "app", "ada", "thread", "t3", "b.txt")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "..", "..", "bob", "thread", "t1", "b.txt", "1"), filepath.Join(mine, "1")); err != nil {
		t.Fatal(err)
	}
	if a, err := d.Load(ctx, artifact.Scope{App: "app", User: "ada", Thread: "t3"}, "b.txt", 0); err == nil {
		t.Errorf("load through a link to another user's artifact: %q", a.Data)
	}
}

func TestDirReopens(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	save(t, d, thread, "a.txt", "one")
	save(t, d, thread, "a.txt", "two")
	save(t, d, thread, "user:u.txt", "user")
	long := strings.Repeat("x", artifact.MaxNameLength)
	save(t, d, thread, long, "long")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	again := newDir(t, root)
	if got := load(t, again, thread, "a.txt", 1); got != "one" {
		t.Errorf("version 1 after reopening: %q", got)
	}
	if v := save(t, again, thread, "a.txt", "three"); v != 3 {
		t.Errorf("save after reopening gave version %d, want 3", v)
	}
	if got, want := names(t, again, thread), []string{"a.txt@3", "user:u.txt@1", long + "@1"}; !slices.Equal(got, want) {
		t.Errorf("list after reopening = %v, want %v", got, want)
	}
}

// Two stores on one folder stand for two processes: they share no lock.
func TestDirStoresSharingARootGetDistinctVersions(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	stores := []*artifact.Dir{newDir(t, root), newDir(t, root), newDir(t, root)}
	const each = 8
	var wg sync.WaitGroup
	versions := make(chan int, len(stores)*each)
	for _, s := range stores {
		wg.Go(func() {
			for range each {
				v, err := s.Save(ctx, thread, "shared.txt", artifact.Artifact{Data: []byte("x")})
				if err != nil {
					t.Error(err)
					return
				}
				versions <- v
			}
		})
	}
	wg.Wait()
	close(versions)
	got := slices.Sorted(func(yield func(int) bool) {
		for v := range versions {
			if !yield(v) {
				return
			}
		}
	})
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("versions = %v, want 1 to %d once each", got, len(stores)*each)
		}
	}
	// No temporary file is left behind.
	for _, f := range files(t, root) {
		if strings.Contains(f, ".tmp-") {
			t.Errorf("left behind: %s", f)
		}
	}
}

func TestDirSkipsWhatIsNotItsOwn(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := newDir(t, root)
	save(t, d, thread, "a.txt", "a")
	scope := filepath.Join(root, "app", "ada", "thread", "t1")
	write := func(rel string, data []byte) {
		t.Helper()
		p := filepath.Join(scope, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt/.tmp-crashed", []byte("half"))
	write("a.txt/01", versionFile("a.txt", "leading zero"))
	write("a.txt/notes", []byte("junk"))
	write("stray-file", []byte("junk"))
	write("empty/README", []byte("no versions"))
	write("misplaced/1", versionFile("elsewhere.txt", "x")) // a folder that is not its name's
	write("bad%2Fname/1", versionFile("bad/name", "x"))
	if got := names(t, d, thread); !slices.Equal(got, []string{"a.txt@1"}) {
		t.Errorf("list = %v", got)
	}
	if v := save(t, d, thread, "a.txt", "b"); v != 2 {
		t.Errorf("next version = %d, want 2", v)
	}

	// A version file that is damaged is an error, not content.
	write("a.txt/2", []byte("garbage"))
	if _, err := d.Load(ctx, thread, "a.txt", 2); err == nil || !strings.Contains(err.Error(), "not an artifact version file") {
		t.Errorf("garbage version: %v", err)
	}
	whole := versionFile("a.txt", "cut")
	write("a.txt/2", whole[:len(whole)-1])
	if _, err := d.Load(ctx, thread, "a.txt", 2); err == nil || !strings.Contains(err.Error(), "header says") {
		t.Errorf("cut version: %v", err)
	}
	if _, err := d.Versions(ctx, thread, "a.txt"); err != nil {
		t.Errorf("versions with a cut data part (the header is whole): %v", err)
	}
	write("a.txt/2", versionFile("other.txt", "x"))
	if _, err := d.Load(ctx, thread, "a.txt", 2); err == nil || !strings.Contains(err.Error(), `holds artifact "other.txt"`) {
		t.Errorf("another artifact's version: %v", err)
	}
}

func TestNewDirErrors(t *testing.T) {
	if _, err := artifact.NewDir(""); err == nil {
		t.Error("NewDir with an empty root succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := artifact.NewDir(file); err == nil {
		t.Error("NewDir on a file succeeded")
	}
}
