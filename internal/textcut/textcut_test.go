package textcut

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPrefix(t *testing.T) {
	assert.Equal(t, "abc", Prefix("abc", 3))
	assert.Equal(t, "ab", Prefix("abc", 2))
	assert.Equal(t, "", Prefix("abc", 0))
	assert.Equal(t, "", Prefix("abc", -1))
	assert.Equal(t, "a", Prefix("aé", 2), "é is two bytes: it is not split")
	assert.Equal(t, "aé", Prefix("aéb", 3))
	assert.Equal(t, "", Prefix("日本", 2))
}

func TestClip(t *testing.T) {
	assert.Equal(t, "abc", Clip("abc", 3, "..."))
	assert.Equal(t, "ab...", Clip("abcd", 2, "..."))
	assert.Equal(t, "a [cut]", Clip("aé", 2, " [cut]"))
}

func TestClipArgsClipsTheStringsOnly(t *testing.T) {
	type named string
	args := []any{"abcdef", 42, named("abcdef"), "ab"}
	ClipArgs(args, 3, "…")
	assert.Equal(t, []any{"abc…", 42, named("abcdef"), "ab"}, args)
}

func FuzzPrefix(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Add("日本語", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		p := Prefix(s, n)
		if len(p) > max(n, 0) && len(p) != len(s) {
			t.Fatalf("Prefix(%q, %d) = %q: too long", s, n, p)
		}
		if s[:len(p)] != p {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix", s, n, p)
		}
		if utf8.ValidString(s) && !utf8.ValidString(p) {
			t.Fatalf("Prefix(%q, %d) = %q: splits a rune", s, n, p)
		}
	})
}
