package skill_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/skill"
)

func TestParseReadsFrontMatterAndBody(t *testing.T) {
	s, err := skill.Parse([]byte(`---
name: pdf-tools
description: >
  Extract text and tables from PDF files.
  Use it when the user gives a PDF.
license: Apache-2.0
compatibility: needs python3
allowed-tools: bash read_file
metadata:
  author: someone
  version: "1.2"
unknown-key: [1, 2, 3]
---

# PDF tools

    indented code stays indented

Run scripts/extract.py.
`))
	require.NoError(t, err)
	assert.Equal(t, "pdf-tools", s.Name)
	assert.Equal(t, "Extract text and tables from PDF files. Use it when the user gives a PDF.", s.Description)
	assert.Equal(t, "Apache-2.0", s.License)
	assert.Equal(t, "needs python3", s.Compatibility)
	assert.Equal(t, []string{"bash", "read_file"}, s.AllowedTools)
	assert.Equal(t, map[string]string{"author": "someone", "version": "1.2"}, s.Metadata)
	assert.Equal(t, "# PDF tools\n\n    indented code stays indented\n\nRun scripts/extract.py.", s.Body)
	assert.Empty(t, s.Dir)
	assert.Empty(t, s.Files)
}

func TestParseAcceptsCRLFAndByteOrderMark(t *testing.T) {
	text := "\xEF\xBB\xBF---\r\nname: crlf\r\ndescription: Windows line endings.\r\n---  \r\n\r\nLine one.\r\nLine two.\r\n"
	s, err := skill.Parse([]byte(text))
	require.NoError(t, err)
	assert.Equal(t, "crlf", s.Name)
	assert.Equal(t, "Windows line endings.", s.Description)
	assert.Equal(t, "Line one.\nLine two.", s.Body)
}

func TestParseAllowsAnEmptyBodyAndAListOfTools(t *testing.T) {
	s, err := skill.Parse([]byte("---\nname: a\ndescription: d\nallowed-tools:\n  - x\n  - y\n---"))
	require.NoError(t, err)
	assert.Equal(t, "", s.Body)
	assert.Equal(t, []string{"x", "y"}, s.AllowedTools)
}

func TestParseRefusesBadFrontMatter(t *testing.T) {
	long := strings.Repeat("é", skill.MaxDescriptionLength+1)
	for _, tc := range []struct{ name, text, want string }{
		{"no front matter", "# Just markdown\n", "no front matter"},
		{"empty file", "", "no front matter"},
		{"fence not first", "\n---\nname: a\ndescription: d\n---\n", "no front matter"},
		{"not closed", "---\nname: a\ndescription: d\n", "not closed"},
		{"empty", "---\n---\nbody", "front matter is empty"},
		{"not a mapping", "---\n- a\n- b\n---\n", "not a YAML mapping"},
		{"bad yaml", "---\nname: [a\n---\n", "not valid YAML"},
		{"no name", "---\ndescription: d\n---\n", "has no name"},
		{"no description", "---\nname: a\n---\n", "has no description"},
		{"empty name", "---\nname:\ndescription: d\n---\n", "name is empty"},
		{"blank description", "---\nname: a\ndescription: \"  \"\n---\n", "description is empty"},
		{"name a list", "---\nname: [a]\ndescription: d\n---\n", "name is not a single value"},
		{"description a map", "---\nname: a\ndescription: {x: y}\n---\n", "description is not a single value"},
		{"duplicate key", "---\nname: a\nname: b\ndescription: d\n---\n", "key \"name\" twice"},
		{"description too long", "---\nname: a\ndescription: " + long + "\n---\n", "1025 characters long, more than 1024"},
		{"metadata not a map", "---\nname: a\ndescription: d\nmetadata: x\n---\n", "metadata is not a mapping"},
		{"metadata nested", "---\nname: a\ndescription: d\nmetadata: {a: {b: c}}\n---\n", "every key and value"},
		{"bad name", "---\nname: PDF\ndescription: d\n---\n", "name \"PDF\" is invalid"},
		{"not utf-8", "---\nname: a\ndescription: \xff\n---\n", "not UTF-8"},
		{"nul byte", "---\nname: a\ndescription: d\n---\n\x00", "NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skill.Parse([]byte(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseRefusesOversizedFiles(t *testing.T) {
	big := "---\nname: a\ndescription: d\n---\n" + strings.Repeat("x", skill.MaxSkillFileSize)
	_, err := skill.Parse([]byte(big))
	require.ErrorContains(t, err, "more than the 262144 a SKILL.md may have")

	front := "---\nname: a\ndescription: d\nx: \"" + strings.Repeat("y", skill.MaxFrontMatterSize) + "\"\n---\n"
	_, err = skill.Parse([]byte(front))
	require.ErrorContains(t, err, "the front matter is")
}

func TestParseFollowsAliases(t *testing.T) {
	s, err := skill.Parse([]byte("---\nx: &n alias-name\nname: *n\ndescription: d\n---\n"))
	require.NoError(t, err)
	assert.Equal(t, "alias-name", s.Name)
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "pdf", "pdf-tools", "a1-b2-c3", "0", strings.Repeat("a", 64)} {
		assert.True(t, skill.ValidName(ok), ok)
	}
	for _, bad := range []string{"", "PDF", "pdf_tools", "pdf tools", "-pdf", "pdf-", "pdf--tools", "pdf.md",
		"é", strings.Repeat("a", 65), "a/b"} {
		assert.False(t, skill.ValidName(bad), bad)
	}
}

// The error of an overlong name quotes its start, not the whole of it:
// the front matter may hold a name of 60 KB.
func TestTheErrorOfALongNameIsShort(t *testing.T) {
	_, err := skill.Parse([]byte("---\nname: " + strings.Repeat("a", 60000) + "\ndescription: d\n---\n"))
	require.ErrorContains(t, err, "is 60000 characters long, more than 64")
	assert.Less(t, len(err.Error()), 200, err.Error()[:min(len(err.Error()), 300)])
}
