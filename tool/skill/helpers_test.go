package skill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/skill"
)

// skillMD returns a SKILL.md with the given name, description and body.
func skillMD(name, description, body string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n%s\n", name, description, body)
}

// put writes files (slash-separated paths to contents) under dir.
func put(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

// link makes a symbolic link at dir/at pointing to target, or skips the
// test where links are not available.
func link(t *testing.T, dir, at, target string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(at))
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	if err := os.Symlink(target, full); err != nil {
		t.Skipf("symbolic links are not available: %v", err)
	}
}

// open opens dir as a repository that the test closes.
func open(t *testing.T, dir string, opts ...skill.Option) *skill.Repository {
	t.Helper()
	r, err := skill.Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// toolsOf returns the toolset's tools by name.
func toolsOf(t *testing.T, ts tool.Toolset) map[string]tool.Tool {
	t.Helper()
	list, err := ts.Tools(context.Background())
	require.NoError(t, err)
	out := map[string]tool.Tool{}
	for _, tl := range list {
		out[tool.Name(tl)] = tl
	}
	return out
}

// call invokes the tool named name of ts with args.
func call(t *testing.T, ts tool.Toolset, name string, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	tl, ok := toolsOf(t, ts)[name]
	require.True(t, ok, "the toolset has %s", name)
	return tool.Invoke(context.Background(), tl, model.ToolCall{ID: "c1", Name: name, Arguments: raw})
}

// names returns the names of skills.
func names(skills []skill.Skill) []string {
	out := make([]string, len(skills))
	for i, s := range skills {
		out[i] = s.Name
	}
	return out
}

// callOf returns a call of the tool name with raw arguments.
func callOf(name, args string) model.ToolCall {
	return model.ToolCall{ID: "c1", Name: name, Arguments: json.RawMessage(args)}
}
