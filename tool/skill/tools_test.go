package skill_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/skill"
)

// sampleTree is a skill tree with two skills.
func sampleTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"pdf/SKILL.md":           skillMD("pdf-tools", "Extract text from PDF files.", "# PDF\n\nRun scripts/extract.py FILE."),
		"pdf/scripts/extract.py": "import sys\nprint(sys.argv)\n",
		"pdf/data.bin":           "ab\x00cd",
		"pdf/latin1.txt":         "caf\xe9",
		"pdf/empty.txt":          "",
		"pdf/big.txt":            strings.Repeat("x", 2000),
		"csv/SKILL.md":           skillMD("csv", "Read and write\n  CSV   files.", "Split on commas."),
	})
	return dir
}

func sampleTools(t *testing.T, opts ...skill.ToolsOption) *skill.Toolset {
	t.Helper()
	ts, err := skill.Tools(open(t, sampleTree(t)), opts...)
	require.NoError(t, err)
	return ts
}

func TestSkillLoad(t *testing.T) {
	ts := sampleTools(t)
	res := call(t, ts, skill.LoadName, map[string]string{"name": "pdf-tools"})
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, `Skill "pdf-tools" loaded. Its instructions:

# PDF

Run scripts/extract.py FILE.

Files of the skill (read one with skill_read_file, name "pdf-tools" and the path as listed):
- big.txt (2 KiB)
- data.bin (5 bytes)
- empty.txt (0 bytes)
- latin1.txt (4 bytes)
- scripts/extract.py (27 bytes)`, res.Text())
}

func TestSkillLoadOfAnUnknownSkill(t *testing.T) {
	ts := sampleTools(t)
	res := call(t, ts, skill.LoadName, map[string]string{"name": "pdf-tool"})
	require.True(t, res.IsError)
	assert.ErrorIs(t, res.Err, skill.ErrNotFound)
	assert.Contains(t, res.Text(), `there is no skill "pdf-tool"; did you mean "pdf-tools"? The skills are: csv, pdf-tools.`)

	res = call(t, ts, skill.LoadName, map[string]string{})
	require.True(t, res.IsError)
	assert.Equal(t, tool.CodeInvalidArguments, res.ErrorCode, "name is required")
}

func TestSkillReadFile(t *testing.T) {
	ts := sampleTools(t, skill.WithMaxFileSize(1000))
	read := func(p string) tool.Result {
		return call(t, ts, skill.ReadFileName, map[string]string{"name": "pdf-tools", "path": p})
	}
	res := read("scripts/extract.py")
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "import sys\nprint(sys.argv)\n", res.Text())
	assert.Equal(t, "import sys\nprint(sys.argv)\n", read("./scripts//extract.py").Text(), "the path is cleaned")
	assert.Equal(t, `(empty.txt of skill "pdf-tools" is empty)`, read("empty.txt").Text())

	for p, want := range map[string]string{
		"big.txt":         `"big.txt" of skill "pdf-tools" cannot be read: the file is 2 KiB, larger than the limit of 1000 bytes`,
		"data.bin":        `"data.bin" of skill "pdf-tools" looks like a binary file; skill_read_file reads text files only`,
		"latin1.txt":      `looks like a binary file`,
		"scripts":         `"scripts" of skill "pdf-tools" cannot be read: it is a directory, not a file`,
		"missing.md":      `skill "pdf-tools" has no file "missing.md"; skill_load lists its files`,
		".":               `names the skill's directory, not a file`,
		".git/config":     `names that start with "." are not part of a skill`,
		"../csv/SKILL.md": `path "../csv/SKILL.md" is outside the skill's directory: it climbs out with ".."`,
		"/etc/passwd":     `path "/etc/passwd" is outside the skill's directory: it is absolute`,
		"a\x00b":          `has a NUL byte`,
	} {
		res := read(p)
		require.True(t, res.IsError, p)
		assert.Contains(t, res.Text(), want, p)
	}
	res = call(t, ts, skill.ReadFileName, map[string]string{"name": "nope", "path": "x"})
	assert.ErrorIs(t, res.Err, skill.ErrNotFound)
}

func TestTheToolsAreReadOnly(t *testing.T) {
	for name, tl := range toolsOf(t, sampleTools(t)) {
		md, ok := tool.As[tool.MetadataProvider](tl)
		require.True(t, ok, name)
		assert.True(t, md.Metadata().ReadOnly, name)
		assert.True(t, md.Metadata().ConcurrencySafe, name)
	}
}

func TestTheInstructionListsTheSkills(t *testing.T) {
	ts := sampleTools(t)
	want := "Skills are packages of instructions for particular tasks. When a task matches a skill's description, " +
		"call skill_load with the skill's name before you start, then follow the instructions it returns; " +
		"skill_read_file reads the files a skill lists.\n\nAvailable skills:\n" +
		"- csv: Read and write CSV files.\n" +
		"- pdf-tools: Extract text from PDF files."
	assert.Equal(t, want, ts.Instruction())

	list, err := ts.Tools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, want, tool.CollectInstructions(list), "skill_load carries the instruction")
}

func TestTheInstructionIsCapped(t *testing.T) {
	files := fstest.MapFS{}
	for i := range 5 {
		files[fmt.Sprintf("s%d/SKILL.md", i)] = &fstest.MapFile{Data: []byte(skillMD(fmt.Sprintf("s%d", i), "D.", ""))}
	}
	r, err := skill.FromFS(files)
	require.NoError(t, err)
	ts, err := skill.Tools(r, skill.WithMaxListed(2))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(ts.Instruction(), "\n- s0: D.\n- s1: D.\n(3 more not listed; skill_load takes any skill's name)"), ts.Instruction())
	res := call(t, ts, skill.LoadName, map[string]string{"name": "s4"})
	assert.False(t, res.IsError, "an unlisted skill loads")
}

func TestWithSkillsIsAnAllowList(t *testing.T) {
	ts := sampleTools(t, skill.WithSkills("csv", "not-there"))
	assert.Equal(t, []string{"csv"}, names(ts.Skills()))
	assert.NotContains(t, ts.Instruction(), "pdf")
	assert.Contains(t, ts.Instruction(), "- csv:")

	res := call(t, ts, skill.LoadName, map[string]string{"name": "pdf-tools"})
	require.True(t, res.IsError)
	assert.ErrorIs(t, res.Err, skill.ErrNotFound)
	assert.Contains(t, res.Text(), "The skills are: csv.")
	res = call(t, ts, skill.ReadFileName, map[string]string{"name": "pdf-tools", "path": "scripts/extract.py"})
	assert.ErrorIs(t, res.Err, skill.ErrNotFound)

	none := sampleTools(t, skill.WithSkills("not-there"))
	assert.Equal(t, "", none.Instruction(), "no skill, no instruction")
	res = call(t, none, skill.LoadName, map[string]string{"name": "csv"})
	assert.Contains(t, res.Text(), `there is no skill "csv", nor any other`)
}

func TestToolsRefusesBadOptions(t *testing.T) {
	_, err := skill.Tools(nil)
	require.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.Contains(t, err.Error(), "the repository is nil")

	r := open(t, t.TempDir())
	for _, tc := range []struct {
		opt  skill.ToolsOption
		want string
	}{
		{skill.WithMaxFileSize(0), "WithMaxFileSize: n must be at least 1"},
		{skill.WithMaxListed(0), "WithMaxListed: n must be at least 1"},
		{skill.WithSkills("Bad"), `WithSkills: name "Bad" is invalid`},
		{skill.WithToolsetName(""), "WithToolsetName: the name is empty"},
	} {
		_, err := skill.Tools(r, tc.opt)
		require.ErrorContains(t, err, tc.want)
	}
	ts, err := skill.Tools(r, skill.WithToolsetName("mine"))
	require.NoError(t, err)
	assert.Equal(t, "mine", ts.Name())
}

func TestTheToolsFailAfterTheRepositoryCloses(t *testing.T) {
	r := open(t, sampleTree(t))
	ts, err := skill.Tools(r)
	require.NoError(t, err)
	tools := toolsOf(t, ts)
	require.NoError(t, ts.Close())
	assert.NotEmpty(t, ts.Instruction(), "closing the toolset leaves the repository open")

	require.NoError(t, r.Close())
	_, err = ts.Tools(context.Background())
	require.ErrorIs(t, err, skill.ErrClosed)
	assert.Equal(t, "", ts.Instruction())
	for name, args := range map[string]string{skill.LoadName: `{"name":"csv"}`, skill.ReadFileName: `{"name":"csv","path":"SKILL.md"}`} {
		res := tool.Invoke(context.Background(), tools[name], callOf(name, args))
		require.True(t, res.IsError, name)
		assert.ErrorIs(t, res.Err, skill.ErrClosed, name)
	}
}

func TestTheInstructionFollowsReload(t *testing.T) {
	dir := sampleTree(t)
	r := open(t, dir)
	ts, err := skill.Tools(r)
	require.NoError(t, err)
	list, err := ts.Tools(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, tool.CollectInstructions(list), "- xlsx:")

	put(t, dir, map[string]string{"xlsx/SKILL.md": skillMD("xlsx", "Spreadsheets.", "Use the sheet.")})
	require.NoError(t, r.Reload())
	assert.Contains(t, tool.CollectInstructions(list), "- xlsx: Spreadsheets.", "the tools already handed out see the new skill")
	res := call(t, ts, skill.LoadName, map[string]string{"name": "xlsx"})
	assert.Contains(t, res.Text(), "Use the sheet.")
}

// Names and paths are the model's: an enormous one is neither echoed whole
// in the error nor compared whole with every skill's name.
func TestToolErrorsDoNotEchoHugeArguments(t *testing.T) {
	ts := sampleTools(t)
	huge := strings.Repeat("pdf-tools", 100_000)
	res := call(t, ts, skill.LoadName, map[string]string{"name": huge})
	require.True(t, res.IsError)
	assert.ErrorIs(t, res.Err, skill.ErrNotFound)
	assert.Less(t, len(res.Text()), 1000, "the error of skill_load")

	res = call(t, ts, skill.ReadFileName, map[string]string{"name": "pdf-tools", "path": huge})
	require.True(t, res.IsError)
	assert.Less(t, len(res.Text()), 1000, "the error of skill_read_file")
	assert.True(t, strings.Contains(res.Text(), "bytes long, more than the 4096 a path may have"), "the error says the path is too long")
}
