package webfetch

import (
	"net/url"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
)

// maxArticleElements bounds the elements of a page the article finder
// scores; a larger page is converted whole. Scoring is quadratic at worst
// in the elements, and pages past this size are rarely single articles.
const maxArticleElements = 20000

// minArticleRunes is the least text, in runes, an article must have for
// the page to be read as that article rather than whole: less means the
// finder picked a fragment of a page that is not an article.
const minArticleRunes = 200

// mainContent returns the node that holds the article of doc, or nil when
// doc does not read as an article. It may change doc (the finder cleans
// the article it returns), so it is called last, on a tree parsed for it.
//
// The finder is a port of Mozilla's Readability (the reader view of
// Firefox), a maintained library: telling an article from a site's chrome
// takes scoring by text density, link density and class names, tuned on
// many real pages, which a few rules written here would only approximate
// (TestFetchLeavesOutTheChromeAroundAnArticle measures it on saved pages).
// A panic in it, on input it was not made for, leaves the page whole.
func mainContent(doc *html.Node, base *url.URL) (out *html.Node) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	p := readability.NewParser()
	p.MaxElemsToParse = maxArticleElements
	if !p.CheckDocument(doc) {
		return nil
	}
	if base == nil {
		base = &url.URL{}
	}
	art, err := p.ParseAndMutate(doc, base)
	if err != nil || art.Node == nil {
		return nil
	}
	n := 0
	for t := range art.Node.Descendants() {
		if t.Type == html.TextNode {
			n += len([]rune(t.Data))
		}
	}
	if n < minArticleRunes {
		return nil
	}
	return art.Node
}
