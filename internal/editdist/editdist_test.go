package editdist

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLevenshtein(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"sitting", "kitten", 3},
		{"get_tim", "get_time", 1},
		{"flaw", "lawn", 2},
		{"same", "same", 0},
		{"é", "e", 2}, // bytes, not runes
	}
	for _, c := range cases {
		if got := Levenshtein(c.a, c.b); got != c.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func FuzzLevenshtein(f *testing.F) {
	f.Add("kitten", "sitting")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Levenshtein(a, b)
		if d != Levenshtein(b, a) {
			t.Fatalf("not symmetric for %q, %q", a, b)
		}
		if d < abs(len(a)-len(b)) || d > max(len(a), len(b)) {
			t.Fatalf("Levenshtein(%q, %q) = %d, out of bounds", a, b, d)
		}
		if (d == 0) != (a == b) {
			t.Fatalf("Levenshtein(%q, %q) = %d", a, b, d)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
