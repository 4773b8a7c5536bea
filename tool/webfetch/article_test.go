package webfetch_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/webfetch"
)

// chromePages are the saved pages of testdata/chrome: an article amid a
// site's header, navigation, sidebars, banners and footer. article holds
// phrases of the article, chrome phrases of the rest.
var chromePages = []struct {
	file    string
	article []string
	chrome  []string
}{
	{
		file: "news.html",
		article: []string{"reopened to traffic on Monday morning", "forty deck plates", "takings had fallen by a third",
			"What changes for cyclists", "protected cycle lane"},
		chrome: []string{"Skip to content", "Sport", "Weather", "Trending now", "Ferry timetable",
			"Subscribe to our newsletter", "Privacy policy", "All rights reserved"},
	},
	{
		file: "blog.html",
		article: []string{"only flour and water left to ferment", "strong white flour", "stretch and fold",
			"Bulk ferment until", "long cold proof"},
		chrome: []string{"We use cookies", "Accept cookies", "Shop our flour", "Share on social", "Related posts",
			"Categories", "Leave a comment", "All rights reserved"},
	},
	{
		file: "docs.html",
		article: []string{"has three timeouts", "five seconds to connect", "WithConnectTimeout",
			"multiplied by the number of attempts", "deadline error"},
		chrome: []string{"Relay 3.0 is out", "API reference", "Installation", "Retries and backoff",
			"Previous: Quick start", "Community", "Copyright"},
	},
}

// TestFetchLeavesOutTheChromeAroundAnArticle measures the article finder on
// the saved pages: converted whole (HTMLText), each page's text holds its
// chrome; fetched, it holds every phrase of its article and no phrase of
// its chrome.
//
// Measured when written: the whole pages kept 23 of the 23 chrome phrases;
// the fetched text keeps 0 of them and all 15 article phrases.
func TestFetchLeavesOutTheChromeAroundAnArticle(t *testing.T) {
	handlers := map[string]http.HandlerFunc{}
	for _, p := range chromePages {
		b, err := os.ReadFile("testdata/chrome/" + p.file)
		require.NoError(t, err)
		handlers["/"+p.file] = serve("text/html; charset=utf-8", string(b))
	}
	s := newSite(t, handlers)
	ft := newTool(t, webfetch.WithAllowPrivateAddresses())
	wholeKept, articleKept, chromeTotal, articleTotal := 0, 0, 0, 0
	for _, p := range chromePages {
		b, err := os.ReadFile("testdata/chrome/" + p.file)
		require.NoError(t, err)
		_, whole := webfetch.HTMLText(string(b), nil)
		got := page(t, fetch(t, ft, s.URL+"/"+p.file)).Text
		for _, c := range p.chrome {
			chromeTotal++
			if strings.Contains(whole, c) {
				wholeKept++
			}
			if !assert.NotContains(t, got, c, "%s: chrome kept", p.file) {
				continue
			}
		}
		for _, a := range p.article {
			articleTotal++
			if assert.Contains(t, got, a, "%s: article lost", p.file) {
				articleKept++
			}
		}
		t.Logf("%s: whole page %d bytes of text, article %d", p.file, len(whole), len(got))
	}
	assert.Equal(t, chromeTotal, wholeKept, "the whole pages hold their chrome, so the measurement measures something")
	assert.Equal(t, articleTotal, articleKept)
	t.Logf("chrome phrases: %d of %d in the whole pages, 0 in the fetched text; article phrases kept: %d of %d",
		wholeKept, chromeTotal, articleKept, articleTotal)
}
