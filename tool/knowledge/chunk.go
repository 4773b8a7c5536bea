package knowledge

import (
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"
	"go.yaml.in/yaml/v3"
)

// normalize returns text with its line endings made "\n" (from "\r\n" and
// a lone "\r") and a leading byte order mark dropped: the text a
// document's chunks and their offsets refer to.
func normalize(text string) string {
	text = strings.TrimPrefix(text, "\uFEFF")
	if strings.IndexByte(text, '\r') < 0 {
		return text
	}
	return strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
}

// isMarkdown reports whether a document whose source (or, without one, ID)
// is name is Markdown: a name with a Markdown extension, or with none.
func isMarkdown(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case "", ".md", ".markdown", ".mdx", ".mdown", ".mkd":
		return true
	}
	return false
}

// piece is a chunk as the chunker finds it: a span of the normalized text
// and the headings it sits under.
type piece struct {
	headings   []string
	start, end int // byte offsets; text[start:end] is the chunk's text
}

// block is a paragraph, a list, a fenced code block: a run of lines the
// chunker keeps together when it can.
type block struct {
	start, end int // trimmed of white space
	code       bool
}

// section is the blocks under one heading path.
type section struct {
	headings []string
	blocks   []block
}

// line is one line of the text: text[start:end], without its "\n".
type line struct{ start, end int }

// splitLines returns the lines of text.
func splitLines(text string) []line {
	var lines []line
	start := 0
	for start <= len(text) {
		i := strings.IndexByte(text[start:], '\n')
		if i < 0 {
			if start < len(text) {
				lines = append(lines, line{start, len(text)})
			}
			break
		}
		lines = append(lines, line{start, start + i})
		start += i + 1
	}
	return lines
}

// maxFrontMatter is the size, in bytes, of the largest front matter block
// a document may start with: a "---" line whose closing line comes later
// is a thematic break, and what follows it text. (The YAML decoder's cost
// grows faster than the size of what it decodes.)
const maxFrontMatter = 64 << 10

// frontMatter returns the number of leading lines that are a YAML front
// matter block ("---" to "---" or "...", at most maxFrontMatter bytes), or
// 0 when there is none, and the fields it holds that are scalars, as
// strings (nil when it is not valid YAML).
func frontMatter(text string, lines []line) (int, map[string]string) {
	if len(lines) < 2 || strings.TrimRight(text[lines[0].start:lines[0].end], " \t") != "---" {
		return 0, nil
	}
	for i := 1; i < len(lines); i++ {
		if lines[i].start-lines[1].start > maxFrontMatter {
			return 0, nil
		}
		l := strings.TrimRight(text[lines[i].start:lines[i].end], " \t")
		if l != "---" && l != "..." {
			continue
		}
		var raw map[string]any
		if err := yaml.Unmarshal([]byte(text[lines[1].start:lines[i].start]), &raw); err != nil {
			return i + 1, nil
		}
		fields := map[string]string{}
		for k, v := range raw {
			switch v := v.(type) {
			case string:
				fields[k] = v
			case bool, int, int64, uint64, float64:
				b, err := yaml.Marshal(v)
				if err == nil {
					fields[k] = strings.TrimSpace(string(b))
				}
			}
		}
		return i + 1, fields
	}
	return 0, nil
}

// maxTitle is the length, in runes, of the longest heading or title the
// knowledge base keeps: every chunk of a section carries its headings and
// its document's title, in its terms and in the results, so a longer one
// is cut rather than repeated in every chunk.
const maxTitle = 200

// clipTitle cuts a heading or title longer than maxTitle runes to that
// length, with "…" after it.
func clipTitle(s string) string {
	if len(s) <= maxTitle {
		return s
	}
	n := 0
	for i := range s {
		if n == maxTitle {
			return strings.TrimRightFunc(s[:i], unicode.IsSpace) + "…"
		}
		n++
	}
	return s
}

// isBlank reports whether s holds only white space.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// parsed is what the chunker finds in a document before it packs chunks.
type parsed struct {
	sections []section
	fields   map[string]string // the front matter's scalar fields
	h1       string            // the first level-1 heading
}

// parse finds the sections of text: for Markdown, by its headings (ATX and
// setext), with its front matter, thematic breaks and heading lines left
// out of every block and code blocks (fenced or indented) kept whole; for
// other text, one section of paragraphs.
//
// The Markdown syntax is goldmark's (CommonMark): it tells headings, code
// blocks and thematic breaks from text. Only the blocks at the top of the
// document are read; each spans the lines from where it starts to where
// the next one does. Blocks other than headings, breaks and code are cut
// into paragraphs at blank lines, which the chunker packs.
func parse(text string, markdown bool) parsed {
	var p parsed
	lines := splitLines(text)
	if !markdown {
		p.sections = []section{{blocks: paragraphs(text, lines)}}
		return p.tidy(text)
	}
	first, fields := frontMatter(text, lines)
	p.fields = fields
	if first >= len(lines) {
		return p
	}
	base := lines[first].start
	src := []byte(text[base:])
	doc := goldmark.DefaultParser().Parse(gmtext.NewReader(src))
	// lineOf returns the index of the line that holds byte offset off of
	// text.
	lineOf := func(off int) int {
		i, _ := slices.BinarySearchFunc(lines, off, func(l line, off int) int {
			if l.end < off {
				return -1
			}
			if l.start > off {
				return 1
			}
			return 0
		})
		return i
	}
	startOf := func(n ast.Node) int {
		if pos := n.Pos(); pos >= 0 {
			return lineOf(base + pos)
		}
		if n.Lines().Len() > 0 {
			return lineOf(base + n.Lines().At(0).Start)
		}
		return -1
	}
	var levels [6]string
	cur := section{}
	heading := func(level int, title string) {
		title = clipTitle(title)
		if len(cur.blocks) > 0 {
			p.sections = append(p.sections, cur)
		}
		if level == 1 && p.h1 == "" {
			p.h1 = title
		}
		levels[level-1] = title
		clear(levels[level:])
		var path []string
		for _, h := range levels {
			if h != "" {
				path = append(path, h)
			}
		}
		cur = section{headings: path}
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		from := startOf(n)
		if from < 0 {
			continue
		}
		to := len(lines) // the lines of n are lines[from:to]
		for next := n.NextSibling(); next != nil; next = next.NextSibling() {
			if at := startOf(next); at >= 0 {
				to = max(at, from+1)
				break
			}
		}
		switch n := n.(type) {
		case *ast.Heading:
			heading(n.Level, headingTitle(src, n))
		case *ast.ThematicBreak:
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			cur.blocks = append(cur.blocks, block{start: lines[from].start, end: lines[to-1].end, code: true})
		default:
			cur.blocks = append(cur.blocks, paragraphs(text, lines[from:to])...)
		}
	}
	if len(cur.blocks) > 0 {
		p.sections = append(p.sections, cur)
	}
	return p.tidy(text)
}

// headingTitle returns the text of heading h of src: an ATX heading's line
// without its #s, a setext heading's lines joined by single spaces.
func headingTitle(src []byte, h *ast.Heading) string {
	segs := h.Lines()
	switch segs.Len() {
	case 0:
		return ""
	case 1:
		seg := segs.At(0)
		return strings.TrimSpace(string(seg.Value(src)))
	}
	var words []string
	for i := range segs.Len() {
		seg := segs.At(i)
		words = append(words, strings.Fields(string(seg.Value(src)))...)
	}
	return strings.Join(words, " ")
}

// paragraphs cuts lines of text into blocks at blank lines.
func paragraphs(text string, lines []line) []block {
	var out []block
	var para *block
	for _, l := range lines {
		if isBlank(text[l.start:l.end]) {
			if para != nil {
				out = append(out, *para)
				para = nil
			}
			continue
		}
		if para == nil {
			para = &block{start: l.start}
		}
		para.end = l.end
	}
	if para != nil {
		out = append(out, *para)
	}
	return out
}

// tidy trims the white space around every block and drops the blocks and
// sections left empty.
func (p parsed) tidy(text string) parsed {
	for i := range p.sections {
		for j := range p.sections[i].blocks {
			b := &p.sections[i].blocks[j]
			b.start, b.end = trimSpan(text, b.start, b.end)
		}
		p.sections[i].blocks = slices.DeleteFunc(p.sections[i].blocks, func(b block) bool { return b.start >= b.end })
	}
	p.sections = slices.DeleteFunc(p.sections, func(s section) bool { return len(s.blocks) == 0 })
	return p
}

// trimSpan narrows text[start:end] to leave out the white space around it.
func trimSpan(text string, start, end int) (int, int) {
	for start < end {
		r, n := utf8.DecodeRuneInString(text[start:end])
		if !unicode.IsSpace(r) {
			break
		}
		start += n
	}
	for end > start {
		r, n := utf8.DecodeLastRuneInString(text[start:end])
		if !unicode.IsSpace(r) {
			break
		}
		end -= n
	}
	return start, end
}

// chunkText cuts the sections of text into chunks of at most size runes:
// the blocks of a section are packed whole into chunks while they fit, and
// a block larger than size is cut into windows that share overlap runes
// with the one before. Chunks never span two sections.
func chunkText(text string, sections []section, size, overlap int) []piece {
	var out []piece
	for _, sec := range sections {
		start, end := -1, -1
		runes := 0 // of text[start:end], counted as it grows
		flush := func() {
			if start >= 0 {
				out = append(out, piece{headings: sec.headings, start: start, end: end})
				start, end = -1, -1
			}
		}
		for _, b := range sec.blocks {
			if start >= 0 {
				// Counted up to size+1 at most: one block's count costs
				// its length, not the chunk's.
				if n := runesUpTo(text[end:b.end], size-runes+1); runes+n <= size {
					end, runes = b.end, runes+n
					continue
				}
			}
			flush()
			if n := runesUpTo(text[b.start:b.end], size+1); n <= size {
				start, end, runes = b.start, b.end, n
				continue
			}
			for _, w := range windows(text, b, size, overlap) {
				out = append(out, piece{headings: sec.headings, start: w[0], end: w[1]})
			}
		}
		flush()
	}
	return out
}

// runesUpTo returns the number of runes of s, or limit when s has more.
func runesUpTo(s string, limit int) int {
	n := 0
	for i := 0; i < len(s) && n < limit; n++ {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return n
}

// windows cuts a block larger than size runes into spans of at most size
// runes, each starting overlap runes (or a little less, to start at a word;
// at most half the span before) before the end of the one before. A span ends where the text breaks best
// in its second half: at a line break in code, at the end of a sentence,
// at a space; failing those, at size runes.
func windows(text string, b block, size, overlap int) [][2]int {
	var out [][2]int
	pos := b.start
	for pos < b.end {
		lim := advance(text, pos, b.end, size)
		if lim == b.end {
			out = append(out, [2]int{pos, b.end})
			break
		}
		cut := breakAt(text, pos, lim, b.code)
		s, e := trimSpan(text, pos, cut)
		out = append(out, [2]int{s, e})
		// The overlap is at most half the window, for every window to
		// move on by half its length at least.
		next := back(text, pos, cut, min(overlap, utf8.RuneCountInString(text[pos:cut])/2))
		// Start at a word: past the rest of a word the overlap cuts into.
		if next > pos && next < cut {
			r, _ := utf8.DecodeLastRuneInString(text[:next])
			if !unicode.IsSpace(r) {
				if i := strings.IndexFunc(text[next:cut], unicode.IsSpace); i >= 0 {
					next += i
				} else {
					next = cut
				}
			}
		}
		// Better still, at a sentence the overlap holds whole.
		if next > pos && next < cut {
			if i := sentenceStart(text[next:cut]); i > 0 {
				next += i
			}
		}
		if next <= pos {
			next = cut
		}
		next, _ = trimSpan(text, next, b.end)
		pos = next
	}
	return out
}

// advance returns the offset n runes after pos, or end when text[pos:end]
// is shorter.
func advance(text string, pos, end, n int) int {
	for ; n > 0 && pos < end; n-- {
		_, w := utf8.DecodeRuneInString(text[pos:end])
		pos += w
	}
	return pos
}

// back returns the offset n runes before pos, but not before floor.
func back(text string, floor, pos, n int) int {
	for ; n > 0 && pos > floor; n-- {
		_, w := utf8.DecodeLastRuneInString(text[floor:pos])
		pos -= w
	}
	return pos
}

// breakAt returns where to end a window of text[pos:lim]: after the last
// line break (in code), sentence end or space in its second half, or at
// lim when there is none.
func breakAt(text string, pos, lim int, code bool) int {
	half := pos + (lim-pos)/2
	win := text[pos:lim]
	after := func(i int) bool { return pos+i > half }
	if code {
		if i := strings.LastIndexByte(win, '\n'); i >= 0 && after(i) {
			return pos + i
		}
	}
	for i := len(win) - 1; i > 0 && after(i); i-- {
		if (win[i] == ' ' || win[i] == '\n') && strings.IndexByte(".!?", win[i-1]) >= 0 {
			return pos + i
		}
	}
	if i := strings.LastIndexFunc(win, unicode.IsSpace); i >= 0 && after(i) {
		return pos + i
	}
	return lim
}

// lineIndex maps byte offsets of a text to line numbers.
type lineIndex []int // the offset where each line starts

func newLineIndex(text string) lineIndex {
	idx := lineIndex{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

// line returns the line, from 1, that holds the byte at offset.
func (idx lineIndex) line(offset int) int {
	i, found := slices.BinarySearch(idx, offset)
	if found {
		return i + 1
	}
	return i
}

// sentenceStart returns the offset of the first sentence that begins in s,
// after a sentence end and white space, or 0 when none does.
func sentenceStart(s string) int {
	for i := 1; i+1 < len(s); i++ {
		if (s[i] == ' ' || s[i] == '\n') && strings.IndexByte(".!?", s[i-1]) >= 0 {
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\n' || s[j] == '\t') {
				j++
			}
			if j < len(s) {
				return j
			}
			return 0
		}
	}
	return 0
}
