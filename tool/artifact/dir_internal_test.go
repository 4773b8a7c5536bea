package artifact

import (
	"strings"
	"testing"
)

func TestSegmentIsSafeAndDistinct(t *testing.T) {
	inputs := []string{
		"", "_", "%5F", "a", "A", "%41", ".", "..", "%2E", "%2E.", ".a", "a.", "a.b", "a/b", `a\b`,
		"Ünïcode", "UNICODE", "unicode", "~", "a b", "user:x", "con", "-",
		strings.Repeat("x", 120), strings.Repeat("x", 121), strings.Repeat("X", 41), strings.Repeat("Y", 41),
	}
	seen := map[string]string{}
	for _, in := range inputs {
		s := segment(in)
		if prev, dup := seen[strings.ToLower(s)]; dup {
			t.Errorf("%q and %q both escape to %q (ignoring case)", prev, in, s)
		}
		seen[strings.ToLower(s)] = in
		if s == "." || s == ".." || strings.HasPrefix(s, ".") || strings.ContainsAny(s, `/\:`) || len(s) > 120 || s == "" {
			t.Errorf("segment(%q) = %q, not a safe folder name", in, s)
		}
	}
	for in, want := range map[string]string{"report-2.md": "report-2.md", "../..": "%2E.%2F..", "": "_", "Ada": "%41da"} {
		if got := segment(in); got != want {
			t.Errorf("segment(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSegment checks that two strings never share a folder, on file
// systems that ignore case too, and that every folder name is safe.
func FuzzSegment(f *testing.F) {
	f.Add("a", "A")
	f.Add("..", "%2E.")
	f.Add("", "_")
	f.Add(strings.Repeat("x", 200), strings.Repeat("X", 200))
	f.Fuzz(func(t *testing.T, a, b string) {
		sa, sb := segment(a), segment(b)
		if a != b && strings.EqualFold(sa, sb) {
			t.Fatalf("%q and %q share the folder %q", a, b, sa)
		}
		for _, s := range []string{sa, sb} {
			if s == "" || strings.HasPrefix(s, ".") || strings.ContainsAny(s, "/\\:\x00") || len(s) > 120 {
				t.Fatalf("unsafe folder name %q", s)
			}
		}
	})
}
