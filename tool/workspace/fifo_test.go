//go:build unix

package workspace_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/workspace"
)

func TestNamedPipesNeverBlock(t *testing.T) {
	ws, dir := open(t, map[string]string{"a.txt": "pipe? no\n"})
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range []struct {
		tool string
		a    args
		want string
	}{
		{workspace.ReadFileName, args{"path": "pipe"}, `"pipe" is not a regular file`},
		{workspace.WriteFileName, args{"path": "pipe", "content": "x"}, `"pipe" is not a regular file`},
		{workspace.EditFileName, args{"path": "pipe", "old_string": "a", "new_string": "b"}, `"pipe" is not a regular file`},
	} {
		raw, err := json.Marshal(c.a)
		require.NoError(t, err)
		r := tool.Invoke(ctx, find(t, ws, c.tool), model.ToolCall{ID: "p", Name: c.tool, Arguments: raw})
		require.True(t, r.IsError, "%s: %s", c.tool, r.Text())
		assert.Contains(t, r.Text(), c.want, c.tool)
	}
	assert.Equal(t, "a.txt:1: pipe? no", succeed(t, ws, workspace.GrepName, args{"pattern": "pipe"}), "grep passes the pipe by")
	require.NoError(t, ctx.Err(), "nothing waited for a writer or a reader")
}
