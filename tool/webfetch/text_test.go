package webfetch_test

import (
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/webfetch"
)

func TestHTMLTextBeyondTheParsersDepth(t *testing.T) {
	// The parser refuses documents nested deeper than 512 elements: the
	// text and the title are read without the structure.
	deep := "<html><head><title>Deep</title><style>p{}</style></head><body><p>Intro</p>" + strings.Repeat("<span>x ", 600) + "<div>end</div></body></html>"
	title, text := webfetch.HTMLText(deep, nil)
	assert.Equal(t, "Deep", title)
	assert.True(t, strings.HasPrefix(text, "Intro"), text[:min(len(text), 40)])
	assert.Contains(t, text, "x x x")
	assert.True(t, strings.HasSuffix(text, "end"))
	assert.NotContains(t, text, "p{}")

	// An element without an end tag hides nothing after it; <br/> breaks
	// the line as <br> does.
	_, text = webfetch.HTMLText(strings.Repeat("<div>", 600)+`before <embed src="x.swf"> after<br/>next`, nil)
	assert.Equal(t, "before after\nnext", text)
}

func TestHTMLTextSpacesAfterALink(t *testing.T) {
	base, err := url.Parse("https://example.test/")
	require.NoError(t, err)
	_, text := webfetch.HTMLText(`<p>word<a href="/q">link</a>word, <a href="/a">one</a><a href="/b">two</a>. End</p>`, base)
	assert.Equal(t, "wordlink (https://example.test/q) word, one (https://example.test/a) two (https://example.test/b). End", text)
	_, text = webfetch.HTMLText(`<p><a href="/g">Go</a>’s guide and <a href="/h">this</a> (see)</p>`, base)
	assert.Equal(t, "Go (https://example.test/g)’s guide and this (https://example.test/h) (see)", text)

	// A long base's directory decides whether a relative link is shown.
	long, err := url.Parse("https://example.test/dir/" + strings.Repeat("a", 3000))
	require.NoError(t, err)
	_, text = webfetch.HTMLText(`<a href="next.html">next</a>`, long)
	assert.Equal(t, "next (https://example.test/dir/next.html)", text)
}

func TestHTMLText(t *testing.T) {
	base, err := url.Parse("https://example.test/docs/page.html?x=1")
	require.NoError(t, err)
	tests := []struct {
		name  string
		html  string
		title string
		text  string
	}{
		{"title only from the head", `<html><head><title> A  &amp;
			B </title><meta name="x"></head><body>body</body></html>`, "A & B", "body"},
		{"no title", `<p>x</p>`, "", "x"},
		{"an SVG title is not the page's", `<body><svg><title>icon</title></svg><p>x</p></body>`, "", "x"},
		{"whitespace collapses", "<p>  one\n\t two&nbsp;&nbsp;three  </p>", "", "one two three"},
		{"inline elements join words", `<p>un<b>break</b>able <i>and</i> <em>spaced</em></p>`, "", "unbreakable and spaced"},
		{"paragraphs", `<p>one</p><p>two</p>text<div>three</div><div>four</div>`, "", "one\n\ntwo\n\ntext\nthree\nfour"},
		{"line breaks", `<p>a<br>b<br/><br>c</p>`, "", "a\nb\n\nc"},
		{"headings", `<h1>Top</h1><p>x</p><h3>Deep <a href="/a">link</a></h3><h2></h2><p>y</p>`, "",
			"# Top\n\nx\n\n### Deep link (https://example.test/a)\n\ny"},
		{"lists", `<ul><li>a</li><li>b<ol start="3"><li>c</li><li>d</li></ol></li><li></li><li>e</li></ul><p>after</p>`, "",
			"- a\n- b\n  3. c\n  4. d\n- e\n\nafter"},
		{"list items with paragraphs", `<ol><li><p>one</p><p>more</p></li><li>two</li></ol>`, "", "1. one\n\n   more\n\n2. two"},
		{"a stray list item", `<li>alone</li>`, "", "- alone"},
		{"links", `<p><a href="guide.html">relative</a>, <a href="/root">rooted</a>, <a href="//cdn.test/x">protocol-relative</a>,
			<a href="https://example.test/docs/">https://example.test/docs/</a>, <a href="#top">in the page</a>,
			<a href="javascript:go()">script</a>, <a href="data:text/plain,x">data</a>, <a>no href</a>, <a href="/empty"></a>,
			<a href="/img"><img src="i.png" alt="a picture"></a>, <a href="mailto:me@example.test">me@example.test</a></p>`, "",
			"relative (https://example.test/docs/guide.html), rooted (https://example.test/root), protocol-relative (https://cdn.test/x), " +
				"https://example.test/docs/, in the page, script, data, no href, , a picture (https://example.test/img), me@example.test"},
		{"base href", `<head><base href="https://other.test/v2/"></head><a href="p">p</a>`, "", "p (https://other.test/v2/p)"},
		{"a link around blocks", `<a href="/card"><div>Card</div><div>text</div></a><p>next</p>`, "",
			"Card\ntext (https://example.test/card)\n\nnext"},
		{"pre keeps its lines", "<p>before</p><pre>\n  indented\n\n\tx &lt; y\n</pre><p>after</p>", "",
			"before\n\n  indented\n\n\tx < y\n\nafter"},
		{"pre with markup", "<pre><b>bold</b> line\n<a href=\"/x\">l</a> two</pre>", "", "bold line\nl (https://example.test/x) two"},
		{"quotes", `<blockquote><p>one</p><p>two</p><ul><li>x</li></ul></blockquote>`, "", "> one\n\n> two\n\n> - x"},
		{"tables", `<table><caption>T</caption><tr><th>a</th><th>b</th></tr><tr><td>1</td><td></td><td>3</td></tr></table>`, "",
			"T\na | b\n1 | | 3"},
		{"definition lists", `<dl><dt>term</dt><dd>meaning</dd></dl>`, "", "term\nmeaning"},
		{"dropped elements", `<script>s()</script><style>p{}</style><noscript>ns</noscript><template><p>t</p></template>
			<svg><text>svg</text></svg><math><mi>x</mi></math><iframe src="/f">frame</iframe><select><option>opt</option></select>
			<textarea>typed</textarea><p hidden>hidden</p><p aria-hidden="true">aria</p><p style="color: red; display : none">styled</p>
			<p style="visibility:hidden">invisible</p><!-- comment --><p>kept</p>`, "", "kept"},
		{"a body hidden until scripts run is read", `<html style="visibility: hidden"><body hidden><p>shown</p></body></html>`, "", "shown"},
		{"entities", `<p>&lt;tag&gt; &amp;amp; &quot;q&quot; &#39;s&#39; &eacute;&#233;&#xE9; &copy; &hellip; &euro;&nbsp;5</p>`, "",
			`<tag> &amp; "q" 's' ééé © … € 5`},
		{"not HTML at all", "just text", "", "just text"},
		{"empty", "", "", ""},
		{"unclosed tags", "<div><p>one<p>two<ul><li>three", "", "one\n\ntwo\n\n- three"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, text := webfetch.HTMLText(tt.html, base)
			assert.Equal(t, tt.title, title)
			assert.Equal(t, tt.text, text)
		})
	}

	// Without a base, links stay as written.
	_, text := webfetch.HTMLText(`<a href="guide.html">guide</a>`, nil)
	assert.Equal(t, "guide (guide.html)", text)

	// Deep nesting shows at most eight levels of indentation.
	deep := strings.Repeat("<blockquote>", 50) + "deep" + strings.Repeat("</blockquote>", 50)
	_, text = webfetch.HTMLText(deep, nil)
	assert.Equal(t, strings.Repeat("> ", 8)+"deep", text)
}

func FuzzHTMLText(f *testing.F) {
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(article))
	for _, s := range []string{
		"", "<", "<a href=", "<pre>\n\n</pre>", "<ol start=-99999999999><li>x",
		"<ul><li><ol><li><blockquote><h1><a href='%zz'>x</a></h1>",
		"<table><tr><td><table><tr><td>x</td><td>y",
		"<svg><title>t</title><foreignObject><p>in svg</p></foreignObject></svg>",
		"<base href='javascript:x'><a href='y'>y</a>", "<p>\xff\xfe</p>",
	} {
		f.Add(s)
	}
	base, err := url.Parse("https://example.test/a/b")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, page string) {
		title, text := webfetch.HTMLText(page, base)
		if strings.Contains(title, "\n") {
			t.Fatalf("a title with a line break: %q", title)
		}
		if strings.Contains(text, "\n\n\n") {
			t.Fatalf("more than one blank line in a row: %q", text)
		}
		if strings.HasPrefix(text, "\n") || strings.TrimRight(text, " \t\n") != text {
			t.Fatalf("white space at the ends: %q", text)
		}
		if utf8.ValidString(page) && (!utf8.ValidString(text) || !utf8.ValidString(title)) {
			t.Fatalf("invalid UTF-8 out of valid UTF-8 in: %q", text)
		}
		title2, text2 := webfetch.HTMLText(page, base)
		if title2 != title || text2 != text {
			t.Fatal("not deterministic")
		}
	})
}
