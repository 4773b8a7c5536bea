package workspace_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/workspace"
)

// Paths, patterns and IDs from a call are quoted in errors by a bounded
// prefix, never in full.
func TestErrorsQuoteABoundedPrefix(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"nb.ipynb": notebookJSON, "a.txt": "a\n"})
	ws, err := workspace.New(dir)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ws.Close()) })

	huge := strings.Repeat("x", 100_000)
	calls := []struct {
		name string
		args args
		want string
	}{
		{workspace.ReadFileName, args{"path": huge}, `"` + strings.Repeat("x", 200) + `…" cannot be accessed`},
		{workspace.ReadFileName, args{"path": "/" + huge}, `path "/` + strings.Repeat("x", 199) + `…" is outside the workspace`},
		{workspace.ReadFileName, args{"path": "../" + huge}, `is outside the workspace: it climbs out`},
		{workspace.EditFileName, args{"path": "a.txt", "old_string": "zzz", "new_string": huge}, `old_string occurs 0 times in "a.txt"`},
		{workspace.ListFilesName, args{"pattern": "/" + huge}, `pattern "/` + strings.Repeat("x", 199) + `…" is absolute`},
		{workspace.GrepName, args{"pattern": "(" + huge}, "missing closing ): `(" + strings.Repeat("x", 199) + "…`"},
		{workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_id": huge, "new_source": "x"}, `cell_id "` + strings.Repeat("x", 64) + `…" matches no cell`},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			r := fail(t, ws, c.name, c.args)
			assert.Contains(t, r.Text(), c.want)
			assert.Less(t, len(r.Text()), 2000, "the error repeats the input: %.300s", r.Text())
		})
	}
}
