package webfetch

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// HTMLText returns the title of an HTML document and its readable text.
//
// Scripts, styles, <noscript>, <template>, SVG and MathML, embedded frames,
// objects and media, form fields that hold no prose (<select>, <textarea>),
// elements marked hidden (the hidden attribute, aria-hidden="true",
// display:none, visibility:hidden; not on <html> or <body>) and the whole
// <head> but its <title> are left out. Block
// elements start new lines, paragraphs, headings, lists, tables, quotes and
// preformatted text are set apart by blank lines; headings are prefixed
// with one '#' per level, list items with "- " (or their number in an
// ordered list) and indented by nesting, quoted lines with "> ", and the
// cells of a table row are joined with " | ". Runs of white space collapse
// to one space, except in <pre>, whose lines are kept as they are. A link
// reads "text (URL)", its URL resolved against base (and the document's
// <base href>) unless it only points into the page; a link whose text is
// its URL reads as the URL alone. Character references are decoded.
//
// page is UTF-8 text; base may be nil, which leaves relative links as they
// are written. A link's URL longer than 2 KiB is left out. A document
// nested deeper than the HTML parser takes (512 elements) is read without
// its structure: its text, with line breaks where blocks start.
func HTMLText(page string, base *url.URL) (title, text string) {
	title, text, _ = htmlText(page, base, 0)
	return title, text
}

// maxLinkURL is the longest link URL the text shows, in bytes.
const maxLinkURL = 2 << 10

// htmlText is HTMLText that stops once the text passes budget bytes (no
// limit when 0); complete reports whether it did not.
func htmlText(page string, base *url.URL, budget int) (title, text string, complete bool) {
	return pageText(page, base, budget, false)
}

// articleText is htmlText of the page's article alone, when the page reads
// as one: its navigation, header, footer, sidebars and other chrome are
// left out (see mainContent). A page that does not read as an article is
// converted whole. The title is the page's <title> either way.
func articleText(page string, base *url.URL, budget int) (title, text string, complete bool) {
	return pageText(page, base, budget, true)
}

func pageText(page string, base *url.URL, budget int, article bool) (title, text string, complete bool) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil { // nested too deep for the parser
		title, text, complete = flatText(page, budget)
		return title, tidy(text), complete
	}
	title, href := headOf(doc)
	if href != "" {
		if b, err := url.Parse(href); err == nil {
			if base != nil {
				b = base.ResolveReference(b)
			}
			if b.Scheme == "http" || b.Scheme == "https" {
				base = b
			}
		}
	}
	root := doc
	if article {
		if n := mainContent(doc, base); n != nil {
			root = n
		}
	}
	c := &converter{base: base, lineStart: true, budget: budget}
	c.walk(root)
	return title, tidy(c.b.String()), !c.over
}

// flatText reads the text of a page the parser refused, token by token:
// the title, and the text outside the elements HTMLText leaves out, with a
// line break where a block starts or ends.
func flatText(page string, budget int) (title, text string, complete bool) {
	z := html.NewTokenizer(strings.NewReader(page))
	var b, t strings.Builder
	skip, inTitle := 0, false
	for {
		if budget > 0 && b.Len() > budget {
			return strings.Join(strings.Fields(t.String()), " "), b.String(), false
		}
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return strings.Join(strings.Fields(t.String()), " "), b.String(), true
		case html.TextToken:
			switch {
			case inTitle:
				t.Write(z.Text())
			case skip == 0:
				if words := strings.Fields(string(z.Text())); len(words) > 0 {
					b.WriteString(strings.Join(words, " "))
					b.WriteByte(' ')
				}
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Title:
				inTitle = tt == html.StartTagToken
			case skipped[a] && a != atom.Head && !void[a]:
				switch {
				case tt == html.StartTagToken:
					skip++
				case tt == html.EndTagToken && skip > 0:
					skip--
				}
			case a == atom.Body && tt == html.EndTagToken:
				skip = 0 // what an unclosed element hid ends with the body
			case blocks[a] > 0 || a == atom.Br:
				if n := b.Len(); n == 0 || b.String()[n-1] != '\n' {
					b.WriteByte('\n')
				}
			}
		}
	}
}

// headOf finds the document's title and the href of its <base>, visiting
// the tree without recursion.
func headOf(doc *html.Node) (title, base string) {
	foundTitle, foundBase := false, false
	for n := doc; n != nil; n = next(doc, n, false) {
		if n.Type != html.ElementNode || n.Namespace != "" {
			continue
		}
		switch {
		case n.DataAtom == atom.Title && !foundTitle:
			foundTitle = true
			var b strings.Builder
			for t := n.FirstChild; t != nil; t = t.NextSibling {
				if t.Type == html.TextNode {
					b.WriteString(t.Data)
				}
			}
			title = strings.Join(strings.Fields(b.String()), " ")
		case n.DataAtom == atom.Base && !foundBase:
			if h, ok := attr(n, "href"); ok {
				foundBase = true
				base = strings.TrimSpace(h)
			}
		}
		if foundTitle && foundBase {
			break
		}
	}
	return title, base
}

// next is the node after n in document order within root; skip passes
// over n's children.
func next(root, n *html.Node, skip bool) *html.Node {
	if !skip && n.FirstChild != nil {
		return n.FirstChild
	}
	for n != root && n.NextSibling == nil {
		n = n.Parent
	}
	if n == root {
		return nil
	}
	return n.NextSibling
}

// attr is the value of n's attribute key.
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// maxPrefixes is how many levels of indentation and quoting a line shows
// at most, its innermost ones, so that deep nesting cannot blow up the text.
const maxPrefixes = 8

// converter writes the text of an HTML tree.
type converter struct {
	b    strings.Builder
	base *url.URL

	pending   int  // line breaks owed before the next text (2 is a blank line)
	space     bool // a space owed before the next text on the line
	lineStart bool // the next text starts a line, after the prefixes

	prefixes []string // written at the start of every line: indents, "> "
	marker   string   // a list item's marker, written once in place of prefixes[markerAt]
	markerAt int
	lead     string // written once after the prefixes: a heading's '#'s

	budget    int  // bytes of text after which the walk stops (0: none)
	over      bool // the walk stopped at the budget
	afterLink bool // the last thing written is a link's URL

	pre   int    // open <pre> elements
	links []link // open <a> elements
	lists []list // open <ul> and <ol> elements
	cells []int  // cells so far in each open <tr>
}

type link struct {
	start int    // the length of the text when the link opened
	href  string // as written
}

type list struct {
	ordered bool
	n       int // items so far (ordered: the last number)
}

// skipped are the elements whose content is not text to read.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Title: true, atom.Script: true, atom.Style: true, atom.Noscript: true,
	atom.Template: true, atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true,
	atom.Embed: true, atom.Canvas: true, atom.Select: true, atom.Textarea: true, atom.Audio: true,
	atom.Video: true, atom.Map: true,
}

// void are the skipped elements that have no end tag.
var void = map[atom.Atom]bool{atom.Embed: true}

// blocks are the elements that start and end on lines of their own, and
// how many line breaks set them apart (2: a blank line).
var blocks = map[atom.Atom]int{
	atom.P: 2, atom.H1: 2, atom.H2: 2, atom.H3: 2, atom.H4: 2, atom.H5: 2, atom.H6: 2,
	atom.Pre: 2, atom.Blockquote: 2, atom.Table: 2, atom.Figure: 2, atom.Hr: 2, atom.Dl: 2,
	atom.Ul: 2, atom.Ol: 2, atom.Details: 2,
	atom.Div: 1, atom.Section: 1, atom.Article: 1, atom.Main: 1, atom.Header: 1, atom.Footer: 1,
	atom.Nav: 1, atom.Aside: 1, atom.Address: 1, atom.Summary: 1, atom.Fieldset: 1, atom.Legend: 1,
	atom.Figcaption: 1, atom.Li: 1, atom.Dt: 1, atom.Dd: 1, atom.Tr: 1, atom.Caption: 1,
	atom.Thead: 1, atom.Tbody: 1, atom.Tfoot: 1, atom.Form: 1, atom.Center: 1, atom.Body: 1,
	atom.Dialog: 1, atom.Menu: 1, atom.Hgroup: 1, atom.Search: 1,
}

// walk converts the tree under root, without recursion: a document may
// nest deeper than a stack should.
func (c *converter) walk(root *html.Node) {
	n := root
	for {
		if c.budget > 0 && c.b.Len() > c.budget {
			c.over = true
			return
		}
		if c.enter(n) {
			if n.FirstChild != nil {
				n = n.FirstChild
				continue
			}
			c.leave(n)
		}
		for n != root && n.NextSibling == nil {
			n = n.Parent
			c.leave(n)
		}
		if n == root {
			return
		}
		n = n.NextSibling
	}
}

// hidden reports whether n is marked as not shown.
func hidden(n *html.Node) bool {
	if _, ok := attr(n, "hidden"); ok {
		return true
	}
	if v, ok := attr(n, "aria-hidden"); ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return true
	}
	if v, ok := attr(n, "style"); ok {
		s := strings.ToLower(strings.Join(strings.Fields(v), ""))
		return strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden")
	}
	return false
}

// enter handles the start of n and reports whether to visit its children
// (and then leave it).
func (c *converter) enter(n *html.Node) bool {
	switch n.Type {
	case html.DocumentNode:
		return true
	case html.TextNode:
		c.text(n.Data)
		return false
	case html.ElementNode:
	default: // comments, doctypes
		return false
	}
	// Pages that hide <html> or <body> until their scripts have run are
	// read all the same.
	if n.Namespace != "" || skipped[n.DataAtom] || (n.DataAtom != atom.Html && n.DataAtom != atom.Body && hidden(n)) {
		return false
	}
	a := n.DataAtom
	if br, ok := blocks[a]; ok {
		if (a == atom.Ul || a == atom.Ol) && len(c.lists) > 0 {
			br = 1 // a nested list
		}
		c.lineBreak(br)
	}
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		c.lead = strings.Repeat("#", int(a.String()[1]-'0')) + " "
	case atom.Ul, atom.Ol, atom.Menu:
		l := list{ordered: a == atom.Ol}
		if s, ok := attr(n, "start"); ok && l.ordered {
			if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && v > -1e6 && v < 1e6 {
				l.n = v - 1
			}
		}
		c.lists = append(c.lists, l)
	case atom.Li:
		m := "- "
		if k := len(c.lists); k > 0 && c.lists[k-1].ordered {
			c.lists[k-1].n++
			m = strconv.Itoa(c.lists[k-1].n) + ". "
		}
		c.prefixes = append(c.prefixes, strings.Repeat(" ", len(m)))
		c.marker, c.markerAt = m, len(c.prefixes)-1
	case atom.Blockquote:
		c.prefixes = append(c.prefixes, "> ")
	case atom.Pre:
		c.pre++
	case atom.Br:
		if c.pre > 0 {
			c.text("\n")
		} else {
			c.pending = min(c.pending+1, 2)
			c.space = false
		}
	case atom.Tr:
		c.cells = append(c.cells, 0)
	case atom.Td, atom.Th:
		if k := len(c.cells); k > 0 {
			if c.cells[k-1] > 0 {
				c.space = false
				c.begin()
				c.b.WriteString(" |")
				c.space = true
			}
			c.cells[k-1]++
		}
	case atom.A:
		href, _ := attr(n, "href")
		c.links = append(c.links, link{start: c.b.Len(), href: href})
	case atom.Img:
		if len(c.links) > 0 {
			if alt, ok := attr(n, "alt"); ok {
				c.text(" " + alt + " ")
			}
		}
	}
	return true
}

// leave handles the end of n, an element enter let in.
func (c *converter) leave(n *html.Node) {
	if n.Type != html.ElementNode {
		return
	}
	a := n.DataAtom
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		c.lead = "" // an empty heading writes nothing
	case atom.Ul, atom.Ol, atom.Menu:
		c.lists = c.lists[:len(c.lists)-1]
	case atom.Li:
		c.prefixes = c.prefixes[:len(c.prefixes)-1]
		c.marker = "" // an empty item writes nothing
	case atom.Blockquote:
		c.prefixes = c.prefixes[:len(c.prefixes)-1]
	case atom.Pre:
		c.pre--
	case atom.Tr:
		c.cells = c.cells[:len(c.cells)-1]
	case atom.A:
		l := c.links[len(c.links)-1]
		c.links = c.links[:len(c.links)-1]
		c.linkTarget(l)
	}
	if br, ok := blocks[a]; ok {
		if (a == atom.Ul || a == atom.Ol) && len(c.lists) > 0 {
			br = 1
		}
		c.lineBreak(br)
	}
}

// linkTarget follows the text of the link l, if it has any, with its URL
// in parentheses.
func (c *converter) linkTarget(l link) {
	target := c.resolve(l.href)
	if target == "" || len(target) > maxLinkURL {
		return
	}
	text := strings.TrimSpace(c.b.String()[l.start:])
	if text == "" || bare(text) == bare(target) {
		return
	}
	pending := c.pending
	c.pending, c.space = 0, true
	c.begin()
	c.b.WriteString("(" + target + ")")
	c.pending = max(c.pending, pending)
	c.space, c.afterLink = false, true
}

// bare is a URL without its scheme and final slash, to tell whether a
// link's text is its URL.
func bare(u string) string {
	for _, p := range []string{"https://", "http://", "mailto:", "tel:"} {
		if len(u) >= len(p) && strings.EqualFold(u[:len(p)], p) {
			u = u[len(p):]
			break
		}
	}
	return strings.TrimSuffix(u, "/")
}

// resolve is the absolute URL of the link href, or "" when it is empty,
// points into the page, or is not a link to follow (javascript:, data:).
func (c *converter) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if c.base != nil {
		dir := c.base.Path[:strings.LastIndexByte(c.base.Path, '/')+1]
		if u.Scheme == "" && u.Host == "" && !strings.HasPrefix(u.Path, "/") && len(c.base.Scheme)+len(c.base.Host)+len(dir) > maxLinkURL {
			// Relative to a base whose URL alone is over the limit: the
			// link is left out without building its long URL.
			return ""
		}
		u = c.base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto", "tel", "ftp", "":
	default:
		return ""
	}
	return u.String()
}

// lineBreak owes n line breaks (2: a blank line) before the next text.
func (c *converter) lineBreak(n int) {
	c.pending = max(c.pending, n)
	c.space, c.afterLink = false, false
}

// begin readies the text for more on the current line: owed line breaks,
// then the prefixes of a new line, or an owed space.
func (c *converter) begin() {
	if c.pending > 0 {
		if c.b.Len() > 0 {
			c.b.WriteString("\n\n"[:c.pending])
		}
		c.pending = 0
		c.lineStart = true
	}
	if !c.lineStart {
		if c.space {
			c.b.WriteByte(' ')
		}
		c.space = false
		return
	}
	from := max(0, len(c.prefixes)-maxPrefixes)
	for i := from; i < len(c.prefixes); i++ {
		if c.marker != "" && i == c.markerAt {
			c.b.WriteString(c.marker)
			continue
		}
		c.b.WriteString(c.prefixes[i])
	}
	c.marker = ""
	c.b.WriteString(c.lead)
	c.lead = ""
	c.lineStart, c.space = false, false
}

// text writes the text of a text node: white space collapsed, or as is in
// <pre>.
func (c *converter) text(s string) {
	if c.pre > 0 {
		c.raw(s)
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		if s != "" {
			c.space = true
		}
		return
	}
	if r, _ := utf8.DecodeRuneInString(s); unicode.IsSpace(r) {
		c.space = true
	}
	if c.afterLink {
		// "see the guide (URL), then": a word after a link's URL is set
		// apart from it; punctuation follows it.
		if r, _ := utf8.DecodeRuneInString(words[0]); !unicode.IsPunct(r) || strings.ContainsRune("([{¿¡«", r) {
			c.space = true
		}
		c.afterLink = false
	}
	c.begin()
	for i, w := range words {
		if i > 0 {
			c.b.WriteByte(' ')
		}
		c.b.WriteString(w)
	}
	if r, _ := utf8.DecodeLastRuneInString(s); unicode.IsSpace(r) {
		c.space = true
	}
}

// raw writes preformatted text, line by line.
func (c *converter) raw(s string) {
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			if c.pending > 0 && c.b.Len() > 0 {
				c.b.WriteString("\n\n"[:c.pending])
			}
			c.pending = 0
			c.b.WriteByte('\n')
			c.lineStart = true
		}
		if line != "" {
			c.space = false
			c.begin()
			c.b.WriteString(line)
		}
	}
}

// tidy trims the white space at the ends of lines and of the text, and
// leaves at most one blank line in a row.
func tidy(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	blank := false
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
		if line == "" {
			blank = true
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
			if blank {
				b.WriteByte('\n')
			}
		}
		b.WriteString(line)
		blank = false
	}
	return b.String()
}

// decode turns a body into UTF-8 text. The body of an HTML page is decoded
// from the charset its byte order mark, its Content-Type or its <meta>
// declares (a page that is valid UTF-8 is read as UTF-8 unless its
// Content-Type or byte order mark says otherwise); other text from the
// charset its Content-Type declares. Text meant to be UTF-8 that is not has
// its invalid bytes replaced with U+FFFD. cut says the body was cut short,
// and a character cut in two at its end is dropped.
func decode(body []byte, contentType string, isHTML, cut bool) string {
	if cut {
		body = trimPartialRune(body)
	}
	if isHTML {
		e, name, certain := charset.DetermineEncoding(body, contentType)
		if name != "utf-8" && (certain || !utf8.Valid(body)) {
			if out, err := e.NewDecoder().Bytes(body); err == nil {
				return string(out)
			}
		}
	} else if cs := charsetParam(contentType); cs != "" {
		if e, name := charset.Lookup(cs); e != nil && name != "utf-8" {
			if out, err := e.NewDecoder().Bytes(body); err == nil {
				return string(out)
			}
		}
	}
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
