//go:build unix

package workspace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/workspace"
)

// notebookJSON is a small nbformat 4.5 notebook.
const notebookJSON = `{"cells":[{"cell_type":"code","execution_count":null,"id":"a","metadata":{},"outputs":[],"source":"print(1)"}],` +
	`"metadata":{},"nbformat":4,"nbformat_minor":5}` + "\n"

// A hard link in the workspace to a file outside it does not let a write
// reach that file: a file with more than one link is not written, by any
// of the tools, through its own name or a symbolic link to it.
func TestWritesRefuseHardLinksToFilesOutside(t *testing.T) {
	parent := t.TempDir()
	dir, outside := filepath.Join(parent, "ws"), filepath.Join(parent, "outside")
	put(t, dir, map[string]string{"notes.txt": "inside\n"})
	put(t, outside, map[string]string{"secret.txt": secret, "nb.ipynb": notebookJSON})
	for link, target := range map[string]string{"linked.txt": "secret.txt", "linked.ipynb": "nb.ipynb"} {
		if err := os.Link(filepath.Join(outside, target), filepath.Join(dir, link)); err != nil {
			t.Skipf("hard links are not available: %v", err)
		}
	}
	if err := os.Symlink("linked.txt", filepath.Join(dir, "via-symlink.txt")); err != nil {
		t.Skipf("symbolic links are not available: %v", err)
	}
	ws, err := workspace.New(dir)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ws.Close()) })

	calls := []struct {
		name string
		args args
	}{
		{workspace.WriteFileName, args{"path": "linked.txt", "content": "pwned\n"}},
		{workspace.WriteFileName, args{"path": "via-symlink.txt", "content": "pwned\n"}},
		{workspace.EditFileName, args{"path": "linked.txt", "old_string": "top", "new_string": "pwned"}},
		{workspace.EditFileName, args{"path": "via-symlink.txt", "old_string": "top", "new_string": "pwned"}},
		{workspace.NotebookEditName, args{"path": "linked.ipynb", "cell_number": 0, "new_source": "pwned"}},
	}
	for _, c := range calls {
		t.Run(c.name+" "+c.args["path"].(string), func(t *testing.T) {
			r := fail(t, ws, c.name, c.args)
			assert.ErrorIs(t, r.Err, workspace.ErrHardLinked)
			assert.Contains(t, r.Text(), "is not written: it has 2 hard links, and its other names may lie outside the workspace")
			assert.Equal(t, secret, read(t, outside, "secret.txt"))
			assert.Equal(t, notebookJSON, read(t, outside, "nb.ipynb"))
		})
	}
	// Reading is not writing; a file with one name is written as before.
	assert.Contains(t, succeed(t, ws, workspace.ReadFileName, args{"path": "linked.txt"}), "top secret")
	succeed(t, ws, workspace.WriteFileName, args{"path": "notes.txt", "content": "still fine\n"})
	assert.Equal(t, "still fine\n", read(t, dir, "notes.txt"))
}
