package skill_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/skill"
)

func TestOpenFindsTheSkillsOfTheRootsSubdirectories(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"pdf/SKILL.md":           skillMD("pdf-tools", "Work with PDF files.", "Use extract.py."),
		"pdf/scripts/extract.py": "print('hi')\n",
		"pdf/reference.md":       "# Reference\n",
		"pdf/.git/config":        "hidden",
		"pdf/.env":               "hidden",
		"pdf/sub/SKILL.md":       skillMD("inner", "Part of pdf-tools, not a skill.", ""),
		"csv/SKILL.md":           skillMD("csv", "Work with CSV files.", "Split on commas."),
		"notes/readme.txt":       "not a skill",
		"group/deep/SKILL.md":    skillMD("deep", "Two levels down.", ""),
		".hidden/SKILL.md":       skillMD("hidden", "Never looked at.", ""),
		"top-level-file.md":      "ignored",
	})
	r := open(t, dir)
	assert.Equal(t, []string{"csv", "pdf-tools"}, r.Names())
	assert.Empty(t, r.Problems())

	s, ok := r.Get("pdf-tools")
	require.True(t, ok)
	assert.Equal(t, "pdf", s.Dir)
	assert.Equal(t, "Work with PDF files.", s.Description)
	assert.Equal(t, "Use extract.py.", s.Body)
	assert.Equal(t, []skill.File{
		{Path: "reference.md", Size: 12},
		{Path: "scripts/extract.py", Size: 12},
		{Path: "sub/SKILL.md", Size: int64(len(skillMD("inner", "Part of pdf-tools, not a skill.", "")))},
	}, s.Files)
	assert.False(t, s.MoreFiles)

	_, ok = r.Get("deep")
	assert.False(t, ok, "depth 2 is not searched by default")

	deep := open(t, dir, skill.WithMaxDepth(2))
	assert.Equal(t, []string{"csv", "deep", "pdf-tools"}, deep.Names())
	d, _ := deep.Get("deep")
	assert.Equal(t, "group/deep", d.Dir)
}

func TestGetAndSkillsReturnCopies(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"a/SKILL.md": "---\nname: a\ndescription: d\nmetadata: {k: v}\n---\n",
		"a/f.txt":    "x",
	})
	r := open(t, dir)
	s, _ := r.Get("a")
	s.Files[0].Path = "changed"
	s.Metadata["k"] = "changed"
	again := r.Skills()
	require.Len(t, again, 1)
	assert.Equal(t, "f.txt", again[0].Files[0].Path)
	assert.Equal(t, "v", again[0].Metadata["k"])
}

func TestOpenCapsTheListedFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a/SKILL.md": skillMD("a", "d", "")}
	for i := range skill.MaxFiles + 5 {
		files[filepath.ToSlash(filepath.Join("a", "f", strings.Repeat("x", 1+i%7)+string(rune('a'+i%26))+strings.Repeat("0", i/26)))] = "x"
	}
	put(t, dir, files)
	s, ok := open(t, dir).Get("a")
	require.True(t, ok)
	assert.Len(t, s.Files, skill.MaxFiles)
	assert.True(t, s.MoreFiles)
}

func TestAnInvalidSkillFailsOpenAndNamesItsFile(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"good/SKILL.md":     skillMD("good", "Fine.", ""),
		"nofront/SKILL.md":  "# no front matter\n",
		"badname/SKILL.md":  skillMD("Bad_Name", "d", ""),
		"nodesc/SKILL.md":   "---\nname: nodesc\n---\n",
		"longdesc/SKILL.md": skillMD("longdesc", strings.Repeat("x", 1025), ""),
	})
	_, err := skill.Open(dir)
	require.Error(t, err)
	require.ErrorIs(t, err, skill.ErrInvalidSkill)
	var ise *skill.InvalidSkillError
	require.ErrorAs(t, err, &ise)
	msg := err.Error()
	for _, want := range []string{
		filepath.Join(dir, "nofront", "SKILL.md") + ": no front matter",
		filepath.Join(dir, "badname", "SKILL.md") + `: name "Bad_Name" is invalid`,
		filepath.Join(dir, "nodesc", "SKILL.md") + ": the front matter has no description",
		filepath.Join(dir, "longdesc", "SKILL.md") + ": the description is 1025 characters long",
	} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "good")

	r := open(t, dir, skill.WithSkipInvalid())
	assert.Equal(t, []string{"good"}, r.Names())
	problems := r.Problems()
	require.Len(t, problems, 4)
	for _, p := range problems {
		require.ErrorAs(t, p, &ise)
		assert.True(t, strings.HasPrefix(ise.Path, dir), ise.Path)
	}
}

func TestDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"a/SKILL.md": skillMD("same", "First.", ""),
		"b/SKILL.md": skillMD("same", "Second.", ""),
	})
	_, err := skill.Open(dir)
	require.ErrorIs(t, err, skill.ErrInvalidSkill)
	assert.Contains(t, err.Error(), filepath.Join(dir, "b", "SKILL.md")+`: the name "same" is taken by the skill in `+filepath.Join(dir, "a", "SKILL.md"))

	r := open(t, dir, skill.WithSkipInvalid())
	s, ok := r.Get("same")
	require.True(t, ok)
	assert.Equal(t, "First.", s.Description, "the first found is kept")
	assert.Len(t, r.Problems(), 1)
}

func TestASkillFileAtTheRootIsAProblem(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"SKILL.md": skillMD("root", "d", ""), "a/SKILL.md": skillMD("a", "d", "")})
	_, err := skill.Open(dir)
	require.ErrorContains(t, err, filepath.Join(dir, "SKILL.md")+": a skill is a subdirectory of the root")
	assert.Equal(t, []string{"a"}, open(t, dir, skill.WithSkipInvalid()).Names())
}

func TestOpenRefusesBadArguments(t *testing.T) {
	_, err := skill.Open(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)

	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = skill.Open(file)
	require.ErrorContains(t, err, "is not a directory")

	_, err = skill.Open(t.TempDir(), skill.WithMaxDepth(0))
	require.ErrorContains(t, err, "WithMaxDepth: n must be 1 to 16, not 0")

	_, err = skill.FromFS(nil)
	require.ErrorContains(t, err, "the file system is nil")
}

// linkFixture is a root of skills beside a directory outside it, with links
// that try to lead out.
func linkFixture(t *testing.T) (root, outside string) {
	t.Helper()
	parent := t.TempDir()
	root, outside = filepath.Join(parent, "skills"), filepath.Join(parent, "outside")
	put(t, outside, map[string]string{
		"secret.txt":    "top secret\n",
		"evil/SKILL.md": skillMD("evil", "Lives outside the root.", "secret instructions"),
		"evil-file.md":  skillMD("evil-file", "A SKILL.md outside.", ""),
	})
	put(t, root, map[string]string{
		"pdf/SKILL.md":         skillMD("pdf", "PDF files.", "body"),
		"pdf/real.txt":         "real\n",
		"other/SKILL.md":       skillMD("other", "Another skill.", ""),
		"other/notes.txt":      "other's notes\n",
		"shared/impl/SKILL.md": skillMD("linked", "Reached through a link inside the root.", ""),
	})
	link(t, root, "evil", outside+"/evil")                                          // a skill directory outside
	link(t, root, "pdf/leak.txt", filepath.Join(outside, "secret.txt"))             // absolute, out
	link(t, root, "pdf/up.txt", filepath.Join("..", "..", "outside", "secret.txt")) // relative, out
	link(t, root, "pdf/neighbour.txt", filepath.Join("..", "other", "notes.txt"))   // inside the root, outside the skill
	link(t, root, "pdf/alias.txt", "real.txt")                                      // inside the skill
	link(t, root, "pdf/leakdir", outside)
	link(t, root, "linked", filepath.Join("shared", "impl"))
	return root, outside
}

func TestLinksCannotLeadOut(t *testing.T) {
	root, _ := linkFixture(t)

	_, err := skill.Open(root)
	require.ErrorIs(t, err, skill.ErrInvalidSkill)
	assert.Contains(t, err.Error(), filepath.Join(root, "evil")+": it is a symbolic link that leads outside the root")

	r := open(t, root, skill.WithSkipInvalid())
	assert.Equal(t, []string{"linked", "other", "pdf"}, r.Names(), "the skill outside is not loaded; the link inside is followed")
	pdf, _ := r.Get("pdf")
	assert.Equal(t, []skill.File{{Path: "alias.txt", Size: 5}, {Path: "real.txt", Size: 5}}, pdf.Files,
		"links that lead out of the skill are not listed")

	ts, err := skill.Tools(r)
	require.NoError(t, err)
	for _, p := range []string{"leak.txt", "up.txt", "neighbour.txt", "leakdir/secret.txt", "../other/notes.txt",
		"../../outside/secret.txt", "/etc/passwd", filepath.Join(root, "other", "notes.txt")} {
		res := call(t, ts, skill.ReadFileName, map[string]string{"name": "pdf", "path": p})
		require.True(t, res.IsError, p)
		assert.ErrorIs(t, res.Err, skill.ErrOutside, p)
		assert.NotContains(t, res.Text(), "top secret", p)
		assert.NotContains(t, res.Text(), "other's notes", p)
	}
	res := call(t, ts, skill.ReadFileName, map[string]string{"name": "pdf", "path": "alias.txt"})
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "real\n", res.Text())
}

func TestASkillFileThatLeadsOutIsInvalid(t *testing.T) {
	root, outside := linkFixture(t)
	require.NoError(t, os.Remove(filepath.Join(root, "evil")))
	require.NoError(t, os.Remove(filepath.Join(root, "pdf", "SKILL.md")))
	link(t, root, "pdf/SKILL.md", filepath.Join(outside, "evil-file.md"))

	_, err := skill.Open(root)
	require.ErrorIs(t, err, skill.ErrInvalidSkill)
	assert.Contains(t, err.Error(), filepath.Join(root, "pdf", "SKILL.md")+": it is a symbolic link that leads outside the skill's directory")
}

func TestFromFS(t *testing.T) {
	fsys := fstest.MapFS{
		"skills/pdf/SKILL.md":     {Data: []byte(skillMD("pdf", "PDF files.", "Embedded body."))},
		"skills/pdf/ref/notes.md": {Data: []byte("notes\n")},
		"skills/pdf/link.md":      {Data: []byte("ref/notes.md"), Mode: os.ModeSymlink},
		"skills/pdf/ref2":         {Data: []byte("ref"), Mode: os.ModeSymlink},
		"skills/linked":           {Data: []byte("pdf"), Mode: os.ModeSymlink},
		"skills/bad/SKILL.md":     {Data: []byte("no front matter")},
		"skills/lnk/SKILL.md":     {Data: []byte("../pdf/SKILL.md"), Mode: os.ModeSymlink},
		"skills/csv/SKILL.md":     {Data: []byte(skillMD("csv", "CSV files.", ""))},
	}
	sub, err := fsys.Sub("skills")
	require.NoError(t, err)

	_, err = skill.FromFS(sub)
	require.ErrorIs(t, err, skill.ErrInvalidSkill)
	assert.Contains(t, err.Error(), "skill: bad/SKILL.md: no front matter")
	assert.Contains(t, err.Error(), "skill: lnk/SKILL.md: it is a symbolic link, which is not followed")

	r, err := skill.FromFS(sub, skill.WithSkipInvalid())
	require.NoError(t, err)
	defer r.Close()
	assert.Equal(t, []string{"csv", "pdf"}, r.Names(), "the linked directory is passed by")
	pdf, _ := r.Get("pdf")
	assert.Equal(t, []skill.File{{Path: "ref/notes.md", Size: 6}}, pdf.Files, "links are not listed")

	ts, err := skill.Tools(r)
	require.NoError(t, err)
	res := call(t, ts, skill.ReadFileName, map[string]string{"name": "pdf", "path": "ref/notes.md"})
	assert.Equal(t, "notes\n", res.Text())
	for _, p := range []string{"link.md", "ref2/notes.md"} {
		res = call(t, ts, skill.ReadFileName, map[string]string{"name": "pdf", "path": p})
		require.True(t, res.IsError, p)
		assert.ErrorIs(t, res.Err, skill.ErrOutside, p)
	}
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"a/SKILL.md": skillMD("a", "First.", "")})
	r := open(t, dir)
	require.Equal(t, []string{"a"}, r.Names())

	put(t, dir, map[string]string{"b/SKILL.md": skillMD("b", "Second.", "")})
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "a")))
	require.NoError(t, r.Reload())
	assert.Equal(t, []string{"b"}, r.Names())

	put(t, dir, map[string]string{"c/SKILL.md": "broken"})
	err := r.Reload()
	require.ErrorIs(t, err, skill.ErrInvalidSkill)
	assert.Equal(t, []string{"b"}, r.Names(), "a failed reload keeps what there was")

	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "a second Close does nothing")
	assert.ErrorIs(t, r.Reload(), skill.ErrClosed)
	assert.Nil(t, r.Names())
	_, ok := r.Get("b")
	assert.False(t, ok)
}

// Reloads while the tools run: under the race detector, nothing races,
// and every call sees one snapshot or the other.
func TestReloadIsSafeWithConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"a/SKILL.md": skillMD("a", "A.", "body a"), "a/f.txt": "file a"})
	r := open(t, dir)
	ts, err := skill.Tools(r)
	require.NoError(t, err)
	tools := toolsOf(t, ts)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res := tool.Invoke(context.Background(), tools[skill.LoadName], callOf(skill.LoadName, `{"name":"a"}`))
				if res.IsError || !strings.Contains(res.Text(), "body a") {
					t.Errorf("skill_load: %s", res.Text())
				}
				res = tool.Invoke(context.Background(), tools[skill.ReadFileName], callOf(skill.ReadFileName, `{"name":"a","path":"f.txt"}`))
				if res.Text() != "file a" {
					t.Errorf("skill_read_file: %s", res.Text())
				}
				if !strings.Contains(ts.Instruction(), "- a: A.") {
					t.Errorf("instruction: %s", ts.Instruction())
				}
			}
		})
	}
	for i := range 20 {
		name := string(rune('b' + i%3))
		put(t, dir, map[string]string{name + "/SKILL.md": skillMD(name, "More.", "")})
		if err := r.Reload(); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	assert.Equal(t, []string{"a", "b", "c", "d"}, r.Names())
}

func TestAnUnreadableRootFailsEvenWhenSkipping(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"a/SKILL.md": skillMD("a", "A.", "")})
	r := open(t, dir, skill.WithSkipInvalid())
	require.NoError(t, os.RemoveAll(dir))
	err := r.Reload()
	require.Error(t, err)
	assert.False(t, errors.Is(err, skill.ErrInvalidSkill))
	assert.Equal(t, []string{"a"}, r.Names())
}

func TestAnOversizedSkillFileIsInvalid(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"big/SKILL.md": skillMD("big", "d", strings.Repeat("x", skill.MaxSkillFileSize))})
	_, err := skill.Open(dir)
	require.ErrorIs(t, err, skill.ErrInvalidSkill)
	assert.Contains(t, err.Error(), filepath.Join(dir, "big", "SKILL.md")+": the file is 262179 bytes, larger than the limit of 262144 bytes")
}
