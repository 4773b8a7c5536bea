package artifact_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-go/trellis/tool/artifact"
)

// kinds are the stores every test of this file runs on.
var kinds = []struct {
	name string
	make func(t *testing.T, opts ...artifact.Option) artifact.Store
}{
	{"memory", func(t *testing.T, opts ...artifact.Option) artifact.Store { return artifact.NewMemory(opts...) }},
	{"dir", func(t *testing.T, opts ...artifact.Option) artifact.Store {
		d, err := artifact.NewDir(t.TempDir(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return d
	}},
}

// each runs fn once for every kind of store.
func each(t *testing.T, fn func(t *testing.T, mk func(...artifact.Option) artifact.Store)) {
	t.Helper()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			fn(t, func(opts ...artifact.Option) artifact.Store { return k.make(t, opts...) })
		})
	}
}

var thread = artifact.Scope{App: "app", User: "ada", Thread: "t1"}

func save(t *testing.T, s artifact.Store, scope artifact.Scope, name, data string) int {
	t.Helper()
	v, err := s.Save(context.Background(), scope, name, artifact.Artifact{Data: []byte(data), MediaType: "text/plain"})
	if err != nil {
		t.Fatalf("save %q: %v", name, err)
	}
	return v
}

func load(t *testing.T, s artifact.Store, scope artifact.Scope, name string, version int) string {
	t.Helper()
	a, err := s.Load(context.Background(), scope, name, version)
	if err != nil {
		t.Fatalf("load %q v%d: %v", name, version, err)
	}
	return string(a.Data)
}

func names(t *testing.T, s artifact.Store, scope artifact.Scope) []string {
	t.Helper()
	infos, err := s.List(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, fmt.Sprintf("%s@%d", in.Name, in.Version))
	}
	return out
}

func TestStoreVersions(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		s := mk(artifact.WithClock(func() time.Time { now = now.Add(time.Minute); return now }))
		for i, want := range []int{1, 2, 3} {
			if v := save(t, s, thread, "report.md", strings.Repeat("x", i+1)); v != want {
				t.Fatalf("save %d gave version %d, want %d", i, v, want)
			}
		}
		if got := load(t, s, thread, "report.md", 0); got != "xxx" {
			t.Errorf("latest = %q, want xxx", got)
		}
		if got := load(t, s, thread, "report.md", 2); got != "xx" {
			t.Errorf("version 2 = %q, want xx", got)
		}
		vs, err := s.Versions(ctx, thread, "report.md")
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 3 {
			t.Fatalf("versions = %+v", vs)
		}
		for i, v := range vs {
			if v.Version != i+1 || v.Size != int64(i+1) || v.Name != "report.md" || v.MediaType != "text/plain" {
				t.Errorf("version %d = %+v", i+1, v)
			}
			if want := time.Date(2025, 3, 1, 12, i+1, 0, 0, time.UTC); !v.Saved.Equal(want) {
				t.Errorf("version %d saved %v, want %v", i+1, v.Saved, want)
			}
		}
		infos, err := s.List(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 1 || infos[0].Version != 3 || infos[0].Size != 3 || infos[0].MediaType != "text/plain" {
			t.Errorf("list = %+v", infos)
		}

		_, err = s.Load(ctx, thread, "report.md", 4)
		if !errors.Is(err, artifact.ErrNotFound) || !strings.Contains(err.Error(), "latest is 3") {
			t.Errorf("load of version 4: %v", err)
		}
		if _, err := s.Load(ctx, thread, "report.md", -1); !errors.Is(err, artifact.ErrInvalidArtifact) {
			t.Errorf("load of version -1: %v", err)
		}
		if _, err := s.Load(ctx, thread, "missing.md", 0); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("load of a missing artifact: %v", err)
		}
		if _, err := s.Versions(ctx, thread, "missing.md"); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("versions of a missing artifact: %v", err)
		}

		if err := s.Delete(ctx, thread, "report.md"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, thread, "report.md"); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if _, err := s.Load(ctx, thread, "report.md", 0); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("load after delete: %v", err)
		}
		if got := names(t, s, thread); len(got) != 0 {
			t.Errorf("list after delete = %v", got)
		}
		if v := save(t, s, thread, "report.md", "again"); v != 1 {
			t.Errorf("save after delete gave version %d, want 1", v)
		}
	})
}

func TestStoreKeepsCopies(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk()
		a := artifact.Artifact{Data: []byte("abc"), MediaType: "text/plain", Metadata: map[string]string{"by": "tool"}}
		if _, err := s.Save(ctx, thread, "a.txt", a); err != nil {
			t.Fatal(err)
		}
		a.Data[0], a.Metadata["by"] = 'X', "changed"
		got, err := s.Load(ctx, thread, "a.txt", 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Data) != "abc" || got.Metadata["by"] != "tool" {
			t.Fatalf("the store kept the caller's slices: %+v", got)
		}
		got.Data[0], got.Metadata["by"] = 'Y', "changed"
		again, err := s.Load(ctx, thread, "a.txt", 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(again.Data) != "abc" || again.Metadata["by"] != "tool" {
			t.Fatalf("Load handed out the store's slices: %+v", again)
		}
		if _, err := s.Save(ctx, thread, "empty.txt", artifact.Artifact{MediaType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
		if e, err := s.Load(ctx, thread, "empty.txt", 0); err != nil || len(e.Data) != 0 {
			t.Fatalf("empty artifact: %+v, %v", e, err)
		}
	})
}

func TestStoreScopes(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk()
		ada1 := artifact.Scope{App: "app", User: "ada", Thread: "t1"}
		ada2 := artifact.Scope{App: "app", User: "ada", Thread: "t2"}
		bob1 := artifact.Scope{App: "app", User: "bob", Thread: "t1"}
		other := artifact.Scope{App: "other", User: "ada", Thread: "t1"}
		adaUser := ada1.UserScope()

		save(t, s, ada1, "notes.txt", "ada t1")
		save(t, s, ada2, "notes.txt", "ada t2")
		save(t, s, bob1, "notes.txt", "bob t1")
		save(t, s, other, "notes.txt", "other app")
		save(t, s, ada1, "user:profile.txt", "ada's profile")
		save(t, s, bob1, "user:profile.txt", "bob's profile")
		save(t, s, adaUser, "loose.txt", "ada, no thread")
		// The same user name written from the second thread adds a version.
		if v := save(t, s, ada2, "user:profile.txt", "ada's profile, v2"); v != 2 {
			t.Errorf("user artifact saved from another thread got version %d, want 2", v)
		}

		for _, c := range []struct {
			scope artifact.Scope
			name  string
			want  string
		}{
			{ada1, "notes.txt", "ada t1"},
			{ada2, "notes.txt", "ada t2"},
			{bob1, "notes.txt", "bob t1"},
			{other, "notes.txt", "other app"},
			{ada1, "user:profile.txt", "ada's profile, v2"},
			{ada2, "user:profile.txt", "ada's profile, v2"},
			{adaUser, "user:profile.txt", "ada's profile, v2"},
			{bob1, "user:profile.txt", "bob's profile"},
			{adaUser, "loose.txt", "ada, no thread"},
		} {
			if got := load(t, s, c.scope, c.name, 0); got != c.want {
				t.Errorf("%v: %q = %q, want %q", c.scope, c.name, got, c.want)
			}
		}
		for _, c := range []struct {
			scope artifact.Scope
			name  string
		}{
			{other, "user:profile.txt"},
			{artifact.Scope{App: "app", User: "carol", Thread: "t1"}, "notes.txt"},
			{adaUser, "notes.txt"}, // a thread's artifact is not the user's
			{ada1, "loose.txt"},    // nor is a plain name of the user's scope reachable from a thread
		} {
			if _, err := s.Load(ctx, c.scope, c.name, 0); !errors.Is(err, artifact.ErrNotFound) {
				t.Errorf("%v: %q: %v, want not found", c.scope, c.name, err)
			}
		}
		// List shows exactly what Load reaches.
		if got, want := names(t, s, ada1), []string{"notes.txt@1", "user:profile.txt@2"}; !slices.Equal(got, want) {
			t.Errorf("list ada t1 = %v, want %v", got, want)
		}
		if got, want := names(t, s, bob1), []string{"notes.txt@1", "user:profile.txt@1"}; !slices.Equal(got, want) {
			t.Errorf("list bob t1 = %v, want %v", got, want)
		}
		if got, want := names(t, s, adaUser), []string{"loose.txt@1", "user:profile.txt@2"}; !slices.Equal(got, want) {
			t.Errorf("list ada's own scope = %v, want %v", got, want)
		}
		if got, want := names(t, s, other), []string{"notes.txt@1"}; !slices.Equal(got, want) {
			t.Errorf("list other app = %v, want %v", got, want)
		}
		// Deleting from one thread leaves the others.
		if err := s.Delete(ctx, ada1, "notes.txt"); err != nil {
			t.Fatal(err)
		}
		if got := load(t, s, ada2, "notes.txt", 0); got != "ada t2" {
			t.Errorf("ada t2 after deleting in t1: %q", got)
		}
		if got := load(t, s, bob1, "notes.txt", 0); got != "bob t1" {
			t.Errorf("bob t1 after deleting ada's: %q", got)
		}
	})
}

// badNames break the rules of CheckName; each names the words its error
// must hold.
var badNames = []struct{ name, why string }{
	{"", "empty"},
	{"../secret", "'/'"},
	{"a/b.txt", "'/'"},
	{"/etc/passwd", "'/'"},
	{`C:\x.txt`, `'\'`},
	{`..\..\x`, `'\'`},
	{"..", `".."`},
	{"a..b", `".."`},
	{".", `"." is not a name`},
	{"user:", "nothing follows"},
	{"user:../x", "'/'"},
	{"user:..", `".."`},
	{" padded", "spaces"},
	{"padded ", "spaces"},
	{"tab\there", "control"},
	{"nul\x00", "control"},
	{"bad\xffutf8", "UTF-8"},
	{strings.Repeat("a", artifact.MaxNameLength+1), "201 bytes"},
}

func TestStoreRefusesBadNames(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk()
		for _, c := range badNames {
			_, err := s.Save(ctx, thread, c.name, artifact.Artifact{Data: []byte("x")})
			if !errors.Is(err, artifact.ErrInvalidName) || !strings.Contains(err.Error(), c.why) {
				t.Errorf("save %q: %v, want an invalid name error that says %s", c.name, err, c.why)
			}
			if _, err := s.Load(ctx, thread, c.name, 0); !errors.Is(err, artifact.ErrInvalidName) {
				t.Errorf("load %q: %v", c.name, err)
			}
			if _, err := s.Versions(ctx, thread, c.name); !errors.Is(err, artifact.ErrInvalidName) {
				t.Errorf("versions %q: %v", c.name, err)
			}
			if err := s.Delete(ctx, thread, c.name); !errors.Is(err, artifact.ErrInvalidName) {
				t.Errorf("delete %q: %v", c.name, err)
			}
		}
		if got := names(t, s, thread); len(got) != 0 {
			t.Errorf("bad names left artifacts: %v", got)
		}
	})
}

func TestStoreAcceptsNames(t *testing.T) {
	good := []string{
		"report.md", "Report.MD", "report.md.", "my report (final).pdf", "日本語のレポート.txt", "a:b", ".hidden",
		"user:x", "user:user:x", "~tilde", "%41", "_", "-",
		strings.Repeat("長", artifact.MaxNameLength/3), strings.Repeat("a", artifact.MaxNameLength),
	}
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		s := mk()
		for _, n := range good {
			if err := artifact.CheckName(n); err != nil {
				t.Errorf("CheckName(%q): %v", n, err)
			}
			save(t, s, thread, n, "data of "+n)
		}
		for _, n := range good {
			if got := load(t, s, thread, n, 0); got != "data of "+n {
				t.Errorf("%q holds %q", n, got)
			}
		}
		// Names that differ in case alone, or that escaping could
		// confuse, are distinct artifacts.
		sorted := slices.Sorted(slices.Values(good))
		var want []string
		for _, n := range sorted {
			want = append(want, n+"@1")
		}
		if got := names(t, s, thread); !slices.Equal(got, want) {
			t.Errorf("list = %v, want %v", got, want)
		}
	})
}

func TestStoreSizeLimits(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk(artifact.WithMaxSize(10))
		if _, err := s.Save(ctx, thread, "fits.bin", artifact.Artifact{Data: make([]byte, 10)}); err != nil {
			t.Fatalf("10 bytes in a 10-byte store: %v", err)
		}
		_, err := s.Save(ctx, thread, "big.bin", artifact.Artifact{Data: make([]byte, 11)})
		if !errors.Is(err, artifact.ErrTooLarge) || !strings.Contains(err.Error(), "11 bytes") || !strings.Contains(err.Error(), "limit of 10") {
			t.Errorf("11 bytes in a 10-byte store: %v", err)
		}
		meta := map[string]string{"k": strings.Repeat("v", artifact.MaxMetadataSize)}
		if _, err := s.Save(ctx, thread, "meta.bin", artifact.Artifact{Metadata: meta}); !errors.Is(err, artifact.ErrTooLarge) {
			t.Errorf("oversized metadata: %v", err)
		}
		if got := names(t, s, thread); !slices.Equal(got, []string{"fits.bin@1"}) {
			t.Errorf("list = %v", got)
		}
		unlimited := mk(artifact.WithMaxSize(0))
		if _, err := unlimited.Save(ctx, thread, "big.bin", artifact.Artifact{Data: make([]byte, artifact.DefaultMaxSize+1)}); err != nil {
			t.Errorf("a store without a limit: %v", err)
		}
		if _, err := mk().Save(ctx, thread, "big.bin", artifact.Artifact{Data: make([]byte, artifact.DefaultMaxSize+1)}); !errors.Is(err, artifact.ErrTooLarge) {
			t.Errorf("the default limit: %v", err)
		}
	})
}

var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestStoreMediaTypes(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk()
		for _, c := range []struct {
			name, given, want string
			data              []byte
		}{
			{"chart.png", "", "image/png", []byte("whatever")},
			{"user:data.json", "", "application/json", []byte("{}")},
			{"noext", "", "image/png", pngHeader},
			{"noext-text", "", "text/plain; charset=utf-8", []byte("hello")},
			{"table.csv", " text/csv ", "text/csv", []byte("a,b")},
		} {
			if _, err := s.Save(ctx, thread, c.name, artifact.Artifact{Data: c.data, MediaType: c.given}); err != nil {
				t.Fatal(err)
			}
			a, err := s.Load(ctx, thread, c.name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if a.MediaType != c.want {
				t.Errorf("%q saved as %q has type %q, want %q", c.name, c.given, a.MediaType, c.want)
			}
		}
		_, err := s.Save(ctx, thread, "x.txt", artifact.Artifact{MediaType: "text/"})
		if !errors.Is(err, artifact.ErrInvalidArtifact) || !strings.Contains(err.Error(), `"text/"`) {
			t.Errorf("an invalid media type: %v", err)
		}
	})
}

func TestStoreConcurrentSaves(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk()
		const workers, each = 6, 4
		var wg sync.WaitGroup
		got := make(chan [2]int, workers*each)
		errs := make(chan error, workers*each)
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					id := w*each + i
					v, err := s.Save(ctx, thread, "log.txt", artifact.Artifact{Data: fmt.Appendf(nil, "save %d", id), MediaType: "text/plain"})
					if err != nil {
						errs <- err
						return
					}
					got <- [2]int{v, id}
					// Readers alongside the writers see whole versions.
					if _, err := s.List(ctx, thread); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(got)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		seen := map[int]int{}
		for g := range got {
			if prev, dup := seen[g[0]]; dup {
				t.Fatalf("saves %d and %d both got version %d", prev, g[1], g[0])
			}
			seen[g[0]] = g[1]
		}
		for v := 1; v <= workers*each; v++ {
			id, ok := seen[v]
			if !ok {
				t.Fatalf("no save got version %d: %v", v, seen)
			}
			if a := load(t, s, thread, "log.txt", v); a != fmt.Sprintf("save %d", id) {
				t.Errorf("version %d holds %q, saved by %d", v, a, id)
			}
		}
	})
}

func TestStoreCancelledContext(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		s := mk()
		save(t, s, thread, "a.txt", "a")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Save(ctx, thread, "b.txt", artifact.Artifact{}); !errors.Is(err, context.Canceled) {
			t.Errorf("save: %v", err)
		}
		if _, err := s.Load(ctx, thread, "a.txt", 0); !errors.Is(err, context.Canceled) {
			t.Errorf("load: %v", err)
		}
		if _, err := s.List(ctx, thread); !errors.Is(err, context.Canceled) {
			t.Errorf("list: %v", err)
		}
		if _, err := s.Versions(ctx, thread, "a.txt"); !errors.Is(err, context.Canceled) {
			t.Errorf("versions: %v", err)
		}
		if err := s.Delete(ctx, thread, "a.txt"); !errors.Is(err, context.Canceled) {
			t.Errorf("delete: %v", err)
		}
	})
}

func TestStoreBinaryRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk()
		data := make([]byte, 70000)
		for i := range data {
			data[i] = byte(i * 7)
		}
		data[0], data[1] = '\n', '\n' // newlines where the Dir's header ends
		meta := map[string]string{"line\nbreak": "and\nmore", "source": "unit test"}
		if _, err := s.Save(ctx, thread, "blob.bin", artifact.Artifact{Data: data, MediaType: "application/octet-stream", Metadata: meta}); err != nil {
			t.Fatal(err)
		}
		a, err := s.Load(ctx, thread, "blob.bin", 1)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Data, data) || a.MediaType != "application/octet-stream" || a.Metadata["line\nbreak"] != "and\nmore" || a.Metadata["source"] != "unit test" {
			t.Fatalf("round trip changed the artifact: %d bytes, %q, %v", len(a.Data), a.MediaType, a.Metadata)
		}
		vs, err := s.Versions(ctx, thread, "blob.bin")
		if err != nil || len(vs) != 1 || vs[0].Size != 70000 || vs[0].Metadata["source"] != "unit test" {
			t.Fatalf("versions = %+v, %v", vs, err)
		}
	})
}
