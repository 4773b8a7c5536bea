package workspace_test

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/workspace"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"**", "a", true},
		{"**", "a/b/c", true},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/main.go", true},
		{"**/*.go", "a/b/main.go/x", false},
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", false},
		{"a/**", "a/b", true},
		{"a/**", "a/b/c", true},
		{"a/**", "a", true}, // ** matches no segment too
		{"a/**", "b/a", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"**/b/**", "x/b/y", true},
		{"**/b/**", "x/c/y", false},
		{"a/**/**/b", "a/b", true},
		{"a/**b", "a/xb", true}, // ** inside a segment is path.Match's *
		{"a/**b", "a/x/b", false},
		{"?.txt", "a.txt", true},
		{"?.txt", "ab.txt", false},
		{"[a-c]/*", "b/x", true},
		{"[a-c]/*", "d/x", false},
		{`\*.txt`, "*.txt", true},
		{`\*.txt`, "a.txt", false},
		{"./src//*.go", "src/main.go", true},
		{"*", ".hidden", true},
		{"src/", "src/a/b.go", true}, // a trailing slash: what the directory holds
		{"./", "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.name, func(t *testing.T) {
			got, err := workspace.Match(tt.pattern, tt.name)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	for _, bad := range []string{"[", "a/[b-", `x\`, "/abs/*", "../x", "a/../../b", "", "."} {
		ok, err := workspace.Match(bad, "a")
		assert.Error(t, err, "%q", bad)
		assert.False(t, ok)
	}
}

func FuzzGlobMatch(f *testing.F) {
	seeds := []struct{ pattern, name string }{
		{"**/*.go", "cmd/app/main.go"},
		{"a/**/b/**/c", "a/x/b/y/z/c"},
		{"**/**/**/**/**/**/**/**/x", strings.Repeat("a/", 40) + "y"},
		{"[", "a"},
		{`\`, "x"},
		{"a/../b", "b"},
		{"*/?/[!a-c]", "x/y/z"},
		{"", ""},
	}
	for _, s := range seeds {
		f.Add(s.pattern, s.name)
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got, err := workspace.Match(pattern, name)
		if err != nil {
			if got {
				t.Fatalf("Match(%q, %q) = true with error %v", pattern, name, err)
			}
			return
		}
		again, _ := workspace.Match(pattern, name)
		if again != got {
			t.Fatalf("Match(%q, %q) is not deterministic", pattern, name)
		}
		// "**/" in front matches the name at any depth, the name itself
		// included.
		if got {
			if deeper, err := workspace.Match("**/"+pattern, "d/"+name); err != nil || !deeper {
				t.Fatalf("Match(%q, %q) but not with **/ in front of a deeper name (%v)", pattern, name, err)
			}
		}
		// Without ** and the syntax path.Match gives another meaning to
		// (a class may match "/"), a pattern means what path.Match says.
		if !strings.Contains(pattern, "**") && !strings.ContainsAny(pattern, "[\\") && path.Clean(pattern) == pattern &&
			pattern != "." && !strings.HasPrefix(pattern, "/") && !strings.Contains(pattern, "..") {
			want, perr := path.Match(pattern, name)
			if perr == nil && want != got {
				t.Fatalf("Match(%q, %q) = %v, path.Match says %v", pattern, name, got, want)
			}
		}
	})
}
