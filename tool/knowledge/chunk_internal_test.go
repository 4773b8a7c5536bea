package knowledge

import (
	"context"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// TestATXHeadingLinesStartSections parses a line followed by a paragraph:
// a heading line heads the paragraph's section, with its title; any other
// line is text of the paragraph's section, which has no headings.
func TestATXHeadingLinesStartSections(t *testing.T) {
	for _, c := range []struct {
		line  string
		level int
		title string
	}{
		{"# Title", 1, "Title"},
		{"###   Spaced   ", 3, "Spaced"},
		{"## Closed ##", 2, "Closed"},
		{"## C# language", 2, "C# language"},
		{"##", 2, ""},
		{"   # indented", 1, "indented"},
		{"    # code", 0, ""},
		{"#hashtag", 0, ""},
		{"####### seven", 0, ""},
		{"text # not", 0, ""},
	} {
		p := parse(c.line+"\n\nbody", true)
		if !assert.NotEmpty(t, p.sections, c.line) {
			continue
		}
		last := p.sections[len(p.sections)-1]
		switch {
		case c.level == 0:
			assert.Nil(t, last.headings, c.line)
		case c.title == "":
			assert.Nil(t, last.headings, "%s: an empty heading adds nothing to the path", c.line)
			assert.Len(t, p.sections, 1, c.line)
		default:
			assert.Equal(t, []string{c.title}, last.headings, c.line)
			assert.Len(t, p.sections, 1, "%s: the heading line is in no block", c.line)
		}
		assert.Equal(t, c.level == 1, p.h1 != "", c.line)
	}
}

func TestSlug(t *testing.T) {
	assert.Equal(t, "installing-on-linux", slug("Installing on Linux"))
	assert.Equal(t, "whats-new-in-v12", slug("What's new in v1.2?"))
	assert.Equal(t, "snake_case--kebab-case", slug("snake_case & kebab-case"))
	assert.Equal(t, "café", slug("Café"))
}

func TestMatchGlobs(t *testing.T) {
	for _, c := range []struct {
		glob, path string
		want       bool
	}{
		{"*.md", "a.md", true},
		{"*.md", "docs/deep/a.md", true},
		{"*.md", "a.txt", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/x/a.md", false},
		{"docs/**/*.md", "docs/a.md", true},
		{"docs/**/*.md", "docs/x/y/a.md", true},
		{"docs/**/*.md", "other/a.md", false},
		{"**/main.go", "cmd/tool/main.go", true},
		{"cmd/*/main.go", "cmd/tool/main.go", true},
		{"cmd/*/main.go", "cmd/main.go", false},
	} {
		assert.Equal(t, c.want, matchAny([]string{c.glob}, c.path), "%s %s", c.glob, c.path)
	}
}

// checkChunks checks the chunks of text against what chunking promises:
// each a non-empty span of the text without white space around it, at most
// size runes, in order, and together covering every block.
func checkChunks(t *testing.T, text string, markdown bool, size, overlap int) {
	p := parse(text, markdown)
	pieces := chunkText(text, p.sections, size, overlap)
	covered := make([]bool, len(text))
	for i, pc := range pieces {
		if pc.start < 0 || pc.end > len(text) || pc.start >= pc.end {
			t.Fatalf("piece %d spans [%d, %d) of %d bytes", i, pc.start, pc.end, len(text))
		}
		s := text[pc.start:pc.end]
		if !utf8.ValidString(s) || strings.TrimSpace(s) != s {
			t.Fatalf("piece %d is %q", i, s)
		}
		if n := utf8.RuneCountInString(s); n > size {
			t.Fatalf("piece %d has %d runes, more than %d", i, n, size)
		}
		if i > 0 && (pc.start <= pieces[i-1].start || pc.end < pieces[i-1].end) {
			t.Fatalf("piece %d [%d, %d) is not after piece %d [%d, %d)", i, pc.start, pc.end, i-1, pieces[i-1].start, pieces[i-1].end)
		}
		for j := pc.start; j < pc.end; j++ {
			covered[j] = true
		}
	}
	for _, sec := range p.sections {
		for _, b := range sec.blocks {
			for j, r := range text[b.start:b.end] {
				if !covered[b.start+j] && !unicode.IsSpace(r) {
					t.Fatalf("rune %q at %d of block %q is in no chunk", r, b.start+j, text[b.start:b.end])
				}
			}
		}
	}
}

// FuzzChunk cuts arbitrary document text, as Markdown and as plain text,
// at several sizes: the chunker never panics and keeps its promises, and
// the knowledge base takes the document and searches it.
func FuzzChunk(f *testing.F) {
	for _, seed := range []string{
		"", "# T\n\ntext", guideSeed, "a\r\nb\r\rc", "---\ntitle: x\n---\nbody", "```\nunclosed\n\n# x",
		strings.Repeat("word ", 300), strings.Repeat("é", 200), "Title\n===\n\n---\n\n***", "\xff\xfe bad",
		"One. Two! Three? " + strings.Repeat("x", 70) + ". Four.", "\uFEFF# BOM",
	} {
		f.Add(seed, 40, 10)
	}
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		size = 32 + abs(size)%200
		overlap = abs(overlap) % (size/2 + 1)
		valid := normalize(strings.ToValidUTF8(text, "\uFFFD"))
		checkChunks(t, valid, true, size, overlap)
		checkChunks(t, valid, false, size, overlap)

		kb, err := New(WithChunkSize(size), WithChunkOverlap(overlap))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		err = kb.AddDocument(ctx, Doc{ID: "doc", Source: "doc.md", Text: text})
		if utf8.ValidString(text) != (err == nil) {
			t.Fatalf("valid UTF-8 %v, error %v", utf8.ValidString(text), err)
		}
		if err != nil {
			return
		}
		chunks, err := kb.Chunks("doc")
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := kb.Document("doc")
		lines := strings.SplitAfter(doc.Text, "\n")
		for _, c := range chunks {
			if c.Line < 1 || c.Line > len(lines) {
				t.Fatalf("chunk %q on line %d of %d", c.Text, c.Line, len(lines))
			}
			// The chunk starts on its line.
			from := len(strings.Join(lines[:c.Line-1], ""))
			i := strings.Index(doc.Text[from:], c.Text)
			if i < 0 || i >= len(lines[c.Line-1]) {
				t.Fatalf("chunk %q does not start on line %d", c.Text, c.Line)
			}
		}
		if _, err := kb.Search(ctx, Query{Text: text, Limit: 3}); err != nil {
			t.Fatal(err)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the smallest int
			return 0
		}
		return -n
	}
	return n
}

const guideSeed = "# Guide\n\nIntro.\n\n## Install\n\nRun it. " + "Then more words follow here. " + "And more.\n\n```sh\nmake\n\nmake install\n```\n\nSetext\n------\n\nText.\n"
