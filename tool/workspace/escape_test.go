package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/workspace"
)

// escapeFixture is a workspace next to a directory outside it, and
// symbolic links inside it that point out: leak.txt to a file, leakdir to
// the directory; inside.txt points to a file of the workspace.
type escapeFixture struct {
	ws      *workspace.Toolset
	dir     string
	outside string
}

const secret = "top secret\n"

func newEscapeFixture(t *testing.T) escapeFixture {
	t.Helper()
	parent := t.TempDir()
	dir, outside := filepath.Join(parent, "ws"), filepath.Join(parent, "outside")
	put(t, dir, map[string]string{"notes.txt": "inside\n", "sub/file.txt": "sub\n"})
	put(t, outside, map[string]string{"secret.txt": secret})
	for link, target := range map[string]string{
		"leak.txt":   filepath.Join(outside, "secret.txt"),
		"leakdir":    outside,
		"sub/up.txt": filepath.Join("..", "..", "outside", "secret.txt"), // relative, out
		"inside.txt": "notes.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Skipf("symbolic links are not available: %v", err)
		}
	}
	ws, err := workspace.New(dir)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ws.Close()) })
	return escapeFixture{ws: ws, dir: dir, outside: outside}
}

// unchanged checks that nothing outside the workspace was written.
func (f escapeFixture) unchanged(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(f.outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was created outside")
	assert.Equal(t, secret, read(t, f.outside, "secret.txt"))
	_, err = os.Stat(filepath.Join(filepath.Dir(f.dir), "x"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestPathsCannotLeaveTheWorkspace(t *testing.T) {
	f := newEscapeFixture(t)
	paths := []struct {
		path, why string
	}{
		{"../x", `it climbs out with ".."`},
		{"sub/../../x", `it climbs out with ".."`},
		{"../outside/secret.txt", `it climbs out with ".."`},
		{"/etc/passwd", "it is absolute"},
		{filepath.Join(f.outside, "secret.txt"), "it is absolute"},
		{"leak.txt", "a symbolic link on the way leads out of it"},
		{"leakdir/secret.txt", "a symbolic link on the way leads out of it"},
		{"leakdir/new.txt", "a symbolic link on the way leads out of it"},
		{"leakdir/new/deeper.txt", "a symbolic link on the way leads out of it"},
		{"sub/up.txt", "a symbolic link on the way leads out of it"},
	}
	calls := map[string]func(p string) args{
		workspace.ReadFileName:  func(p string) args { return args{"path": p} },
		workspace.WriteFileName: func(p string) args { return args{"path": p, "content": "pwned\n"} },
		workspace.EditFileName:  func(p string) args { return args{"path": p, "old_string": "top", "new_string": "no"} },
	}
	for name, mk := range calls {
		for _, tt := range paths {
			t.Run(name+" "+tt.path, func(t *testing.T) {
				r := fail(t, f.ws, name, mk(tt.path))
				assert.ErrorIs(t, r.Err, workspace.ErrOutside)
				assert.Contains(t, r.Text(), `path "`+tt.path+`" is outside the workspace: `+tt.why)
				assert.NotContains(t, r.Text(), "top secret")
				f.unchanged(t)
			})
		}
	}
}

func TestWalksDoNotFollowLinksOut(t *testing.T) {
	f := newEscapeFixture(t)

	files := succeed(t, f.ws, workspace.ListFilesName, args{"pattern": "**"})
	assert.Equal(t, "inside.txt\nnotes.txt\nsub/file.txt", files, "links out are not listed; a link to a file inside is")
	assert.Equal(t, `No files match "leakdir/**".`, succeed(t, f.ws, workspace.ListFilesName, args{"pattern": "leakdir/**"}))

	assert.Equal(t, `No matches for "secret".`, succeed(t, f.ws, workspace.GrepName, args{"pattern": "secret"}))
	assert.Equal(t, "inside.txt:1: inside\nnotes.txt:1: inside", succeed(t, f.ws, workspace.GrepName, args{"pattern": "inside"}))

	// A link that stays inside works like its target.
	assert.Equal(t, "     1\tinside", succeed(t, f.ws, workspace.ReadFileName, args{"path": "inside.txt"}))
	succeed(t, f.ws, workspace.EditFileName, args{"path": "inside.txt", "old_string": "inside", "new_string": "edited"})
	assert.Equal(t, "edited\n", read(t, f.dir, "notes.txt"))
	assert.False(t, strings.Contains(read(t, f.outside, "secret.txt"), "edited"))
	f.unchanged(t)
}
