package artifact

import (
	"bufio"
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
		if windowsUnsafe(s) {
			t.Errorf("segment(%q) = %q, which Windows changes or keeps for a device", in, s)
		}
	}
	for in, want := range map[string]string{"report-2.md": "report-2.md", "../..": "%2E.%2F.%2E", "": "_", "Ada": "%41da"} {
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
			if s == "" || strings.HasPrefix(s, ".") || strings.ContainsAny(s, "/\\:\x00") || len(s) > 120 || windowsUnsafe(s) {
				t.Fatalf("unsafe folder name %q", s)
			}
		}
	})
}

// windowsUnsafe reports whether Windows would take the folder name s for
// another (it drops a final '.' or space) or for a device ("CON",
// "nul.txt", "Com1", "LPT9.log"), whatever the case.
func windowsUnsafe(s string) bool {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, " ") {
		return true
	}
	base := strings.ToLower(s)
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimRight(base, " ")
	for _, dev := range []string{"con", "prn", "aux", "nul"} {
		if base == dev {
			return true
		}
	}
	for _, dev := range []string{"com", "lpt"} {
		for d := '1'; d <= '9'; d++ {
			if base == dev+string(d) {
				return true
			}
		}
	}
	return false
}

// Names that end in '.' or name a Windows device get folders of their own
// there too: "report." is not "report", "nul" is not the null device.
func TestSegmentIsSafeOnWindows(t *testing.T) {
	for _, in := range []string{"a.", "report.", "a..", "con", "nul.txt", "aux", "prn.csv", "com1", "lpt9.log", "nul.tar.gz", "con."} {
		if s := segment(in); windowsUnsafe(s) {
			t.Errorf("segment(%q) = %q, which Windows changes or keeps for a device", in, s)
		}
	}
	if segment("a.") == segment("a") || segment("con") == segment("%63on") {
		t.Error("escaped names must stay distinct")
	}
	for _, in := range []string{"console", "com10", "com", "a.b", "lpt", "nula"} {
		if s := segment(in); s != in {
			t.Errorf("segment(%q) = %q, want it kept as it is", in, s)
		}
	}
}

// A header that gives a negative size is corrupt: the data cannot be
// that long.
func TestReadHeaderRefusesANegativeSize(t *testing.T) {
	r := bufio.NewReader(strings.NewReader(magic + `{"name":"a","media_type":"text/plain","size":-1}` + "\n"))
	if _, _, err := readHeader(r, "a"); err == nil || !strings.Contains(err.Error(), "size -1") {
		t.Errorf("readHeader of a negative size: %v", err)
	}
}
